"""Every question a reader answers, on the site and in Jupyter: the code-cell exercises (their
checkers' rules), the widget exercises and the checkpoints. One way to read a typed number
(the same table drives widgets.js in tests/test_browser.py), hints that never hold the
answer, a text keyboard for names, checkpoints in chapters 1-7, and progress kept."""

import json
import pathlib
import re

import pytest

import gpumodel as gm
from gpumodel.course import checks

ROOT = pathlib.Path(__file__).resolve().parent.parent
UNITS = {"%": 0.01, "x": 1.0, "fmas": 1.0, "fma": 1.0, "mib": 1.0, "mb": 1e6 / 2**20, "us": 1.0}
PARSE_CASES = [  # (typed, the number it reads as with UNITS, or None: not a number)
    ("8,388,608", 8388608), ("16,384", 16384), ("2^23", 8388608), ("2**23", 8388608), ("8e6", 8e6),
    ("8E6", 8e6), (" 42 ", 42), ("-2", -2), (".5", 0.5), ("1.5e-3", 1.5e-3), ("1.5 x 2^20", 1.5 * 2**20),
    ("1.5×2^20", 1.5 * 2**20), ("3 * 10^6", 3e6), ("8 388 608", 8388608), ("37%", 0.37), ("3.98x", 3.98),
    ("40 FMAs", 40), ("40 fma", 40), ("48 MiB", 48), ("50.3 MB", 50.3e6 / 2**20), ("2^-3", 0.125),
    ("1,5", None), ("1,50", None), ("12,34,567", None), ("abc", None), ("", None), ("2^", None),
    ("1e999", None), ("0^-1", None), ("40 apples", None), ("%", None), ("4.5.6", None), ("٣", None),
    ("1/12", 1 / 12), ("3 x 2^10 / 4", 768), ("-1/8", -0.125), ("37%/2", None), ("1/0", None), ("1/", None),
    ("1/2/3", None), ("48 MIB", 48), ("3 µs", 3), ("3 μs", 3), ("3 us", 3),
]


@pytest.mark.parametrize("typed, value", PARSE_CASES)
def test_a_typed_number_reads_one_way(typed, value):
    read = checks.read_number(typed, UNITS)
    assert read == pytest.approx(value, rel=1e-12) if value is not None else read is None, (typed, read)


CALL = re.compile(r"^answer = None.*\n(gm\.course\.(\w+)\.(check_\w+)\((.*), answer\))$", re.M)


def chapter_exercises() -> dict:
    """Every code-cell exercise of the chapters: label -> (module, checker, its arguments)."""
    found = {}
    for path in sorted((ROOT / "chapters").glob("[0-9]*.md")):
        text = path.read_text()
        for m in CALL.finditer(text):
            label = re.findall(r":label: ([\w-]+)", text[:m.start()])[-1]
            args = eval(f"({m.group(4)},)", {"__builtins__": {}})  # literals and products like 16 * 1024
            found[label] = (m.group(2), m.group(3), args)
    return found


CODE_CELLS = chapter_exercises()


def code_cell_rules(label: str) -> dict:
    module, checker, args = CODE_CELLS[label]
    feedback = getattr(getattr(gm.course, module), checker)(*args, None)
    assert not feedback and "No answer yet" in feedback.message
    return feedback.rules


def every_question() -> dict:
    """key -> rules of every question the site shows: code cells, widget exercises, checkpoints."""
    rules = {label: code_cell_rules(label) for label in CODE_CELLS}
    rules |= {f"explore: {make().key}": make().rules for make in gm.course.widget_exercises()}
    rules |= {key: make().rules for key, make in gm.course.checkpoints().items()}
    return rules


QUESTIONS = every_question()


def test_every_code_cell_exercise_has_rules_for_an_answer_box():
    assert len(CODE_CELLS) >= 16
    for label in CODE_CELLS:
        assert code_cell_rules(label)["kind"] in ("number", "choice")


def wrong_texts(rules: dict) -> list[str]:
    if rules["kind"] == "choice":
        return list(rules["wrong"].values())
    return ([text for _, text in rules["mistakes"]] + [text for *_, text in rules["ranges"]]
            + [text for *_, text in rules["bands"]] + [rules["high"], rules["low"], rules["not_number"]])


TOKEN = re.compile(r"([+-]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:e[+-]?\d+)?(?:\s*(?:\^|\*\*)\s*[+-]?\d+(?:\.\d+)?)?)"
                   r"(\s*[%a-zµ/]+)?", re.I)
"""A number as a hint might write it, and the word after it (perhaps a unit)."""


@pytest.mark.parametrize("key", QUESTIONS)
def test_no_hint_holds_the_answer(key):
    """No wrong answer's message holds a number (written any way the rules read one) that the
    rules would take as right, nor, for a name, the name."""
    rules = QUESTIONS[key]
    for text in wrong_texts(rules):
        if rules["kind"] == "choice":
            assert not re.search(rf"\b{re.escape(rules['answer'])}\b", text.lower()), (key, text)
            continue
        for number, word in TOKEN.findall(text):
            for token in (number.strip(","), number.strip(",") + word):
                assert not checks.verdict(rules, token).correct, (key, token, text)


@pytest.mark.parametrize("key", QUESTIONS)
def test_every_number_answer_reads_the_ways_a_reader_types_it(key):
    rules = QUESTIONS[key]
    if rules["kind"] == "choice":
        names = rules["not_number"].removeprefix("Type one of: ").rstrip(".").split(", ")
        assert names == sorted(names, key=str.lower), "the names offered must not lead with the answer"
        return
    answer = rules["answer"]
    for typed in ("8,388,608", "2^23", "2**23", "8e6"):
        assert checks.verdict(rules, typed).message != rules["not_number"], (key, typed)
    unit = next(iter(rules["units"]))
    for typed in (f"{answer:,.6f}".rstrip("0").rstrip("."), f"{answer:.9e}", f"{answer:.9g} {unit}"):
        assert checks.verdict(rules, typed).correct, (key, typed)


FLOP_COUNTING = {"ex-hierarchy-fmas", "ex-intensity-decode", "ex-intensity-fusion-limit", "ex-tiling-operand-tile",
                 "ex-levels-l2-tile", "ex-flash-limit", "ex-tc-operand-n", "ex-tc-int4-batch",
                 "explore: fused-chain", "explore: decode-batch"}
"""The questions whose answer comes from counting flops (and bytes): only these may suggest
that an FMA was counted as one flop."""


@pytest.mark.parametrize("key", QUESTIONS)
def test_the_fma_hint_only_where_flops_are_counted(key):
    rules = QUESTIONS[key]
    says = any(checks.FLOPS_AND_BYTES in text for text in wrong_texts(rules)) if rules["kind"] == "number" else False
    assert says == (key in FLOP_COUNTING), key


def test_every_answer_box_opens_a_keyboard_that_types_what_it_accepts():
    name = gm.course.appendix_presets.highest_ridge()._repr_html_()
    assert 'inputmode="text"' in name and 'inputmode="decimal"' not in name
    assert 'inputmode="text"' in gm.course.checks.answer_box(code_cell_rules("ex-hierarchy-bound"), "bound")
    # A number box takes units, "e", "^" and "/", which a decimal pad cannot type.
    number = gm.course.checks.answer_box(code_cell_rules("ex-hierarchy-fmas"), "FMAs")
    assert 'inputmode="text"' in number and 'inputmode="decimal"' not in number
    listed = code_cell_rules("ex-hierarchy-bound")["not_number"]
    assert listed == "Type one of: compute, hbm, l2, registers, sfu, smem."


def test_an_unanswered_code_cell_is_an_answer_box_on_the_site_only(monkeypatch):
    feedback = gm.course.hierarchy.check_fmas_per_load("H100-SXM", None)
    monkeypatch.delenv("GPUMODEL_BUILD", raising=False)
    assert feedback._repr_html_() is None and "No answer yet" in feedback._repr_markdown_()
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    box = feedback._repr_html_()
    data = json.loads(re.search(r'<script type="application/json">(.*?)</script>', box).group(1))
    assert data["rules"] == code_cell_rules("ex-hierarchy-fmas") and '<form class="gm-answer">' in box
    assert gm.course.hierarchy.check_fmas_per_load("H100-SXM", 40)._repr_html_() is None  # an answer: no box


def test_a_python_tuple_from_thousands_separators_gets_a_sentence():
    said = gm.course.roofline_levels.check_l2_tile("H100-SXM", 8192, (8, 388, 608))
    assert not said and "is a tuple" in said.message


CHECKPOINT_CELL = re.compile(r"""gm\.course\.checkpoint\(["']([\w-]+)["']\)""")


def test_every_checkpoint_is_shown_once_in_its_chapter_and_chapters_one_to_seven_have_two_or_more():
    made = gm.course.checkpoints()
    shown = {}
    for path in (sorted((ROOT / "chapters").glob("0[1-7]_*.md")) + sorted((ROOT / "chapters").glob("09_*.md"))
                 + sorted((ROOT / "chapters").glob("10_*.md"))):
        keys = CHECKPOINT_CELL.findall(path.read_text())
        assert len(keys) >= 2, f"{path.name}: {len(keys)} checkpoints"
        shown |= {k: path.stem for k in keys}
    assert sorted(shown) == sorted(made), "every checkpoint defined is shown, once"
    for key, make in made.items():
        c = make()
        assert c.key == key and key.startswith("cp-") and c.question.endswith("?")
        assert c.check(repr(c.rules["answer"])) and not c.check("lots")


@pytest.mark.parametrize("key", sorted(gm.course.checkpoints()))
def test_a_checkpoint_shows_its_question_and_a_keyed_box(key, monkeypatch):
    c = gm.course.checkpoints()[key]()
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    box = gm.course.checkpoint(key)._repr_html_()
    assert f'data-key="{key}"' in box and f'id="{key}"' in box and "Checkpoint." in box
    monkeypatch.delenv("GPUMODEL_BUILD")
    widget = gm.course.checkpoint(key)
    (answer, button), verdict = widget.children[1].children, widget.children[2]
    answer.value = "lots"
    button.click()
    assert "Not yet." in verdict.value
    answer.value = repr(c.rules["answer"])
    button.click()
    assert "Right." in verdict.value


def test_a_checkpoint_key_must_exist():
    with pytest.raises(ValueError, match="key must name a checkpoint"):
        gm.course.checkpoint("cp-nowhere")


def test_progress_lists_this_sessions_checks(monkeypatch, tmp_path):
    monkeypatch.setattr(checks, "SESSION", {})
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert "Nothing checked yet" in gm.course.progress().data
    gm.course.hierarchy.check_fmas_per_load("H100-SXM", 39)
    gm.course.hierarchy.check_fmas_per_load("H100-SXM", 40)
    gm.course.checkpoints()["cp-tc-waves"]().check("2")
    table = gm.course.progress().data
    assert "1 of 2 questions checked are right" in table
    assert "| check_fmas_per_load(H100-SXM) | 2 | right |" in table and "| cp-tc-waves | 1 | not yet |" in table


def test_progress_is_kept_across_kernels_in_a_file_only_its_owner_reads(monkeypatch, tmp_path):
    import stat

    monkeypatch.setattr(checks, "SESSION", {})
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert checks.progress_file.path() == tmp_path / "data" / "gpumodel" / "progress.json"
    gm.course.hierarchy.check_fmas_per_load("H100-SXM", 39)
    gm.course.hierarchy.check_fmas_per_load("H100-SXM", 40)
    path = checks.progress_file.path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"questions": {"check_fmas_per_load(H100-SXM)": [2, True]}}
    monkeypatch.setattr(checks, "SESSION", {})  # a new kernel: nothing checked in this session
    gm.course.checkpoints()["cp-tc-waves"]().check("2")
    table = gm.course.progress().data
    assert "| check_fmas_per_load(H100-SXM) | 2 | right |" in table and "| cp-tc-waves | 1 | not yet |" in table
    assert "1 of 2 questions checked are right" in table and str(path) in table
    assert sorted(p.name for p in path.parent.iterdir()) == ["progress.json", "progress.lock"]  # no temporary file left
    assert stat.S_IMODE((path.parent / "progress.lock").stat().st_mode) == 0o600
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert checks.progress_file.path() == tmp_path / "home" / ".local" / "share" / "gpumodel" / "progress.json"
    monkeypatch.setenv("GPUMODEL_BUILD", "book")  # the book's build keeps nobody's progress
    gm.course.checkpoints()["cp-tc-waves"]().check("3")
    assert not checks.progress_file.path().exists()
    path.write_text("not json")  # a damaged file: set aside, progress starts afresh, no traceback
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("GPUMODEL_BUILD")
    monkeypatch.setattr(checks, "SESSION", {})
    assert "Nothing checked yet" in gm.course.progress().data and "could not be read (it is not JSON" in gm.course.progress().data
    (aside,) = path.parent.glob("progress.json.unreadable-*")
    assert aside.read_text() == "not json" and not path.exists()


def test_the_progress_page_marks_the_labs_checked_in_jupyter_only():
    chapters = gm.book.progress.questions()
    labs = {key for c in chapters for key in c["jupyter"]}
    editors = {label for path in (ROOT / "chapters").glob("[0-9]*.md")
               for label in re.findall(r":label: ([\w-]+)\n(?:(?!solution-start).)*?(?:LabEditor\(|\.editor\()",
                                       path.read_text(), re.S)}
    assert labs == editors and "ex-capstone-gemm" in labs and "ex-intensity-lab-fuse" in labs
    html = gm.book.progress.page()._repr_html_()
    total = sum(len(c["items"]) for c in chapters)
    assert f"{len(labs)} of the {total} are labs, marked <i>Jupyter only</i>" in html
    assert html.count("data-jupyter") == len(labs) and html.count(">Jupyter only</span>") == len(labs)


def test_the_progress_page_lists_every_exercise_and_checkpoint():
    listed = {key: c["name"] for c in gm.book.progress.questions() for key, _, _ in c["items"]}
    labels = {label for path in (ROOT / "chapters").glob("[0-9]*.md")
              for label in re.findall(r"^`{3,}\{exercise\}[^\n]*\n:label: ([\w-]+)", path.read_text(), re.M)}
    assert set(listed) == labels | set(gm.course.checkpoints())
    html = gm.book.progress.page()._repr_html_()
    assert html.count("<li ") == len(listed) and 'href="chapters/01_hierarchy.html#ex-hierarchy-bound"' in html


def test_a_slip_that_gives_the_answer_is_no_mistake():
    rules = checks.number_rules(10, "words", 0, mistakes=[(10, "same"), (5, "half")])
    assert rules["mistakes"] == [[5.0, "half"]] and checks.verdict(rules, "10").correct
    assert checks.verdict(rules, "5").message == "half"


@pytest.mark.parametrize("typed", ["301 µs", "301 μs", "301us", "301 US", "0.301 ms", "3.01e-4 s", "301,000 ns"])
def test_a_time_reads_in_every_unit_and_spelling_of_its_family(typed):
    rules = checks.number_rules(301, "us", 0.02)
    assert checks.verdict(rules, typed).correct, typed
    assert checks.verdict(checks.number_rules(0.301, "ms", 0.02), typed).correct, typed
    assert checks.verdict(checks.number_rules(301, "µs", 0.02), typed).correct, typed


def test_sizes_read_in_every_unit_of_their_family_and_fractions_read_as_numbers():
    rules = checks.number_rules(48 * 2**20, "B", 0.01)
    assert all(checks.verdict(rules, t).correct for t in ("48 MiB", "50.3 MB", "49,152 KiB", "0.0503 GB"))
    ratio = checks.number_rules(1 / 12, "", 0.01)
    assert checks.verdict(ratio, "1/12").correct and not checks.verdict(ratio, "1/11").correct
    assert checks.verdict(ratio, "1/12").message != ratio["not_number"]


def test_only_a_unit_slip_is_called_one():
    rules = checks.number_rules(128, "B", 0.02)
    assert "check the units" in checks.verdict(rules, "12.8").message  # a power of ten exactly
    assert "check the units" in checks.verdict(rules, "0.128").message
    off = checks.verdict(rules, "12")  # 128 / 12 is 10.7: not a slip of units
    assert not off and "units" not in off.message and off.message.startswith("Too low")


def test_units_as_refuses_a_unit_or_table_it_does_not_know_by_name():
    with pytest.raises(ValueError, match=r"unit must be one of \('ns', 'us', 'ms', 's'\), got 'furlong'"):
        checks.units_as("furlong", checks.TIMES)
    with pytest.raises(TypeError, match="table must be one of checks.BYTES, checks.TIMES"):
        checks.units_as("s", {"s": 1})
    assert checks.units_as("us", checks.TIMES)["ms"] == pytest.approx(1e3)


def test_the_checkers_steps_refuse_what_no_checker_passes_them_by_name():
    rules = checks.number_rules(3.0, "ms")
    with pytest.raises(TypeError, match="rules must be made by number_rules or choice_rules, got {}"):
        checks.judge({}, 3.0, "a number in ms", "k")
    with pytest.raises(TypeError, match="key must name the question"):
        checks.judge(rules, 3.0, "a number in ms", None)
    with pytest.raises(TypeError, match="feedback must be the Feedback a checker returned, got None"):
        checks.record("k", None)
    with pytest.raises(TypeError, match="key must name the question"):
        checks.record("", checks.Feedback(True, "right"))
    assert "k" not in checks.SESSION


@pytest.mark.parametrize("make, bad, name", [
    (lambda v: gm.course.flashattention.cp_scores(seq=v), -16384, "seq"),
    (lambda v: gm.course.tensor_cores.cp_waves(tiles=v), -300, "tiles"),
    (lambda v: gm.course.tiling.cp_banks(stride=v), True, "stride"),
    (lambda v: gm.course.intensity.cp_roofline(intensity=v), -4.0, "intensity"),
    (lambda v: gm.course.intensity.cp_sectors(elem=v), 3, "elem"),
    (lambda v: gm.course.roofline_levels.cp_working_set(n=v), 0, "n"),
    (lambda v: gm.course.roofline_levels.cp_triton_wave(group=v), 1, "group"),
    (lambda v: gm.course.tiling.cp_tile_intensity(b=v), -64, "b"),
])
def test_a_checkpoint_is_never_built_from_a_number_no_question_asks(make, bad, name):
    with pytest.raises(ValueError, match=rf"^{name} must be"):
        make(bad)


@pytest.mark.parametrize("key", [k for k, r in QUESTIONS.items() if r["kind"] == "number" and r["unit"] in checks.TIMES])
def test_every_time_question_takes_every_unit_and_spelling_of_a_time(key):
    rules = QUESTIONS[key]
    seconds = rules["answer"] * checks.TIMES[rules["unit"]]
    for typed in (f"{seconds:.9g} s", f"{seconds * 1e3:.9g} ms", f"{seconds * 1e6:.9g} µs", f"{seconds * 1e6:.9g} μs",
                  f"{seconds * 1e6:.9g}us", f"{seconds * 1e9:.9g} ns"):
        assert checks.verdict(rules, typed).correct, (key, typed)


@pytest.mark.parametrize("unit, says", [("ms", "Type a number in ms."), ("of the MHA cache", "Type a number: the share of the MHA cache."),
                                        ("per token", "Type a number (per token)."),
                                        ("GPUs", "Type a number of GPUs."), ("times", "Type a number: how many times."),
                                        ("FLOP/B", "Type a number in FLOP/B."), ("results per side", "Type a number of results per side.")])
def test_the_not_a_number_sentence_reads_as_english_for_every_kind_of_unit(unit, says):
    assert checks.number_rules(0.25, unit)["not_number"] == says


@pytest.mark.parametrize("value, shown", [(536870912, "536,870,912"), (61440.0, "61,440"), (0.125, "0.125"),
                                          (32313.78, "32,310"), (1234.5678, "1,235"), (12.3456, "12.35"), (2.5e-7, "2.5 × 10⁻⁷"),
                                          (1.23456e20, "1.235 × 10²⁰"), (-3.5e9, "-3,500,000,000"), (-3.5e18, "-3.5 × 10¹⁸"), (0, "0")])
def test_a_number_in_feedback_is_written_as_a_reader_writes_it(value, shown):
    assert gm.units.fmt_exact(value) == shown
    assert "e+" not in checks.number_rules(value, "bytes")["right"] if value else True


@pytest.mark.parametrize("key", QUESTIONS)
def test_no_hint_asks_a_web_reader_to_run_code(key):
    """A site question is answered on the site: no message it shows names the package's code
    ("Call gm.decode.critical_batch ..." was one)."""
    rules = QUESTIONS[key]
    texts = wrong_texts(rules) if rules["kind"] == "number" else list(rules["wrong"].values())
    assert not [t for t in texts if re.search(r"\bgm\.|\bCall \w", t)], key


def test_plain_text_never_shows_an_answer_or_its_anticipated_mistakes():
    """IPython in a terminal, an executed copy and any front end that shows text/plain print the
    repr: it is what the Markdown shows, and a checkpoint's or widget exercise's repr hides its rules."""
    unanswered = gm.course.programming_model.check_blocks(1_000_000, 256, None)
    wrong = gm.course.programming_model.check_blocks(1_000_000, 256, 3906)
    assert unanswered.rules["answer"] == 3907  # the rules hold the answer; the repr must not show them
    for feedback in (unanswered, wrong):
        assert repr(feedback) == feedback._repr_markdown_()
        assert "3907" not in repr(feedback) and "mistakes" not in repr(feedback)
    for made in (*gm.course.checkpoints().values(), *gm.course.widget_exercises()):
        shown = repr(made())
        assert "'answer'" not in shown and "mistakes" not in shown, shown[:200]


@pytest.mark.parametrize("name", ["prompt", "key", "question"])
def test_an_answer_box_refuses_words_that_are_not_text_by_name(name):
    args = {"rules": checks.number_rules(3.0, "ms"), "prompt": "Time:", "key": "cp-x", "question": "How long?"}
    with pytest.raises(TypeError, match=f"^{name} must be text"):
        checks.answer_box(**{**args, name: None})
