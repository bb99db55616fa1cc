// What a phone needs that the theme does not give (loaded through html_js_files in _config.yml):
// drawers that open, and MathJax only once the reader nears a formula. (Figures need nothing:
// each is drawn narrow enough to read when scaled to a phone's column, gpumodel/course/plots.py.)
(function () {
  "use strict";

  // pydata-sphinx-theme 0.17.1 opens its drawers only from the first .primary-toggle and
  // .secondary-toggle of a page, which sit in the top bar course.css hides; the buttons a
  // reader sees (in the article's header) pass their click on to them.
  function drawers() {
    ["primary-toggle", "secondary-toggle"].forEach(function (name) {
      var toggles = document.querySelectorAll("." + name);
      Array.prototype.slice.call(toggles, 1).forEach(function (toggle) {
        toggle.addEventListener("click", function (event) {
          event.preventDefault();
          event.stopPropagation();
          toggles[0].click();
        });
      });
    });
  }

  // Longest stretch (ms) MathJax may hold the page at once: formulas are typeset a slice at
  // a time, the page free to paint and answer the reader in between.
  var SLICE_MS = 40;

  // Typeset `math` (elements), those in or near the view first, a slice at a time.
  function typesetInSlices(math) {
    var h = window.innerHeight, near = [], far = [];
    math.forEach(function (m) {
      var r = m.getBoundingClientRect();
      (r.bottom > -h && r.top < 2 * h ? near : far).push(m);
    });
    var queue = near.concat(far);
    function slice() {
      var start = performance.now();
      while (queue.length && performance.now() - start < SLICE_MS) {
        try {
          MathJax.typeset([queue[0]]);
        } catch (err) {
          if (!err.retry) throw err;
          err.retry.then(slice);  // MathJax needs a file first: go on once it has come
          return;
        }
        queue.shift();
      }
      if (queue.length) setTimeout(slice, 0);
    }
    slice();
  }

  // gpumodel/book/site.py holds a page's MathJax script (type text/x-gm-lazy); it starts when a
  // formula comes within a screen of the view. _config.yml tells MathJax not to typeset the
  // page itself (startup.typeset: false): it is typeset here, in slices.
  function lazyMath() {
    var held = document.querySelector('script[type="text/x-gm-lazy"]'), math = document.querySelectorAll(".math");
    if (!held || !math.length) return;
    var near = new IntersectionObserver(function (entries) {
      if (!entries.some(function (e) { return e.isIntersecting; })) return;
      near.disconnect();
      var script = document.createElement("script");
      script.src = held.src;
      script.onload = function () {
        MathJax.startup.promise.then(function () { typesetInSlices(Array.prototype.slice.call(math)); });
      };
      document.head.appendChild(script);
    }, { rootMargin: "100% 0px" });
    math.forEach(function (m) { near.observe(m); });
  }

  function start() {
    lazyMath();
    drawers();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
