"""How an exercise's answer is checked: a learner's answer in, right or not with the reason
out. The checkers of each chapter's exercises, built on these, are in the chapter's own file
(`gpumodel.course.hierarchy`, ...).

A checker returns `Feedback`, which prints as a sentence and is truthy when right. `None`
means "not answered yet". A wrong answer gets a hint (units, a factor, where to look), never
the answer; the reasoning comes with the right one. An answer of the wrong type (a string
or a list where a number is expected) gets a sentence, not a traceback. A number may be a
Python or NumPy number, a 0-d array, or text.

A typed answer is read the same way here (`read_number`) and in the browser
(`_static/widgets.js`): spaces ignored, case ignored; a unit the question names may follow
(`rules["units"]`, each with its factor: "37%" is 0.37 where percent is accepted; a time or
size in any unit of its family, "301 µs" or "0.301 ms" where us is asked, the micro sign and
the Greek mu both read as "u"); then a number, with commas only between groups of three
digits ("8,388,608"), an exponent ("8e6"), a power ("2^23", "2**23", "1.5 x 2^20") or a
fraction ("1/12", "3 x 2^10 / 4"). Anything else is not a number.

`judge` also records each judged answer (`progress()` lists them), in this session and in the
learner's own progress file (`progress_file`, kept across kernels and notebooks), and an
unanswered question (`None`) shows, on the built site, an answer box judged in the browser
by the same rules.
"""

from __future__ import annotations

import contextvars
import html
import json
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

from .. import _check
from ..lab import LabError, trace, trace_triton, triton_kernel
from ..published import expect
from ..units import fmt_bound, fmt_exact, fmt_time
from . import progress_file


@dataclass(frozen=True)
class Feedback:
    """Whether an answer is right, and why (or a hint)."""

    correct: bool
    message: str
    rules: dict | None = field(default=None, compare=False)
    prompt: str = field(default="", compare=False)

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return ("Right. " if self.correct else "Not yet. ") + self.message

    def __repr__(self) -> str:
        """What the Markdown shows: a plain-text front end never prints the rules (the answer, the
        anticipated mistakes)."""
        return self._repr_markdown_()

    def _repr_markdown_(self) -> str:
        return ("**Right.** " if self.correct else "**Not yet.** ") + self.message

    def _repr_html_(self) -> str | None:
        """On the built site, an unanswered question is an answer box (`rules`); elsewhere None
        (Jupyter shows the Markdown)."""
        if self.rules is None or not building_book():
            return None
        return answer_box(self.rules, self.prompt)


def building_book() -> bool:
    """True while `make book` executes the chapters (it sets GPUMODEL_BUILD=book)."""
    return os.environ.get("GPUMODEL_BUILD") == "book"


def _form_html(rules: dict, prompt: str) -> str:
    """The answer form and its verdict line, with a text keyboard for a name and for a number
    alike: a number pad cannot type a unit, an "e", "^" or "/"."""
    return (f'<form class="gm-answer"><label>{html.escape(prompt)} <input type="text" inputmode="text" '
            'autocomplete="off" autocapitalize="off" spellcheck="false"></label> <button type="submit">Check</button>'
            '</form><p class="gm-verdict" aria-live="polite"></p>')


def _words(name: str, value) -> str:
    """`value` checked as text a learner reads (a str, empty allowed)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text (a str), got {type(value).__name__}")
    return value


def answer_box(rules: dict, prompt: str, key: str = "", question: str = "") -> str:
    """An answer box for the site, judged in the browser by `rules` (widgets.js); `key` names
    it in the reader's progress (else the exercise it follows names it), `question` (HTML)
    is asked above it."""
    for name, value in (("prompt", prompt), ("key", key), ("question", question)):
        _words(name, value)
    _made(rules)
    ident = f' id="{html.escape(key)}" data-key="{html.escape(key)}"' if key else ""
    asked = f'<p class="gm-asked">{question}</p>' if question else ""
    return (f'<div class="gm-question gm-widget"{ident}>{asked}{_form_html(rules, prompt)}'
            f'{_data_html({"rules": rules})}</div>')


def _data_html(data: dict) -> str:
    """Data for widgets.js, as JSON in a script element (`</` escaped)."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json">{text}</script>'


def _wrong_type(answer, wanted: str) -> Feedback:
    """The sentence for an answer that is not what the question asks for."""
    shown = repr(answer)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return Feedback(False, f"The answer should be {wanted}; {shown} is a {type(answer).__name__}. "
                    "Replace it and run the cell again.")



POWER_OF_TEN = "by a power of ten: check the units."
FLOPS_AND_BYTES = "is every flop counted (an FMA is two), and every byte (reads and writes)?"
"""What a factor-of-two miss suggests where an exercise counts flops and bytes."""

_NUM = r"(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
NUMBER_SYNTAX = re.compile(rf"([+-]?{_NUM})(?:(?:x|\*|×)({_NUM}))?(?:(?:\^|\*\*)([+-]?{_NUM}))?(?:/({_NUM}))?",
                           re.ASCII)
"""A typed number once spaces are gone and case is lowered: a number (commas between groups of
three digits, an exponent), optionally times a base raised to a power, optionally over a
divisor: "8,388,608", "8e6", "2^23", "2**23", "1.5x2^20", "1/12". widgets.js holds the same
pattern."""
MICRO = ("µ", "μ")
"""The micro sign (U+00B5) and the Greek mu (U+03BC) a phone types: both read as "u"."""


def read_number(text: str, units: dict | None = None) -> float | None:
    """A typed answer as a number, or None when it is not one (see the module's doc): `units`
    maps each accepted unit (lower case, no spaces) to the factor that turns it into the
    question's unit. Chapter 1."""
    units = _unit_table(units)
    t = _unit_key(str(text).replace("−", "-"))
    for unit in sorted(units or {}, key=len, reverse=True):
        name = _unit_key(unit)
        if name and t.endswith(name) and len(t) > len(name):
            t, factor = t[:-len(name)], units[unit]
            break
    else:
        factor = 1.0
    m = NUMBER_SYNTAX.fullmatch(t)
    if not m:
        return None
    first, second, power, divisor = (float(g.replace(",", "")) if g else None for g in m.groups())
    if divisor is not None and not divisor:
        return None
    try:
        if power is None:
            value = first if second is None else None
        elif second is None:
            value = first ** power if first or power > 0 else None
        else:
            value = first * second ** power if second or power > 0 else None
    except OverflowError:
        return None
    if value is None or not math.isfinite(value):
        return None
    return value / (divisor or 1.0) * factor


def _rows(name: str, rows, shape: str) -> list:
    """`rows` as a list of tuples of the given `shape`: finite numbers, then a hint (a str)."""
    width = shape.count(",") + 1
    ok = isinstance(rows, (list, tuple)) and all(
        isinstance(row, (list, tuple)) and len(row) == width and isinstance(row[-1], str)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in row[:-1])
        for row in rows)
    if not ok:
        raise TypeError(f"{name} must be a list of {shape} with finite numbers and a str hint, got {rows!r}")
    return [tuple(row) for row in rows]


def _unit_table(units) -> dict:
    """`units` (None, or unit name -> positive factor), refused by name when it is not one."""
    if units is not None and not (isinstance(units, dict) and all(
            isinstance(name, str) and isinstance(factor, (int, float)) and not isinstance(factor, bool)
            and math.isfinite(factor) and factor > 0 for name, factor in units.items())):
        raise TypeError(f"units must be a dict from unit names to factors (positive numbers), got {units!r}")
    return units or {}


def _units(unit: str, extra: dict | None) -> dict:
    """The units an answer may carry: the question's (singular too), every unit of its family
    where it is a time or a size (`TIMES`, `BYTES`), and `extra` (unit -> factor)."""
    key = _unit_key(unit)
    units = {key: 1.0, key[:-1]: 1.0} if key.endswith("s") and len(key) > 2 else {key: 1.0}
    family = next((units_as(name, table) for table in (TIMES, BYTES) for name in table if _unit_key(name) == key), {})
    return {**units, **{_unit_key(u): float(f) for u, f in {**family, **(extra or {})}.items()}}


def _unit_key(name: str) -> str:
    """A typed unit or answer as the units compare it: `_key`'s, with `MICRO` read as "u"."""
    key = _key(name)
    for micro in MICRO:
        key = key.replace(micro, "u")
    return key


BYTES = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
"""Byte units a typed size may carry, in bytes."""

TIMES = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
"""Time units a typed duration may carry, in seconds ("µs" and "μs" read as "us")."""


def units_as(unit: str, table: dict) -> dict:
    """Every unit of `table` (BYTES, TIMES) as a factor into `unit`, one of them: for
    `number_rules(units=...)`, so "48 MiB" and "50.3 MB" both read where MiB is asked."""
    tables = {"BYTES": BYTES, "TIMES": TIMES}
    if not any(table is t for t in tables.values()):
        raise TypeError(f"table must be one of checks.{', checks.'.join(tables)}, got {table!r}")
    if not isinstance(unit, str) or unit not in table:
        raise ValueError(f"unit must be one of {tuple(table)}, got {unit!r}")
    return {name: size / table[unit] for name, size in table.items()}


MOST_RTOL = 0.25
"""The widest tolerance an answer may have (a share of the answer): wider, and a factor-of-two
slip would be right."""


def number_rules(expected: float, unit: str, rtol: float = 0.02, explain: str = "", hint: str = "", *,
                 doubled: str = "", mistakes: tuple = (), ranges: tuple = (), units: dict | None = None,
                 whole: bool = False) -> dict:
    """How a numeric answer is judged, as data (JSON), so that Python (`verdict`) and the
    static site's answer boxes judge alike: right within `rtol` of `expected` (in `unit`);
    otherwise the first of these that holds names the mistake: `mistakes` ((value, hint):
    an answer a known slip gives, matched within `rtol`; a slip that gives the answer itself is
    dropped), `ranges` ((low, high, hint) of the
    answer itself), bands of `value / expected` (a wrong sign, a power of ten, a factor of two,
    where `doubled` says what such a miss suggests, close), a fraction where `whole` asks for
    a whole number, else "too high" or "too low".
    `hint` (which must not give the answer away) follows every wrong verdict; `explain` the
    right one. `units` (unit -> factor) are accepted beside `unit`; `whole` asks for a whole
    number. Chapter 1."""
    expected = _check.real("expected", expected)
    for name, value in (("unit", unit), ("explain", explain), ("hint", hint), ("doubled", doubled)):
        _words(name, value)
    rtol = _check.real("rtol", rtol, least=0, most=MOST_RTOL)
    whole = _check.flag("whole", whole)
    mistakes = _rows("mistakes", mistakes, "(value, hint)")
    ranges = _rows("ranges", ranges, "(low, high, hint)")
    for low, high, _ in ranges:
        if low > high:
            raise ValueError(f"ranges must hold (low, high, hint) with low <= high, got ({low!r}, {high!r}, ...)")
    _unit_table(units)
    closeness = f"within {100 * rtol:g}% of {fmt_exact(expected)} {unit}" if rtol else "exactly it"
    twice = "by a factor of two" + (f": {doubled}" if doubled else ".")
    rounding = ": carry more digits, or check a rounded figure." if rtol else "."
    bands = [[-1e308, 0.0, "The sign is wrong."]]
    slip = max(rtol, 1e-9)  # a unit slip is a power of ten exactly, to the answer's tolerance: 12 is not 128 / 10
    for decades in (-3, -2, -1, 1, 2, 3):
        direction = "high" if decades > 0 else "low"
        bands.append([10 ** decades * (1 - slip), 10 ** decades * (1 + slip), f"Too {direction} {POWER_OF_TEN}"])
    bands += [[1.95, 2.05, f"Too high {twice}"], [0.4875, 0.5125, f"Too low {twice}"],
              [0.9, 1.0, "Close, but a little too low" + rounding], [1.0, 1.1, "Close, but a little too high" + rounding]]
    mistakes = [(value, text) for value, text in mistakes if not _close(value, expected, max(rtol, 1e-9))]
    suffix = f" {hint}" if hint else ""
    return {"kind": "number", "answer": expected, "unit": unit, "rtol": rtol, "whole": bool(whole),
            "units": _units(unit, units), "right": f"That is {closeness}. {explain}".strip(),
            "mistakes": [[float(value), text + suffix] for value, text in mistakes],
            "ranges": [[float(lo), float(hi), text + suffix] for lo, hi, text in ranges],
            "bands": [[lo, hi, text + suffix] for lo, hi, text in bands] if expected else [],
            "high": "Too high." + suffix, "low": "Too low." + suffix,
            "not_number": f"Type a {'whole ' if whole else ''}number{_unit_phrase(unit)}."}


MEASURES = {"s", "ms", "us", "µs", "ns", "B", "kB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "Hz", "MHz", "GHz"}
"""Units a number is measured in ("in ms"); any other plain word counts things ("of GPUs")."""


def _unit_phrase(unit: str) -> str:
    """How a number's unit reads after "Type a number": " in ms" (a measure, or a rate such as
    FLOP/B), ": the share of the SMs" (a unit that names a share), " (per token)", ": how many
    times" (a ratio), " of GPUs" (things counted)."""
    if unit.startswith("of "):
        return f": the share {unit}"
    if unit.startswith("per "):
        return f" ({unit})"
    if unit == "times":
        return ": how many times"
    counted = unit not in MEASURES and all(c.isalpha() or c == " " for c in unit)
    return f" of {unit}" if counted else f" in {unit}"


def choice_rules(answer: str, wrong: dict, explain: str = "") -> dict:
    """How a named answer (one word, say a GPU) is judged, as data: right when it is
    `answer` (case and spaces ignored); `wrong` maps every other accepted name to its hint.
    The names a reader is offered are sorted, so the list never leads with the answer."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be the right name as a string, got {answer!r}")
    if not isinstance(wrong, dict) or not all(isinstance(name, str) for name in wrong):
        raise TypeError(f"wrong must be a dict from names (strings) to hints, got {wrong!r}")
    key = _key(answer)
    if key in map(_key, wrong):
        raise ValueError(f"wrong must not hold the answer {answer!r}")
    return {"kind": "choice", "answer": key, "right": explain,
            "wrong": {_key(name): text for name, text in wrong.items()},
            "not_number": f"Type one of: {', '.join(sorted([answer, *wrong], key=str.lower))}."}


def _key(name: str) -> str:
    """A typed name as the rules compare it: lower case, no spaces."""
    return "".join(str(name).lower().split())


def _close(a: float, b: float, rtol: float) -> bool:
    """Whether a and b agree within rtol (relative to the larger), as widgets.js tests it."""
    return abs(a - b) <= rtol * max(abs(a), abs(b))


NUMBER_KEYS = {"answer", "rtol", "right", "bands", "high", "low", "not_number", "units", "mistakes", "ranges", "whole"}
CHOICE_KEYS = {"answer", "right", "wrong", "not_number"}
"""The keys `verdict` reads of the rules `number_rules` and `choice_rules` make."""


def verdict(rules: dict, answer) -> Feedback:
    """Judge `answer` by `rules` (`number_rules` or `choice_rules`). Text is read as the
    answer box on the site reads it (`read_number`); a number may be Python's or NumPy's."""
    _made(rules)
    if rules["kind"] == "choice":
        key = _key(answer) if isinstance(answer, str) else None
        if key == rules["answer"]:
            return Feedback(True, rules["right"])
        return Feedback(False, rules["wrong"].get(key, rules["not_number"]))
    value = read_number(answer, rules["units"]) if isinstance(answer, str) else _check.answer(answer)
    if value is None:
        return Feedback(False, rules["not_number"])
    expected = rules["answer"]
    if _close(value, expected, rules["rtol"]):
        return Feedback(True, rules["right"])
    for mistake, text in rules["mistakes"]:
        if _close(value, mistake, max(rules["rtol"], 1e-9)):
            return Feedback(False, text)
    for lo, hi, text in rules["ranges"]:
        if lo <= value <= hi:
            return Feedback(False, text)
    ratio = value / expected if expected else None
    for lo, hi, text in rules["bands"]:
        if ratio is not None and lo <= ratio < hi:
            return Feedback(False, text)
    if rules["whole"] and value != int(value):
        return Feedback(False, rules["not_number"])
    return Feedback(False, rules["high"] if value > expected else rules["low"])


def _made(rules) -> dict:
    """`rules` when `number_rules` or `choice_rules` made them (a number's figures finite, its
    tolerance at most `MOST_RTOL`); else a TypeError or ValueError naming them."""
    made = {"number": NUMBER_KEYS, "choice": CHOICE_KEYS}
    if not isinstance(rules, dict) or rules.get("kind") not in made or not made[rules["kind"]] <= set(rules):
        raise TypeError(f"rules must be made by number_rules or choice_rules, got {rules!r}")
    if rules["kind"] == "number":
        figures = [rules["answer"], rules["rtol"], *(v for row in rules["mistakes"] + rules["ranges"] for v in row[:-1])]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in figures):
            raise ValueError(f"rules must hold finite numbers (as number_rules makes them), got {figures!r}")
        if not 0 <= rules["rtol"] <= MOST_RTOL:
            raise ValueError(f"rules' rtol must be from 0 to {MOST_RTOL:g}, got {rules['rtol']!r}")
    return rules


def _question_key(key) -> str:
    """`key`, a question's name in the progress: a non-empty str of at most `progress_file.MOST_KEY` characters."""
    if not isinstance(key, str) or not key.strip():
        raise TypeError(f"key must name the question (a non-empty str), got {key!r}")
    if len(key) > progress_file.MOST_KEY:
        raise ValueError(f"key must name the question in at most {progress_file.MOST_KEY} characters, got {len(key)}")
    return key


SESSION: dict = {}
"""What this session checked: a question's key -> [tries, ever right]; `progress()` shows it."""


def judge(rules: dict, answer, wanted: str, key: str, prompt: str = "") -> Feedback:
    """A code cell's check: None is "not answered yet" (on the site, an answer box by `rules`
    labelled `prompt`); what cannot be read as `wanted` gets a sentence; anything else its
    `verdict` (a number's preceded by the answer as read), recorded under `key` for
    `progress()`. Chapter 1."""
    number = _made(rules)["kind"] == "number"
    _question_key(key)
    if answer is None:
        return Feedback(False, f"No answer yet: replace None with {wanted}.", rules,
                        prompt or (rules["unit"] if number else "answer"))
    if not number:
        value = _key(answer) if isinstance(answer, str) and _key(answer) in {rules["answer"], *rules["wrong"]} else None
    else:
        value = read_number(answer, rules["units"]) if isinstance(answer, str) else _check.answer(answer)
    if value is None:
        if number and isinstance(answer, tuple) and answer and all(isinstance(a, int) for a in answer):
            return Feedback(False, f"In Python, {answer!r} is a tuple: commas separate items. Write the number "
                            "without them (or with underscores, 8_388_608), or as text in quotes.")
        return _wrong_type(answer, wanted)
    judged = verdict(rules, answer)
    if number:
        typed = f"{value:g}"
        typed = fmt_exact(value) if "e" in typed else typed  # the answer as typed, never in e-notation
        shown = answer.strip() if isinstance(answer, str) else f"{typed} {rules['unit']}"
        judged = Feedback(judged.correct, f"{shown}: {judged.message}")
    return record(key, judged)


def record(key: str, feedback: Feedback) -> Feedback:
    """Note `feedback` under `key` in this session's progress; return it."""
    _question_key(key)
    if not isinstance(feedback, Feedback):
        raise TypeError(f"feedback must be the Feedback a checker returned, got {feedback!r}")
    tries, right = SESSION.get(key, (0, False))
    SESSION[key] = (tries + 1, right or feedback.correct)
    if not building_book():  # the book's build is nobody's progress
        progress_file.add(key, feedback.correct)
    return feedback


def check_number(answer, expected: float, unit: str, rtol: float = 0.02, explain: str = "", hint: str = "",
                 key: str = "", **rules) -> Feedback:
    """Right when `answer` is within `rtol` of `expected` (both in `unit`). `explain` comes
    with a right answer; `hint` (which must not give the answer away) with a wrong one;
    `rules` are `number_rules`' other options; `key` names the question in `progress()`."""
    return judge(number_rules(expected, unit, rtol, explain, hint, **rules), answer, f"a number{_unit_phrase(unit)}",
                 key or f"a number in {unit}")


def progress():
    """Your checks, as a table: each question checked, the tries, and whether it was answered
    right, in every session that kept them in your progress file (`progress_file.path()`) and in
    this one (on the site, the "your progress" page keeps the same in the browser); below it,
    anything wrong with the file this session found. Chapter 1."""
    from IPython.display import Markdown

    checked = {**SESSION, **progress_file.read()}  # the file, where it was written, holds this session's tries too
    notes = "".join(f"\n\n{_markdown_text(n)}" for n in progress_file.NOTES)
    if not checked:
        return Markdown("Nothing checked yet: answer an exercise or a checkpoint and check it." + notes)
    rows = [f"| {_markdown_text(key)} | {tries} | {'right' if right else 'not yet'} |"
            for key, (tries, right) in checked.items()]
    done = sum(right for _, right in checked.values())
    return Markdown(f"{done} of {len(checked)} questions checked are right (kept in "
                    f"{_markdown_text(str(progress_file.path()))}).\n\n"
                    "| question | tries | state |\n| --- | --- | --- |\n" + "\n".join(rows) + notes)


def _markdown_text(text: str) -> str:
    """`text` shown as itself in Markdown (a table cell included): HTML escaped, and the marks
    that would make code, emphasis, a link or a new cell (\\ ` * [ ] |); a line break a space.
    (`tables.markdown_table`, which escapes only |, imports this module: it cannot serve here.)"""
    return re.sub(r"([\\`*\[\]|])", r"\\\1", html.escape(" ".join(text.split()), quote=False))


LAB_TRACE: contextvars.ContextVar = contextvars.ContextVar("LAB_TRACE", default=None)
"""The last `Trace` `lab_run` made in this context (None before one): the lab editor draws its
sites beside the verdict (`gpumodel.course.widgets.LabEditor`)."""


def part_name(bound) -> str:
    """The part a lab's bound names: the model's "smem" level is the SM's L1/shared-memory data
    path, which carries L1's sectors too (a kernel with no shared memory can be bound there)."""
    return ("the SM's L1/shared-memory data path (L1's sectors and shared memory's wavefronts share it)"
            if str(bound) == "smem" else fmt_bound(bound))


def far_reason(e, blocks: int) -> str:
    """Why an expected time `e` (`gm.expect`'s Expectation) of a launch of `blocks` blocks is
    more than 10 times its bound, as a sentence that starts with a space; "" when it is not.
    Chapter 4's and the labs' closing sentences."""
    if e.time <= 10 * e.bound:
        return ""
    times = f" That is {e.time / e.bound:,.0f} times the bound"
    if e.limiter == "waves":
        return (f"{times}: the bound charges the whole GPU's rates as though the launch filled it, while this grid "
                f"of {blocks} blocks runs on at most {blocks} SMs.")
    if e.latency.get("in_flight"):
        return (f"{times}: the bound charges the whole GPU's rates as though the launch filled it, while this grid "
                f"of {blocks} blocks keeps {e.latency['in_flight'] / 1024:,.1f} KiB in flight and waits the latency "
                f"of each round of its loads.")
    return f"{times}, which charges the whole GPU's rates as though the launch filled it."


def bound_and_expected(traced, gpu, flops: float, bound: str) -> str:
    """The lab checkers' closing items, a Markdown list: the `bound` of the model's prediction
    for the learner's trace `traced` on `gpu`, and the expected time (`gm.expect` with the
    kernel's `flops`): what holds a kernel like this, and why, with how well it is known."""
    from ..published import accuracy_note
    e = expect(traced, gpu, flops=flops)
    why = far_reason(e, traced.blocks)
    return (f"- Your kernel is bound by {part_name(bound)}.\n"
            f"- Expected (what a kernel like this gets): {fmt_time(e.time)}, held by {e.limiter}: {e.reason}.{why}\n"
            f"- The expected time, {accuracy_note()}.")


def lab_run(source: str, kernel: str, grid, block, args: list, out: int, want, rule: str, shared_mem: int = 0):
    """The lab checkers' first step: trace `kernel` (a name or a name expression) of the
    learner's CUDA C `source` over `grid` x `block` with `args` and `shared_mem` bytes of dynamic
    shared memory (`gm.lab.trace`), then compare the array `args[out]` with `want` (NumPy, to
    1e-4). Returns the `Trace`, or a `Feedback` that says what went wrong: the compile error,
    crash or out-of-bounds access, a race or uninitialized shared-memory read (a racy kernel is
    not scored: its result depends on timing), or the first wrong element and `rule`, the
    result the kernel owes. Chapter 2's lab."""
    try:
        traced = trace(source, kernel, grid, block, args, shared_mem=shared_mem)
    except (LabError, ValueError, TypeError) as error:
        return Feedback(False, str(error))
    LAB_TRACE.set(traced)
    if traced.races:
        others = len(traced.races) - 1
        more = f" ({others} more {'hazard' if others == 1 else 'hazards'} in the report)" if others else ""
        return Feedback(False, f"Not scored: the kernel's result depends on which thread runs first. The "
                        f"{traced.races[0].message}{more}")
    return _compared(traced, args[out], want, rule, "do grid x block threads cover every element?")


def lab_run_triton(source: str, kernel: str, grid, args: list, out: int, want, rule: str, **meta):
    """`lab_run` for a Triton kernel: `kernel` of the learner's Python `source` (`gm.lab.triton_kernel`)
    run over `grid` programs with `args` and the meta-parameters `meta` in Triton's interpreter
    (`gm.lab.trace_triton`), then `args[out]` compared with `want`. The `Trace`, or a `Feedback`
    that says what went wrong. Chapters 2, 4 and 5's Triton labs."""
    try:
        with np.errstate(all="ignore"):  # a NaN or inf in the result is said by the comparison below
            traced = trace_triton(triton_kernel(source, kernel), grid, args, **meta)
    except (LabError, ValueError, TypeError) as error:
        return Feedback(False, str(error))
    LAB_TRACE.set(traced)
    return _compared(traced, args[out], want, rule, "do the programs' blocks cover every element?")


def _compared(traced, got, want, rule: str, cover: str):
    """`traced`, or the `Feedback` that names the first element of `got` that differs from `want`
    (to 1e-4) and `rule`; `cover` asks what to check where the wrong ones are all still 0."""
    wrong = np.argwhere(~np.isclose(got, want, rtol=1e-4, atol=1e-5))
    if len(wrong):
        at = tuple(int(i) for i in wrong[0])
        where = ", ".join(map(str, at))
        unwritten = bool(np.all(got[tuple(wrong.T)] == 0))
        why = f" They are all still 0, as if never written: {cover}" if unwritten else ""
        return Feedback(False, f"{rule}: element [{where}] is {got[at]:g}, not {want[at]:g} "
                        f"({len(wrong):,} elements wrong).{why} Correctness first, then bytes.")
    return traced
