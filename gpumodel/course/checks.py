"""How an exercise's answer is checked: a learner's answer in, right or not with the reason
out. The checkers of each chapter's exercises, built on these, are in the chapter's own file
(`gpumodel.course.hierarchy`, ...).

A checker returns `Feedback`, which prints as a sentence and is truthy when right. `None`
means "not answered yet". A wrong answer gets a hint (units, a factor, where to look), never
the answer; the reasoning comes with the right one. An answer of the wrong type (a string
or a list where a number is expected) gets a sentence, not a traceback. A number may be a
Python or NumPy number, or a 0-d array.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import _check


@dataclass(frozen=True)
class Feedback:
    """Whether an answer is right, and why (or a hint)."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __str__(self) -> str:
        return ("Right. " if self.correct else "Not yet. ") + self.message

    def _repr_markdown_(self) -> str:
        return ("**Right.** " if self.correct else "**Not yet.** ") + self.message


def _wrong_type(answer, wanted: str) -> Feedback:
    """The sentence for an answer that is not what the question asks for."""
    shown = repr(answer)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    return Feedback(False, f"The answer should be {wanted}; {shown} is a {type(answer).__name__}. "
                    "Replace it and run the cell again.")


POWER_OF_TEN = "by a power of ten: check the units."
FACTOR_OF_TWO = "by a factor of two: is every flop counted (an FMA is two), and every byte (reads and writes)?"


def number_rules(expected: float, unit: str, rtol: float = 0.02, explain: str = "", hint: str = "") -> dict:
    """How a numeric answer is judged, as data (JSON), so that Python (`verdict`) and the
    static site's answer boxes judge alike: right within `rtol` of `expected` (in `unit`);
    otherwise the first band of `value / expected` that holds it names the mistake (a wrong
    sign, a power of ten, a factor of two, close), else "too high" or "too low". `hint`
    (which must not give the answer away) follows every wrong verdict; `explain` the right one."""
    expected = _check.real("expected", expected)
    rtol = _check.real("rtol", rtol, least=0)
    closeness = f"within {100 * rtol:g}% of {expected:.4g} {unit}" if rtol else "exactly it"
    bands = [[-1e308, 0.0, "The sign is wrong."]]
    for decades in (-3, -2, -1, 1, 2, 3):
        direction = "high" if decades > 0 else "low"
        bands.append([10 ** (decades - 0.05), 10 ** (decades + 0.05), f"Too {direction} {POWER_OF_TEN}"])
    bands += [[1.95, 2.05, f"Too high {FACTOR_OF_TWO}"], [0.4875, 0.5125, f"Too low {FACTOR_OF_TWO}"],
              [0.9, 1.0, "Close, but a little too low: carry more digits, or check a rounded figure."],
              [1.0, 1.1, "Close, but a little too high: carry more digits, or check a rounded figure."]]
    suffix = f" {hint}" if hint else ""
    return {"kind": "number", "answer": expected, "unit": unit, "rtol": rtol,
            "right": f"That is {closeness}. {explain}".strip(),
            "bands": [[lo, hi, text + suffix] for lo, hi, text in bands] if expected else [],
            "high": "Too high." + suffix, "low": "Too low." + suffix,
            "not_number": f"Type a number in {unit}."}


def choice_rules(answer: str, wrong: dict, explain: str = "") -> dict:
    """How a named answer (one word, say a GPU) is judged, as data: right when it is
    `answer` (case and spaces ignored); `wrong` maps every other accepted name to its hint."""
    if not isinstance(answer, str):
        raise TypeError(f"answer must be the right name as a string, got {answer!r}")
    if not isinstance(wrong, dict) or not all(isinstance(name, str) for name in wrong):
        raise TypeError(f"wrong must be a dict from names (strings) to hints, got {wrong!r}")
    key = _key(answer)
    if key in map(_key, wrong):
        raise ValueError(f"wrong must not hold the answer {answer!r}")
    return {"kind": "choice", "answer": key, "right": explain,
            "wrong": {_key(name): text for name, text in wrong.items()},
            "not_number": f"Type one of: {', '.join([answer, *wrong])}."}


def _key(name: str) -> str:
    """A typed name as the rules compare it: lower case, no spaces."""
    return "".join(str(name).lower().split())


NUMBER_KEYS = {"answer", "rtol", "right", "bands", "high", "low", "not_number"}
CHOICE_KEYS = {"answer", "right", "wrong", "not_number"}
"""The keys `verdict` reads of the rules `number_rules` and `choice_rules` make."""


def verdict(rules: dict, answer) -> Feedback:
    """Judge `answer` by `rules` (`number_rules` or `choice_rules`). Text is read as the
    answer box on the site reads it; a number may be Python's or NumPy's."""
    made = {"number": NUMBER_KEYS, "choice": CHOICE_KEYS}
    if not isinstance(rules, dict) or rules.get("kind") not in made or not made[rules["kind"]] <= set(rules):
        raise TypeError(f"rules must be made by number_rules or choice_rules, got {rules!r}")
    if rules["kind"] == "choice":
        key = _key(answer) if isinstance(answer, str) else None
        if key == rules["answer"]:
            return Feedback(True, rules["right"])
        return Feedback(False, rules["wrong"].get(key, rules["not_number"]))
    if isinstance(answer, str):
        try:
            answer = float(answer.strip())
        except ValueError:
            return Feedback(False, rules["not_number"])
    value = _check.answer(answer)
    if value is None:
        return Feedback(False, rules["not_number"])
    expected = rules["answer"]
    if math.isclose(value, expected, rel_tol=rules["rtol"]):
        return Feedback(True, rules["right"])
    ratio = value / expected if expected else None
    for lo, hi, text in rules["bands"]:
        if ratio is not None and lo <= ratio < hi:
            return Feedback(False, text)
    return Feedback(False, rules["high"] if value > expected else rules["low"])


def check_number(answer, expected: float, unit: str, rtol: float = 0.02, explain: str = "", hint: str = "") -> Feedback:
    """Right when `answer` is within `rtol` of `expected` (both in `unit`). `explain` comes
    with a right answer; `hint` (which must not give the answer away) with a wrong one."""
    if answer is None:
        return Feedback(False, f"No answer yet: replace None with a number in {unit}.")
    value = _check.answer(answer)
    if value is None:
        return _wrong_type(answer, f"a number in {unit}")
    judged = verdict(number_rules(expected, unit, rtol, explain, hint), value)
    return Feedback(judged.correct, f"{value:g} {unit}: {judged.message}")
