"""Interactive figures and widget exercises, in the static site and in Jupyter alike.

A figure to explore is a plain function `draw(**params) -> matplotlib Figure`; tests call it
without a browser. `controls` names its parameters, each with the values it offers, and
every combination is a state (the controls are independent). The same function becomes:

- `player(draw, controls)`: every state drawn in advance (SVG), with one menu per control
  (and a play button for an animation), for the built site: no kernel needed. A state that
  `draw` refuses with a ValueError shows the reason instead of a picture.
- `explorer(draw, controls)`: ipywidgets that redraw on every change, in a live kernel.

A `WidgetExercise` is an explorer of the model with a question and an answer box: its view
is HTML (bars drawn from the model's numbers), its answer judged by rules computed by
`gpumodel.course.checks` (`number_rules`, `choice_rules`), in Python in Jupyter and in the
browser on the site. A `Checkpoint` is a question with an answer box and no explorer, and
`answer_box` the box alone (an unanswered code-cell exercise shows one on the site). The
site's script is `_static/widgets.js`; it keeps what was answered right in the browser.

`show(...)` and `WidgetExercise.show()` pick: the static version while the book is built
(`GPUMODEL_BUILD=book`, set by `make book`), the live one everywhere else.
"""

from __future__ import annotations

import ast
import html
import itertools
import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Callable

from .. import _check
from ..model import BOUNDS, predict
from ..units import fmt_time, superscript
from ..lab.runner import printed
from .checks import LAB_TRACE, Feedback, _data_html, _form_html, answer_box, building_book, record, verdict
from .plots import PART_LABELS, lab_sites, svg

_ids = itertools.count()


def _options(controls: dict, labels: dict | None = None) -> dict:
    """Each control's options as display labels (`labels[name](value)`, else `str(value)`)."""
    if not controls:
        raise ValueError("controls must name at least one parameter")
    labels = labels or {}
    out = {}
    for name, options in controls.items():
        control_word(name)  # a control a reader cannot read is refused here, before anything is drawn
        options = list(options)
        if not options:
            raise ValueError(f"controls[{name!r}] must offer at least one option")
        out[name] = [labels.get(name, str)(v) for v in options]
    return out


def _states(controls: dict, compute: Callable) -> tuple[list, dict]:
    """`compute(**values)` for every combination of the controls, shared: the distinct
    results, and each state's key ("i|j|...", option indices) -> result index."""
    names = list(controls)
    distinct, index, keys = [], {}, {}
    for combo in itertools.product(*(enumerate(controls[n]) for n in names)):
        result = compute(**{n: v for n, (_, v) in zip(names, combo)})
        text = json.dumps(result)
        if text not in index:
            index[text] = len(distinct)
            distinct.append(result)
        keys["|".join(str(i) for i, _ in combo)] = index[text]
    return distinct, keys


CONTROL_WORDS = {
    "gpu": "GPU", "seq": "sequence length", "head_dim": "head dimension", "smem_kib": "shared memory per block",
    "elem": "element size", "ops": "steps in the chain", "width": "load width", "loads": "loads in flight",
    "kind": "attention", "drift": "drift in K", "dtype": "data type", "weight": "weights", "fused": "fusion",
    "block": "block tile", "thread": "thread tile", "group": "group size", "n": "size n",
    "kernels": "kernels launched", "math": "math units", "gpus": "GPUs",
}
"""The words a menu is labelled with, by control name, where the name is not itself a word."""


def control_word(name: str) -> str:
    """The label of control `name` on the site and in Jupyter: `CONTROL_WORDS[name]`, or the
    name where it is a word; a name that is an identifier and has no words is refused."""
    if name in CONTROL_WORDS:
        return CONTROL_WORDS[name]
    if not name.isalpha():
        raise ValueError(f"controls: {name!r} is an identifier, not a word a reader should see; "
                         f"give it words in CONTROL_WORDS")
    return name


def _menus_html(options: dict) -> str:
    """One labelled <select> per control, for widgets.js."""
    menus = []
    for name, labels in options.items():
        items = "".join(f'<option value="{i}">{html.escape(label)}</option>' for i, label in enumerate(labels))
        menus.append(f'<label>{html.escape(control_word(name))} <select data-control="{html.escape(name)}">{items}</select></label>')
    return "".join(menus)


def _pack(texts: list) -> tuple[list, list]:
    """`texts` that repeat one another (a player's SVG frames, an exercise's HTML views) as a
    table of their distinct pieces (each piece starts at a "<") and, per text, the runs of
    consecutive table entries that spell it: an index for one piece, an index and minus the
    count for several ([7, 12, -30] is piece 7, then pieces 12 to 41). A page then carries
    each axis, label or bar that the texts share once; widgets.js spells them."""
    pieces, index, spelled = [], {}, []
    for text in texts:
        runs = []  # [first, count] each
        for piece in filter(None, re.split(r"(?=<)", text)):
            i = index.setdefault(piece, len(pieces))
            if i == len(pieces):
                pieces.append(piece)
            if runs and sum(runs[-1]) == i:
                runs[-1][1] += 1
            else:
                runs.append([i, 1])
        spelled.append([n for first, count in runs for n in ([first] if count == 1 else [first, -count])])
    return pieces, spelled


@dataclass
class Player:
    """Precomputed SVG frames, one list of `steps` frames per state, with a menu per control
    and a play button when animated. `frames[i]` is a list of SVG texts, or a string: why
    that state is not available. `states` maps "i|j|..." to an index in `frames`. On the page
    the frames are packed (`_pack`)."""

    options: dict
    frames: list
    states: dict
    title: str
    alt: str
    steps: int = 1
    id: str = field(default_factory=lambda: f"gm-player-{next(_ids)}")

    @property
    def nbytes(self) -> int:
        """Size of the HTML this player adds to a page, in bytes."""
        return len(self._repr_html_().encode())

    def _repr_html_(self) -> str:
        play = ""
        if self.steps > 1:
            play = ('<button type="button" data-play>&#9654; Play</button>'
                    f'<input type="range" min="0" max="{self.steps - 1}" value="0" aria-label="time step">')
        pieces, runs = _pack([svg for frames in self.frames if not isinstance(frames, str) for svg in frames])
        runs = iter(runs)
        frames = [frames if isinstance(frames, str) else [next(runs) for _ in frames] for frames in self.frames]
        data = {"pieces": pieces, "frames": frames, "states": self.states}
        return (f'<div class="gm-player gm-widget" id="{self.id}">'
                f'<div class="gm-controls" role="group" aria-label="{html.escape(self.title)}">'
                f'{_menus_html(self.options)}{play}</div>'
                f'<img class="gm-frame" alt="{html.escape(self.alt)}"><p class="gm-refused" hidden></p>'
                f'{_data_html(data)}</div>')


def player(draw, controls: dict, labels: dict | None = None, title: str = "", alt: str = "", steps: int = 1) -> Player:
    """Draw every combination of `controls` (name -> values) in advance: `draw(**values)`, or
    `draw(**values, step=t)` for t in range(steps) when `steps` > 1 (an animation). `labels`
    maps a control to a function naming its values; `alt` describes the figure."""
    if not alt:
        raise ValueError("alt must describe the figure for readers who cannot see it")
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    options = _options(controls, labels)

    def frames(**values):
        try:
            if steps == 1:
                return [svg(draw(**values))]
            return [svg(draw(**values, step=t)) for t in range(steps)]
        except ValueError as err:
            return f"Not available: {err}."

    distinct, states = _states(controls, frames)
    return Player(options, distinct, states, title, alt, steps)


def _dropdowns(controls: dict, labels: dict | None):
    """An ipywidgets Dropdown per control, its options labelled as on the site."""
    import ipywidgets as w

    names = _options(controls, labels)
    return {name: w.Dropdown(options=list(zip(names[name], controls[name])), description=control_word(name),
                             style={"description_width": "initial"})
            for name in controls}


def explorer(draw, controls: dict, labels: dict | None = None, steps: int = 1):
    """An ipywidgets explorer: a dropdown per parameter in `controls` (name -> values),
    redrawing `draw(**values)` on every change; with `steps` > 1, also a play button and a
    slider driving `draw(**values, step=t)`. A combination `draw` refuses with a ValueError
    is not drawn: the explorer says why instead."""
    import ipywidgets as w
    from IPython.display import display

    inputs = _dropdowns(controls, labels)
    row = list(inputs.values())
    if steps > 1:
        inputs["step"] = w.IntSlider(min=0, max=steps - 1, description="step")
        play = w.Play(min=0, max=steps - 1, interval=250)
        w.jslink((play, "value"), (inputs["step"], "value"))
        row += [play, inputs["step"]]
    out = w.Output()

    def update(**values):
        with out:
            out.clear_output(wait=True)
            try:
                figure = draw(**values)
            except ValueError as err:
                print(f"Not available: {err}.")
                return
            display(figure)

    w.interactive_output(update, inputs)
    return w.VBox([w.HBox(row, layout=w.Layout(flex_flow="row wrap")), out])


def show(draw, controls: dict, labels: dict | None = None, title: str = "", alt: str = "", steps: int = 1):
    """The player while the book is built, the explorer in a live kernel."""
    if building_book():
        return player(draw, controls, labels, title, alt, steps)
    return explorer(draw, controls, labels, steps)


@dataclass(frozen=True)
class WidgetExercise:
    """An exercise answered by exploring: `controls` (name -> values, independent), `view`
    (values -> HTML, the model's answer for them; a ValueError means that combination cannot
    run, and its message says why), and `rules` for the typed answer (see
    `gpumodel.course.checks.number_rules`). `prompt` labels the answer box. `asks`: the states
    (control -> value, each control named) the question asks the learner to read to find the
    answer, built from the exercise's own parameters (`asked`): the state of a ratio's two
    readings; a swept control's values up to the answer for "the smallest"; one past it for
    "the most"; all of them for "which" or "how many". The widget must show each one
    (tests/test_widgets.py holds every exercise to it)."""

    key: str
    controls: dict
    view: Callable
    rules: dict = field(repr=False)  # the answer: never printed
    prompt: str
    labels: dict = field(default_factory=dict)
    asks: tuple = ()

    def __post_init__(self):
        for state in self.asks:
            if not isinstance(state, dict) or set(state) != set(self.controls):
                raise ValueError(f"asks must hold states naming each control of {list(self.controls)} once, got {state!r}")
            why = self.refused(**state)
            if why:
                raise ValueError(f"asks must hold states the widget shows: {self.key} asks about {state}, which it "
                                 f"refuses ({why})")

    def refused(self, **values) -> str | None:
        """Why the widget refuses the state `values` (the view's ValueError), or None when it
        shows it."""
        try:
            self.render(**values)
            self.view(**values)
        except ValueError as err:
            return str(err)
        return None

    def render(self, **values) -> str:
        """The view of one combination (a value from each control's menu), or the sentence
        saying why it cannot run."""
        if set(values) != set(self.controls):
            raise ValueError(f"values must name each control of {list(self.controls)} once, got {sorted(values)}")
        for name, value in values.items():
            _check.member(name, value, self.controls[name])
        try:
            return self.view(**values)
        except ValueError as err:
            return f'<p class="gm-refused">Cannot run: {html.escape(str(err))}.</p>'

    def check(self, answer) -> Feedback:
        """Judge a typed answer (text, as from the box) or a number, by the rules."""
        return record(f"explore: {self.key}", verdict(self.rules, answer))

    def _repr_html_(self) -> str:
        views, states = _states(self.controls, self.render)
        pieces, views = _pack(views)
        return (f'<div class="gm-exercise gm-widget" id="gm-exercise-{self.key}">'
                f'<div class="gm-controls" role="group" aria-label="explore">'
                f'{_menus_html(_options(self.controls, self.labels))}</div>'
                f'{BAR_STYLE}<div class="gm-view" aria-live="polite"></div>'
                f'{_form_html(self.rules, self.prompt)}'
                f'{_data_html({"pieces": pieces, "views": views, "states": states, "rules": self.rules})}</div>')

    def widget(self):
        """The same exercise as ipywidgets on the live model."""
        import ipywidgets as w

        inputs = _dropdowns(self.controls, self.labels)
        view = w.HTML()

        def update(change=None):
            view.value = BAR_STYLE + self.render(**{name: box.value for name, box in inputs.items()})

        for box in inputs.values():
            box.observe(update, names="value")
        update()
        return w.VBox([w.HBox(list(inputs.values()), layout=w.Layout(flex_flow="row wrap")), view,
                       *_answer_widgets(self.prompt, self.check)])

    def show(self):
        """The static exercise while the book is built, the live widget elsewhere."""
        return self if building_book() else self.widget()


def asked(**values) -> tuple:
    """The states a widget exercise's question asks about (`WidgetExercise.asks`): every
    combination of `values` (control -> one value, or a list or tuple of values), each a
    dict naming every control given. `asked(gpu="L4", n=[1, 2])` is ({"gpu": "L4", "n": 1},
    {"gpu": "L4", "n": 2})."""
    if not values:
        raise ValueError("values must name at least one control")
    options = {name: list(v) if isinstance(v, (list, tuple)) else [v] for name, v in values.items()}
    for name, v in options.items():
        if not v:
            raise ValueError(f"values[{name!r}] must hold at least one value")
    return tuple(dict(zip(options, combo)) for combo in itertools.product(*options.values()))


def upto(options, answer, past: int = 0) -> list:
    """`options` from the first to `answer`, and `past` more after it: the values a learner
    steps through to find the smallest (`past` 0) or the most (`past` 1) that qualifies."""
    options = list(options)
    _check.member("answer", answer, options)
    return options[:options.index(answer) + 1 + past]


def _answer_widgets(prompt: str, check) -> list:
    """An ipywidgets answer row (text and a Check button) and its verdict, judged by `check`."""
    import ipywidgets as w

    answer = w.Text(description=prompt, style={"description_width": "initial"})
    button = w.Button(description="Check")
    result = w.HTML()

    def judge(_=None):
        feedback = check(answer.value)
        result.value = f"<p><b>{'Right.' if feedback else 'Not yet.'}</b> {_inline_html(feedback.message)}</p>"

    button.on_click(judge)
    return [w.HBox([answer, button]), result]


@dataclass(frozen=True)
class Checkpoint:
    """A short question at the end of a section, with a typed answer judged by `rules`
    (`gpumodel.course.checks`): on the site an answer box checked in the browser, in Jupyter
    the same box as ipywidgets. `key` names it in the reader's progress ("cp-<chapter>-...")."""

    key: str
    question: str
    rules: dict = field(repr=False)  # the answer: never printed
    prompt: str

    @property
    def label(self) -> str:
        """The answer box's label: the prompt, with the unit asked for."""
        unit = self.rules.get("unit", "")
        return f"{self.prompt} ({unit})" if unit and unit != self.prompt else self.prompt

    def check(self, answer) -> Feedback:
        """Judge a typed answer or a number by the rules, and note it in this session's progress."""
        return record(self.key, verdict(self.rules, answer))

    def _repr_html_(self) -> str:
        return answer_box(self.rules, self.label, self.key, f"<b>Checkpoint.</b> {_inline_html(self.question)}")

    def widget(self):
        """The checkpoint as ipywidgets."""
        import ipywidgets as w

        asked = w.HTML(f"<p><b>Checkpoint.</b> {_inline_html(self.question)}</p>")
        return w.VBox([asked, *_answer_widgets(self.label, self.check)])

    def show(self):
        """The static box while the book is built, the live widget elsewhere."""
        return self if building_book() else self.widget()


def bars(caption: str, rows: list) -> str:
    """A small bar chart as HTML: `rows` of (label, value >= 0, text, highlighted); bars
    scale to the largest value, the highlighted ones red."""
    top = max((value for _, value, _, _ in rows), default=0) or 1
    lines = []
    for label, value, text, hot in rows:
        colour = "#c0392b" if hot else "#2e86c1"
        lines.append(f'<div class="gm-bar"><span>{html.escape(label)}</span>'
                     f'<span class="gm-track"><span style="width:{100 * value / top:.1f}%;background:{colour}"></span>'
                     f'</span><span>{html.escape(text)}</span></div>')
    return f'<div class="gm-bars"><p class="gm-caption">{caption}</p>{"".join(lines)}</div>'


BAR_STYLE = ("<style>.gm-bar{display:flex;align-items:center;gap:.5em;margin:.15em 0;font-size:.9em}"
             ".gm-bar>span:first-child{flex:0 0 8.5em}.gm-bar>span:last-child{flex:0 0 7em;text-align:right}"
             ".gm-track{flex:1 1 auto;height:1em;background:rgba(127,127,127,.18)}.gm-track>span{display:block;"
             "height:100%}.gm-caption{margin:.2em 0 .4em}</style>")
"""The bar charts' style, sent with each exercise (Jupyter loads no site CSS)."""


GPUS = ("V100", "T4", "A100-40GB", "RTX-4090", "L4", "H100-SXM", "H200", "B200")
"""The GPUs the explorers offer: one or two of each generation."""


def _power(n: int) -> str:
    """A power of two as a menu names it: `8,388,608 (2²³)`."""
    return f"{n:,} (2{superscript(int(math.log2(n)))})"


def prediction_view(workload, gpu, title: str) -> str:
    """The model's answer as bars: the time each part needs, the bound's bar red."""
    p = predict(workload, gpu)
    times = {part: float(t) for part, t in p.times.items()}
    labels = {**PART_LABELS, **({} if workload.math == "fp32" else {"compute": "tensor cores"})}  # where the math runs
    rows = [(labels[part], times[part], fmt_time(times[part]) if times[part] else "0", part == p.bound)
            for part in BOUNDS]
    return bars(f"{title} on the {p.gpu.name}: <b>{fmt_time(p.time)}</b>, bound by "
                f"<b>{labels[str(p.bound)]}</b>", rows)


def _inline_html(text: str) -> str:
    """Markdown's `code` spans of `text` as HTML, the rest escaped."""
    parts = text.split("`")
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


_DIAGNOSTIC = re.compile(r"^\S+:\d+(?::\d+)?: |^\S+: (?:in function|In) |^\.\.\. and \d+ more errors")
"""A compiler's line (builder.diagnostics): "kernel.cu:7:44: error: ...", "... and 3 more errors"."""


def _listing(text: str) -> str:
    return '<pre style="overflow-x: auto"><code>' + html.escape(text) + "</code></pre>"


def feedback_html(feedback: Feedback) -> str:
    """A lab's verdict as HTML: "Right." or "Not yet.", then its message's paragraphs, a
    Markdown list as a list, a Markdown table (a capstone score's bytes per level) as an HTML table, an
    indented code block (what the kernel printed, the lines a verdict cites) and a compiler's
    errors (one a line) as listings, escaped."""
    blocks = []
    for i, block in enumerate(feedback.message.split("\n\n")):
        lines = block.strip().splitlines()
        code = block.strip("\n").splitlines()
        errors = [line for line in lines[1:] if _DIAGNOSTIC.match(line)]
        if errors:  # "the kernel does not compile:", then g++'s lines, then what to do
            first = next(j for j, line in enumerate(lines) if _DIAGNOSTIC.match(line))
            last = max(j for j, line in enumerate(lines) if _DIAGNOSTIC.match(line))
            lead = f"<b>{'Right.' if feedback else 'Not yet.'}</b> " if i == 0 else ""
            blocks.append(f"<p>{lead}{_inline_html(' '.join(lines[:first]))}</p>{_listing(chr(10).join(lines[first:last + 1]))}")
            blocks += [f"<p>{_inline_html(line)}</p>" for line in lines[last + 1:]]
        elif i and code and all(line.startswith("    ") for line in code):
            blocks.append(_listing("\n".join(line[4:] for line in code)))
        elif lines and all(line.startswith("- ") for line in lines):
            blocks.append("<ul>" + "".join(f"<li>{_inline_html(line[2:])}</li>" for line in lines) + "</ul>")
        elif lines and all(line.startswith("|") for line in lines):
            rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if not set(line) <= set("|- ")]
            head, *body = rows
            blocks.append("<table><thead><tr>" + "".join(f"<th>{_inline_html(c)}</th>" for c in head) + "</tr></thead>"
                          "<tbody>" + "".join("<tr>" + "".join(f"<td>{_inline_html(c)}</td>" for c in row) + "</tr>"
                                              for row in body) + "</tbody></table>")
        else:
            lead = f"<b>{'Right.' if feedback else 'Not yet.'}</b> " if i == 0 else ""
            blocks.append(f"<p>{lead}{_inline_html(block.strip())}</p>")
    return f'<div class="gm-verdict-lab">{"".join(blocks)}</div>'


_CITED = re.compile(r"\blines? (\d+)(?: and (\d+))?|kernel\.cu:(\d+)")
MOST_CITED = 6
"""The most lines of the learner's source a verdict quotes."""


def cited(feedback: Feedback, source: str) -> Feedback:
    """`feedback` with the lines of `source` its message names ("line 7", "lines 7 and 12",
    "kernel.cu:7:44") quoted below it with their numbers, in order, at most `MOST_CITED`: the
    editor shows none."""
    rows = source.splitlines()
    named = {int(n) for m in _CITED.finditer(feedback.message) for n in m.groups() if n}
    numbers = sorted(named & set(range(1, len(rows) + 1)))
    if not numbers:
        return feedback
    width = len(str(numbers[-1]))
    quoted = "\n".join(f"    {n:>{width}} | {rows[n - 1]}" for n in numbers[:MOST_CITED])
    return replace(feedback, message=f"{feedback.message}\n\nThe lines it names:\n\n{quoted}")


VERDICT_OUTPUT_LINES = 10
"""Lines of the kernel's printf output the lab editor's verdict shows (the first; the rest counted)."""

LAB_STYLE = "<style>.gm-lab-source textarea { font-family: monospace; font-size: 13px; }</style>"


@dataclass(frozen=True)
class LabEditor:
    """A lab exercise's kernel, to edit and check: `starter` (CUDA C) and `check`, the chapter's
    lab checker (source -> `Feedback`: the kernel traced on the CPU, its result against NumPy,
    then its bytes). `launch` (e.g. {"grid": (4, 4), "block": (16, 16)}), where the learner
    chooses the launch, is passed to `check` as keywords and can be edited too. In Jupyter and
    Colab a text box and a button; on the site the starter as a listing with its verdict when
    the book was built. `key` names it in the reader's progress (empty: `check` notes it itself)."""

    starter: str
    check: Callable
    key: str = ""
    launch: dict = field(default_factory=dict)

    def judge(self, source: str, **launch) -> Feedback:
        """`check(source, **launch)` (this editor's `launch` where not given), noted in this
        session's progress."""
        return self._judged(source, **launch)[0]

    def _judged(self, source: str, **launch) -> tuple:
        """`judge`'s feedback, the lines it names quoted (`cited`) and what the kernel printed
        appended (the first `VERDICT_OUTPUT_LINES`),
        and the HTML of the sites its trace found (`sites_html`), empty where nothing was traced."""
        token = LAB_TRACE.set(None)
        try:
            feedback = self.check(source, **{**self.launch, **launch})
            traced = LAB_TRACE.get()
        finally:
            LAB_TRACE.reset(token)
        feedback = cited(record(self.key, feedback) if self.key else feedback, source)
        if traced is not None and traced.output:  # a failed run's LabError already ends with it
            feedback = replace(feedback, message=f"{feedback.message}\n\nYour kernel printed (on the CPU, in the lab's "
                               f"thread order, not a GPU's):\n\n{printed(traced.output, VERDICT_OUTPUT_LINES)}")
        return feedback, sites_html(traced)

    def _repr_html_(self) -> str:
        launched = "".join(f", {name} <code>{value}</code>" for name, value in self.launch.items())
        feedback, sites = self._judged(self.starter)
        return (f'<div class="gm-lab"><pre class="gm-lab-source" style="overflow-x: auto"><code>'
                f"{html.escape(self.starter.strip())}</code></pre>"
                f'<div style="{BESIDE}"><div style="flex: 1 1 18em; min-width: 0"><p><b>The starter{launched}, checked when this page '
                f"was built:</b></p>{feedback_html(feedback)}</div>{sites}</div>"
                "<p>In Jupyter or Colab this is an editor: change the kernel and press <i>Trace and check</i>.</p></div>")

    def widget(self):
        """The editor as ipywidgets: the source in a text box, a row with the launch (where the
        learner chooses it) and, while the source holds a template kernel, the name expression
        to check (`kernel`, "softmax<128>"), Trace and check, and Start over."""
        import ipywidgets as w

        from ..lab.reader import declarations

        source = self.starter.strip()
        box = w.Textarea(value=source, layout=w.Layout(width="100%", height=f"{1.5 * (source.count(chr(10)) + 2):.0f}em"))
        box.add_class("gm-lab-source")
        launch = {name: w.Text(value=str(value), description=name) for name, value in self.launch.items()}
        kernel = w.Text(value="", description="kernel", placeholder="a name expression: softmax<128>")
        run, reset = w.Button(description="Trace and check", button_style="primary"), w.Button(description="Start over")
        result = w.HTML()

        def templates(_=None):
            kernel.layout.display = "" if any(k.template for k in declarations(box.value)) else "none"

        def judge(_=None):
            result.value = "<p>Tracing on the CPU...</p>"
            try:
                chosen = {name: _launch_value(name, text.value) for name, text in launch.items()}
            except ValueError as err:
                result.value = f"<p><b>Not yet.</b> {html.escape(str(err))}</p>"
                return
            if kernel.layout.display != "none" and kernel.value.strip():
                chosen["kernel"] = kernel.value.strip()
            feedback, sites = self._judged(box.value, **chosen)
            result.value = f'<div style="{BESIDE}"><div style="flex: 1 1 18em; min-width: 0">{feedback_html(feedback)}</div>{sites}</div>'

        def start_over(_=None):
            box.value, result.value = source, ""
            for name, text in launch.items():
                text.value = str(self.launch[name])

        run.on_click(judge)
        reset.on_click(start_over)
        box.observe(templates, names="value")
        templates()
        return w.VBox([w.HTML(LAB_STYLE), box, w.HBox([*launch.values(), kernel]), w.HBox([run, reset]), result])

    def show(self):
        """The listing while the book is built, the editor elsewhere."""
        return self if building_book() else self.widget()


BESIDE = "display: flex; flex-wrap: wrap; gap: 0.8em; align-items: flex-start"
"""A verdict and its sites' figure side by side where the column has room, else one above the other."""


def sites_html(traced) -> str:
    """The sites of a lab trace (`plots.lab_sites`: each load and store's cost against its ideal)
    as an inline SVG that shrinks to its column; empty for None or a trace with no access."""
    if traced is None or not traced.sites:
        return ""
    figure = svg(lab_sites(traced)).replace("<svg ", '<svg style="max-width: 100%; height: auto" ', 1)
    return f'<div class="gm-lab-sites" style="flex: 0 1 auto; max-width: 100%">{figure}</div>'


def _launch_value(name: str, text: str):
    """A launch dimension typed in the editor: an int or a tuple of 1 to 3 ints."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError):
        value = None
    dims = value if isinstance(value, tuple) else (value,)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
        raise ValueError(f"{name} must be a positive int or a tuple of 1 to 3 of them, like (4, 4); got {text!r}")
    return value
