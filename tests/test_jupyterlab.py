"""The learners' notebooks as JupyterLab shows them, in headless Chromium (Playwright): open
a generated notebook, Run All, and check that no cell fails, that the prose shows the glued
numbers (not MyST), and that every solution stays closed. Saves screenshots to
`_build/screenshots/lab-*.png` (or $SCREENSHOT_DIR).

Skips, with the reason, where Chromium is not installed (`apt-get install chromium`; CI
installs it).
"""

import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from conftest import needs_chromium

import gpumodel as gm

ROOT = pathlib.Path(__file__).resolve().parent.parent
pytestmark = [needs_chromium, pytest.mark.slow, pytest.mark.xdist_group("jupyterlab")]
SHOTS = pathlib.Path(os.environ.get("SCREENSHOT_DIR", ROOT / "_build" / "screenshots"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of notebooks/ on localhost, without a token."""
    folder = tmp_path_factory.mktemp("lab")
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        shutil.copy(nb, folder)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
           "--LabApp.expose_app_in_browser=True", f"--ServerApp.root_dir={folder}", "--allow-root"]
    settings = folder / ".settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # Render every cell (JupyterLab 4 otherwise only renders the cells in view).
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    news = folder / ".settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(folder / ".settings")}
    server = subprocess.Popen(cmd, cwd=ROOT / "chapters", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=1)
            break
        except OSError:
            time.sleep(0.5)
    else:
        server.kill()
        pytest.fail("JupyterLab did not start")
    yield url
    server.terminate()
    server.wait(timeout=30)



KERNEL_IDLE = """(name) => {
    const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const kernel = widget && widget.context && widget.context.path === name && widget.sessionContext
        && widget.sessionContext.session && widget.sessionContext.session.kernel;
    return kernel && kernel.connectionStatus === 'connected' && kernel.status === 'idle';
}"""
"""True once notebook `name` is the current tab and its kernel is connected and idle."""


def run_all(browser, url, name):
    """Open notebook `name` in JupyterLab, Run All, wait for the kernel; return the page."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    # A workspace of its own, reset, so that no tab of an earlier test comes back.
    page.goto(f"{url}/lab/workspaces/{name.removesuffix('.ipynb')}/tree/{name}?reset", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=120_000)
    page.wait_for_function(KERNEL_IDLE, arg=name, timeout=120_000)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function("""() => {  // every code cell ran, or one failed (Run All stops there)
        const model = window.jupyterapp.shell.currentWidget.content.model;
        const cells = Array.from({length: model.cells.length}, (_, i) => model.cells.get(i)).filter(c => c.type === 'code');
        const failed = cells.some(c => Array.from({length: c.outputs.length}, (_, i) => c.outputs.get(i)).some(o => o.type === 'error'));
        return failed || cells.every(c => c.executionCount !== null);
    }""", timeout=240_000)
    page.wait_for_function(KERNEL_IDLE, arg=name, timeout=240_000)
    page.evaluate("() => window.jupyterapp.shell.currentWidget.content.scrollToItem(3)")
    page.wait_for_timeout(1000)
    return page


@pytest.mark.parametrize("name, glued", [
    ("01_hierarchy.ipynb", "HBM needs " + gm.fmt_time(gm.predict(gm.vector_add(2**28), "A100-40GB").time)),
    ("03_tiling.ipynb", gm.fmt_time(gm.predict(gm.gemm(4096, 4096, 4096, block=(128, 128), thread=(8, 8)), "A100-40GB").time)),
])
def test_run_all_in_jupyterlab(lab, browser, name, glued):
    page = run_all(browser, lab, name)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"lab-{name.removesuffix('.ipynb')}.png"))
    page.evaluate("() => window.jupyterapp.shell.currentWidget.content.scrollToItem(14)")
    page.wait_for_timeout(1000)
    page.screenshot(path=str(SHOTS / f"lab-{name.removesuffix('.ipynb')}-further.png"))
    ran = page.evaluate("""() => {
        const model = window.jupyterapp.shell.currentWidget.content.model;
        const cells = Array.from({length: model.cells.length}, (_, i) => model.cells.get(i)).filter(c => c.type === 'code');
        const outputs = cells.flatMap(c => Array.from({length: c.outputs.length}, (_, i) => c.outputs.get(i).toJSON()));
        return {unrun: cells.filter(c => c.executionCount === null).length,
                errors: outputs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)};
    }""")
    assert ran == {"unrun": 0, "errors": []}, ran
    stderr = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert stderr.count() == 0, stderr.first.inner_text()[:500]
    prose = " ".join(" ".join(page.locator(".jp-MarkdownCell .jp-RenderedMarkdown").all_inner_texts()).split())
    assert glued in prose
    assert "{glue" not in prose and "{cite" not in prose and "solution-start" not in prose
    details = page.locator(".jp-RenderedMarkdown details")
    assert details.count() > 0 and all(not d.get_attribute("open") for d in details.all())
    assert "Right." not in "\n".join(page.locator(".jp-OutputArea-output").all_inner_texts())
    page.close()


def test_a_widget_exercise_in_jupyterlab(lab, browser):
    """Chapter 3's thread-tile exercise, operated as a learner would: its menus redraw the
    bars, a wrong answer gets a hint, the right one is accepted; then its kernel lab's editor:
    the starter refused for its bank conflicts, the padded tile accepted."""
    page = run_all(browser, lab, "03_tiling.ipynb")
    box = page.locator(".widget-vbox", has=page.locator("select")).filter(
        has=page.locator("button", has_text="Check")).first  # an explorer, not a checkpoint (no menus)
    gpu, block, thread = box.locator("select").all()[:3]
    view = box.locator(".widget-html").first
    gpu.select_option(label="A100-40GB")
    block.select_option(label="128")
    thread.select_option(label="4")
    page.wait_for_function("(el) => el.innerText.includes('4 x 4 per thread on the A100-40GB')",
                           arg=view.element_handle(), timeout=60_000)
    assert "shared memory" in view.inner_text()
    answer, check, verdict = box.locator("input[type=text]"), box.locator("button", has_text="Check"), box.locator(
        ".widget-html").last
    answer.fill("4")
    check.click()
    page.wait_for_function("(el) => el.innerText.includes('Not yet.')", arg=verdict.element_handle(), timeout=60_000)
    assert "Too low" in verdict.inner_text()
    answer.fill("8")
    check.click()
    page.wait_for_function("(el) => el.innerText.includes('Right.')", arg=verdict.element_handle(), timeout=60_000)
    SHOTS.mkdir(parents=True, exist_ok=True)
    box.screenshot(path=str(SHOTS / "lab-03_tiling-exercise.png"))

    # The kernel lab's editor on the same page: the starter traced as it stands, then edited.
    editor = page.locator(".widget-vbox", has=page.locator("textarea")).first
    source, trace = editor.locator("textarea"), editor.locator("button", has_text="Trace and check")
    verdict = editor.locator(".widget-html").last
    trace.click()
    page.wait_for_function("(el) => el.innerText.includes('Not yet.')", arg=verdict.element_handle(), timeout=60_000)
    assert "bank conflicts" in verdict.inner_text()
    source.fill(gm.course.tiling.LAB_STARTER.replace("tile[TILE][TILE]", "tile[TILE][TILE + 1]"))
    trace.click()
    page.wait_for_function("(el) => el.innerText.includes('Right.')", arg=verdict.element_handle(), timeout=60_000)
    editor.screenshot(path=str(SHOTS / "lab-03_tiling-editor.png"))
    # A compiler error: g++'s line in a listing, at the learner's line, one error a line.
    source.fill(gm.course.tiling.LAB_STARTER.replace("__syncthreads();", "__syncthreads()", 1))
    trace.click()
    page.wait_for_function("(el) => el.innerText.includes('does not compile')", arg=verdict.element_handle(), timeout=60_000)
    listing = verdict.locator("pre").first.inner_text()
    line = 1 + gm.course.tiling.LAB_STARTER.split("__syncthreads();")[0].count("\n")
    assert re.search(rf"^kernel\.cu:{line}:\d+: error: ", listing, re.M), listing
    assert verdict.locator("pre").first.evaluate("(el) => getComputedStyle(el).fontFamily").lower().find("mono") >= 0
    editor.screenshot(path=str(SHOTS / "lab-03_tiling-compiler-error.png"))
    page.close()
