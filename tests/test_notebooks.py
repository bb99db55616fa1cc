"""The notebooks readers open (Colab, JupyterLab) match the MyST chapters, install gpumodel on
Colab, and follow the chapter conventions of CONTRIBUTING.md; tests/test_installed.py runs them."""

import json
import pathlib
import re
import subprocess
import sys

import nbformat
import pytest
import yaml

import gpumodel as gm
from gpumodel.book import notebooks as book

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9]*.md"))


def _stored(chapter):
    path = ROOT / "notebooks" / f"{chapter.stem}.ipynb"
    assert path.exists(), f"run `make notebooks`: {path.name} is missing"
    return nbformat.read(path, as_version=4)


def _cells(nb):
    return [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_notebooks_are_in_sync_with_the_chapters(chapter):
    """The committed notebook is what the generator makes of the chapter (with the glued
    values it recorded; `test_run_all_reproduces_the_numbers_and_shows_no_solution` checks
    those against a fresh run)."""
    stored = _stored(chapter)
    meta = stored.metadata["gpumodel"]
    fresh = book.learner_notebook(chapter, meta["glued"], meta["varies"])
    assert _cells(stored) == _cells(fresh), f"run `make notebooks`: {chapter.stem}.ipynb is out of date"
    assert all(not c.get("outputs") for c in stored.cells if c.cell_type == "code"), "notebooks ship without outputs"


def test_no_stray_notebooks():
    assert {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")} == {p.stem for p in CHAPTERS}


RAW_MYST = ("{glue", "{cite", "{doc}", "{numref}", "{term}", "```{", ":::{", ":label:", ":class:")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_markdown_cells_are_plain_markdown(chapter):
    stored = _stored(chapter)
    markdown = [c.source for c in stored.cells if c.cell_type == "markdown"]
    for text in markdown:
        for raw in RAW_MYST:
            assert raw not in text, f"{chapter.stem}: {raw!r} left in {text[:120]!r}"
    exercises = sum(c.count("#### Exercise ") for c in markdown)
    solutions = [c for c in markdown if "<summary><b>Solution</b>" in c]
    assert exercises == len(solutions) == chapter.read_text().count("{solution-start}") > 0
    for s in solutions:
        assert s.startswith("<details>") and s.rstrip().endswith("</details>")
    solution_code = {code.strip() for s in solutions for code in re.findall(r"```python\n(.*?)```", s, re.S)}
    assert solution_code, "each solution shows its check"
    for cell in stored.cells[1:]:  # after the (collapsed) install cell
        if cell.cell_type == "code":
            assert cell.source.strip() not in solution_code, f"a solution's code runs: {cell.source}"
            hidden = {"remove-cell", "remove-input", "hide-input"} & set(cell.metadata.get("tags", []))
            assert bool(hidden) == cell.metadata.get("jupyter", {}).get("source_hidden", False), cell.source[:80]


def test_an_aside_of_class_dropdown_is_closed_and_a_note_is_quoted():
    chapter = book._Chapter(CHAPTERS[0], {"x": "2.07 ms"})
    aside = chapter.markdown("```{admonition} Where the clock comes from\n:class: dropdown\n\nHBM needs {glue:md}`x`.\n```")
    assert aside == "<details><summary>Where the clock comes from</summary>\n\nHBM needs 2.07 ms.\n\n</details>"
    note = chapter.markdown("```{admonition} Ahead\n:class: note\n\nHBM needs {glue:md}`x`.\n```")
    assert note == "> **Ahead**\n>\n> HBM needs 2.07 ms."


def test_glued_numbers_appear_in_the_prose():
    stored = _stored(ROOT / "chapters" / "01_hierarchy.md")
    text = "\n".join(c.source for c in stored.cells if c.cell_type == "markdown")
    vector_add = gm.predict(gm.vector_add(2**28), "A100-40GB")
    assert f"HBM needs {gm.fmt_time(vector_add.time)}" in " ".join(text.split())
    assert "[Luo et al. 2024](https://arxiv.org/abs/2402.13499)" in text  # a local clone's notebooks link to the paper
    assert "[GPU presets](99_appendix_presets.ipynb)" in text
    assert "> **GPU optional**" in text


def test_a_varying_value_points_at_the_readers_own_run():
    stored = _stored(ROOT / "chapters" / "02_intensity.md")
    assert "cpu_out" in stored.metadata["gpumodel"]["varies"]
    text = "\n".join(c.source for c in stored.cells if c.cell_type == "markdown")
    assert "(time: *your run's value, printed above*)" in " ".join(text.split())


def test_a_local_build_installs_from_the_clone():
    """The committed notebooks are for a clone: their install cell installs the clone they sit in."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert "url" not in config["repository"]  # the build's own (see the next test)
    assert book.install_spec({}) == book.LOCAL_SPEC and repr(book.LOCAL_SPEC) in book.install_source(book.install_spec({}))
    assert book.colab_url("99_appendix_presets", "https://github.com/a/b") == \
        "https://colab.research.google.com/github/a/b/blob/notebooks/notebooks/99_appendix_presets.ipynb"


@pytest.mark.parametrize("remote, expected", [
    ("https://github.com/Some-Fork/gpu-course.git", "https://github.com/Some-Fork/gpu-course"),
    ("git@github.com:some-fork/gpu.course.git", "https://github.com/some-fork/gpu.course"),
    ("ssh://git@github.com/a/b", "https://github.com/a/b"),
    ("/work/main", None), ("https://gitlab.com/a/b.git", None), (None, None)])
def test_the_repository_is_the_builds_own_or_none(tmp_path, remote, expected):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    if remote:
        subprocess.run(["git", "-C", str(tmp_path), "remote", "add", "origin", remote], check=True)
    assert book.repository({}, tmp_path) == expected
    assert book.repository({"GPUMODEL_REPOSITORY": "x/y"}, tmp_path) == "https://github.com/x/y"
    assert book.repository({"GITHUB_REPOSITORY": "w/z", "GPUMODEL_REPOSITORY": "x/y"}, tmp_path) == "https://github.com/w/z"
    with pytest.raises(ValueError, match="GPUMODEL_REPOSITORY must name a GitHub repository as OWNER/NAME"):
        book.repository({"GPUMODEL_REPOSITORY": "https://example.org/x"}, tmp_path)


def test_where_no_repository_is_known_the_site_has_no_launch_buttons_and_no_clone_line(monkeypatch):
    from gpumodel.book import site

    monkeypatch.setattr(book, "repository", lambda *a, **k: None)
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    config = type("Config", (), {"html_theme_options": {"repository_url": "https://github.com/x/y",
                                                       "launch_buttons": {"binderhub_url": "https://mybinder.org"}}})()
    site.configure(None, config)
    assert config.html_theme_options == {"use_repository_button": False, "launch_buttons": {}}
    badge = str(gm.book.chapter.colab_badge("01_hierarchy").data)
    assert "Colab" not in badge and 'href="../01_hierarchy.ipynb" download' in badge
    intro = (ROOT / "intro.md").read_text()
    cell = intro[intro.index("repo = gm.book.notebooks.repository()"):intro.index('""")\n````', intro.index("repo = "))]
    shown = {}
    exec(cell.replace("repo = gm.book.notebooks.repository()", "repo = None") + '""")', {
        "gm": gm, "Markdown": lambda text: shown.setdefault("text", text)})
    assert "git clone" not in shown["text"] and "colab.research" not in shown["text"] and "Upload notebook" in shown["text"]


PLACEHOLDERS = ("YOUR-ACCOUNT", "your-account")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_published_notebooks_name_the_repository_being_built(chapter, monkeypatch):
    """What the Pages workflow publishes (`python -m gpumodel.book.notebooks` with GITHUB_REPOSITORY
    and GITHUB_SHA set as GitHub Actions sets them): every link and the install line name that
    repository and commit; no placeholder is left."""
    monkeypatch.setenv("GITHUB_REPOSITORY", "Some-Fork/gpu-course")
    monkeypatch.setenv("GITHUB_SHA", "0123abc")
    meta = _stored(chapter).metadata["gpumodel"]
    text = json.dumps(book.learner_notebook(chapter, meta["glued"], meta["varies"]))
    assert not [p for p in PLACEHOLDERS if p in text]
    links = re.findall(r"https?://[^\s)\]\"'<>\\]+", text)
    ours = [u for u in links if "github" in u or "colab" in u]
    assert all("some-fork" in u.lower() and "gpu-course" in u for u in ours), ours
    assert "gpumodel[book] @ git+https://github.com/Some-Fork/gpu-course@0123abc" in text


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_local_clones_notebooks_name_no_placeholder(chapter, monkeypatch):
    """The committed notebooks (generated with no GITHUB_REPOSITORY, for a clone) cite each
    reference at its own address from references.bib, since a clone knows no site; no
    placeholder is left anywhere in them."""
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    meta = _stored(chapter).metadata["gpumodel"]
    text = json.dumps(book.learner_notebook(chapter, meta["glued"], meta["varies"]))
    assert not [p for p in PLACEHOLDERS if p in text]
    if "{cite" in chapter.read_text():
        assert re.search(r"\(\[[^]]+ \d{4}[a-z]?\]\(https://(?!\w+\.github\.io)", text), "citations link to their references"


RELATIVE = re.compile(r"\]\((?![a-zA-Z][\w+.-]*:|#)([^)\s]+)\)|\bhref=\"(?![a-zA-Z][\w+.-]*:|#)([^\"]+)\"")
"""A Markdown or HTML link to an address relative to the notebook (no scheme, no lone anchor)."""


def _markdown(nb) -> str:
    return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_notebook_links_to_a_markdown_file_beside_it(chapter, monkeypatch):
    """A downloaded or Colab-uploaded notebook has no `../glossary.md` beside it (136 of its links
    once led there). No notebook holds a relative link to a .md file: the committed ones (which
    know no site) link a chapter as its sibling notebook and each term to the entry of the glossary
    they ship, under the site's anchor for it; those the Pages workflow publishes link the site's
    pages and its glossary."""
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    stored = _stored(chapter)
    text = _markdown(stored)
    relative = [a or b for a, b in RELATIVE.findall(text)]
    assert not [r for r in relative if ".md" in r], relative
    assert all(r.endswith(".ipynb") and (ROOT / "notebooks" / r).is_file() for r in relative), relative
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', text))
    fragments = set(re.findall(r"\]\(#([^)]+)\)", text))
    assert fragments <= anchors, sorted(fragments - anchors)
    if "{term}" in chapter.read_text():
        shipped = stored.cells[-1].source
        assert shipped.startswith(f'<a id="{book.GLOSSARY_ID}"></a>') and "## Glossary" in shipped
        terms = {f for f in fragments if f.startswith("term-")}
        assert terms and all(f'<a id="{t}"></a>' in shipped for t in terms)
        entry = next(names for names, _ in book.glossary_entries() if book.term_anchor(names[0]) in terms)
        assert f"**{' / '.join(entry)}**: " in shipped
    monkeypatch.setenv("GITHUB_REPOSITORY", "Some-Fork/gpu-course")
    meta = stored.metadata["gpumodel"]
    published = _markdown(book.learner_notebook(chapter, meta["glued"], meta["varies"]))
    assert [a or b for a, b in RELATIVE.findall(published)] == []
    assert "](#" not in published and "## Glossary" not in published
    if "{term}" in chapter.read_text():
        assert "](https://some-fork.github.io/gpu-course/glossary.html#term-" in published


def test_a_notebook_that_knows_no_site_names_its_other_pages_as_files():
    """Where no site is known, a chapter is its sibling notebook, the glossary the one the
    notebook ships, any other page its file in the repository, as text."""
    chapter = book._Chapter(ROOT / "chapters" / "09_decode.md", {})
    text = chapter.markdown("the {doc}`formula sheet <../formulas>`, {doc}`../glossary`, {doc}`03_tiling`, {term}`KV cache`")
    assert text == ("the formula sheet `formulas.md`, [Glossary](#glossary), "
                    f"[{chapter.title(ROOT / 'chapters' / '03_tiling')}](03_tiling.ipynb), [KV cache](#term-KV-cache)")
    on_site = book._Chapter(ROOT / "chapters" / "09_decode.md", {}, repo="https://github.com/a/b")
    assert on_site.markdown("{doc}`03_tiling` {doc}`formula sheet <../formulas>`") == (
        f"[{chapter.title(ROOT / 'chapters' / '03_tiling')}](https://a.github.io/b/chapters/03_tiling.html) "
        "[formula sheet](https://a.github.io/b/formulas.html)")
    assert book.glossary_link("kv CACHE") == "#term-KV-cache"  # the glossary's spelling, as Sphinx finds it


def test_citations_link_to_the_site_or_to_the_reference(monkeypatch):
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    assert book.cite("luo2024hopper, nvidia2019t4ds") == (
        "([Luo et al. 2024](https://arxiv.org/abs/2402.13499); [NVIDIA Corporation 2019]"
        "(https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/tesla-t4/t4-tensor-core-datasheet-951643.pdf))")
    assert book.cite("luo2024hopper", "https://github.com/Some-Fork/gpu-course") == \
        "([Luo et al. 2024](https://some-fork.github.io/gpu-course/references.html))"


def test_the_sites_buttons_name_the_repository_being_built(monkeypatch):
    monkeypatch.setenv("GITHUB_REPOSITORY", "some-fork/gpu-course")
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    fork = "https://github.com/some-fork/gpu-course"
    assert book.cite("dao2022flashattention").startswith("([Dao et al. 2022](https://some-fork.github.io/gpu-course/")
    assert book.colab_url("01_hierarchy", fork) in str(gm.book.chapter.colab_badge("01_hierarchy").data)
    from gpumodel.book import site

    config = type("Config", (), {"html_theme_options": {}})()
    monkeypatch.setenv("JUPYTERHUB_URL", "https://hub.example.edu")
    site.configure(None, config)
    assert config.html_theme_options == {"repository_url": fork, "use_repository_button": True,
                                         "launch_buttons": {"jupyterhub_url": "https://hub.example.edu"}}
    binder = "https://mybinder.org/v2/gh/some-fork/gpu-course/main?urlpath=lab/tree/"
    context = {"header_buttons": [{"label": "launch-buttons", "buttons": [{"url": binder + "chapters/03_tiling.md"},
                                                                         {"url": binder + "intro.md"}]}]}
    site.launch_notebooks(None, "chapters/03_tiling", "page.html", context, None)
    urls = [b["url"] for b in context["header_buttons"][0]["buttons"]]
    assert urls == [binder + "notebooks/03_tiling.ipynb", binder + "notebooks"]


def test_a_notebook_shows_no_colab_link():
    """In a notebook the kernel cannot know the repository, so the badge shows nothing."""
    assert gm.book.chapter.colab_badge("01_hierarchy") is None


def test_the_install_cell_installs_nothing_where_gpumodel_imports():
    done = subprocess.run([sys.executable, "-c", book.install_source("no-such-package-anywhere")],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""


def _site_with_gpumodel(folder, version: str):
    """A folder for PYTHONPATH where gpumodel `version` is installed (its package and metadata)."""
    (folder / "gpumodel").mkdir(parents=True)
    (folder / "gpumodel" / "__init__.py").write_text("")
    (folder / f"gpumodel-{version}.dist-info").mkdir()
    (folder / f"gpumodel-{version}.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: gpumodel\nVersion: {version}\n")
    return folder


def test_the_install_cell_installs_its_version_over_an_older_one(tmp_path):
    missing = tmp_path / "no-such-project-anywhere"  # pip refuses it at once, offline: proof that it tried
    for version, installs in (("0.0.9", True), (book.VERSION, False), ("99.0", False)):
        site = _site_with_gpumodel(tmp_path / version, version)
        done = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); "
                               + "exec(" + repr(book.install_source(str(missing))) + ")"],
                              capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        assert (done.returncode != 0 and str(missing) in done.stderr) == installs, (version, done.stderr[-300:])
    assert f"Install gpumodel {book.VERSION}," in book.install_source("x")
    pyproject = (pathlib.Path(book.ROOT) / "pyproject.toml").read_text()  # the installed version is the checkout's
    assert f'\nversion = "{book.VERSION}"\n' in pyproject


@pytest.mark.slow
def test_a_git_install_gives_an_importable_package_with_its_kernels(tmp_path):
    """What the Colab cell does, with this checkout standing in for the repository."""
    subprocess.run(["git", "clone", "-q", str(ROOT), str(tmp_path / "repo")], check=True)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                    f"gpumodel @ git+file://{tmp_path / 'repo'}"], check=True, capture_output=True)
    probe = ("import gpumodel as gm, gpumodel.cuda.compiler as c; "
             "print(gm.predict(gm.vector_add(2**28), gm.gpu('A100-40GB')).bound, len(list(c.kernel_dir().glob('*.cu'))), c.kernel_dir())")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True)
    bound, count, where = done.stdout.split()
    assert bound == "hbm" and int(count) == len(list((tmp_path / "repo" / "kernels").glob("*.cu")))
    assert where.startswith(str(target))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_conventions(chapter):
    text = chapter.read_text()
    front = yaml.safe_load(text.split("---")[1])
    assert 0 < front["mystnb"]["execution_timeout"] <= 300, "a per-chapter timeout in the front matter"
    assert len(re.findall(r"^import gpumodel as gm$", text, re.M)) == 1, "one visible import"
    assert "colab_badge(" in text, "a Colab link"
    runs_kernels = "gm.cuda.runtime" in text or "gm.cuda.plans" in text
    assert ("```{include} _gpu_optional.md" in text) == runs_kernels, "the GPU-optional admonition where kernels run"
    for block in re.findall(r"```\{code-cell\} ipython3\n:tags: \[([^\]]*)\]\n\n(.*?)```", text, re.S):
        tags, source = block
        if "hide-input" in tags:
            assert "gm.course.plots." in source or "Markdown(" in source or "runtime.have_gpu()" in source, \
                f"hide-input on a cell that does more than draw or run kernels: {source[:80]}"
    labels = re.findall(r"```\{exercise\}\n:label: (\S+)", text)
    for label in labels:
        assert f"{{solution-start}} {label}\n:class: dropdown" in text, f"exercise {label} needs a dropdown solution"


def test_the_pages_workflow_is_valid():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    steps = [s.get("run", "") for s in flow["jobs"]["build"]["steps"]]
    assert any("make book" in s for s in steps)
    assert flow["jobs"]["deploy"]["needs"] == "build"
    assert json.dumps(flow["permissions"]) == json.dumps({"contents": "write", "pages": "write", "id-token": "write"})
    assert any("git push -f" in s and " notebooks" in s for s in steps), "the notebooks branch Colab opens"


def test_make_notebooks_redoes_only_the_chapters_named_and_refuses_others(tmp_path):
    """`make notebooks CHAPTERS=...`: an unknown chapter is refused before anything runs."""
    with pytest.raises(ValueError, match=r"only must name chapters, one of \['00_programming_model'.*got \['09_decod'\]"):
        book.write_notebooks(ROOT / "chapters", tmp_path, only=["09_decod"])
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_make_notebooks_of_one_chapter_writes_that_one(tmp_path):
    written = book.write_notebooks(ROOT / "chapters", tmp_path, only=["00_programming_model"])
    assert written == [tmp_path / "00_programming_model.ipynb"]
    assert written[0].read_text() == (ROOT / "notebooks" / "00_programming_model.ipynb").read_text()


@pytest.mark.slow
def test_make_moved_lists_the_glued_values_a_data_change_moves(tmp_path):
    """A notebook whose kept value differs from what its chapter now glues is listed with both;
    an unchanged one lists nothing."""
    name = "00_programming_model"
    kept = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert book.moved(ROOT / "chapters", ROOT / "notebooks", only=[name]) == {}
    glued = kept.metadata["gpumodel"]["glued"]
    first = next(n for n in sorted(glued) if n not in kept.metadata["gpumodel"]["varies"])
    now = glued[first]
    glued[first] = "a stale value"
    nbformat.write(kept, tmp_path / f"{name}.ipynb")
    assert book.moved(ROOT / "chapters", tmp_path, only=[name]) == {name: {first: ("a stale value", now)}}
