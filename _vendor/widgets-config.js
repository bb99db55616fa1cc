// Where RequireJS finds the vendored ipywidgets manager: beside this file, in _static. The
// manager locates its fonts from the same path, so no request leaves the site.
require.config({
  paths: {
    "@jupyter-widgets/html-manager/dist": document.documentElement.dataset.content_root + "_static/html-manager",
  },
});
