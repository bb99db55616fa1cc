// The site's players and widget exercises (gpumodel/course/widgets.py writes their HTML and data).
// Every state was computed at build time; this script only looks them up, and judges a
// typed answer by the rules gpumodel.course.checks computed (number_rules, choice_rules).
(function () {
  "use strict";

  function data(root) {
    return JSON.parse(root.querySelector('script[type="application/json"]').textContent);
  }

  // A text packed by widgets.py's _pack: indices into `pieces`, one piece each, or, when
  // minus a count follows, that many pieces from there.
  function spell(pieces, runs) {
    var text = "";
    for (var k = 0; k < runs.length; k++) {
      var first = runs[k], count = runs[k + 1] < 0 ? -runs[++k] : 1;
      for (var j = first; j < first + count; j++) text += pieces[j];
    }
    return text;
  }

  // The state the menus select: "i|j|..." (option indices), as widgets.py keys them.
  function stateKey(root) {
    return Array.prototype.map.call(root.querySelectorAll("select[data-control]"), function (s) {
      return s.value;
    }).join("|");
  }

  function onChange(root, show) {
    root.querySelectorAll("select[data-control]").forEach(function (s) {
      s.addEventListener("change", show);
    });
    show();
  }

  function player(root) {
    var d = data(root), img = root.querySelector("img.gm-frame"), refused = root.querySelector(".gm-refused");
    var slider = root.querySelector('input[type="range"]'), button = root.querySelector("button[data-play]");
    var timer = null;
    function show() {
      var frames = d.frames[d.states[stateKey(root)]], step = slider ? Number(slider.value) : 0;
      var available = typeof frames !== "string";
      img.hidden = !available;
      refused.hidden = available;
      if (!available) { refused.textContent = frames; return; }
      img.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(spell(d.pieces, frames[step]));
      img.dataset.state = stateKey(root);
      img.dataset.step = step;
    }
    if (slider) slider.addEventListener("input", show);
    if (button) {
      button.addEventListener("click", function () {
        if (timer) { clearInterval(timer); timer = null; button.innerHTML = "&#9654; Play"; return; }
        button.innerHTML = "&#10074;&#10074; Pause";
        timer = setInterval(function () {
          slider.value = (Number(slider.value) + 1) % (Number(slider.max) + 1);
          show();
        }, 250);
      });
    }
    onChange(root, show);
  }

  // Judge `text` by `r`, exactly as gpumodel.course.checks.verdict does: [right, message].
  function verdict(r, text) {
    if (r.kind === "choice") {
      var key = text.toLowerCase().replace(/\s+/g, "");
      if (key === r.answer) return [true, r.right];
      return [false, r.wrong.hasOwnProperty(key) ? r.wrong[key] : r.not_number];
    }
    var t = text.trim(), value = Number(t);
    if (t === "" || !isFinite(value)) return [false, r.not_number];
    if (Math.abs(value - r.answer) <= r.rtol * Math.max(Math.abs(value), Math.abs(r.answer))) return [true, r.right];
    if (r.answer !== 0) {
      var ratio = value / r.answer;
      for (var i = 0; i < r.bands.length; i++) {
        if (r.bands[i][0] <= ratio && ratio < r.bands[i][1]) return [false, r.bands[i][2]];
      }
    }
    return [false, value > r.answer ? r.high : r.low];
  }

  function exercise(root) {
    var d = data(root), view = root.querySelector(".gm-view"), out = root.querySelector(".gm-verdict");
    var form = root.querySelector("form.gm-answer"), input = form.querySelector("input");
    onChange(root, function () {
      view.innerHTML = spell(d.pieces, d.views[d.states[stateKey(root)]]);
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var v = verdict(d.rules, input.value);
      out.innerHTML = "<b>" + (v[0] ? "Right." : "Not yet.") + "</b> ";
      out.appendChild(document.createTextNode(v[1]));
      out.className = "gm-verdict " + (v[0] ? "gm-right" : "gm-wrong");
    });
  }

  function start() {
    document.querySelectorAll(".gm-player").forEach(player);
    document.querySelectorAll(".gm-exercise").forEach(exercise);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
