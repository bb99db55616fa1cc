"""Sphinx hooks for the course's site; `_config.yml` loads this module as an extension.

Jupyter Book 1.x always loads sphinx-thebe, whose inline configuration script landed twice
on every page, so every page threw "Identifier 'THEBE_JS_URL' has already been declared".
The site launches no live kernels (its explorers are precomputed players), so thebe is
never configured and its scripts are never added.

The repository button and the launch buttons follow the repository being built
(`GITHUB_REPOSITORY` on GitHub Actions, else `_config.yml`'s placeholder), so a fork's site
links to the fork with no edit; the JupyterHub button appears where `JUPYTERHUB_URL` names a
hub (the Pages workflow reads it from the repository variable of that name). BinderHub and
JupyterHub open the chapter's notebook (`notebooks/<chapter>.ipynb`), not its MyST source.
"""

from __future__ import annotations

import os
import re

from . import notebooks

THEBE_EVENTS = ("env-before-read-docs", "doctree-resolved")
"""The events at which sphinx-thebe adds its scripts to pages."""


CHAPTER_SOURCE = re.compile(r"chapters/(\w+)\.md")


def configure(app, config) -> None:
    """Point the repository and launch buttons at the repository being built (see the module doc)."""
    theme = config.html_theme_options
    if notebooks.published():
        theme["repository_url"] = notebooks.repository()
    hub = os.environ.get("JUPYTERHUB_URL", "").strip()
    if hub:
        theme.setdefault("launch_buttons", {})["jupyterhub_url"] = hub


def launch_notebooks(app, pagename, templatename, context, doctree) -> None:
    """Make each launch button open `notebooks/<chapter>.ipynb` rather than the MyST source."""
    for group in context.get("header_buttons", []):
        if group.get("label") == "launch-buttons":
            for button in group["buttons"]:
                if "url" in button:
                    button["url"] = CHAPTER_SOURCE.sub(r"notebooks/\1.ipynb", button["url"])


def setup(app):
    for event in THEBE_EVENTS:
        listeners = app.events.listeners.get(event, [])
        listeners[:] = [ls for ls in listeners if not ls.handler.__module__.startswith("sphinx_thebe")]
    app.connect("config-inited", configure)
    app.connect("html-page-context", launch_notebooks, priority=502)  # after the theme adds them (501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
