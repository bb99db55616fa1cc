"""Sphinx hooks for the course's site; `_config.yml` loads this module as an extension.

Jupyter Book 1.x always loads sphinx-thebe, whose inline configuration script landed twice
on every page, so every page threw "Identifier 'THEBE_JS_URL' has already been declared".
The site launches no live kernels (its explorers are precomputed players), so thebe is
never configured and its scripts are never added.
"""

from __future__ import annotations

THEBE_EVENTS = ("env-before-read-docs", "doctree-resolved")
"""The events at which sphinx-thebe adds its scripts to pages."""


def setup(app):
    for event in THEBE_EVENTS:
        listeners = app.events.listeners.get(event, [])
        listeners[:] = [ls for ls in listeners if not ls.handler.__module__.startswith("sphinx_thebe")]
    return {"parallel_read_safe": True, "parallel_write_safe": True}
