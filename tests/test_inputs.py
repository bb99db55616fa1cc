"""Bad input is a ValueError naming the parameter; valid odd sizes are accepted."""

import re
import warnings

import numpy as np
import pytest

import gpumodel as gm

A100 = gm.gpu("A100-40GB")
ATTENTION_RUN = {"kind": "attention", "batch": 1, "heads": 8, "seq": 1024, "head_dim": 64, "attention": "flash",
                 "passes": "forward"}


@pytest.mark.parametrize("bad", [0, -1, 2.5, float("nan"), float("inf"), "10", None, [], [4, 0]])
def test_bad_sizes(bad):
    with pytest.raises(ValueError, match=r"^n "):
        gm.vector_add(bad)


@pytest.mark.parametrize(
    "call, param",
    [
        (lambda: gm.gemm(0, 64, 64), "m"),
        (lambda: gm.gemm(64, -3, 64), "n"),
        (lambda: gm.gemm(64, 64, 1.5), "k"),
        (lambda: gm.gemm(64, 64, 64, block=(128, 16)), r"block\[0\] must not exceed m"),
        (lambda: gm.gemm(64, 64, 64, block=(16, 128)), r"block\[1\] must not exceed n"),
        (lambda: gm.gemm(64, 64, 8, block=(16, 16, 16)), r"block\[2\] must not exceed k"),
        (lambda: gm.gemm(64, 64, 64, block=(16, 16), thread=(3, 1)), r"thread\[0\] must divide block\[0\]"),
        (lambda: gm.gemm(64, 64, 64, block=(16, 16), thread=(0, 1)), r"thread\[0\]"),
        (lambda: gm.gemm(64, 64, 64, block=16), "block must be"),
        (lambda: gm.gemm(64, 64, 64, thread=(2, 2)), "thread must be"),
        (lambda: gm.gemm(64, 64, 64, dtype="fp8"), "dtype must be one of"),
        (lambda: gm.gemm(64, 64, 64, l2_reuse="yes"), "l2_reuse must be"),
        (lambda: gm.elementwise_chain(64, ops=0), "ops"),
        (lambda: gm.elementwise_chain(64, dtype="float32"), "dtype must be one of"),
        (lambda: gm.attention(1, 1, 64, 64, kind="sparse"), "kind must be one of"),
        (lambda: gm.attention(1, 1, 64, 64, kind="flash", block=(128, 64)), r"block\[0\] must not exceed seq"),
        (lambda: gm.attention(1, 0, 64, 64), "heads"),
        (lambda: gm.transpose(float("inf")), "n must be finite"),
        (lambda: gm.transpose(64, padded=1), "padded must be"),
        (lambda: gm.predict("gemm", A100), "workload must be"),
        (lambda: gm.predict(gm.vector_add(4), 40), "gpu must be"),
        (lambda: gm.predict(gm.vector_add(4), "A100"), "gpu must be one of"),
        (lambda: A100.bandwidth("l1"), "level must be one of"),
        (lambda: A100.peak("fp6"), "math must be one of"),
        (lambda: A100.peak("fp8"), "A100-40GB has no fp8 tensor-core peak"),
    ],
)
def test_bad_input_names_the_parameter(call, param):
    with pytest.raises((ValueError, TypeError), match=param):
        call()


@pytest.mark.parametrize("query, closest", [("a100", "A100-40GB"), ("H100", "H100-SXM"), ("RTX4090", "RTX-4090"), ("T-4", "T4")])
def test_unknown_preset_names_the_closest(query, closest):
    with pytest.raises(ValueError, match=f"closest: '{closest}'") as err:
        gm.gpu(query)
    assert "gpu must be one of" in str(err.value)


def test_tile_larger_than_some_matrices_in_a_sweep():
    with pytest.raises(ValueError, match=r"block\[0\] must not exceed m: got block\[0\]=128, m=array"):
        gm.gemm(np.array([64, 256]), 256, 256, block=(128, 128))


def test_sizes_that_are_not_tile_multiples_are_valid():
    p = gm.predict(gm.gemm(1000, 1000, 1000, block=(128, 128), thread=(8, 8)), A100)
    assert np.isfinite(p.time) and p.time > 0


@pytest.mark.parametrize("bad", [True, np.bool_(True), np.array(["4096"]), np.datetime64("2020-01-01"), np.array([4, None])])
def test_only_numbers_are_sizes(bad):
    with pytest.raises(ValueError, match="^n must be a positive integer"):
        gm.vector_add(bad)


@pytest.mark.parametrize("thread", [{0: 8, 1: 8}, np.array(8), 8, "88", (8,), (8, 8, 8)])
def test_a_tile_must_be_a_pair(thread):
    with pytest.raises(ValueError, match="^thread must be a pair"):
        gm.gemm(64, 64, 64, block=(16, 16), thread=thread)


def test_attention_block_must_be_a_pair():
    with pytest.raises(ValueError, match="^block must be a pair"):
        gm.attention(1, 1, 64, 64, kind="flash", block=np.array(64))


@pytest.mark.parametrize("flops", [float("nan"), -1.0, float("inf")])
def test_a_workload_is_finite_and_not_negative(flops):
    with pytest.raises(ValueError, match="^flops must be finite"):
        gm.Workload("bad", flops=flops, bytes={lv: 0.0 for lv in gm.LEVELS})
    with pytest.raises(ValueError, match=r"^bytes\['hbm'\] must be finite"):
        gm.Workload("bad", flops=1.0, bytes={**{lv: 0.0 for lv in gm.LEVELS}, "hbm": flops})


def test_a_workload_of_nothing_takes_no_time_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = gm.predict(gm.Workload("nothing", flops=0.0, bytes={lv: 0.0 for lv in gm.LEVELS}), A100)
    assert p.time == 0 and all(b == 0 for b in p.busy.values()) and p.bound == "compute"


@pytest.mark.parametrize("call, message", [
    (lambda: gm.waves.gemm_hbm(64, 64, 64, block=(128, 128)), r"block\[0\] must not exceed m"),
    (lambda: gm.waves.gemm_hbm(2**20, 2**20, 4096), "rows x cols must be at most"),
    (lambda: gm.waves.block_coordinates(10**6, 10**6), "rows x cols must be at most"),
    (lambda: gm.simulate.tiled_gemm(np.ones((8, 8)), np.ones((8, 8)), (2**20, 8, 8), (1, 1)), r"block\[0\] must not exceed m"),
    (lambda: gm.simulate.warp_addresses(pad=2**62), "pad must be an integer from 0 to 1048576"),
    (lambda: gm.simulate.warp_addresses(pad=True), "pad must be an integer"),
    (lambda: gm.simulate.warp_addresses(index=1.5), "index must be an integer"),
    (lambda: gm.tiles.is_legal("A100-40GB", -128, -128, -8, -8), "b_m must be positive"),
    (lambda: gm.tiles.is_legal("A100-40GB", 0, 0, 0, 0), "b_m must be positive"),
    (lambda: gm.tiles.search("A100-40GB", 8, 8, 8), "m and n must admit a tile"),
    (lambda: gm.simulate.online_softmax(np.full((2, 4), -np.inf), 2), "x must be finite"),
    (lambda: gm.simulate.standard_attention(*(np.full((1, 1, 4, 4), np.inf),) * 3), "q must be finite"),
    (lambda: gm.simulate.naive_gemm(np.full((2, 2), np.nan), np.ones((2, 2))), "a must be finite"),
])
def test_bad_input_to_the_simulations_and_tools_is_refused_quickly(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("call, message", [
    (lambda: gm.simulate.warp_addresses(pad=10**30), "pad must be an integer from 0"),
    (lambda: gm.simulate.naive_gemm(np.ones((10**5, 1)), np.ones((1, 10**5))), "m x n x k must be at most"),
    (lambda: gm.simulate.online_softmax(np.ones((1, 10**5)), 1), "x's columns² must be at most"),
    (lambda: gm.simulate.transpose(np.ones((4096, 4096))), "x's warp steps"),
    (lambda: gm.simulate.standard_attention(*(np.ones((1, 1, 8192, 1)),) * 3), "q's batch x heads x seq²"),
    (lambda: gm.simulate.strided_read(np.ones(2**20), 1), "x's warps"),
    (lambda: gm.decode.gemm_critical_batch("A100-40GB", 4096, largest=2**60), "largest must be at most 2\\*\\*53"),
    (lambda: gm.vector_add(2**53 + 1), "n must be at most 2\\*\\*53"),
    (lambda: gm.course.tiling.check_padding(16, 32, 1), "rows must be at least 32"),
    (lambda: gm.course.roofline_levels.check_l2_tile("A100-40GB", 0, 128), "^size must be positive"),
    (lambda: gm.occupancy.occupancy("A100-40GB", 128, 32, True), "^smem must be"),
    (lambda: gm.fmt_time("1"), "^seconds must be a finite number"),
    (lambda: gm.tensor_cores.split_k_bytes(64, 64, 2, float("nan")), "^partial_bytes must be finite"),
    (lambda: gm.tensor_cores.swizzled_addresses(index=True), "^index must be an integer"),
    (lambda: gm.gpu("A100-40GB").in_flight(["l2"]), "^level must be one of"),
])
def test_work_too_large_or_of_the_wrong_kind_is_refused_naming_the_limit_or_parameter(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_a_sweep_may_mix_an_array_and_a_number_in_a_tile():
    w = gm.gemm(64, 64, 64, block=(np.array([16, 32]), 16), thread=(np.array([1, 2]), 1))
    assert w.shape == (2,)


def _checkers(right):
    """Each kind of checker, judging an answer whose right value is `right`."""
    from gpumodel.course.widgets import WidgetExercise

    exercise = WidgetExercise("t", {"x": [1]}, lambda x: "", gm.course.checks.number_rules(right, "words"), "Padding:")
    return [lambda a: gm.course.checks.check_number(a, right, "words"), lambda a: gm.course.tiling.check_padding(32, 32, a),
            lambda a: gm.course.tensor_cores.check_last_wave(64, 64, (32, 32), "A100-40GB", a), exercise.check]


@pytest.mark.parametrize("which, kind", [(w, k) for w in (0, 1, 3) for k in (np.int64, np.float32, np.array, int)]
                         + [(2, k) for k in (np.float64, np.float32, np.array, float)])
def test_the_checkers_accept_any_real_number(which, kind):
    right = 4 / 108 if which == 2 else 1  # a 64 x 64 output in 32 x 32 tiles fills 4 of the A100's 108 SMs
    answer = kind(right)
    feedback = _checkers(1)[which](answer)
    assert feedback, feedback.message


@pytest.mark.parametrize("bad", [True, np.bool_(False), [1], (1,), {1: 1}, np.array([1.0]), float("nan")])
@pytest.mark.parametrize("which", range(4))
def test_the_checkers_answer_bools_sequences_and_nan_with_a_sentence(bad, which):
    feedback = _checkers(1)[which](bad)
    assert not feedback and feedback.message.endswith(".")


def test_a_preset_name_that_is_not_a_string_names_gpu():
    with pytest.raises(TypeError, match="^gpu must be a GPU record or a preset name"):
        gm.gpu(["A100-40GB"])


def test_check_number_refuses_a_nan_expected_value_naming_it():
    with pytest.raises(ValueError, match="^expected must be a finite number"):
        gm.course.checks.check_number(1.0, float("nan"), "ms")


@pytest.mark.parametrize("call, message", [
    (lambda: gm.waves.block_coordinates(0, 4), "^rows must be positive"),
    (lambda: gm.waves.block_coordinates(4, 0), "^cols must be positive"),
    (lambda: gm.waves.block_coordinates(4, 4, "grouped", group=0), "^group must be positive"),
    (lambda: gm.waves.gemm_hbm(0, 64, 64), "^m must be positive"),
    (lambda: gm.waves.gemm_hbm(64, 0, 64), "^n must be positive"),
    (lambda: gm.waves.gemm_hbm(64, 64, 0), "^k must be positive"),
    (lambda: gm.waves.gemm_hbm(64, 64, 64, block=(0, 64)), r"^block\[0\] must be positive"),
    (lambda: gm.waves.gemm_hbm(64, 64, 64, block=(64, 0)), r"^block\[1\] must be positive"),
    (lambda: gm.waves.gemm_hbm(64, 64, 64, block=(64, 128)), r"^block\[1\] must not exceed n: got block\[1\]=128, n=64$"),
    (lambda: gm.waves.gemm_hbm(64, 64, 64, block=(32, 32), l2_bytes=0), "^l2_bytes must be positive"),
    (lambda: gm.waves.gemm_hbm(64, 64, 64, block=(32, 32), blocks_per_sm=0), "^blocks_per_sm must be positive"),
    (lambda: gm.waves.gemm_hbm(64, 64, 64, block=(32, 32), drift_k=0), "^drift_k must be positive"),
    (lambda: gm.waves.warm_read_time("A100-40GB", 0), "^nbytes must be positive"),
    (lambda: gm.tiles.is_legal("A100-40GB", 128, 0, 8, 8), "^b_n must be positive"),
    (lambda: gm.tiles.is_legal("A100-40GB", 128, 128, 0, 8), "^t_m must be positive"),
    (lambda: gm.tiles.is_legal("A100-40GB", 128, 128, 8, 0), "^t_n must be positive"),
    (lambda: gm.occupancy.occupancy("A100-40GB", 256, 0), "^registers must be positive"),
    (lambda: gm.kernel_info.info("gemm_fast"), r"^kernel must be one of \['vector_add', "),
    (lambda: gm.kernel_info.threads_per_block("gemm_fast"), "^function must be a CUDA function of kernels"),
    (lambda: gm.predict("gemm", A100), r"^workload must be a Workload .*, got str$"),
    (lambda: gm.gpu(40), "^gpu must be a GPU record or a preset name, got int$"),
    (lambda: A100.capacity("l1"), r"^level must be one of \('registers', 'smem', 'l2', 'hbm'\), got 'l1'$"),
])
def test_bad_input_names_the_parameter_first(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()


@pytest.mark.parametrize("bad, message", [
    ([4, [4, 4]], "must be a positive integer"),   # ragged: NumPy cannot make it an array
    (2**54, r"must be at most 2\*\*53, got 18014398509481984"),
    (2**53 + 2, r"must be at most 2\*\*53"),
])
def test_sizes_numpy_cannot_hold_exactly_are_refused(bad, message):
    with pytest.raises(ValueError, match="^n " + message):
        gm.vector_add(bad)


def test_the_largest_exact_size_is_accepted():
    assert gm.vector_add(2**53).flops == 2**53


def test_a_tile_names_which_of_its_sides_is_bad():
    with pytest.raises(ValueError, match=r"^thread\[1\] must be positive"):
        gm.gemm(64, 64, 64, block=(16, 16), thread=(8, 0))


@pytest.mark.parametrize("smem, message", [
    ("1024", "^smem must be a whole number >= 0"),   # a string is not a size, even one that parses
    (True, "^smem must be a whole number >= 0"),
    (float("inf"), "^smem must be finite"),
    (1.5, "^smem must be a whole number >= 0"),
    (-128, "^smem must be a whole number >= 0"),
])
def test_shared_memory_must_be_a_whole_number_of_bytes(smem, message):
    with pytest.raises(ValueError, match=message):
        gm.occupancy.occupancy("A100-40GB", 256, 32, smem)


BUILDERS = [  # each builder with valid arguments
    (gm.vector_add, {"n": 64}),
    (gm.elementwise_chain, {"n": 64, "ops": 3, "fused": False}),
    (gm.gemm, {"m": 64, "n": 64, "k": 64, "l2_reuse": True}),
    (gm.gemm_requests, {"m": 64, "n": 64, "k": 64}),
    (gm.gemm_ideal, {"m": 64, "n": 64, "k": 64}),
    (gm.attention, {"batch": 1, "heads": 2, "seq": 64, "head_dim": 32, "l2_reuse": False}),
    (gm.workloads.attention_backward, {"batch": 1, "heads": 2, "seq": 64, "head_dim": 32, "l2_reuse": False}),
    (gm.workloads.attention_memory, {"batch": 1, "heads": 2, "seq": 64, "head_dim": 32}),
    (gm.workloads.score_matrix_bytes, {"batch": 1, "heads": 2, "seq": 64}),
    (gm.transpose, {"n": 64, "padded": False}),
    (gm.workloads.warp_sectors, {"stride": 2, "elem_bytes": 4}),
    (gm.workloads.strided_read, {"n": 64, "stride": 2}),
    (gm.workloads.flash_block, {"sram_bytes": 2**16, "head_dim": 64}),
]
BAD_ARGUMENTS = [(fn, kwargs, name) for fn, kwargs in BUILDERS for name in kwargs]


@pytest.mark.parametrize("builder, kwargs, name", BAD_ARGUMENTS,
                         ids=[f"{fn.__name__}-{name}" for fn, _, name in BAD_ARGUMENTS])
def test_every_builder_names_each_bad_argument(builder, kwargs, name):
    builder(**kwargs)  # valid as given
    bad, message = (2, "must be True or False") if isinstance(kwargs[name], bool) else (0, "must be positive")
    with pytest.raises(ValueError, match=f"^{re.escape(name)} {message}"):
        builder(**{**kwargs, name: bad})


@pytest.mark.parametrize("builder", [gm.attention, gm.workloads.attention_backward, gm.workloads.attention_memory])
def test_attention_builders_name_a_bad_kind_and_block(builder):
    with pytest.raises(ValueError, match="^kind must be one of"):
        builder(1, 1, 64, 32, kind="sparse")
    if builder is not gm.workloads.attention_memory:
        with pytest.raises(ValueError, match=r"^block\[1\] must not exceed seq: got block\[1\]=128, seq=64$"):
            builder(1, 1, 64, 32, kind="flash", block=(64, 128))
        with pytest.raises(ValueError, match=r"^block must be a pair"):
            builder(1, 1, 64, 32, kind="flash", block=64)


@pytest.mark.parametrize("call, message", [
    (lambda: gm.gemm(64, 64, 64, thread=(2, 2)), r"^thread must be \(1, 1\) for the naive kernel \(block=None\)$"),
    (lambda: gm.gemm(64, 64, 64, block=(0, 16)), r"^block\[0\] must be positive"),
    (lambda: gm.gemm(64, 64, 64, block=(16, 16, 0)), r"^block\[2\] must be positive"),
    (lambda: gm.gemm(64, 64, 64, block=(16,)), r"^block must be None, \(bM, bN\) or \(bM, bN, bK\), got \(16,\)$"),
    (lambda: gm.gemm(64, 64, 64, block=(16, 16), thread=(1, 3)),
     r"^thread\[1\] must divide block\[1\]: got thread\[1\]=3, block\[1\]=16$"),
    (lambda: gm.Workload("x", flops=1.0, bytes={lv: 0.0 for lv in gm.LEVELS}, special=-1.0),
     "^special must be finite and not negative, got .*-1.0"),
    (lambda: gm.Workload("x", flops=np.array([1.0, np.nan]), bytes={lv: 0.0 for lv in gm.LEVELS}),
     "^flops must be finite, got .*nan"),
])
def test_tiles_and_workloads_name_what_is_wrong(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# Issue 26: what an independent probe of bad inputs found, each case a regression test.

@pytest.mark.parametrize("call, message", [
    (lambda: gm.gemm([4096, 2048], [1024, 2048, 4096], 4096), r"^m and n must broadcast: shapes \(2,\) and \(3,\)$"),
    (lambda: gm.gemm(64, 64, [64, 128, 256], block=(16, 16), thread=([1, 2], 1)),
     r"^k and thread\[0\] must broadcast: shapes \(3,\) and \(2,\)$"),
    (lambda: gm.occupancy.occupancy("A100-40GB", [128, 256], [32, 64, 96]), r"^threads and registers must broadcast"),
    (lambda: gm.tiles.is_legal("A100-40GB", [64, 128], [64, 128, 256], 8, 8), r"^b_m and b_n must broadcast"),
    (lambda: gm.attention([1, 2], [1, 2, 3], 256, 64), r"^batch and heads must broadcast"),
    (lambda: gm.Workload("w", [1.0, 2.0], {"registers": [1, 2, 3], "smem": 0, "l2": 0, "hbm": 0}),
     r"^flops and bytes\['registers'\] must broadcast: shapes \(2,\) and \(3,\)$"),
])
def test_sizes_that_do_not_broadcast_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("call, param", [
    (lambda: gm.flash_block([65536, 131072], 64), "sram_bytes"),
    (lambda: gm.waves.gemm_hbm([1024, 2048], 1024, 512), "m"),
    (lambda: gm.waves.block_coordinates([6, 7], 5), "rows"),
    (lambda: gm.tensor_cores.wave_quantisation([4096, 2048], 4096, (128, 256), "A100-40GB"), "m"),
    (lambda: gm.tensor_cores.stream_k([200, 300], 64, 132), "tiles"),
    (lambda: gm.tensor_cores.pipeline("A100-40GB", (128, 128), [64, 32]), "bk"),
    (lambda: gm.decode.gemm_critical_batch("A100-40GB", [4096, 8192]), "width"),
    (lambda: gm.course.tiling.check_padding([32, 64], 32, 1), "rows"),
    (lambda: gm.course.roofline_levels.check_l2_tile("A100-40GB", [8192, 4096], 128), "size"),
    (lambda: gm.simulate.online_softmax(np.ones((3, 7)), [3, 4]), "block"),
    (lambda: gm.course.tiling.check_occupancy("A100-40GB", [128, 256], 32, 0, 32), "threads"),
    (lambda: gm.course.tiling.check_occupancy("A100-40GB", 128, 32, [0, 1024], 32), "smem"),
])

def test_a_one_number_parameter_given_an_array_is_named(call, param):
    """No "only 0-dimensional arrays can be converted" nor "unsupported format string"."""
    with pytest.raises(ValueError, match=rf"^{param} must be one whole number, not an array"):
        call()


def test_a_cluster_larger_than_the_matrix_names_the_cluster():
    """Not "block[0] must not exceed m" for a block tile the caller did not pass."""
    with pytest.raises(ValueError, match=r"^cluster\[0\] x block\[0\] must not exceed m: got cluster\[0\] x block\[0\]=2048"):
        gm.tensor_cores.cluster_gemm(1024, 1024, 1024, cluster=(16, 1))


@pytest.mark.parametrize("call, error, message", [
    (lambda: gm.kernel_info.threads_per_block(["vector_add"]), ValueError, "^function must be the name of a CUDA function"),
    (lambda: gm.course.checks.verdict({"kind": "number"}, 3), TypeError, "^rules must be made by number_rules"),
    (lambda: gm.course.checks.verdict({"kind": "choice", "answer": "a100"}, "a100"), TypeError, "^rules must be made"),
    (lambda: gm.fmt_percent(1e307), ValueError, "^fraction must be at most 1e306 in magnitude"),
    (lambda: gm.gpu("A100-40GB").running("fp8"), ValueError, "^A100-40GB has no fp8 tensor-core peak"),
    (lambda: gm.simulate.naive_gemm(np.full((2, 2), 1e200), np.ones((2, 2))), ValueError,
     "^a must hold numbers of magnitude at most 1e\\+150"),
    (lambda: gm.simulate.strided_read(np.full(4096, 1e308), 4), ValueError, "^x must hold numbers of magnitude at most"),
    (lambda: gm.simulate.online_softmax_step(np.full((2, 1), -np.inf), np.zeros((2, 1)), np.zeros((2, 3)), None,
                                             np.ones((4, 3))), ValueError, "^scores must be an array of numbers"),
    (lambda: gm.simulate.online_softmax_step(np.full((2, 1), -np.inf), np.zeros((2, 1)), np.zeros((2, 3)),
                                             np.full((2, 4), np.nan), np.ones((4, 3))), ValueError, "^scores must be finite"),
    (lambda: gm.simulate.online_softmax_step(np.full((2, 1), np.nan), np.zeros((2, 1)), np.zeros((2, 3)),
                                             np.ones((2, 4)), np.ones((4, 3))), ValueError, "^m must hold finite numbers"),
    (lambda: gm.simulate.online_softmax_step(np.full((2, 1), -np.inf), np.zeros((2, 1)), np.zeros((2, 3)),
                                             np.ones((2, 4)), np.ones((5, 3))), ValueError, "^scores and values must"),
    # a probe of bad input: 3.4e22 FLOP/s at 1e12 MHz, "value" named at 1e308, a negative sequence and an
    # unknown pass counted, a KeyError, an infinite time
    (lambda: gm.gpu("H100-SXM").at_clock(1e12), ValueError, r"^mhz must be a finite number >= 100 and <= 5000, got 1000000000000.0$"),
    (lambda: gm.gpu("H100-SXM").at_clock(1e308), ValueError, r"^mhz must be a finite number >= 100 and <= 5000, got 1e\+308$"),
    (lambda: gm.published.attention_flops({**ATTENTION_RUN, "seq": -1024}), ValueError,
     r"^run.seq must be a positive whole number, got -1024$"),
    (lambda: gm.published.attention_flops({**ATTENTION_RUN, "passes": "backward"}), ValueError,
     r"^run.passes must be one of \('forward', 'forward\+backward'\), got 'backward'$"),
    (lambda: gm.published.attention_flops({}), ValueError,
     r"^run: missing \['attention', 'batch', 'head_dim', 'heads', 'passes', 'seq'\]$"),
    (lambda: gm.overhead.sequence_time([1e-6, 2e-6], 1e308), ValueError,
     r"^launch must be a finite number >= 0 and <= 1e\+150, got 1e\+308$"),
    (lambda: gm.overhead.sequence_time([1e308, 1e308], 1e-6), ValueError,
     r"^kernel_times must hold numbers of magnitude at most 1e\+150, got 1e\+308$"),
])
def test_what_raised_raw_errors_or_returned_inf_is_refused_naming_the_parameter(call, error, message):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(error, match=message):
            call()


@pytest.mark.parametrize("call, message", [
    (lambda: gm.course.hierarchy.littles_law(width="float4"),
     r"^width must be one of \['float \(4 B\)', 'float2 \(8 B\)', 'float4 \(16 B\)'\], got 'float4'$"),
    (lambda: gm.course.hierarchy.littles_law(loads=0), r"^loads must be one of \[1, 2, 4\], got 0$"),
    (lambda: gm.course.hierarchy.littles_law(loads=True), r"^loads must be one of \[1, 2, 4\], got True$"),
    (lambda: gm.course.hierarchy.littles_law(gpu="T4"), r"^gpu must be one of \['V100', "),
    (lambda: gm.course.tiling.occupancy_limit(warps=-1), r"^warps must be an integer from 1 to 64, got -1$"),
    (lambda: gm.course.tiling.occupancy_limit(warps="32"), r"^warps must be an integer from 1 to 64, got '32'$"),
    (lambda: gm.course.tiling.occupancy_limit(threads=128, smem_kib=100, warps=32), r"^warps must be at most "),
    (lambda: gm.course.tiling.occupancy_limit(gpu="V100", smem_kib=100), r"^smem_kib must be at most 96 on the V100"),
    (lambda: gm.course.hierarchy.seed_bounds().render(kernel="VECTOR_ADD", gpu="A100-40GB"),
     r"^kernel must be one of \['vector_add', 'gemm_smem16', 'gemm_reg128'\], got 'VECTOR_ADD'$"),
    (lambda: gm.course.tiling.thread_tile("H100-SXM", 128), r"^gpu and block must admit a thread tile"),
    (lambda: gm.course.flashattention.attention_fit(gpu="B200", heads=1, head_dim=8), r"^heads and head_dim must make"),
    (lambda: gm.course.tensor_cores.decode_batch(width=64), r"^width must let a batch of 1024 reach"),
])
def test_the_widget_exercises_refuse_values_outside_their_menus_naming_the_menu(call, message):
    """Before issue 26: a KeyError, "min() arg is an empty sequence", a UFuncTypeError, or a bool
    or a negative warp count accepted (the answer 255)."""
    with pytest.raises(ValueError, match=message):
        call()
