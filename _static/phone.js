// What a phone needs that the theme does not give (loaded through html_js_files in _config.yml):
// drawers that open, tables that scroll sideways in their own box reachable by keyboard, figures
// that open enlarged over the page, and the dropdowns' buttons named as their titles.
(function () {
  "use strict";

  // pydata-sphinx-theme 0.17.1 copies the reader's stored light/dark mode into data-mode (an
  // inline script above this one) and logs "Got invalid theme mode" when a first visit has
  // none stored; its own script runs later (deferred), so start such a visit at the default.
  var html = document.documentElement;
  if (!html.dataset.mode) html.dataset.mode = html.dataset.defaultMode || "auto";

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

  // A table that scrolls in its own box (course.css: sideways, when wider than the column) takes
  // keyboard focus, so that its arrows scroll it; one that fits does not.
  // Checked once the page has loaded, again once the fonts have arrived (they widen a table's
  // cells) and whenever the window's width changes: not while the page is still being read,
  // where asking for a table's size makes the browser lay out the whole page an extra time.
  function scrollers() {
    document.querySelectorAll(".bd-article table.table").forEach(function (table) {
      var scrolls = table.scrollWidth > table.clientWidth + 1 || table.scrollHeight > table.clientHeight + 1;
      if (scrolls) table.setAttribute("tabindex", "0");
      else table.removeAttribute("tabindex");
    });
  }

  // A figure is a link to its SVG (gpumodel/book/site.py); a click (a tap, or Enter on the focused
  // link) opens it in a dialog over the page instead, as course.css sizes it: the whole screen, or on
  // a phone held upright wider than the screen, to drag (a hint says so). Any click in the dialog, its Close button
  // or Escape closes it, and the focus goes back to the figure. A click with a modifier key (a new
  // tab, a download) is the link's own.
  var zoom = null;
  function enlarge(event) {
    var link = event.target.closest && event.target.closest("a.gm-enlarge");
    if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    if (!zoom) {
      zoom = document.createElement("dialog");
      zoom.className = "gm-zoom";
      zoom.innerHTML = '<p class="gm-zoom-hint">Drag the figure to see all of it.</p>' +
        '<button type="button" class="gm-zoom-close">Close</button><img alt="">';
      zoom.addEventListener("click", function () { zoom.close(); });
      document.body.appendChild(zoom);
    }
    var figure = link.querySelector("img"), shown = zoom.querySelector("img");
    shown.src = link.href;
    shown.alt = figure ? figure.alt : "";
    zoom.setAttribute("aria-label", "The figure, enlarged");
    zoom.showModal();
    zoom.scrollTop = zoom.scrollLeft = 0;
    zoom.querySelector("button").focus();
  }

  // sphinx-togglebutton names the button of every dropdown (an aside, a solution) "Toggle hidden
  // content"; a listener hears what the reader sees, the dropdown's title ("Solution to Exercise
  // 3.1"), with the button's state (expanded or not). Its buttons exist once the page has loaded.
  function toggleNames() {
    document.querySelectorAll("button.toggle-button").forEach(function (button) {
      var title = button.closest(".admonition-title");
      var text = title ? title.textContent.replace(/\s+/g, " ").trim() : "";
      if (text) button.setAttribute("aria-label", text);
    });
  }

  function loaded() {
    scrollers();
    toggleNames();
    if (document.fonts) document.fonts.ready.then(scrollers);
  }

  function start() {
    drawers();
    document.addEventListener("click", enlarge);
    window.addEventListener("resize", scrollers);
    if (document.readyState === "complete") loaded();
    else window.addEventListener("load", loaded);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
