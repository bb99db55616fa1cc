"""GPU tests (marked `gpu`) skip, with the reason, when no GPU answers; the browser tests
(`needs_chromium`) skip, with the reason, where Chromium is not installed (CI installs it);
nothing else skips. The headless Chromium the browser tests share is the `browser` fixture.
At the end of a run, nbmake's report of each notebook run in this session (test_installed.py)
is printed, so that CI's log shows it."""

import os
import pathlib
import shutil
import tempfile
import time

import pytest

os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="gpumodel-test-data-")  # the checkers' progress file: never the tester's

from gpumodel.cuda import runtime


STARTED = time.time()
NBMAKE_LOGS = pathlib.Path(__file__).resolve().parent.parent / "_build"


def pytest_terminal_summary(terminalreporter, config):
    """nbmake's reports written during this run (by any worker), printed once, by the controller."""
    if hasattr(config, "workerinput"):
        return
    for log in sorted(NBMAKE_LOGS.glob("nbmake-*.log")):
        if log.stat().st_mtime >= STARTED:
            terminalreporter.write_sep("=", log.stem)
            terminalreporter.write_line(log.read_text().rstrip())


def pytest_runtest_setup(item):
    """A test of an xdist group must run on its group's worker (it shares that worker's
    environment or site): under `--dist loadgroup` its node id carries the group's name."""
    if getattr(item.config.option, "loadgroup", False) and item.get_closest_marker("xdist_group") and "@" not in item.nodeid:
        raise pytest.UsageError(f"{item.nodeid}: pytest-xdist did not group it (requirements.txt pins the pytest it needs)")


def pytest_collection_modifyitems(config, items):
    ok, why = runtime.gpu_status()
    if ok:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {why}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed: apt-get install chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium, driven by Playwright (no browser download)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()
