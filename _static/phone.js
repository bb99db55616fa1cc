// What a phone needs that the theme does not give (loaded through html_js_files in _config.yml):
// drawers that open. (Figures need nothing: each is drawn narrow enough to read when scaled to
// a phone's column, gpumodel/course/plots.py.)
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

  function start() {
    drawers();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
