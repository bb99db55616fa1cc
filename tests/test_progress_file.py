"""The progress file as a file another user may have touched (`gpumodel.course.progress_file`):
whatever lies at its path, every checker still answers, the file is read only from a private
folder, only as a bounded regular file of the learner's own, and a bad one is set aside with
one message; `progress()` shows every key as text."""

import json
import os
import re
import stat
import threading

import pytest

import gpumodel as gm
from gpumodel.course import checks, progress_file


@pytest.fixture
def home(monkeypatch, tmp_path):
    """A private XDG_DATA_HOME of the test's, nothing checked yet: the progress file's path."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    tmp_path.chmod(0o700)
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setattr(checks, "SESSION", {})
    monkeypatch.setattr(progress_file, "NOTES", [])
    (data / "gpumodel").mkdir(mode=0o700)
    return progress_file.path()


def check(right: bool = True):
    """One checker call (chapter 1's fmas per load: 40 is right on an H100)."""
    return gm.course.hierarchy.check_fmas_per_load("H100-SXM", 40 if right else 39)


def set_aside(path) -> list:
    return sorted(path.parent.glob("progress.json.unreadable-*"))


BAD_FILES = {
    "not json": (b"{questions", "it is not JSON"),
    "a number past a float": (b'{"questions": {"q": [1e400, true]}}', "not [tries from 0 to 1,000,000"),
    "NaN": (b'{"questions": {"q": [NaN, true]}}', "it holds NaN"),
    "nested 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "a bool for tries": (b'{"questions": {"q": [true, true]}}', "not [tries"),
    "negative tries": (b'{"questions": {"q": [-1, false]}}', "not [tries"),
    "tries past the ceiling": (b'{"questions": {"q": [1000001, false]}}', "not [tries"),
    "a string for right": (b'{"questions": {"q": [1, "yes"]}}', "not [tries"),
    "a number for right": (b'{"questions": {"q": [1, 1]}}', "not [tries"),
    "three items": (b'{"questions": {"q": [1, true, 1]}}', "not [tries"),
    "no questions": (b'{"q": [1, true]}', 'no "questions" object'),
    "a list": (b"[1, 2]", 'no "questions" object'),
    "a huge integer": (b'{"questions": {"q": [' + b"9" * 5000 + b', true]}}', "it is not JSON"),
    "a key too long": (json.dumps({"questions": {"k" * 201: [1, True]}}).encode(), "longer than 200 characters"),
    "too large": (b'{"questions": {}}' + b" " * (1 << 20), "larger than 1,048,576 bytes"),
    "not UTF-8": (b'{"questions": {"\xff": [1, true]}}', "it is not JSON"),
}


@pytest.mark.parametrize("name", BAD_FILES)
def test_a_bad_progress_file_is_set_aside_with_one_message_and_every_checker_still_answers(home, name, capsys):
    content, why = BAD_FILES[name]
    home.write_bytes(content)
    assert check().correct and check(right=False).correct is False
    printed = capsys.readouterr().out
    assert printed.count("could not be read") == 1 and why in printed, printed
    (aside,) = set_aside(home)
    assert aside.read_bytes() == content  # kept for the learner, untouched
    assert json.loads(home.read_text()) == {"questions": {"check_fmas_per_load(H100-SXM)": [2, True]}}
    assert "could not be read" in gm.course.progress().data


def test_a_try_at_the_ceiling_stays_at_the_ceiling(home):
    home.write_text(json.dumps({"questions": {"q": [10**6, False]}}))
    progress_file.add("q", True)
    assert progress_file.read() == {"q": (10**6, True)}


def test_a_good_file_at_the_ceilings_is_read():
    data = json.dumps({"questions": {"k" * 200: [10**6, True], "q": [0, False]}}).encode()
    assert progress_file._questions(data) == {"k" * 200: (10**6, True), "q": (0, False)}


def test_a_fifo_at_the_path_is_set_aside_without_waiting_for_a_writer(home, capsys):
    os.mkfifo(home)
    done = []
    worker = threading.Thread(target=lambda: done.append(check()), daemon=True)
    worker.start()
    worker.join(20)
    assert done and done[0].correct, "a checker hung on a FIFO"
    assert "it is not a regular file" in capsys.readouterr().out
    (aside,) = set_aside(home)
    assert stat.S_ISFIFO(os.lstat(aside).st_mode)


def test_a_folder_at_the_path_is_set_aside_and_every_checker_still_answers(home, capsys):
    home.mkdir()
    assert check().correct and gm.course.progress() is not None
    assert "it is not a regular file" in capsys.readouterr().out
    (aside,) = set_aside(home)
    assert aside.is_dir() and json.loads(home.read_text())["questions"]


def _add_keys(first: int) -> None:
    for k in range(first, first + 25):
        progress_file.add(f"key-{k}", k % 2 == 0)


def test_notebooks_checking_at_once_keep_each_others_answers(home):
    """Eight processes add 25 keys each, at once: the file keeps all 200 (a lock around read,
    change and replace)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_add_keys, args=(25 * w,)) for w in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert all(w.exitcode == 0 for w in workers)
    kept = progress_file.read()
    assert len(kept) == 200 and kept["key-0"] == (1, True) and kept["key-199"] == (1, False)


def test_a_link_to_dev_zero_is_never_followed(home, capsys):
    home.symlink_to("/dev/zero")
    assert check().correct
    assert f"Your progress file {home} could not be read (it is a symbolic link); it was set aside" in capsys.readouterr().out
    (aside,) = set_aside(home)
    assert os.readlink(aside) == "/dev/zero" and home.is_file() and not home.is_symlink()


@pytest.mark.parametrize("mode", [0o777, 0o755])
def test_a_folder_others_may_use_is_neither_read_nor_written_and_checkers_still_answer(home, mode, capsys):
    planted = {"questions": {"check_fmas_per_load(H100-SXM)": [5, True]}}
    home.write_text(json.dumps(planted))
    home.parent.chmod(mode)
    assert check(right=False).correct is False
    assert json.loads(home.read_text()) == planted  # not read into the session, not written over
    printed = capsys.readouterr().out
    assert printed.count("is not private") == 1 and f"its mode is {mode:04o}" in printed
    table = gm.course.progress().data
    assert "| check_fmas_per_load(H100-SXM) | 1 | not yet |" in table and "is not private" in table


def test_a_world_writable_data_home_above_the_folder_is_refused(home, capsys):
    home.parent.parent.chmod(0o777)  # anyone could rename gpumodel/ and put another in its place
    check()
    assert not home.exists() and "lets others replace it" in capsys.readouterr().out


def test_a_file_of_another_users_is_set_aside(home, monkeypatch, capsys):
    home.write_text(json.dumps({"questions": {}}))
    real = os.fstat  # as if uid 4242 owned the file (giving it away needs root)
    monkeypatch.setattr(progress_file.os, "fstat", lambda fd: os.stat_result((*real(fd)[:4], 4242, *real(fd)[5:10])))
    check()
    assert "it is owned by uid 4242" in capsys.readouterr().out and set_aside(home)


def test_progress_shows_every_key_as_text_never_as_html_or_a_new_cell(home):
    checks.record("<img src=x onerror=alert(1)>", checks.Feedback(True, ""))
    checks.record("a | b", checks.Feedback(False, ""))
    checks.record("`code` *bold* [link](x)", checks.Feedback(False, ""))
    table = gm.course.progress().data
    assert "<img" not in table and "&lt;img src=x onerror=alert(1)&gt;" in table
    assert "| a \\| b | 1 | not yet |" in table
    assert "\\`code\\` \\*bold\\* \\[link\\](x)" in table


def test_a_key_longer_than_the_file_keeps_is_refused_by_name():
    with pytest.raises(ValueError, match="key must name the question in at most 200 characters, got 201"):
        checks.record("k" * 201, checks.Feedback(True, ""))


# What each refusal says, word for word, and how the file is written (issue 72: `make mutation`
# found each message and each part of the write could change unnoticed).
def test_each_unreadable_files_note_says_why_and_where_it_went(home, capsys):
    home.write_text('{"q": 1}')
    assert progress_file.read() == {}
    (aside,) = set_aside(home)
    assert re.fullmatch(rf"progress\.json\.unreadable-\d{{8}}-\d{{6}}-{os.getpid()}", aside.name)
    assert capsys.readouterr().out == (f'Your progress file {home} could not be read (it holds no "questions" object); '
                                       f"it was set aside as {aside.name}, and your progress starts afresh.\n")


@pytest.mark.parametrize("data, why", [
    (b"[" * 100_000 + b"]" * 100_000, "it is nested too deeply"),
    (json.dumps({"questions": {"k" * 100: [1, "v" * 100]}}).encode(),
     f"question {'k' * 60!r} holds {str([1, 'v' * 100])[:60]}, not [tries from 0 to 1,000,000, true or false]")])
def test_an_unreadable_files_reason_word_for_word(home, capsys, data, why):
    home.write_bytes(data)
    assert progress_file.read() == {}
    assert f"could not be read ({why}); it was set aside as" in capsys.readouterr().out


def test_a_file_that_cannot_be_set_aside_is_named_for_removal(home, monkeypatch, capsys):
    home.write_text("not json")
    monkeypatch.setattr(progress_file.os, "rename", lambda *a: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    assert progress_file.read() == {}
    assert "; it could not be set aside (Permission denied): remove it, and your progress starts afresh." \
        in capsys.readouterr().out


def test_a_file_it_may_not_open_is_named_by_the_systems_reason_not_as_a_link(home, monkeypatch, capsys):
    home.write_text(json.dumps({"questions": {}}))
    real = os.open
    monkeypatch.setattr(progress_file.os, "open", lambda path, *a: (_ for _ in ()).throw(
        PermissionError(13, "Permission denied")) if str(path) == str(home) else real(path, *a))
    assert progress_file.read() == {}
    printed = capsys.readouterr().out
    assert "could not be read (Permission denied)" in printed and "symbolic link" not in printed


def test_a_folder_at_the_path_is_named_as_not_a_regular_file(home, capsys):
    home.mkdir()
    assert progress_file.read() == {}
    assert f"Your progress file {home} could not be read (it is not a regular file); it was set aside" \
        in capsys.readouterr().out


def test_a_file_of_exactly_the_largest_size_is_read(home):
    body = json.dumps({"questions": {"q": [2, True]}}).encode()
    home.write_bytes(body + b" " * (progress_file.MOST_BYTES - len(body)))
    assert home.stat().st_size == progress_file.MOST_BYTES and progress_file.read() == {"q": (2, True)}


def test_a_folder_not_private_is_named_once_with_what_to_do(home, capsys):
    home.parent.chmod(0o770)
    home.parent.parent.chmod(0o777)  # two problems, said in one note
    assert progress_file.read() == {} and progress_file.read() == {}
    found = gm.folders.problems(home.parent)
    assert len(found) == 2
    found = "; ".join(found)
    assert capsys.readouterr().out == (
        f"Your progress folder {home.parent} is not private ({found}): another user could have changed what it holds, "
        "so the course neither reads nor writes your progress there, and keeps this session's only. Make it yours "
        "with mode 0700 (chmod 700), or set XDG_DATA_HOME to a private folder.\n")


def test_the_file_is_written_whole_beside_itself_then_moved_over_it(home, monkeypatch):
    """Written to a hidden .progress-*.json in its own folder (so the move is atomic, and never
    through the system's temporary folder), one item a line as json.dump(indent=1) writes it."""
    moved, real = [], os.replace
    monkeypatch.setattr(progress_file.os, "replace", lambda a, b: moved.append((a, b)) or real(a, b))
    monkeypatch.setattr(progress_file.tempfile, "tempdir", str(home.parent / "no such folder"))
    progress_file.add("q", True)
    ((tmp, to),) = moved
    tmp = os.path.basename(tmp)
    assert to == home and tmp.startswith(".progress-") and tmp.endswith(".json")
    assert home.read_text() == json.dumps({"questions": {"q": [1, True]}}, indent=1)
