"""README's layout and CONTRIBUTING's "where things go" are generated from the tree
(`python -m gpumodel.book.layout`): a new module, a moved file or a changed docstring fails
here until they are regenerated."""

from gpumodel.book import layout


def test_readme_and_contributing_show_the_tree():
    for path, text in layout.sections().items():
        assert path.read_text() == text, f"{path.name} is stale: run python -m gpumodel.book.layout"


def test_every_path_they_name_exists_and_every_top_level_entry_is_described():
    assert layout.missing_paths() == []


def test_every_module_appears_with_its_summary():
    block = layout.readme_block()
    for module in layout.PACKAGE.rglob("*.py"):
        if not module.stem.startswith("_"):
            assert f"  {module.name}" in block and layout._summary(module) in block, module


def test_a_stale_section_is_seen(tmp_path, monkeypatch):
    readme = tmp_path / "README.md"
    readme.write_text(f"x\n{layout.README_MARKS[0]}\nSTALE-LINE\n{layout.README_MARKS[1]}\n")
    (tmp_path / "CONTRIBUTING.md").write_text(f"{layout.GUIDE_MARKS[0]}\n{layout.GUIDE_MARKS[1]}\n")
    monkeypatch.setattr(layout, "ROOT", tmp_path)
    assert "STALE-LINE" not in layout.sections()[readme]


def _architecture_citations(text: str) -> list:
    """The section names a text cites (the document's name, a comma, the names quoted; comments
    joined across lines)."""
    import re

    text = re.sub(r"\s*\n\s*(?:#|//)?\s*", " ", text)
    found = []
    for m in re.finditer(r'ARCHITECTURE\.md,\s*((?:"[^"]+"(?:,\s*| and |\s*))+)', text):
        found += re.findall(r'"([^"]+)"', m.group(1))
    return found


def test_every_citation_of_the_architecture_document_names_one_of_its_sections():
    import re

    document = (layout.ROOT / "ARCHITECTURE.md").read_text()
    sections = {re.sub(r"^\([a-z]\)\s*", "", h.strip()) for h in re.findall(r"^#{2,4}\s+(.*)$", document, re.M)}
    cited = {}
    for path in [*layout.ROOT.glob("*.md"), *(layout.ROOT / "gpumodel").rglob("*.[pch]*"), *(layout.ROOT / "tests").glob("*.py")]:
        if path.name == "test_layout.py":
            continue
        for name in _architecture_citations(path.read_text(errors="replace")):
            cited.setdefault(name, []).append(path.name)
    assert len(cited) >= 4, cited  # the kernel lab, the model, the bound, what a machine keeps at least
    assert {n: where for n, where in cited.items() if n not in sections} == {}
    assert _architecture_citations('x (ARCHITECTURE.md, "The\n# kernel lab" and "Nowhere")') == ["The kernel lab", "Nowhere"]
