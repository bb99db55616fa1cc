// The site's players and widget exercises (gpumodel/course/widgets.py writes their HTML and data).
// Every state was computed at build time; this script only looks them up, judges a typed
// answer by the rules gpumodel.course.checks computed (number_rules, choice_rules), keeps
// which questions were answered right (localStorage) and shows them on the progress page.
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

  // A typed number, read as gpumodel.course.checks.read_number reads it: spaces and case
  // ignored, the micro sign and the Greek mu read as "u", a unit of `units` (unit -> factor)
  // stripped from the end, then NUMBER (optionally over a divisor: "1/12").
  var NUM = "(?:(?:\\d{1,3}(?:,\\d{3})+|\\d+)(?:\\.\\d*)?|\\.\\d+)(?:e[+-]?\\d+)?";
  var NUMBER = new RegExp("^([+-]?" + NUM + ")(?:(?:x|\\*|\u00d7)(" + NUM + "))?(?:(?:\\^|\\*\\*)([+-]?" + NUM + "))?" +
                          "(?:/(" + NUM + "))?$");
  function readNumber(text, units) {
    var t = String(text).toLowerCase().replace(/\u2212/g, "-").replace(/\s+/g, "").replace(/[\u00b5\u03bc]/g, "u"),
        factor = 1;
    var names = Object.keys(units || {}).sort(function (a, b) { return b.length - a.length; });
    for (var i = 0; i < names.length; i++) {
      var u = names[i];
      if (u && t.length > u.length && t.slice(-u.length) === u) { t = t.slice(0, -u.length); factor = units[u]; break; }
    }
    var m = NUMBER.exec(t);
    if (!m) return null;
    var g = [m[1], m[2], m[3], m[4]].map(function (x) { return x === undefined ? null : Number(x.replace(/,/g, "")); });
    if (g[3] === 0) return null;
    var value;
    if (g[2] === null) value = g[1] === null ? g[0] : null;
    else if (g[1] === null) value = (g[0] || g[2] > 0) ? Math.pow(g[0], g[2]) : null;
    else value = (g[1] || g[2] > 0) ? g[0] * Math.pow(g[1], g[2]) : null;
    if (value === null || !isFinite(value)) return null;
    return value / (g[3] === null ? 1 : g[3]) * factor;
  }

  function close(a, b, rtol) { return Math.abs(a - b) <= rtol * Math.max(Math.abs(a), Math.abs(b)); }

  // Judge `text` by `r`, exactly as gpumodel.course.checks.verdict does: [right, message].
  function verdict(r, text) {
    if (r.kind === "choice") {
      var key = text.toLowerCase().replace(/\s+/g, "");
      if (key === r.answer) return [true, r.right];
      return [false, r.wrong.hasOwnProperty(key) ? r.wrong[key] : r.not_number];
    }
    var value = readNumber(text, r.units), i;
    if (value === null) return [false, r.not_number];
    if (close(value, r.answer, r.rtol)) return [true, r.right];
    for (i = 0; i < r.mistakes.length; i++) {
      if (close(value, r.mistakes[i][0], Math.max(r.rtol, 1e-9))) return [false, r.mistakes[i][1]];
    }
    for (i = 0; i < r.ranges.length; i++) {
      if (r.ranges[i][0] <= value && value <= r.ranges[i][1]) return [false, r.ranges[i][2]];
    }
    if (r.answer !== 0) {
      var ratio = value / r.answer;
      for (i = 0; i < r.bands.length; i++) {
        if (r.bands[i][0] <= ratio && ratio < r.bands[i][1]) return [false, r.bands[i][2]];
      }
    }
    if (r.whole && value !== Math.trunc(value)) return [false, r.not_number];
    return [false, value > r.answer ? r.high : r.low];
  }

  // Progress, kept in this browser: {page: {key: true}} for every question answered right.
  var STORE = "gpumodel-progress";
  function progress() {
    try { return JSON.parse(localStorage.getItem(STORE)) || {}; } catch (e) { return {}; }
  }
  function page() { return location.pathname.split("/").pop().replace(/\.html$/, ""); }
  function remember(key) {
    var all = progress(), here = all[page()] || (all[page()] = {});
    here[key] = true;
    try { localStorage.setItem(STORE, JSON.stringify(all)); } catch (e) { /* storage refused: nothing kept */ }
  }

  // The key a box is kept under: its own (a checkpoint), else the exercise it follows.
  function questionKey(root) {
    if (root.dataset.key) return root.dataset.key;
    for (var el = root.closest(".cell") || root; el; el = el.previousElementSibling) {
      if (el.matches(".exercise[id]")) return el.id;
      if (el !== root && el.matches("section, h1, h2, h3")) break;
    }
    return null;
  }


  function answerBox(root) {
    var rules = data(root).rules, out = root.querySelector(".gm-verdict");
    var form = root.querySelector("form.gm-answer"), input = form.querySelector("input");
    var key = questionKey(root);
    if (key) root.dataset.question = key;
    if (key && (progress()[page()] || {})[key]) {
      root.classList.add("gm-done");
      out.textContent = "Answered right before (kept in this browser).";
    }
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var v = verdict(rules, input.value);
      out.innerHTML = "<b>" + (v[0] ? "Right." : "Not yet.") + "</b> ";
      // The message's `code` spans as code (widgets.py's _inline_html does the same in Jupyter), the rest as text.
      v[1].split("`").forEach(function (part, i) {
        if (i % 2) { var code = document.createElement("code"); code.textContent = part; out.appendChild(code); }
        else out.appendChild(document.createTextNode(part));
      });
      out.className = "gm-verdict " + (v[0] ? "gm-right" : "gm-wrong");
      if (v[0] && key) { remember(key); root.classList.add("gm-done"); }
    });
  }

  function exercise(root) {
    var d = data(root), view = root.querySelector(".gm-view");
    onChange(root, function () {
      view.innerHTML = spell(d.pieces, d.views[d.states[stateKey(root)]]);
    });
  }

  // The "your progress" page: each listed question's state from this browser's store.
  function fillProgress(root) {
    var all = progress(), right = 0, items = root.querySelectorAll("[data-page][data-key]:not([data-jupyter])");
    items.forEach(function (li) {
      var done = !!(all[li.dataset.page] || {})[li.dataset.key];
      right += done;
      li.classList.toggle("gm-done", done);
      li.querySelector(".gm-state").textContent = done ? "right" : "not yet";
    });
    var total = root.querySelector(".gm-total");
    var labs = root.querySelectorAll("[data-jupyter]").length;
    if (total) total.textContent = right + " of " + items.length + " answered right in this browser" +
      (labs ? " (and " + labs + " labs, checked in Jupyter only)." : ".");
  }
  function progressPage(root) {
    fillProgress(root);
    var reset = root.querySelector("button[data-reset]");
    if (reset) reset.addEventListener("click", function () {
      try { localStorage.removeItem(STORE); } catch (e) { /* nothing kept */ }
      fillProgress(root);
    });
  }

  window.gmCourse = { readNumber: readNumber, verdict: verdict, progress: progress };

  function start() {
    document.querySelectorAll(".gm-player").forEach(player);
    document.querySelectorAll(".gm-exercise").forEach(exercise);
    document.querySelectorAll(".gm-exercise, .gm-question").forEach(answerBox);
    document.querySelectorAll(".gm-progress").forEach(progressPage);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
