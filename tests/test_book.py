"""The book's configuration and the helpers the chapters use to show the model."""

import math
import pathlib
import re
import sys

import matplotlib
import matplotlib.figure
import matplotlib.pyplot
import matplotlib.text
import pytest
import yaml

import gpumodel as gm

matplotlib.use("Agg")
ROOT = pathlib.Path(__file__).resolve().parent.parent
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def test_config_executes_every_build_and_fails_on_errors():
    assert CONFIG["execute"]["execute_notebooks"] == "force"
    assert 30 < CONFIG["execute"]["timeout"] <= 600
    assert CONFIG["execute"]["allow_errors"] is False
    assert CONFIG["sphinx"]["config"]["nb_execution_raise_on_error"] is True


def test_config_builds_only_the_book():
    assert CONFIG["only_build_toc_files"] is True
    for pattern in ["_build", ".venv", "**/.pytest_cache", "tests", "gpumodel", "kernels", "README.md"]:
        assert pattern in CONFIG["exclude_patterns"], pattern


def test_config_extensions_and_repository():
    assert "sphinx_exercise" in CONFIG["sphinx"]["extra_extensions"]
    assert CONFIG["bibtex_bibfiles"] == ["gpumodel/data/references.bib"]
    assert "GPUMODEL_REPOSITORY" in (ROOT / "README.md").read_text()


def test_requirements_pin_jupyter_book_1():
    req = (ROOT / "requirements.txt").read_text()
    assert "jupyter-book>=1.0.4.post1,<2" in req
    assert re.search(r'^cupy-cuda12x.*;\s*sys_platform != "darwin"', req, re.M)


def test_every_toc_file_exists_and_every_chapter_is_in_the_toc():
    toc = (ROOT / "_toc.yml").read_text()
    files = re.findall(r"file: (\S+)", toc) + [re.search(r"root: (\S+)", toc).group(1)]
    for f in files:
        assert (ROOT / f"{f}.md").exists(), f
    for chapter in (ROOT / "chapters").glob("[0-9]*.md"):
        assert f"chapters/{chapter.stem}" in files, chapter


@pytest.mark.parametrize("name", gm.preset_names())
def test_every_source_cites_a_reference(name):
    keys = set(re.findall(r"^@\w+\{([^,]+),", (ROOT / CONFIG["bibtex_bibfiles"][0]).read_text(), re.M))
    for label, fact in gm.gpu(name).facts().items():
        assert fact.source in keys, f"{name}.{label} cites {fact.source!r}, not in references.bib"


def test_preset_table_has_a_row_per_preset_with_derived_bandwidths():
    table = gm.course.tables.preset_table()
    lines = table.splitlines()
    assert len(lines) == 2 + len(gm.preset_names())
    a100 = next(line for line in lines if line.startswith("| A100-40GB "))
    assert "| 19.5 TB/s | 7.22 TB/s | 1.56 TB/s |" in a100


def test_sources_table_cites_every_figure(monkeypatch):
    monkeypatch.setenv("GPUMODEL_BUILD", "book")  # roles on the site; "Author Year" text in Jupyter
    table = gm.course.tables.sources_table("A100-40GB")
    assert table.count("{cite:p}`") == len(gm.gpu("A100-40GB").facts())
    assert "| 5120 B/clk | spec | {cite:p}`nvidia2020a100`, Section 4.6.3 (L2 cache) |" in table


def test_markdown_table_escapes_pipes():
    assert gm.course.tables.markdown_table(["a"], [["x|y"]]).splitlines()[-1] == "| x\\|y |"


def test_hierarchy_figure_draws_each_gpu_at_each_level():
    fig = gm.course.plots.hierarchy_figure(("V100", "A100-40GB", "H100-SXM"))
    bw, cap = fig.axes
    assert len(bw.patches) == len(cap.patches) == 3 * 4
    a100_smem = bw.patches[4 + 1].get_height()
    assert a100_smem == pytest.approx(gm.gpu("A100-40GB").bandwidth("smem") / 1e12)
    assert bw.get_yscale() == cap.get_yscale() == "log"


def test_the_landing_page_maps_every_chapter_of_the_book():
    """intro.md's list names every chapter of _toc.yml, in order, each with what it promises
    (its "you will be able to" list), a time, and whether it runs kernels on a GPU, which is
    the case exactly for the chapters that include the GPU note."""
    from gpumodel.book import syllabus

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"] if c["file"].startswith("chapters/")]
    entries = syllabus.chapters()
    assert [f"chapters/{c['name']}" for c in entries] == files
    for c in entries:
        text = (ROOT / "chapters" / f"{c['name']}.md").read_text()
        assert len(c["promises"]) >= 3 and all(p.split()[0] in text for p in c["promises"]), c["name"]
        assert c["reading_min"] > 0 and c["exercise_min"] == c["exercises"] * syllabus.MINUTES_PER_EXERCISE > 0
        assert c["gpu"] == ("{include} _gpu_optional.md" in text), c["name"]
    listed = syllabus.start_here()
    assert listed.count("{doc}`chapters/") == len(files) and listed.count("its kernels run on a GPU") == sum(c["gpu"] for c in entries) > 0
    assert "Markdown(syllabus.start_here())" in (ROOT / "intro.md").read_text()


def test_the_validate_command_is_shown_once_on_the_landing_page_as_a_code_block():
    """Where no run is recorded, a chapter says in one sentence what a run would add; the command
    that records one is on the landing page only, in a code block, so `--out` is copied as typed
    (prose would set it as a dash)."""
    assert gm.course.tables.runs_table([]).strip() == gm.cuda.recorded_runs.NONE_YET
    assert "validate" not in gm.cuda.recorded_runs.NONE_YET and "GPU or not" in gm.cuda.recorded_runs.NONE_YET
    intro = (ROOT / "intro.md").read_text()
    assert f"```bash\n{gm.cuda.recorded_runs.COMMAND}\n```" in intro and "--out" in gm.cuda.recorded_runs.COMMAND
    pages = [*(ROOT / "chapters").glob("*.md"), ROOT / "formulas.md", ROOT / "glossary.md"]
    assert [p.name for p in pages if "cuda.validate --out" in p.read_text()] == []


def _formulas() -> list:
    """(file name, TeX) of every formula of the chapters, the formula sheet, the glossary and the landing page."""
    sources = [*(ROOT / "chapters").glob("*.md"), ROOT / "formulas.md", ROOT / "glossary.md", ROOT / "intro.md"]
    found = []
    for path in sources:
        text = path.read_text()
        formulas = re.findall(r"\$\$(.+?)\$\$", text, re.S) + re.findall(r"(?<![$\\])\$([^$\n]+?)\$", text)
        formulas += re.findall(r"\{math\}`([^`]+)`", text) + re.findall(r"```\{math\}(.*?)```", text, re.S)
        found += [(path.name, formula) for formula in formulas]
    return found


def test_every_formula_is_typeset_by_katex():
    """The site's math renderer is gpumodel.book.formulas, and KaTeX typesets every formula of
    the book without an error (a formula it could not would fail the build)."""
    from gpumodel.book import formulas

    config = CONFIG["sphinx"]
    assert config["config"]["html_math_renderer"] == formulas.NAME
    assert "gpumodel.book.formulas" in config["extra_extensions"]
    found = _formulas()
    assert len(found) > 100
    failed = {}
    for name, tex in found:
        try:
            assert 'class="katex"' in formulas.typeset(tex)
        except ValueError as err:
            failed.setdefault(name, str(err))
    assert failed == {}


SLOW_LISTENER = """import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1])  # the socket's file exists from here
time.sleep(0.5)      # and is refused until it listens
s.listen()
s.accept()[0].recv(1)
"""


def test_katex_is_connected_to_once_it_listens_not_when_its_socket_appears(tmp_path):
    """A server that makes its socket a while before it listens (node does, for a moment that a
    loaded machine stretches) is waited for; one that never comes up is a KaTeX error."""
    from gpumodel.book import formulas

    class Slow(formulas.PatientServer):
        @classmethod
        def build_command(cls, socket=None, port=None):
            return [sys.executable, "-c", SLOW_LISTENER, str(socket)]

    process, sock = Slow.start_server_process(tmp_path, 5.0)
    sock.close()
    process.wait(timeout=10)

    class Dead(formulas.PatientServer):
        @classmethod
        def build_command(cls, socket=None, port=None):
            return [sys.executable, "-c", "pass"]

    with pytest.raises(formulas.KaTeXError, match="did not came up"):
        Dead.start_server_process(tmp_path, 5.0)


def test_katex_refuses_what_it_cannot_typeset():
    """An unknown macro is an error naming the formula (KaTeX would draw it in red); a formula
    that is not a str is a TypeError; a display formula is KaTeX's display form."""
    from gpumodel.book import formulas

    with pytest.raises(ValueError, match=r"cannot be typeset by KaTeX.*wibble"):
        formulas.typeset(r"a \wibble b")
    with pytest.raises(TypeError, match="tex must be a str"):
        formulas.typeset(3)
    block = formulas.typeset(r"\frac{a}{b}", display=True)
    assert 'class="katex-display"' in block and "<mfrac>" in block  # KaTeX's MathML, for screen readers


def test_katex_is_served_by_the_site_whole():
    """The stylesheet names only fonts the site ships (woff2), so no request leaves the site."""
    from gpumodel.book import formulas

    css = (formulas.VENDORED / formulas.STYLESHEET).read_text()
    named = set(re.findall(r"url\((fonts/[^)]+)\)", css))
    assert len(named) == 20 and all((formulas.VENDORED / n).is_file() and n.endswith(".woff2") for n in named)


def test_the_built_site_is_trimmed_to_what_its_pages_use(tmp_path):
    """trim.purge drops a rule whose selector needs a class no page spells (keeping :not() of
    one, @media around kept rules, @font-face, licences); Font Awesome is subset to the icons
    the kept rules draw, as a WOFF under a hashed name; the search index leaves every page but
    the search page; a listing's spans drawn as its plain text in both modes go, their text stays."""
    from fontTools import ttLib
    import pydata_sphinx_theme

    from gpumodel.book import trim

    css = ('/*! licence */.a{x:1}.b,.a .c{x:2}.a:not(.gone){x:3}@media (min-width:1px){.gone{x:4}.a>p{x:5}}'
           '@media print{.gone{x:6}}@font-face{font-family:F}@keyframes k{0%{x:7}}.fa-ok:before{content:"\\f002"}'
           '.fa-gone:before{content:"\\f003"}')
    kept = trim.purge(css, {"a", "fa-ok"})
    for present in ("/*! licence */", ".a{x:1}", ".a:not(.gone){x:3}", "@media (min-width:1px){.a>p{x:5}}",
                    "@font-face{font-family:F}", "@keyframes k{0%{x:7}}", ".fa-ok:before"):
        assert present in kept, present
    for gone in (".b", ".c", "x:4", "x:6", "@media print", "fa-gone"):
        assert gone not in kept, gone
    assert trim.selectors('a:is(.x,.y), .z[title="p,q"]') == ["a:is(.x,.y)", '.z[title="p,q"]']
    assert trim.required_classes('.a .b:not(.c):is(.d,.e)[class~=".f"]') == {"a", "b"}

    fonts = pathlib.Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme/static/vendor/fontawesome/webfonts"
    site = tmp_path / "html"
    (site / "_static/styles").mkdir(parents=True)
    (site / "_static/webfonts").mkdir()
    for name in ("fa-solid-900.ttf", "fa-solid-900.woff2"):
        (site / "_static/webfonts" / name).write_bytes((fonts / name).read_bytes())
    (site / "_static/styles/theme.css").write_text(
        '@font-face{font-family:X;src:url(../webfonts/fa-solid-900.woff2) format("woff2"),'
        'url(../webfonts/fa-solid-900.ttf) format("truetype")}.fa-magnifying-glass:before{content:"\\f002"}'
        '.fa-unused:before{content:"\\f004"}')
    (site / "_static/pygments.css").write_text(
        'html[data-theme="light"] .highlight { background: #fff; color: #080808 }\n'
        'html[data-theme="light"] .highlight .n { color: #080808 }\nhtml[data-theme="light"] .highlight .k { color: #080808; font-weight: bold }\n'
        'html[data-theme="light"] .highlight .o { color: #00622F }\nhtml[data-theme="dark"] .highlight { color: #F8F8F2 }\n'
        'html[data-theme="dark"] .highlight .n { color: #F8F8F2 }\nhtml[data-theme="dark"] .highlight .w { color: #080808 }\n')
    assert trim.plain_token_classes((site / "_static/pygments.css").read_text()) == {"n"}
    listing = '<div class="highlight"><pre><span class="k">def</span> <span class="n">f</span><span class="o">=</span></pre></div>'
    search = '<script src="_static/searchtools.js"></script><script src="searchindex.js"></script>'
    (site / "page.html").write_text(f'<head>{search}</head><i class="fa-solid fa-magnifying-glass"></i>{listing}<span class="n">x</span>')
    (site / "search.html").write_text(f"<head>{search}</head>")
    trim.unwrap_plain_tokens(site)  # as the site's hook calls it, on the theme's pygments.css
    trim.trim(site)
    (woff,) = (site / "_static/webfonts").iterdir()
    assert re.fullmatch(r"fa-solid-900\.[0-9a-f]{10}\.woff", woff.name) and woff.stat().st_size < 10_000
    assert set(ttLib.TTFont(woff).getBestCmap()) == {0xF002}
    theme = (site / "_static/styles/theme.css").read_text()
    assert f'src:url(../webfonts/{woff.name}) format("woff")' in theme and "fa-unused" not in theme
    assert "searchindex" not in (site / "page.html").read_text() and search in (site / "search.html").read_text()
    assert ('<pre><span class="k">def</span> f<span class="o">=</span></pre>' in (site / "page.html").read_text()
            and (site / "page.html").read_text().endswith('<span class="n">x</span>'))  # outside a listing: kept


def test_every_page_is_written_again_at_every_build():
    """An incremental build keeps no page from the one before: the trimmed fonts and bundles it
    linked are made afresh (`site.every_page`)."""
    from types import SimpleNamespace

    from gpumodel.book import site

    env = SimpleNamespace(found_docs={"intro", "glossary", "formulas", "chapters/03_tiling"})
    assert site.every_page(None, env, {"chapters/03_tiling"}, {"intro"}, set()) == ["formulas", "glossary"]


def test_a_pages_stylesheets_are_one_file_and_its_repeated_style_blocks_one(tmp_path):
    """bundle.bundle: a page's stylesheet links (one @importing another, url()s relative to their
    own folders) become one link to one file in their order, its url()s resolving to the same
    files from _static; a link with a media query and a sheet on another site stay; a repeated
    inline <style> is kept once, and one inside a script's JSON is left alone."""
    from gpumodel.book import bundle

    site = tmp_path / "html"
    (site / "_static/styles").mkdir(parents=True)
    (site / "_static/fonts").mkdir()
    (site / "_static/fonts/f.woff2").write_bytes(b"font")
    (site / "_static/basic.css").write_text(".basic{x:0}")
    (site / "_static/styles/theme.css").write_text('@charset "utf-8";@import "../basic.css";.theme{src:url(../fonts/f.woff2?v=1)}'
                                                  '.icon{background:url("data:image/svg+xml,%3Csvg%3E")}\n/*# sourceMappingURL=theme.css.map */')
    (site / "_static/course.css").write_text(".course{src:url('fonts/f.woff2')}")
    (site / "chapters").mkdir()
    links = ('<link href="../_static/styles/theme.css?digest=1" rel="stylesheet" />\n'
             '<link rel="stylesheet" href="https://example.org/x.css" />\n'
             '<link rel="stylesheet" media="print" href="../_static/basic.css" />\n'
             '<link rel="stylesheet" type="text/css" href="../_static/course.css?v=2" />\n')
    style = "<style>.pygments{x:1}</style>\n"
    json = '<script type="application/json">{"p":["<style type=\\"text/css\\">*{x:2}","<\\/style>"]}</script>'
    (site / "chapters/one.html").write_text(f"<html><head>{links}</head><body>{style}<pre>a</pre>{style}{json}</body></html>")
    (site / "index.html").write_text('<head><link rel="stylesheet" href="_static/course.css" /></head>')
    bundle.bundle(site)
    page = (site / "chapters/one.html").read_text()
    (one,) = re.findall(r'<link rel="stylesheet" href="\.\./_static/(bundle\.[0-9a-f]{10}\.css)" />', page)
    assert "https://example.org/x.css" in page and 'media="print"' in page and "theme.css" not in page
    css = (site / "_static" / one).read_text()
    assert css.index(".basic{x:0}") < css.index(".theme") < css.index(".course")
    assert "@import" not in css and "@charset" not in css and "sourceMappingURL" not in css and "data:image/svg+xml" in css
    refs = re.findall(r"url\((['\"]?)([^'\")]+)\1\)", css)
    assert [r for _, r in refs if not r.startswith("data:")] == ["fonts/f.woff2?v=1", "fonts/f.woff2"]
    assert page.count(".pygments{x:1}") == 1 and json in page
    assert re.search(r'href="_static/bundle\.[0-9a-f]{10}\.css"', (site / "index.html").read_text())


def _trace():
    t = gm.course.capstone.TASKS["softmax"]
    return gm.lab.trace(t.starter, t.kernel, t.grid, t.block, t.make()[0])


FIGURES = {
    "hierarchy_figure": lambda: gm.course.plots.hierarchy_figure(),
    "preset_levels": lambda: gm.course.plots.preset_levels("B200"),
    "busy_bars": lambda: gm.course.plots.busy_bars({k: gm.predict(w, "A100-40GB") for k, w in gm.seed_kernels().items()}),
    "pipes": lambda: gm.course.plots.pipes("gemm_smem16", "RTX-4090", step=3),
    "sweep": lambda: gm.course.plots.sweep([("x", [2**10, 2**20, 2**30], [1e10, 2e11, 1e12])], {"HBM": 1.5e12}, {"L2": 40 << 20}),
    "published_staircase": lambda: gm.course.plots.published_staircase(gm.published.comparisons(chapter=1)),
    "roofline": lambda: gm.course.plots.roofline(("V100", "A100-40GB", "H100-SXM"), [("vector add", 1 / 12), ("GEMM", 200)]),
    "coalescing": lambda: gm.course.plots.coalescing(measured={"run": {1: 1.3e12, 8: 2e11}}),
    "lab_sites": lambda: gm.course.plots.lab_sites(_trace()),
    "tile_traffic": lambda: gm.course.plots.tile_traffic(),
    "ladder": lambda: gm.course.plots.ladder(),
    "gemm_levels": lambda: gm.course.plots.gemm_levels(64, 4, "T4"),
    "roofline_levels": lambda: gm.course.plots.roofline_levels("gemm_smem16"),
    "wave_traffic": lambda: gm.course.plots.wave_traffic(),
    "warm_reads": lambda: gm.course.plots.warm_reads(recorded=[("run", [2**20, 2**28], [5e12, 1.4e12])]),
    "attention_memory": lambda: gm.course.plots.attention_memory(),
    "flash_hbm": lambda: gm.course.plots.flash_hbm(),
    "attention_by_length": lambda: gm.course.plots.attention_by_length(),
    "tiled_gemm_diagram": lambda: gm.course.plots.tiled_gemm_diagram(),
    "wave_map": lambda: gm.course.plots.wave_map(),
    "flash_diagram": lambda: gm.course.plots.flash_diagram(),
    "machine_map": lambda: gm.course.plots.machine_map("H200"),
    "tensor_data_path": lambda: gm.course.plots.tensor_data_path("B200"),
    "warp_sectors": lambda: gm.course.plots.warp_sectors((1, 2, 32)),
    "bank_wavefronts": lambda: gm.course.plots.bank_wavefronts(),
    "shuffle_tree": lambda: gm.course.plots.shuffle_tree(),
    "budget_levels": lambda: gm.course.plots.budget_levels(_trace(), gm.course.capstone.budget("softmax"), gm.course.capstone.LEVEL_NAMES),
}


def test_every_figure_of_the_course_is_held_to_the_phone_rules():
    """FIGURES calls every figure function of gm.course.plots."""
    public = {name for name, f in vars(gm.course.plots).items() if callable(f) and not name.startswith("_")
              and not isinstance(f, type)  # PlainLogFormatter: a tick labeller, not a figure
              and getattr(f, "__module__", "") == "gpumodel.course.plots" and name != "svg"}
    assert public == set(FIGURES)


@pytest.mark.parametrize("name", FIGURES)
def test_figure_text_is_never_below_the_smallest_size_nor_in_e_notation(name):
    """No text of a figure is smaller than plots.SMALL (pt) and none is wider than plots.WIDTH
    (inches): scaled to a 390 px phone's 342 px column every text is at least 11 CSS px, and nothing
    scrolls; no text pokes out of the figure; no tick reads 1e+12 or 1e−02."""
    P = gm.course.plots
    assert P.SMALL * 96 / 72 * min(1, 342 / (P.WIDTH * 96)) >= 11  # pt to CSS px, scaled to the column
    fig = FIGURES[name]()
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    assert min(t.get_fontsize() for t in texts) >= gm.course.plots.SMALL, name
    assert fig.get_figwidth() <= gm.course.plots.WIDTH, name
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    box = fig.bbox
    for t in texts:
        extent = t.get_window_extent(renderer)
        assert box.x0 - 1 <= extent.x0 and extent.x1 <= box.x1 + 1, (name, t.get_text(), extent, box)
    drawn = [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_visible()]
    assert [t for t in drawn if re.search(r"\de[-+\u2212]\d", t)] == [], name


@pytest.mark.parametrize("low, high, shown", [
    (1e-3, 1e5, ["0.001", "0.01", "0.1", "1", "10", "100", "1000", "10000", "10⁵"]),
    (1e9, 1e12, ["10⁹", "10¹⁰", "10¹¹", "10¹²"]),
    (1e-9, 1e-6, ["10⁻⁹", "10⁻⁸", "10⁻⁷", "10⁻⁶"]),
])
def test_a_log_axis_labels_plain_numbers_and_beyond_them_powers(low, high, shown):
    """plots.PlainLogFormatter: what LogFormatter writes as 1e-02 reads 0.01, as 1e+12 reads 10¹²."""
    fig = matplotlib.figure.Figure()
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_xlim(low, high)
    ax.xaxis.set_major_formatter(gm.course.plots.PlainLogFormatter(10))
    fig.draw_without_rendering()
    labels = {round(math.log10(t.get_position()[0])): t.get_text() for t in ax.get_xticklabels()}
    assert [labels[p] for p in range(round(math.log10(low)), round(math.log10(high)) + 1)] == shown


def test_the_progress_page_shows_glued_values_never_a_role_or_a_glue_name():
    """The "your progress" page quotes each exercise's first sentence: a value the chapter glues
    appears as the chapter shows it ("on the A100-40GB", "a 2 GiB array"), not as
    {glue:md}`lab_gpu` (raw text a reader saw there)."""
    items = {key: text for c in gm.book.progress.questions() for key, _, text in c["items"]}
    assert not [text for text in items.values() if "{" in text or "`" in text]
    chapters = gm.book.syllabus.CHAPTERS
    lab_gpu = gm.book.progress._glued("04_roofline_levels", chapters)["lab_gpu"]
    assert f"on the {lab_gpu}:" in items["ex-levels-lab-thread-tile"] and "lab_gpu" not in items["ex-levels-lab-thread-tile"]
    stream = gm.book.progress._glued("98_model_vs_measurements", chapters)["stream_bytes"]
    assert items["ex-measured-stream"].startswith(f"Ernst's gpu-benches read a {stream} array on an H100 PCIe at ")


def test_every_answer_cell_is_tagged_so_the_site_shows_its_answer_box_alone():
    """`answer = None` is for a notebook's reader; on the site the answer box below takes the
    answer, and course.css hides the code of a cell tagged "answer"."""
    untagged = []
    for path in sorted((ROOT / "chapters").glob("*.md")):
        for cell in re.findall(r"```\{code-cell\} ipython3\n(.*?)```", path.read_text(), re.S):
            if re.search(r"^answer = None", cell, re.M) and ":tags: [answer]" not in cell:
                untagged.append(f"{path.name}: {cell[:60]!r}")
    assert untagged == []
    assert ".cell.tag_answer .cell_input { display: none; }" in (ROOT / "_static" / "course.css").read_text()


def test_the_formula_sheet_has_a_section_for_every_chapter_with_plain_headings():
    """Each chapter from 0 to 10 has its section on the formula sheet, in the book's order, linked
    under its heading; a heading holds no role, so the page's contents show words, never a
    source path."""
    toc = (ROOT / "_toc.yml").read_text()
    chapters = re.findall(r"file: (chapters/(?:0\d|10)_\w+)", toc)
    text = (ROOT / "formulas.md").read_text()
    linked = re.findall(r"^## [^{`\n]+\n\nFrom \{doc\}`(chapters/\w+)`\.$", text, re.M)
    assert linked == chapters and len(chapters) == 11
    assert re.findall(r"^#.*[{`]", text, re.M) == []
