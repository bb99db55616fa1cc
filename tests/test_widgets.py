"""Players, explorers and widget exercises, without a browser: the players' states and size,
the explorers' callbacks, each widget exercise's answer (right, wrong with a hint, wrong
type) and its ipywidgets operated from Python. The browser side is in test_browser.py."""

import json
import re

import matplotlib
import pytest

import gpumodel as gm


matplotlib.use("Agg")
GPUS = ["V100", "A100-40GB", "H100-SXM"]


def spell(pieces, runs):
    """A text packed by widgets._pack, spelled as widgets.js spells it."""
    text, k = "", 0
    while k < len(runs):
        first, count = runs[k], -runs[k + 1] if k + 1 < len(runs) and runs[k + 1] < 0 else 1
        text += "".join(pieces[first:first + count])
        k += 1 if count == 1 else 2
    return text


def player_data(player):
    """The JSON the site's script reads, each frame spelled."""
    data = json.loads(re.search(r'<script type="application/json">(.*?)</script>', player._repr_html_()).group(1))
    data["frames"] = [f if isinstance(f, str) else [spell(data["pieces"], runs) for runs in f] for f in data["frames"]]
    return data


def test_packed_texts_spell_what_was_packed_and_share_their_pieces():
    frames = [gm.course.widgets.svg(gm.course.plots.preset_levels(g)) for g in GPUS]
    views = ["", "plain text", "<p>a</p><p>a</p>", "x<b>y</b>\n<b>y</b>z"]
    pieces, runs = gm.course.widgets._pack(frames + views)
    assert [spell(pieces, r) for r in runs] == frames + views
    assert runs[-4] == [] and runs[-3] == [pieces.index("plain text")]
    assert runs[-2] == [pieces.index("<p>a"), -2] * 2  # a run of two pieces, twice
    assert len(set(pieces)) == len(pieces)
    assert sum(map(len, pieces)) < 0.6 * sum(map(len, frames))  # the axes and styles are stored once


def test_player_has_a_menu_per_control_and_a_state_per_combination():
    p = gm.course.widgets.player(gm.course.plots.gemm_levels, {"block": [16, 128], "thread": [1, 8], "gpu": GPUS[1:]},
                          title="tile", alt="Bars")
    html, data = p._repr_html_(), player_data(p)
    assert html.count("<select") == 3 and 'alt="Bars"' in html
    assert [m for m in re.findall(r"<label>([^<]*) <select", html)] == ["block tile", "thread tile", "GPU"]  # words
    assert set(data["states"]) == {f"{b}|{t}|{g}" for b in range(2) for t in range(2) for g in range(2)}
    refused = data["frames"][data["states"]["1|0|0"]]  # 128 x 128 with one result per thread
    assert isinstance(refused, str) and "16384 threads per block" in refused
    drawn = data["frames"][data["states"]["1|1|1"]]
    assert drawn[0].startswith("<svg ") and "<metadata>" not in drawn[0] and "H100-SXM" in drawn[0]


def test_an_animated_player_has_a_frame_per_step_and_a_play_button():
    p = gm.course.widgets.player(gm.course.plots.pipes, {"kernel": ["vector_add"], "gpu": GPUS[:2]}, alt="Pipes", steps=3)
    data = player_data(p)
    assert all(len(frames) == 3 for frames in data["frames"]) and "data-play" in p._repr_html_()
    assert len(set(data["frames"][0])) == 3  # the dots move


def test_identical_states_share_one_frame():
    p = gm.course.widgets.player(lambda gpu, unused: gm.course.plots.preset_levels(gpu), {"gpu": GPUS, "unused": [1, 2]}, alt="x")
    data = player_data(p)
    assert len(data["states"]) == 6 and len(data["frames"]) == 3


def test_every_preset_player_stays_small():
    p = gm.course.widgets.player(gm.course.plots.preset_levels, {"gpu": gm.preset_names()}, alt="Bars")
    assert p.nbytes < 200_000


@pytest.mark.parametrize("kwargs, message", [
    ({"controls": {}}, "controls must name"), ({"controls": {"gpu": []}}, r"controls\['gpu'\] must offer"),
    ({"alt": ""}, "alt must describe"), ({"steps": 0}, "steps must be a positive integer"),
    ({"controls": {"smem_kb": [1]}}, "'smem_kb' is an identifier, not a word a reader should see"),
])
def test_player_refuses_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gm.course.widgets.player(gm.course.plots.preset_levels, **{"controls": {"gpu": GPUS}, "alt": "x", **kwargs})


def test_explorer_redraws_through_its_callback():
    import ipywidgets

    drawn = []

    def draw(gpu):
        drawn.append(gpu)
        return gm.course.plots.preset_levels(gpu)

    box = gm.course.widgets.explorer(draw, {"gpu": ["V100", "H100-SXM"]})
    (dropdown,) = box.children[0].children
    assert isinstance(dropdown, ipywidgets.Dropdown) and drawn == ["V100"] and dropdown.description == "GPU"
    dropdown.value = "H100-SXM"
    assert drawn == ["V100", "H100-SXM"]


def test_the_tile_explorer_says_why_a_tile_cannot_launch(capsys):
    box = gm.course.widgets.explorer(gm.course.plots.gemm_levels, {"block": [16, 128], "thread": [1, 8], "gpu": ["A100-40GB"]})
    block, thread, _ = box.children[0].children
    block.value = 128  # with thread 1: 16,384 threads per block
    assert "Not available: 128x128 tiles with 1x1 per thread cannot launch" in capsys.readouterr().out
    thread.value = 8
    assert "Not available" not in capsys.readouterr().out


def test_show_picks_the_player_in_the_book_build(monkeypatch):
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    assert isinstance(gm.course.widgets.show(gm.course.plots.preset_levels, {"gpu": GPUS}, alt="x"), gm.course.widgets.Player)
    exercise = gm.course.hierarchy.seed_bounds()
    assert exercise.show() is exercise
    monkeypatch.delenv("GPUMODEL_BUILD")
    assert not isinstance(gm.course.widgets.show(gm.course.plots.preset_levels, {"gpu": GPUS}, alt="x"), gm.course.widgets.Player)
    assert exercise.show() is not exercise


# The widget exercises: every one, its answer as the chapter's solution finds it, by brute force.

def smallest(options, ok):
    return next(o for o in options if ok(o))


def nvls_takes_over(batch=64):
    """The fewest B200s of an NVL72 rack at which NCCL's tuner prices Llama-3-70B's all-reduce of
    batch x 8192 x 2 bytes (M) cheaper in the switch, 25 us + M at 0.74 x 900 GB/s, than by ring,
    6.6 us + 2(n - 1) x 0.6 us + 2(n - 1)/n x M at 900 GB/s (NCCL 2.30.7's tuning.cc)."""
    m = batch * 8192 * 2
    return smallest(range(2, 73), lambda n: 25e-6 + m / (0.74 * 900e9)
                    < 6.6e-6 + 2 * (n - 1) * 0.6e-6 + 2 * (n - 1) / n * m / 900e9)


def drafted_gain(k: int, batch: int = 64, a: float = 0.7, context: int = 4096) -> float:
    """Llama-3-70B on a B200, fp8 weights, by hand: a step of q = k + 1 queries a sequence reads
    the weights once (all but the 128,000 x 8,192 input table, one row a token of it, 1 byte each)
    and each cache of context + q rows of 80 x 2 x 8 x 128 fp16 values, and does 2 x 70.55e9 flops
    a token plus 4 x 64 x 128 x 80 a token of context; it takes the longer of bytes over HBM's
    bandwidth and flops over the fp16 tensor cores' peak. The speculative step yields
    (1 - a^(k+1)) / (1 - a) tokens a sequence for that time."""
    def step(q):
        nbytes = (70.55e9 - 128000 * 8192 + batch * q * 8192) + batch * (context + q) * 80 * 2 * 8 * 128 * 2
        flops = 2 * 70.55e9 * batch * q + batch * q * context * 4 * 64 * 128 * 80
        return max(nbytes / gm.gpu("B200").bandwidth("hbm"), flops / gm.gpu("B200").peak("fp16"))
    return (1 - a ** (k + 1)) / (1 - a) * step(1) / step(k + 1)


ANSWERS = {
    "seed-bounds": lambda: sum(gm.predict(gm.seed_kernels()["gemm_reg128"], g).bound == "compute" for g in gm.course.widgets.GPUS),
    "littles-law": lambda: smallest(gm.course.hierarchy.LITTLE_WARPS, lambda w: w * 32 * 2 * 16 * gm.gpu("A100-40GB").sms.value
                                    >= gm.gpu("A100-40GB").in_flight("hbm")),
    "stride-sectors": lambda: 16,  # a 32-byte sector holds 16 fp16 elements
    "fused-chain": lambda: smallest(gm.course.intensity.CHAIN_OPS, lambda k: k / 4 * gm.gpu("H100-SXM").bandwidth("hbm")
                                    > gm.gpu("H100-SXM").peak_flops / 2),  # registers: 12 B per flop at 6 P
    "thread-tile": lambda: 8,
    "occupancy-limit": lambda: 64,  # 65,536 registers over 1,024 threads
    "block-group": lambda: min(gm.course.roofline_levels.GROUPS, key=lambda g: gm.waves.gemm_hbm(
        8192, 8192, 8192, gpu="H100-SXM", blocks_per_sm=2, order="grouped", group=g).hbm),
    "l2-overflow": lambda: smallest(gm.course.roofline_levels.L2_SIZES, lambda n: 12 * n > gm.gpu("L4").capacity("l2")),
    "attention-fit": lambda: smallest(gm.course.flashattention.SEQS, lambda n: 2 * 32 * (4 * n * 128 + 2 * n * n)
                                      > gm.gpu("L4").capacity("hbm")),
    # standard attention's HBM time over flash's tensor math (4 N^2 d per head), L2 serving K and V re-reads
    "flash-speedup": lambda: float(gm.predict(gm.attention(1, 32, 16384, 64, kind="standard"), "H100-SXM").time
                                   / (4 * 16384**2 * 64 * 32 / gm.gpu("H100-SXM").peak("fp16"))),
    "decode-batch": lambda: smallest(gm.course.tensor_cores.DECODE_BATCHES, lambda b: 2 * b * 8192**2 / (8192**2 + 2 * 2 * b * 8192)
                                     >= gm.gpu("H100-SXM").peak("fp16") / gm.gpu("H100-SXM").bandwidth("hbm")),
    # Both steps HBM-bound at batch 8, context 16384 on the B200: tokens/s go as 1 / bytes, the
    # weights read in fp16 (all but the input table, one row of it per sequence: Llama-2-7B 32,000 x
    # 4,096, Llama-3-8B 128,000 x 4,096) plus 8 x 16385 tokens of cache (524,288 B a token, 131,072 B).
    "decode-throughput": lambda: (((6.7e9 - 32000 * 4096 + 8 * 4096) * 2 + 8 * 16385 * 524288)
                                  / ((8.0e9 - 128000 * 4096 + 8 * 4096) * 2 + 8 * 16385 * 131072)),
    "wave-tail": lambda: max(gm.course.tensor_cores.WAVE_SIZES, key=lambda n: ((n // 128) ** 2 % 132 or 132)),
    "launch-bound": lambda: smallest(gm.course.blackwell_low_precision.VECTOR_SIZES,
                                     lambda n: 12 * n / gm.gpu("B200").bandwidth("hbm") >= 6.8e-6),  # 12 B per float, Inductor's 6.8 us launch
    "tile-ridge": lambda: smallest(gm.course.blackwell_low_precision.TILE_NS, lambda n: 128 * n / (128 + n) >= 64),
    "highest-ridge": lambda: max(gm.preset_names(), key=lambda g: gm.gpu(g).peak("fp16") / gm.gpu(g).bandwidth("hbm")),
    "parallel-steps": lambda: nvls_takes_over(),
    "parallel-drafts": lambda: max(range(8), key=drafted_gain),
}
EXERCISES = {make().key: make for make in gm.course.widget_exercises()}


def test_every_widget_exercise_has_its_answer_worked_out_here():
    assert set(EXERCISES) == set(ANSWERS)


@pytest.mark.parametrize("key", ANSWERS)
def test_a_widget_exercise_accepts_its_answer_typed_and_refuses_others(key):
    exercise, answer = EXERCISES[key](), ANSWERS[key]()
    assert exercise.check(str(answer)) and exercise.check(answer)
    if exercise.rules["kind"] == "number":
        wrong = exercise.check(str(answer * 2))
        assert not wrong and ("Too high" in wrong.message or "factor of two" in wrong.message)
        assert f"{answer:g}" not in wrong.message, "a hint, not the answer"
        assert exercise.check(str(answer / 2)).message != wrong.message  # too low is not too high
    else:
        other = next(g for g in gm.preset_names() if g.lower() != answer.lower())
        wrong = exercise.check(other)
        assert not wrong and "another preset's is higher" in wrong.message and answer not in wrong.message
    for bad in ("", "lots", None, [answer]):
        feedback = exercise.check(bad)
        assert not feedback and feedback.message.startswith("Type ")


@pytest.mark.parametrize("key", ANSWERS)
def test_no_exercise_asks_about_a_state_its_widget_refuses(key):
    """Every widget exercise declares the states its question asks the learner to read (`asks`),
    and the widget shows each one: a value from each control's menu, drawn, not refused."""
    exercise = EXERCISES[key]()
    assert exercise.asks, (f"{key}: declare asks=widgets.asked(control=value or [values], ...), the states its "
                           "question asks the learner to read, built from the exercise's own parameters "
                           "(see WidgetExercise)")
    for state in exercise.asks:
        assert set(state) == set(exercise.controls), f"{key}: an asked state names every control"
        for name, value in state.items():
            assert value in exercise.controls[name], f"{key} asks about {name} = {value!r}, not in its menu"
        assert exercise.refused(**state) is None, f"{key} asks about {state}, which its widget refuses"


def caption(view: str) -> list:
    """The bold figures of a view's caption, as the learner reads them."""
    return re.findall(r"<b>(.*?)</b>", re.search(r'<p class="gm-caption">(.*?)</p>', view).group(1))


PREFIX = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "m": 1e-3, "µ": 1e-6, "n": 1e-9}


def quantity(text: str) -> float:
    """A figure as a view prints it ("1.95 ms", "11.9 GB", "3.03%", "752 tokens/s", "2.19 times") in base units."""
    number, prefix = re.fullmatch(r"([\d.,]+)\s*([kMGTmµn]?)(?:s|B|FLOP/B|%|tokens/s| warps| sectors| times)", text).groups()
    return float(number.replace(",", "")) * PREFIX[prefix]


def red(view: str, label: str) -> bool:
    """Whether the bar `label` of a view is the highlighted (red) one."""
    return bool(re.search(rf"<span>{re.escape(label)}</span><span class=\"gm-track\"><span style=\"width:[\d.]+%;"
                          r"background:#c0392b", view))


def first(read, control, ok):
    return next(state[control] for state, view in read if ok(view))


def only(best):
    """The one state a question for a largest or smallest reading points to: the reading must
    single it out as printed (a tie in the printed figures would leave the learner guessing)."""
    def pick(read, control, figure):
        values = [figure(view) for _, view in read]
        top = best(values)
        assert values.count(top) == 1, f"{control}: the printed readings tie at {top}"
        return read[values.index(top)][0][control]
    return pick


# What the learner reads off the widget at the asked states (each view as the page shows it): the
# exercise's answer must be what its widget shows there.
READINGS = {
    "seed-bounds": lambda read: sum(caption(view)[1] == "ALUs" for _, view in read),
    "littles-law": lambda read: first(read, "warps", lambda view: caption(view)[0] == "100%"),
    "stride-sectors": lambda read: next(
        read[i][0]["stride"] for i in range(len(read))
        if len({quantity(caption(view)[0]) for _, view in read[i:]}) == 1),
    "fused-chain": lambda read: first(read, "ops", lambda view: caption(view)[1] != "HBM"),
    "thread-tile": lambda read: first(read, "thread", lambda view: caption(view)[1] != "shared memory"),
    "occupancy-limit": lambda read: [s["registers"] for s, view in read if quantity(caption(view)[0]) >= 32][-1],
    "block-group": lambda read: only(min)(read, "group", lambda view: quantity(caption(view)[0])),
    "l2-overflow": lambda read: first(read, "n", lambda view: "do not fit" in caption(view)),
    "attention-fit": lambda read: first(read, "seq", lambda view: "does not fit" in caption(view)),
    "flash-speedup": lambda read: (quantity(caption(dict((s["kind"], v) for s, v in read[:2])["standard"])[0])
                                   / quantity(caption(dict((s["kind"], v) for s, v in read[:2])["flash"])[0])),
    "decode-batch": lambda read: first(read, "batch", lambda view: "at or past" in caption(view)),
    "wave-tail": lambda read: only(max)(read, "size", lambda view: quantity(caption(view)[0])),
    "launch-bound": lambda read: next(n for n in dict.fromkeys(s["elements"] for s, _ in read)
                                      if not any(red(v, "one kernel") for s, v in read if s["elements"] == n)),
    "tile-ridge": lambda read: first(read, "n", lambda view: "at or past" in caption(view)),
    "decode-throughput": lambda read: (quantity(caption(dict((s["model"], v) for s, v in read)["Llama-3-8B"])[0])
                                       / quantity(caption(dict((s["model"], v) for s, v in read)["Llama-2-7B"])[0])),
    "highest-ridge": lambda read: only(max)(read, "gpu", lambda view: quantity(caption(view)[0])),
    "parallel-steps": lambda read: first(read, "gpus", lambda view: "in-switch" in caption(view)[-1]),
    "parallel-drafts": lambda read: only(max)(read, "drafted", lambda view: quantity(caption(view)[0])),
}


def test_every_widget_exercise_has_its_reading_here():
    assert set(READINGS) == set(EXERCISES)


@pytest.mark.parametrize("key", READINGS)
def test_the_answer_is_what_the_widget_shows_at_the_asked_states(key):
    """Read the widget as the learner does, at the states the question asks about, and the
    exercise takes that reading as right."""
    exercise = EXERCISES[key]()
    reading = READINGS[key]([(state, exercise.render(**state)) for state in exercise.asks])
    assert exercise.check(reading), f"{key}: its widget shows {reading!r} where the question asks, the rules want " \
                                    f"{exercise.rules['answer']!r}"


def test_an_exercise_that_asks_about_a_refused_state_cannot_be_built():
    tiles = gm.course.tiling.thread_tile()
    with pytest.raises(ValueError, match="^asks must hold states the widget shows: thread-tile asks about .* "
                                         "16384 threads per block"):
        gm.course.widgets.replace(tiles, asks=({"gpu": "A100-40GB", "block": 128, "thread": 1},))
    with pytest.raises(ValueError, match="^asks must hold states naming each control"):
        gm.course.widgets.replace(tiles, asks=({"gpu": "A100-40GB", "block": 128},))
    # 128 x 128 tiles on the A100: 1 x 1 and 2 x 2 per thread are 16,384 and 4,096 threads, over
    # the 1,024 a block may have, so the question steps through the tiles that launch, 4 and 8.
    assert [s["thread"] for s in tiles.asks] == [4, 8]


def test_asked_states_are_every_combination_and_upto_steps_to_the_answer():
    asked, upto = gm.course.widgets.asked, gm.course.widgets.upto
    assert asked(gpu="L4", n=[1, 2]) == ({"gpu": "L4", "n": 1}, {"gpu": "L4", "n": 2})
    assert len(asked(a=[1, 2, 3], b=(4, 5), c="x")) == 6
    assert upto([1, 2, 4, 8], 4) == [1, 2, 4] and upto([1, 2, 4, 8], 4, past=1) == [1, 2, 4, 8]
    assert upto([1, 2, 4, 8], 8, past=1) == [1, 2, 4, 8]


@pytest.mark.parametrize("call, message", [
    (lambda: gm.course.widgets.asked(), "^values must name at least one control"),
    (lambda: gm.course.widgets.asked(gpu=[]), r"^values\['gpu'\] must hold at least one value"),
    (lambda: gm.course.widgets.upto([1, 2, 4], 3), "^answer must be one of"),
    # The H100 keeps 64 warps an SM: 64 x 32 threads x one float each is 8,192 B in flight, under the
    # bandwidth x latency its HBM asks of each SM (about 9 kB), so no warp count of the menu fills it.
    (lambda: gm.course.hierarchy.littles_law("H100-SXM", "float (4 B)", 1), "^width and loads must let the 64 warps"),
])
def test_asked_and_upto_and_littles_law_refuse_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_littles_law_asks_only_about_the_warps_a_gpu_keeps():
    """The RTX 4090 keeps at most 48 warps an SM (1,536 threads): its question no longer crashes
    on the 64 its menu offers, and asks about none past 48."""
    exercise = gm.course.hierarchy.littles_law("RTX-4090", "float (4 B)", 1)
    assert max(s["warps"] for s in exercise.asks) <= 48 == gm.gpu("RTX-4090").capability.max_threads_per_sm // 32


def test_the_decode_exercise_declares_its_states_and_refuses_a_question_that_does_not_fit():
    exercise = gm.course.decode.throughput("B200", 8, 16384)
    assert {s["model"] for s in exercise.asks} == {"Llama-2-7B", "Llama-3-8B"}
    # 32 caches of 16,385 tokens of Llama-2-7B (524,288 B a token) are 275 GB: more than the B200 holds.
    assert 32 * 16385 * 524288 > gm.gpu("B200").capacity("hbm")
    assert "at most 19 fit" in exercise.refused(model="Llama-2-7B", gpu="B200", batch=32, context=16384)
    with pytest.raises(ValueError, match="^question_batch must be a batch that fits"):
        gm.course.decode.throughput("B200", 32, 16384)
    # DeepSeek-V2's 236 G weights, 472 GB in fp16, fit on neither GPU.
    assert "alone (472 GB" in exercise.refused(model="DeepSeek-V2", gpu="B200", batch=1, context=256)


@pytest.mark.parametrize("key", ANSWERS)
def test_every_control_changes_the_view(key):
    exercise = EXERCISES[key]()
    first = {name: options[0] for name, options in exercise.controls.items()}
    shown = exercise.render(**first)
    for name, options in exercise.controls.items():
        views = {exercise.render(**{**first, name: o}) for o in options}
        assert len(views) > 1 or shown.startswith('<p class="gm-refused">'), f"{key}: {name} changes nothing"


def test_an_exercise_refuses_what_cannot_launch():
    tiles = gm.course.tiling.thread_tile()
    assert "cannot launch on the A100-40GB: 16384 threads per block" in tiles.render(gpu="A100-40GB", block=128,
                                                                                         thread=1)
    # 16 x 16 per thread is 64 threads, which launch: the registers are the limit, and the reason says so.
    registers = tiles.render(gpu="H100-SXM", block=128, thread=16)
    assert "cannot launch on the H100-SXM: about" in registers and "registers per thread, over the 255" in registers
    assert "64 threads" not in registers and "shared memory" not in registers.split("cannot launch")[1]
    warps = gm.course.hierarchy.littles_law()
    assert "keeps at most 48 warps per SM" in warps.render(gpu="RTX-4090", warps=64, width="float (4 B)", loads=1)


def test_the_jupyter_widget_redraws_and_judges():
    import ipywidgets

    box = gm.course.tiling.thread_tile().widget()
    menus, view, (answer, button), verdict = box.children[0], box.children[1], box.children[2].children, box.children[3]
    gpu, block, thread = menus.children
    assert isinstance(gpu, ipywidgets.Dropdown) and "V100" in view.value
    gpu.value, block.value, thread.value = "A100-40GB", 128, 4
    assert "128 x 128 tiles, 4 x 4 per thread on the A100-40GB" in view.value and "shared memory</b>" in view.value
    thread.value = 1
    assert "Cannot run" in view.value and "16384 threads per block" in view.value
    answer.value = "4"
    button.click()
    assert "Not yet." in verdict.value and "Too low" in verdict.value
    answer.value = "eight"
    button.click()
    assert "Type a number" in verdict.value
    answer.value = "8"
    button.click()
    assert "Right." in verdict.value


def test_the_site_exercise_carries_every_state_and_the_rules():
    exercise = gm.course.roofline_levels.l2_overflow()
    html = exercise._repr_html_()
    data = json.loads(re.search(r'<script type="application/json">(.*?)</script>', html).group(1))
    assert data["rules"] == exercise.rules and html.count("<select") == 2
    views = {spell(data["pieces"], data["views"][i]) for i in data["states"].values()}
    assert views == {exercise.render(gpu=g, n=n) for g in gm.course.widgets.GPUS for n in gm.course.roofline_levels.L2_SIZES}
    assert len(data["states"]) == len(gm.course.widgets.GPUS) * len(gm.course.roofline_levels.L2_SIZES)
    assert 'id="gm-exercise-l2-overflow"' in html and 'type="submit"' in html


def test_every_exercise_page_stays_light():
    sizes = {make().key: len(make()._repr_html_().encode()) for make in gm.course.widget_exercises()}
    assert max(sizes.values()) < 200_000, sizes


@pytest.mark.parametrize("bad, message", [
    ({"expected": float("nan")}, "expected must be a finite number"),
])
def test_number_rules_refuse_bad_input(bad, message):
    with pytest.raises(ValueError, match=message):
        gm.course.checks.number_rules(unit="x", **bad)


def test_choice_rules_refuse_the_answer_among_the_wrong_ones():
    with pytest.raises(ValueError, match="wrong must not hold the answer"):
        gm.course.checks.choice_rules("L4", {"l4": "no"})




@pytest.mark.parametrize("gpu", gm.course.widgets.GPUS)
def test_l2_overflow_on_every_gpu_of_its_menu(gpu):
    """The answer is the first power of two whose three fp32 arrays (12 bytes per element) pass
    the L2 of the GPU asked about, not of the default one."""
    n = gm.course.roofline_levels.L2_SIZES[0]
    while 3 * 4 * n <= gm.gpu(gpu).capacity("l2"):
        n *= 2
    exercise = gm.course.roofline_levels.l2_overflow(gpu)
    assert exercise.rules["answer"] == n and exercise.check(str(n)) and not exercise.check(str(n // 2))


def test_the_lab_editor_traces_what_the_learner_typed_and_judges_it(monkeypatch):
    import ipywidgets

    from gpumodel.course import checks, intensity

    monkeypatch.setattr(checks, "SESSION", {})
    editor = gm.course.widgets.LabEditor(intensity.LAB_STARTER, intensity.check_coalesced_kernel, "ex-intensity-lab-coalesce")
    style, box, launch, buttons, verdict = editor.widget().children
    run, reset = buttons.children
    (kernel,) = launch.children  # the name expression, shown only while the source holds a template
    assert isinstance(box, ipywidgets.Textarea) and box.value == intensity.LAB_STARTER.strip()
    assert kernel.layout.display == "none"
    box.value = box.value.replace("= 2.0f", "= 3.0f")
    run.click()
    assert "Not yet." in verdict.value and "y must be 2 x" in verdict.value
    box.value = "__global__ void scale_by_two(const float* x, float* y, int n) { syntax error }"
    run.click()
    assert "does not compile" in verdict.value
    box.value = ("__global__ void scale_by_two(const float* x, float* y, int n) {\n"
                 "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];\n}")
    run.click()
    assert "Right." in verdict.value
    assert checks.SESSION["ex-intensity-lab-coalesce"] == (3, True)
    box.value = ("template <int PER>\n__global__ void scale_by_two(const float* x, float* y, int n) {\n"
                 "    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2.0f * x[i];\n}")
    assert kernel.layout.display == ""
    kernel.value = "scale_by_two<4>"
    run.click()
    assert "Right." in verdict.value
    reset.click()
    assert box.value == intensity.LAB_STARTER.strip() and verdict.value == ""


def test_on_the_site_the_lab_editor_is_the_starter_and_its_verdict(monkeypatch):
    from gpumodel.course import intensity

    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    editor = gm.course.widgets.LabEditor(intensity.LAB_STARTER, intensity.check_coalesced_kernel, "ex-intensity-lab-coalesce")
    assert editor.show() is editor
    page = editor._repr_html_()
    assert "__global__ void scale_by_two" in page and "Not yet." in page and "sectors per load request" in page


def test_the_lab_editor_takes_the_launch_the_learner_types():
    calls = []

    def check(source, grid, block):
        calls.append((source, grid, block))
        return gm.course.checks.Feedback(True, f"launched {grid} x {block}")

    editor = gm.course.widgets.LabEditor("__global__ void k() {}", check, launch={"grid": (4, 4), "block": (16, 16)})
    style, box, launch, buttons, verdict = editor.widget().children
    grid, block, _ = launch.children
    run, reset = buttons.children
    assert (grid.value, block.value) == ("(4, 4)", "(16, 16)")
    grid.value, block.value = "(2, 2)", "64"
    run.click()
    assert calls[-1] == ("__global__ void k() {}", (2, 2), 64) and "launched (2, 2) x 64" in verdict.value
    for bad in ("two", "(0, 1)", "(1, 2, 3, 4)", "True", "1.5"):
        grid.value = bad
        run.click()
        assert "Not yet." in verdict.value and "grid must be a positive int or a tuple of 1 to 3" in verdict.value
    assert len(calls) == 1
    reset.click()
    assert (grid.value, block.value) == ("(4, 4)", "(16, 16)")


def test_each_capstone_task_has_an_editor_with_its_starter_and_launch(monkeypatch):
    monkeypatch.setenv("GPUMODEL_BUILD", "book")
    cap = gm.course.capstone
    for name, task in cap.TASKS.items():
        editor = cap.editor(name)
        assert editor.starter == task.starter and editor.launch == {"grid": task.grid, "block": task.block}
    page = cap.editor("softmax")._repr_html_()
    assert f"grid <code>{cap.TASKS['softmax'].grid}</code>" in page and "over the budget" in page
    # The score's bytes per level are a table on the site, never raw Markdown inline.
    assert "<table><thead><tr><th>level</th><th>traced</th>" in page and "| --- |" not in page and "| level" not in page
    assert "<td>L1 (sectors requested)</td>" in page and "<code>for (int j = 0;" in page  # the worst line as code


def test_a_tensor_core_kernel_is_bound_by_the_tensor_cores_not_the_alus():
    flash = gm.course.flashattention.flash_speedup()
    view = flash.render(gpu="H100-SXM", seq=16384, head_dim=64, kind="flash")
    assert "bound by <b>tensor cores</b>" in view and "ALUs" not in view
    fp32 = gm.course.tiling.thread_tile().render(gpu="A100-40GB", block=128, thread=8)
    assert "bound by <b>ALUs</b>" in fp32  # FP32 math: chapter 1's ALUs


def test_the_stride_explorer_counts_and_orders_in_english():
    sectors = gm.course.intensity.stride_sectors()
    assert "A warp reading every 1-byte element: <b>1 sector</b>," in sectors.render(stride=1, elem=1)
    assert "every 2nd 4-byte element: <b>8 sectors</b>" in sectors.render(stride=2, elem=4)
    assert "every 3rd" in sectors.render(stride=3, elem=4) and "every 12th" in sectors.render(stride=12, elem=4)
    assert "1th" not in sectors.render(stride=1, elem=4)


def test_the_flash_question_asks_about_d_256_where_its_gain_is_smaller():
    """Exercise 5's question goes on to d = 256 and asks why the gain shrinks: its widget shows
    that state, and the speed-up read there is below the one at d = 64."""
    exercise = gm.course.flashattention.flash_speedup()
    times = {(s["head_dim"], s["kind"]): quantity(caption(exercise.render(**s))[0]) for s in exercise.asks}
    assert {d for d, _ in times} == {64, 256}
    assert times[256, "standard"] / times[256, "flash"] < times[64, "standard"] / times[64, "flash"]


def test_a_verdicts_code_spans_are_code_in_jupyter():
    """A message's `code` (the Markdown the checks write) is set as code, the rest escaped."""
    from gpumodel.course.checks import Feedback
    from gpumodel.course.widgets import _answer_widgets

    row, verdict = _answer_widgets("bytes", lambda a: Feedback(False, "Call `f(x < 1)` & retry"))
    answer, button = row.children
    answer.value = "1"
    button.click()
    assert verdict.value == "<p><b>Not yet.</b> Call <code>f(x &lt; 1)</code> &amp; retry</p>"
