// What a phone needs that the theme does not give (loaded through html_js_files in _config.yml):
// drawers that open, readable figures, and MathJax only once the reader nears a formula.
(function () {
  "use strict";

  // pydata-sphinx-theme 0.17.1 copies the reader's stored light/dark mode into data-mode (an
  // inline script above this one) and logs "Got invalid theme mode" when a first visit has
  // none stored; its own script runs later (deferred), so start such a visit at the default.
  var html = document.documentElement;
  if (!html.dataset.mode) html.dataset.mode = html.dataset.defaultMode || "auto";

  // Smallest text a figure may show, in CSS px, on any screen.
  var MIN_TEXT_PX = 9;

  // pydata-sphinx-theme 0.17.1 opens its drawers only from the first .primary-toggle and
  // .secondary-toggle of a page, which sit in the top bar course.css hides; the buttons a
  // reader sees (in the article's header) pass their click on to them.
  // A drawer closes once the reader chooses a link in it (the theme leaves the page's contents
  // drawer over the section it just scrolled to).
  function drawers() {
    ["pst-primary-sidebar-modal", "pst-secondary-sidebar-modal"].forEach(function (id) {
      var dialog = document.getElementById(id);
      if (dialog) dialog.addEventListener("click", function (event) {
        var link = event.target.closest && event.target.closest("a[href]");
        if (!dialog.open || !link) return;
        var hash = link.getAttribute("href");
        if (hash.charAt(0) === "#") {
          // A section of this page: scrolled to once the drawer is gone and the theme has given
          // the focus back to the drawer's button (which scrolls the page to that button).
          event.preventDefault();
          dialog.addEventListener("close", function () {
            var target = document.getElementById(decodeURIComponent(hash.slice(1)));
            if (location.hash !== hash) history.pushState(null, "", hash);
            if (target) target.scrollIntoView();
          }, { once: true });
        }
        dialog.close();
      });
    });
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

  // The width (CSS px) at which the smallest text of SVG source `svg` is MIN_TEXT_PX tall.
  function readableWidth(svg) {
    var doc = new DOMParser().parseFromString(svg, "image/svg+xml"), root = doc.documentElement;
    var box = (root.getAttribute("viewBox") || "").trim().split(/[\s,]+/).map(Number);
    var sizes = Array.prototype.map.call(doc.querySelectorAll("[style*='font-size'], [font-size]"), function (el) {
      var m = /font-size:\s*([\d.]+)/.exec(el.getAttribute("style") || "");
      return parseFloat(m ? m[1] : el.getAttribute("font-size"));
    }).filter(function (s) { return s > 0; });
    if (box.length !== 4 || !sizes.length) return 0;
    return Math.ceil(box[2] * MIN_TEXT_PX / Math.min.apply(null, sizes));
  }

  // On a phone a figure is never drawn narrower than its text allows: it keeps that width
  // and scrolls sideways inside its own box (course.css reads --gm-readable).
  function fit(img, svg) {
    var width = readableWidth(svg);
    img.style.setProperty("--gm-readable", width ? width + "px" : "auto");
    var box = img.parentElement;
    if (!box.classList.contains("gm-scroll")) {
      box = document.createElement("div");
      box.className = "gm-scroll";
      img.parentElement.insertBefore(box, img);
      box.appendChild(img);
    }
  }

  function figures() {
    document.querySelectorAll(".bd-article .cell_output img[src$='.svg']").forEach(function (img) {
      fetch(img.src).then(function (r) { return r.text(); }).then(function (svg) { fit(img, svg); });
    });
    // A player's frames are data: URLs its script swaps (widgets.js); refit at each swap.
    document.querySelectorAll(".bd-article img.gm-frame").forEach(function (img) {
      function refit() {
        var src = img.getAttribute("src") || "", comma = src.indexOf(",");
        if (src.indexOf("data:image/svg+xml") === 0) fit(img, decodeURIComponent(src.slice(comma + 1)));
      }
      new MutationObserver(refit).observe(img, { attributes: true, attributeFilter: ["src"] });
      refit();
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
    figures();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
