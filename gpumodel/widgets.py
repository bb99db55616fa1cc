"""Interactive figures, in the static site and in Jupyter alike. Used by the appendix and
every chapter with something to explore.

A figure to explore is a plain function `draw(**params) -> matplotlib Figure`; tests call it
without a browser. The same function becomes:

- `player(draw, states)`: every state drawn in advance into a PNG, and a small HTML/JS
  player (a slider and a play button) that needs no kernel, so it works in the built site;
- `explorer(draw, controls)`: an ipywidgets explorer that redraws on every change, for a
  live kernel (JupyterLab, Colab).

`show(...)` picks: the player while the book is built (`GPUMODEL_BUILD=book`, set by
`make book`), the explorer everywhere else.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import os

import matplotlib.pyplot as plt

_ids = itertools.count()


def png(fig, dpi: int = 72) -> bytes:
    """A figure as PNG bytes; the figure is closed."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    plt.close(fig)
    return buf.getvalue()


class Player:
    """Precomputed frames with a slider and a play button (HTML/JS, no kernel needed).

    `frames[i][t]` is the PNG of state i at time step t. With one time step the slider walks
    through the states; with several, a menu picks the state and the slider (or the play
    button) walks through time.
    """

    def __init__(self, frames: list[list[bytes]], labels: list[str], title: str, alt: str):
        if not frames or len(frames) != len(labels) or len({len(f) for f in frames}) != 1 or not frames[0]:
            raise ValueError("frames must hold, for each label, the same non-zero number of steps")
        self.frames, self.labels, self.title, self.alt = frames, labels, title, alt
        self.id = f"gm-player-{next(_ids)}"

    @property
    def steps(self) -> int:
        """Time steps per state (1 for a still figure per state)."""
        return len(self.frames[0])

    @property
    def nbytes(self) -> int:
        """Size of the HTML this player adds to a page, in bytes."""
        return len(self._repr_html_().encode())

    def _repr_html_(self) -> str:
        uris = [[f"data:image/png;base64,{base64.b64encode(f).decode()}" for f in state] for state in self.frames]
        title, alt = html.escape(self.title), html.escape(self.alt)
        animated = self.steps > 1
        last = (self.steps if animated else len(uris)) - 1
        menu = ""
        if animated and len(uris) > 1:
            options = "".join(f'<option value="{i}">{html.escape(label)}</option>' for i, label in enumerate(self.labels))
            menu = f'<select aria-label="{title}">{options}</select>'
        return f"""<div class="gm-player" id="{self.id}">
<img src="{uris[0][0]}" alt="{alt}" style="max-width:100%" data-state="0" data-frame="0">
<div style="display:flex;align-items:center;gap:0.6em;margin-top:0.3em;flex-wrap:wrap">
{menu}<button type="button" aria-label="Play {title}">&#9654; Play</button>
<input type="range" min="0" max="{last}" value="0" step="1" aria-label="{'time step' if animated else title}" style="flex:1">
<output aria-live="polite">{html.escape(self.labels[0])}</output>
</div>
<script>
(function () {{
  var root = document.getElementById("{self.id}");
  var frames = {json.dumps(uris)}, labels = {json.dumps(self.labels)}, animated = {json.dumps(animated)};
  var img = root.querySelector("img"), slider = root.querySelector("input"), menu = root.querySelector("select"),
      out = root.querySelector("output"), button = root.querySelector("button"), timer = null;
  function show() {{
    var state = animated ? (menu ? Number(menu.value) : 0) : Number(slider.value);
    var frame = animated ? Number(slider.value) : 0;
    img.src = frames[state][frame]; img.dataset.state = state; img.dataset.frame = frame;
    out.textContent = labels[state] + (animated ? " (step " + (frame + 1) + " of " + frames[state].length + ")" : "");
  }}
  slider.addEventListener("input", show);
  if (menu) menu.addEventListener("change", show);
  button.addEventListener("click", function () {{
    if (timer) {{ clearInterval(timer); timer = null; button.innerHTML = "&#9654; Play"; return; }}
    button.innerHTML = "&#10074;&#10074; Pause";
    timer = setInterval(function () {{
      slider.value = (Number(slider.value) + 1) % (Number(slider.max) + 1); show();
    }}, animated ? 250 : 900);
  }});
  show();
}})();
</script>
</div>"""


def player(draw, states: list[dict], labels: list[str] | None = None, title: str = "", alt: str = "",
           steps: int = 1, dpi: int = 72) -> Player:
    """Draw every state in advance and return a `Player` over them: `draw(**state)`, or
    `draw(**state, step=t)` for t in range(steps) when `steps` > 1 (an animation).
    `labels` name the states (default: their values); `alt` describes the figure."""
    if not states:
        raise ValueError("states must hold at least one state")
    if not alt:
        raise ValueError("alt must describe the figure for readers who cannot see it")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    labels = labels or [", ".join(str(v) for v in s.values()) for s in states]
    if steps == 1:
        frames = [[png(draw(**s), dpi)] for s in states]
    else:
        frames = [[png(draw(**s, step=t), dpi) for t in range(steps)] for s in states]
    return Player(frames, list(labels), title, alt)


def explorer(draw, controls: dict, steps: int = 1, allowed=None):
    """An ipywidgets explorer: a dropdown per parameter in `controls` (name -> options),
    redrawing `draw(**values)` on every change; with `steps` > 1, also a play button and a
    slider driving `draw(**values, step=t)`. A combination outside `allowed` (tuples of
    values in the order of `controls`), or one `draw` refuses with a ValueError, is not
    drawn: the explorer says why instead."""
    import ipywidgets as w
    from IPython.display import display

    if not controls:
        raise ValueError("controls must name at least one parameter")
    inputs = {}
    for name, options in controls.items():
        options = list(options)
        if not options:
            raise ValueError(f"controls[{name!r}] must offer at least one option")
        inputs[name] = w.Dropdown(options=options, description=name)
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
            chosen = ", ".join(f"{name} = {values[name]}" for name in controls)
            if allowed is not None and tuple(values[name] for name in controls) not in allowed:
                print(f"Not available: {chosen} cannot launch, or is not covered here. Pick another combination.")
                return
            try:
                figure = draw(**values)
            except ValueError as err:
                print(f"Not available: {err}")
                return
            display(figure)
            plt.close("all")

    w.interactive_output(update, inputs)
    return w.VBox([w.HBox(row), out])


def building_book() -> bool:
    """True while `make book` executes the chapters (it sets GPUMODEL_BUILD=book)."""
    return os.environ.get("GPUMODEL_BUILD") == "book"


def show(draw, states: list[dict], labels=None, title: str = "", alt: str = "", steps: int = 1):
    """The player while the book is built, the explorer in a live kernel. The explorer
    offers, for each parameter, the values it takes in `states`, and draws only the
    combinations that are states."""
    if building_book():
        return player(draw, states, labels, title, alt, steps)
    controls = {name: list(dict.fromkeys(s[name] for s in states)) for name in states[0]}
    return explorer(draw, controls, steps, allowed={tuple(s[name] for name in controls) for s in states})
