"""Interactive figures and answer checkers, without a browser: the player's frames and
size, the explorer's callback, and the exercise feedback."""

import base64
import re

import matplotlib
import pytest

import gpumodel as gm

matplotlib.use("Agg")
STATES = [{"gpu": n} for n in ("V100", "A100-40GB", "H100-SXM")]


def test_player_precomputes_one_frame_per_state():
    p = gm.widgets.player(gm.plots.preset_levels, STATES, title="GPU", alt="Bars")
    html = p._repr_html_()
    frames = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)
    assert len(set(frames)) == 3  # three distinct pictures (the first appears twice: img and list)
    assert all(base64.b64decode(f).startswith(b"\x89PNG") for f in frames)
    assert f'id="{p.id}"' in html and 'alt="Bars"' in html and 'max="2"' in html
    assert p.labels == ["V100", "A100-40GB", "H100-SXM"]


def test_every_preset_player_stays_small():
    p = gm.widgets.player(gm.plots.preset_levels, [{"gpu": n} for n in gm.preset_names()], alt="Bars")
    assert p.nbytes < 1_000_000


def test_players_get_distinct_ids():
    a, b = (gm.widgets.player(gm.plots.preset_levels, STATES[:1], alt="x") for _ in range(2))
    assert a.id != b.id


@pytest.mark.parametrize("kwargs, message", [
    ({"states": []}, "states must hold"), ({"states": STATES, "alt": ""}, "alt must describe"),
])
def test_player_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gm.widgets.player(gm.plots.preset_levels, **{"alt": "x", **kwargs})


def test_explorer_redraws_through_its_callback():
    import ipywidgets

    drawn = []

    def draw(gpu):
        drawn.append(gpu)
        return gm.plots.preset_levels(gpu)

    box = gm.widgets.explorer(draw, {"gpu": ["V100", "H100-SXM"]})
    (dropdown,) = box.children[0].children
    assert isinstance(dropdown, ipywidgets.Dropdown) and drawn == ["V100"]
    dropdown.value = "H100-SXM"
    assert drawn == ["V100", "H100-SXM"]


def test_the_tile_explorer_refuses_a_tile_that_cannot_launch(capsys):
    """Chapter 3's explorer offers block 16 to 128 and thread 1 to 8; 128 x 128 with one
    result per thread (16,384 threads per block) is refused with the reason, not drawn."""
    drawn = []

    def draw(block, thread, gpu):
        drawn.append((block, thread))
        return gm.plots.gemm_levels(block, thread, gpu)

    states = [{"block": b, "thread": t, "gpu": "A100-40GB"} for b in (16, 128) for t in (1, 8)
              if gm.tiles.is_legal("A100-40GB", b, b, t, t)]
    box = gm.widgets.show(draw, states)
    block, thread, _ = box.children[0].children
    assert drawn == [(16, 1)] and thread.value == 1
    block.value = 128  # with thread 1: 16,384 threads per block
    assert drawn == [(16, 1)]
    assert "Not available: block = 128, thread = 1, gpu = A100-40GB cannot launch" in capsys.readouterr().out
    thread.value = 8
    assert drawn == [(16, 1), (128, 8)]
    with pytest.raises(ValueError, match="16384 threads per block"):
        gm.plots.gemm_levels(128, 1, "A100-40GB")


def test_an_explorer_says_why_draw_refuses(capsys):
    box = gm.widgets.explorer(lambda block: gm.plots.gemm_levels(block, 1), {"block": [16, 128]})
    (dropdown,) = box.children[0].children
    dropdown.value = 128
    assert "Not available: 128x128 tiles with 1x1 per thread cannot launch" in capsys.readouterr().out


def test_show_picks_the_player_in_the_book_build(monkeypatch):
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    assert isinstance(gm.widgets.show(gm.plots.preset_levels, STATES, alt="x"), gm.widgets.Player)
    monkeypatch.delenv("GPUMODEL_BUILD")
    assert not isinstance(gm.widgets.show(gm.plots.preset_levels, STATES, alt="x"), gm.widgets.Player)


def test_feedback_for_the_appendix_exercise():
    smem = gm.gpu("H100-SXM").bandwidth("smem") / 1e12
    right = gm.exercises.check_bandwidth("H100-SXM", "smem", smem * 1.005)
    assert right and str(right).startswith("Right.") and "132 SMs x 32 banks x 4 B x 1980 MHz" in right.message
    wrong = gm.exercises.check_bandwidth("H100-SXM", "smem", smem * 1000)
    assert not wrong and "Too high by a power of ten" in wrong.message and "132 SMs" not in wrong.message
    assert "No answer yet" in gm.exercises.check_bandwidth("H100-SXM", "smem", None).message
    assert wrong._repr_markdown_().startswith("**Not yet.**")


@pytest.mark.parametrize("bad", ["33.5", float("nan"), True])
def test_checkers_answer_non_numbers_with_a_sentence(bad):
    feedback = gm.exercises.check_bandwidth("A100-40GB", "smem", bad)
    assert not feedback and feedback.message.startswith("The answer should be a number in TB/s")


def test_checker_refuses_an_unknown_level():
    with pytest.raises(ValueError, match="level must be one of"):
        gm.exercises.check_bandwidth("A100-40GB", "l1", 1.0)
