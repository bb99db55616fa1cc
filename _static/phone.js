// What a phone needs that the theme does not give (loaded through html_js_files in _config.yml):
// drawers that open, readable figures.
(function () {
  "use strict";

  // Smallest text a figure may show, in CSS px, on any screen.
  var MIN_TEXT_PX = 9;

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

  function start() {
    drawers();
    figures();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
