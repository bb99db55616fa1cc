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
    """Precomputed frames with a slider and a play button (HTML/JS, no kernel needed)."""

    def __init__(self, frames: list[bytes], labels: list[str], title: str, alt: str):
        if not frames or len(frames) != len(labels):
            raise ValueError(f"frames and labels must be non-empty and of one length, got {len(frames)} and {len(labels)}")
        self.frames, self.labels, self.title, self.alt = frames, labels, title, alt
        self.id = f"gm-player-{next(_ids)}"

    @property
    def nbytes(self) -> int:
        """Size of the HTML this player adds to a page, in bytes."""
        return len(self._repr_html_().encode())

    def _repr_html_(self) -> str:
        uris = [f"data:image/png;base64,{base64.b64encode(f).decode()}" for f in self.frames]
        last = len(uris) - 1
        title, alt = html.escape(self.title), html.escape(self.alt)
        return f"""<div class="gm-player" id="{self.id}">
<img src="{uris[0]}" alt="{alt}" style="max-width:100%" data-frame="0">
<div style="display:flex;align-items:center;gap:0.6em;margin-top:0.3em">
<button type="button" aria-label="Play through {title}">&#9654; Play</button>
<input type="range" min="0" max="{last}" value="0" step="1" aria-label="{title}" style="flex:1">
<output aria-live="polite">{html.escape(self.labels[0])}</output>
</div>
<script>
(function () {{
  var root = document.getElementById("{self.id}");
  var frames = {json.dumps(uris)}, labels = {json.dumps(self.labels)};
  var img = root.querySelector("img"), slider = root.querySelector("input"),
      out = root.querySelector("output"), button = root.querySelector("button"), timer = null;
  function show(i) {{
    img.src = frames[i]; img.dataset.frame = i; slider.value = i; out.textContent = labels[i];
  }}
  slider.addEventListener("input", function () {{ show(Number(slider.value)); }});
  button.addEventListener("click", function () {{
    if (timer) {{ clearInterval(timer); timer = null; button.innerHTML = "&#9654; Play"; return; }}
    button.innerHTML = "&#10074;&#10074; Pause";
    timer = setInterval(function () {{ show((Number(slider.value) + 1) % frames.length); }}, 900);
  }});
}})();
</script>
</div>"""


def player(draw, states: list[dict], labels: list[str] | None = None, title: str = "", alt: str = "",
           dpi: int = 72) -> Player:
    """Draw `draw(**state)` for every state in advance and return a `Player` over them.
    `labels` name the states (default: the states' values); `alt` describes the figure."""
    if not states:
        raise ValueError("states must hold at least one state")
    if not alt:
        raise ValueError("alt must describe the figure for readers who cannot see it")
    labels = labels or [", ".join(str(v) for v in s.values()) for s in states]
    return Player([png(draw(**s), dpi) for s in states], list(labels), title, alt)


def explorer(draw, controls: dict):
    """An ipywidgets explorer: a dropdown (or slider, for a range) per parameter in
    `controls` (name -> options), redrawing `draw(**values)` on every change."""
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
    out = w.Output()

    def update(**values):
        with out:
            out.clear_output(wait=True)
            display(draw(**values))
            plt.close("all")

    w.interactive_output(update, inputs)
    return w.VBox([w.HBox(list(inputs.values())), out])


def building_book() -> bool:
    """True while `make book` executes the chapters (it sets GPUMODEL_BUILD=book)."""
    return os.environ.get("GPUMODEL_BUILD") == "book"


def show(draw, states: list[dict], labels=None, title: str = "", alt: str = ""):
    """The player while the book is built, the explorer in a live kernel. The explorer
    offers, for each parameter, the values it takes in `states`."""
    if building_book():
        return player(draw, states, labels, title, alt)
    controls = {name: list(dict.fromkeys(s[name] for s in states)) for name in states[0]}
    return explorer(draw, controls)
