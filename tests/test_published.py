"""Published measurements against the model: every record loads and names a preset, a bib
entry and a unit; the comparisons are computed from the records; no measurement the model
bounds is faster than the bound; every one much slower says why."""

import math
import statistics

import pytest

import gpumodel as gm
from gpumodel import presets, published

RECORDS = published.records()
BOUNDED = [c for c in published.comparisons() if c.quantity != "latency"]


def test_enough_records_from_enough_sources_in_every_chapter():
    assert len(RECORDS) >= 30 and len({r.source for r in RECORDS}) >= 6
    assert {r.chapter for r in RECORDS} >= {1, 2, 3, 4, 5}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: f"{r.source}-{r.gpu}-{r.what}")
def test_a_record_names_a_preset_a_source_a_place_and_a_unit(record):
    assert record.gpu in gm.preset_names() and record.source in presets.bib_keys()
    assert record.where and record.unit in published.SCALE and record.value > 0


@pytest.mark.parametrize("c", BOUNDED, ids=lambda c: f"{c.record.gpu}-{c.record.what}")
def test_no_measurement_beats_the_model(c):
    """The model is a bound: a measurement faster than it is a bug in the model or the data,
    shown as a violation with its analysis; a record that is not faster carries none."""
    assert c.fraction > 0
    assert (c.fraction <= 1 + 1e-9) == (not c.record.violation), (c.record.where, c.model, c.measured)
    if c.slow:
        assert len(c.record.reason) > 40, "a measurement over 1.5x slower than the model says why"


def test_every_record_is_compared_and_no_violation_is_left():
    """None is excluded: every record is in the comparison, and none is faster than the model."""
    assert len(published.comparisons()) == len(RECORDS)
    assert published.violations() == []


def test_only_tilus_v5_sets_a_preset_and_the_l2_rates_are_the_sustained_ones():
    """The H100 and H200 L2 rates are the rates gpu-l2-cache sustains on data sets of 4 MB and
    more; the records of smaller sets, which read faster, are held by L1's share instead. The
    B200's, which nothing measures, is the least Tilus V5 proves: 13.03 GB through L2 in its
    time at the 1,366 MHz it was profiled at, in bytes per clock (rounded up)."""
    (v5,) = [r for r in RECORDS if r.sets_preset]
    b200 = gm.gpu("B200").l2_bandwidth
    assert v5.what.startswith("Tilus V5") and b200.source == v5.source and not v5.holdout
    mhz = 1599.8e12 / 0.966 / (8192 * 148)
    proved = (2 * (8192**3 / 256 + 8192**3 / 128) + 2 * 8192**2) / (8192**3 * 2 / 1506.3e12) / mhz
    assert b200.unit == "B/clk" and b200.value == math.ceil(proved)
    for gpu, row in (("H100-PCIe", "row 4608 kB"), ("H200", "row 4096 kB")):
        l2 = gm.gpu(gpu).l2_bandwidth
        assert (l2.kind, l2.source) == ("measured", "ernst_gpubenches") and l2.where.endswith(row)
        small = [c for c in BOUNDED if c.record.gpu == gpu and "chunk" in c.record.run and c.record.run["bytes"] < 4 * 2**20]
        assert small and all(c.measured > l2.value and c.fraction < 1 for c in small)
    assert gm.gpu("H100-SXM").l2_bytes_per_clock == gm.gpu("H200").l2_bytes_per_clock


def test_the_l2_edge_points_are_compared_at_l2_and_hbm_together():
    """gpu-benches reads just past the L2 capacity run faster than HBM alone allows; the bound
    charges HBM only for the bytes past the capacity, and holds them all."""
    edge = [c for c in BOUNDED if c.record.run.get("kind") == "read"
            and gm.gpu(c.record.gpu).capacity("l2") < c.record.run["bytes"] < 3 * gm.gpu(c.record.gpu).capacity("l2")]
    beyond_hbm = {c.record.gpu for c in edge if c.measured > gm.gpu(c.record.gpu).bandwidth("hbm")}
    assert beyond_hbm == {"A100-80GB", "H100-PCIe", "H200"}
    assert all(c.fraction <= 1 for c in edge)


def test_comparisons_are_computed_from_the_model():
    """A read is held against the preset's L2 or HBM bandwidth, a GEMM against `predict`."""
    h200 = gm.gpu("H200")
    read = next(c for c in BOUNDED if c.record.gpu == "H200" and c.record.run["kind"] == "read" and c.record.unit == "GB/s"
                and c.record.run["bytes"] > 10**8)
    nbytes = read.record.run["bytes"]
    assert read.bound == "l2+hbm"
    assert read.model == pytest.approx(h200.bandwidth("hbm") * nbytes / (nbytes - h200.capacity("l2")))
    assert read.fraction == pytest.approx(read.record.value * 1e9 / read.model)
    cublas = next(c for c in BOUNDED if c.record.what == "cuBLAS SGEMM")
    a6000 = gm.gpu("RTX-A6000")  # bounded at the highest clock it reaches, predicted beside it at its boost
    assert cublas.model == pytest.approx(2 * 4096**3 / a6000.bound().peak_flops) and cublas.bound == "compute"
    assert published.compare(cublas.record, rated=True).model == pytest.approx(2 * 4096**3 / a6000.peak_flops)
    assert a6000.bound().peak_flops == pytest.approx(a6000.peak_flops * 2100 / 1800)
    assert cublas.measured == pytest.approx(2 * 4096**3 / 23249.6e9)


def test_the_papers_flop_count():
    run = {"seq": 1024, "head_dim": 64, "heads": 16, "batch": 8, "attention": "flash", "passes": "forward+backward"}
    assert published.attention_flops(run) == 3.5 * 4 * 1024**2 * 64 * 16 * 8


def test_the_summary_the_appendix_shows():
    fractions = [c.fraction for c in BOUNDED]
    assert 0.3 < statistics.median(fractions) < 1


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('source = "x_src"', 'source = "nobody2020"'), "source must be a key of references.bib"),
    (lambda t: t.replace('gpu = "H200"', 'gpu = "H300"'), "gpu must be a preset"),
    (lambda t: t.replace('unit = "GB/s"', 'unit = "ms"'), r"unit must be one of \('GB/s', 'TB/s'\) for a read"),
    (lambda t: t.replace('kind = "read"', 'kind = "copy"'), "x.toml record 1: run must be a table whose kind is one of"),
    (lambda t: t.replace("value = 100", "value = -1"), "value must be a finite positive number"),
    # issue 26: a value or a run of the wrong type, a negative size, an unknown shared reason
    (lambda t: t.replace("value = 100", 'value = "309"'), "x.toml record 1.value must be a finite positive number"),
    (lambda t: t.replace("value = 100", "value = inf"), "x.toml record 1.value must be a finite positive number"),
    (lambda t: t.replace("value = 100", "value = 1e30"), r"x.toml record 1.value must be at most 100000 GB/s, got 1e\+30"),
    (lambda t: t.replace('run = { kind = "read", bytes = 4096 }', 'run = "gemm"'), "x.toml record 1: run must be a table"),
    (lambda t: t.replace('{ kind = "read", bytes = 4096 }', '{ kind = "read", bytes = -4096 }'),
     r"x.toml record 1.run.bytes must be a positive number, got -4096"),
    (lambda t: t.replace('unit = "GB/s"', 'unit = "GFLOP/s"').replace('{ kind = "read", bytes = 4096 }',
                                                                     '{ kind = "gemm", size = -4096 }'),
     r"x.toml record 1.run.size must be a positive whole number, got -4096"),
    (lambda t: t.replace('unit = "GB/s"', 'unit = "GFLOP/s"').replace('{ kind = "read", bytes = 4096 }',
                                                                     '{ kind = "gemm", size = 64, block = "big" }'),
     r"x.toml record 1.run.block must be a list of 2 or 3 positive whole numbers"),
    (lambda t: t + 'reason = "naive"\n', r"x.toml record 1.reason must name one of \[reasons\] \[\] \(or be a sentence\)"),
    (lambda t: t.replace('what = "r"\n', ""), "missing \\['what'\\]"),
    (lambda t: t.replace("chapter = 1", "chapter = 1\ncolour = 2"), "unknown keys \\['colour'\\]"),
])
def test_a_bad_record_is_refused_naming_file_and_key(edit, message, tmp_path, monkeypatch):
    text = 'source = "x_src"\n[[record]]\ngpu = "H200"\nwhat = "r"\nwhere = "w"\nrun = { kind = "read", bytes = 4096 }\nvalue = 100\nunit = "GB/s"\nchapter = 1\n'
    monkeypatch.setattr(presets, "bib_keys", lambda: frozenset({"x_src"}))
    with pytest.raises(presets.DataError, match=message):
        _load(tmp_path, monkeypatch, "x.toml", edit(text))


def _load(tmp_path, monkeypatch, name, text):
    """The records of a data folder that holds only `text`, as the file `name`."""
    (tmp_path / name).write_text(text)
    monkeypatch.setattr(published, "DATA", tmp_path)
    published.records.cache_clear()
    try:
        return published.records()
    finally:
        published.records.cache_clear()


def _repeat_first_record(text):
    first = text.index("[[record]]")
    return text + "\n" + text[first:text.index("[[record]]", first + 1)]


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("chapter = 1", "chapter = 11", 1),
     r"^gpu_benches.toml record 1.chapter must be a chapter's number, one of \(0, 1, .*, 98, 99\), got 11$"),
    (lambda t: t.replace("chapter = 1", 'chapter = "1"', 1), r"^gpu_benches.toml record 1.chapter must be .*, got '1'$"),
    (lambda t: t.replace("holdout = true", 'holdout = "yes"', 1),
     r"^gpu_benches.toml record \d+.holdout must be true or false, got 'yes'$"),
    (lambda t: t.replace('reason = "l1_most"', 'reason = "l1_most"\nsets_preset = "l2_speed: a probe"', 1),
     r"^gpu_benches.toml record 28.sets_preset must be a figure of the H100-PCIe preset citing ernst_gpubenches "
     r"\['hbm_bandwidth', 'l2_bandwidth'\], a colon and why, got 'l2_speed: a probe'$"),
    (lambda t: t.replace('reason = "l1_most"', 'reason = "l1_most"\nsets_preset = "l2_capacity: a probe"', 1),
     r"^gpu_benches.toml record 28.sets_preset must be a figure of the H100-PCIe preset citing ernst_gpubenches"),
    (lambda t: t.replace('reason = "l1_most"', 'reason = "l1_most"\nsets_preset = "l2_bandwidth: a probe"\nholdout = true', 1),
     r"^gpu_benches.toml record 28.sets_preset: a record that sets a preset is not holdout$"),
    (_repeat_first_record, r"^gpu_benches.toml record \d+ repeats record 1 word for word$"),
    (lambda t: t.replace('run = { kind = "read", bytes = 10485760, chunk = 524288, threads = 1024 }', 'run = { kind = "read" }', 1),
     r"^gpu_benches.toml record 1.run: missing \['bytes'\]$"),
])
def test_a_real_file_made_wrong_is_refused_naming_file_and_key(edit, message, tmp_path, monkeypatch):
    """A probe of bad input: each was accepted (or raised a bare KeyError in `compare`)."""
    _refused("gpu_benches.toml", edit, message, tmp_path, monkeypatch)


def _refused(name, edit, message, tmp_path, monkeypatch):
    """The real data file `name`, changed by `edit`, is refused with `message`."""
    text = (published.DATA / name).read_text()
    assert edit(text) != text
    with pytest.raises(presets.DataError, match=message):
        _load(tmp_path, monkeypatch, name, edit(text))


def test_a_record_names_a_chapter_of_the_book():
    """published.CHAPTERS are the numbers of chapters/NN_topic.md (the installed package has no chapters/)."""
    assert published.CHAPTERS == tuple(sorted(int(p.name[:2]) for p in gm.book.syllabus.CHAPTERS.glob("[0-9][0-9]_*.md")))
    with pytest.raises(ValueError, match=r"^chapter must be a chapter's number, one of \(0, 1, "):
        published.comparisons(chapter=11)


def test_tables_cite_each_source(monkeypatch):
    monkeypatch.setenv("GPUMODEL_BUILD", "book")  # on the site a role; in Jupyter linked text (tests/test_feedback.py)
    table = gm.course.tables.published_table(published.comparisons(chapter=3))
    assert "{cite:t}`boehm2022sgemm`" in table and "(shared memory)" in table
    assert "kernel 4" in table and gm.course.tables.violations_table([]).count("\n") == 1  # header only


def test_the_slow_runs_are_listed_closed_by_gpu_each_with_its_reason():
    slow = [c for c in published.comparisons() if c.quantity != "latency" and c.slow]
    text = gm.course.tables.reasons_by_gpu(slow)
    gpus = {c.record.gpu for c in slow}
    assert text.count("<details><summary>") == text.count("</details>") == len(gpus) > 1
    assert text.count("\n- **") == len(slow) and all(c.record.reason in text for c in slow)
    assert "^" not in text  # powers set as superscripts (4096³), not carets
    first = slow[0].record.gpu
    assert f"<summary>{first}: {sum(c.record.gpu == first for c in slow)} run" in text


def _record(gpu, run, value, unit):
    return published.Record(source="nvidia2020a100", gpu=gpu, what="a test run", where="here", run=run,
                            value=value, unit=unit, chapter=1)


def test_a_latency_record_is_held_against_the_presets_latency():
    """The V100's file states 375 cycles to HBM; a measured 500 is 0.75 of it."""
    c = published.compare(_record("V100", {"kind": "latency", "level": "hbm"}, 500, "cycles"))
    assert (c.quantity, c.model, c.measured, c.fraction, c.bound) == ("latency", 375, 500, 0.75, "hbm")
    assert not c.slow
    for gpu, level in (("V100", "l1"), ("T4", "hbm")):  # not a level; no latency measured on the T4
        with pytest.raises(presets.DataError, match=f"^{gpu} has no preset latency for run.level '{level}'$"):
            published.compare(_record(gpu, {"kind": "latency", "level": level}, 500, "cycles"))


def test_a_read_is_held_against_l2_while_it_fits_and_hbm_beyond():
    """A100: L2 is 5120 B/clk x 1.41 GHz = 7.2192 TB/s, HBM 1.555 TB/s."""
    l2 = published.compare(_record("A100-40GB", {"kind": "read", "bytes": 2**20}, 3.6096, "TB/s"))
    assert (l2.quantity, l2.bound) == ("bandwidth", "l2")
    assert (l2.model, l2.measured, l2.fraction) == pytest.approx((7.2192e12, 3.6096e12, 0.5))
    hbm = published.compare(_record("A100-40GB", {"kind": "read", "bytes": 10**9}, 1244, "GB/s"))
    bound = 1.555e12 * 10**9 / (10**9 - 40 * 2**20)  # HBM supplies only what did not stay in L2
    assert (hbm.bound, hbm.model, hbm.fraction) == ("l2+hbm", pytest.approx(bound), pytest.approx(1244e9 / bound))


def test_a_gemm_record_is_its_workload_on_its_gpu():
    flops = 2 * 4096**3
    # Ideal fp16 on the A100: compute-bound on the 312 TFLOP/s tensor cores; 100 TFLOP/s is 100/312 of it.
    ideal = published.compare(_record("A100-40GB", {"kind": "gemm", "size": 4096, "dtype": "fp16", "ideal": True},
                                      100, "TFLOP/s"))
    assert (ideal.quantity, ideal.bound) == ("time", "compute")
    assert (ideal.model, ideal.measured, ideal.fraction) == pytest.approx((flops / 312e12, flops / 100e12, 100 / 312))
    # 128 x 128 tiles, 8 x 8 per thread, fp32: compute-bound at 108 SMs x 64 lanes x 2 x 1.41 GHz; 20 ms measured.
    tiled = published.compare(_record("A100-40GB", {"kind": "gemm", "size": 4096, "block": [128, 128, 8],
                                                    "thread": [8, 8]}, 20, "ms"))
    assert (tiled.model, tiled.measured, tiled.bound) == (pytest.approx(flops / (108 * 64 * 2 * 1.41e9)), 0.02, "compute")
    assert tiled.fraction == pytest.approx(tiled.model / 0.02)
    # No tiles named: the workload gm.gemm builds without them, in the record's dtype.
    # (On the H100 the naive kernel's fp16 and fp32 L2 times differ; its bound, the L1 path, does not.)
    plain = published.compare(_record("H100-SXM", {"kind": "gemm", "size": 4096, "dtype": "fp16"}, 20, "ms"))
    h100 = gm.gpu("H100-SXM").bound()
    assert plain.model == gm.predict(gm.gemm(4096, 4096, 4096, dtype="fp16"), h100).time
    fp16, fp32 = (gm.predict(gm.gemm(4096, 4096, 4096, dtype=d), h100) for d in ("fp16", "fp32"))
    assert fp16.level_times["l2"] == fp32.level_times["l2"] / 2


@pytest.mark.parametrize("passes, factor", [("forward", 1.0), ("forward+backward", 3.5)])
def test_an_attention_record_runs_the_flash_kernels_with_l2_reuse(passes, factor):
    run = {"kind": "attention", "batch": 2, "heads": 4, "seq": 8192, "head_dim": 64, "dtype": "bf16",
           "attention": "flash", "passes": passes}
    flops = 4 * 8192**2 * 64 * 4 * 2 * factor
    assert published.attention_flops(run) == flops
    c = published.compare(_record("H100-SXM", run, 100, "TFLOP/s"))
    args = (2, 4, 8192, 64, "bf16", "flash")
    h100 = gm.gpu("H100-SXM").bound()
    parts = [gm.predict(gm.attention(*args, l2_reuse=True), h100)]
    if passes == "forward+backward":
        parts.append(gm.predict(gm.workloads.attention_backward(*args, l2_reuse=True), h100))
    assert c.model == pytest.approx(sum(p.time for p in parts)) and c.measured == pytest.approx(flops / 100e12)
    assert c.bound == "+".join(dict.fromkeys(str(p.bound) for p in parts))


def test_a_first_release_flash_record_sends_its_partials_through_hbm_when_the_heads_in_flight_outgrow_l2():
    """The bound lets L2 keep every re-read; the expected time's caches keep the recent lines,
    so a step's Q and fp32 partials of the heads in flight (one block per batch and head, at
    least one per SM) come back from L2 only while they fit: on the A100-40GB (108 SMs, 40 MB)
    128 heads at N = 1,024 need 108 x 1,024 x (64 x 6 + 4) B = 42.9 MB, just over; 4 heads at
    N = 4,096 need 4 x 4,096 x 388 B = 6.4 MB."""
    a100 = gm.gpu("A100-40GB")
    run = {"kind": "attention", "batch": 16, "heads": 8, "seq": 1024, "head_dim": 64, "attention": "flash1",
           "block": [16, 256], "passes": "forward"}
    best, recent = published.workloads(run)[0], published.workloads(run, a100)[0]
    assert best.bytes["hbm"] == 2 * 4 * 128 * 1024 * 64 and recent.bytes["hbm"] == recent.bytes["l2"] == best.bytes["l2"]
    assert 108 * 1024 * (64 * 6 + 4) > a100.capacity("l2")
    few = dict(run, batch=1, heads=4, seq=4096)
    assert published.workloads(few, a100)[0].bytes["hbm"] == published.workloads(few)[0].bytes["hbm"]
    flash2 = dict(run, attention="flash", block=[128, 64])
    assert published.workloads(flash2, a100)[0].bytes == published.workloads(flash2)[0].bytes


def test_the_records_reload_the_same():
    """`records()` is cached; reading the files again gives the same records."""
    assert published.records.__wrapped__() == published.records()


def test_a_run_bound_differently_forward_and_backward_names_both():
    run = {"kind": "attention", "batch": 1, "heads": 8, "seq": 512, "head_dim": 64, "dtype": "fp16",
           "attention": "flash", "passes": "forward+backward"}
    args = (1, 8, 512, 64, "fp16", "flash")
    forward = gm.predict(gm.attention(*args, l2_reuse=True), "H100-SXM").bound
    backward = gm.predict(gm.workloads.attention_backward(*args, l2_reuse=True), "H100-SXM").bound
    assert forward != backward
    assert published.compare(_record("H100-SXM", run, 100, "TFLOP/s")).bound == f"{forward}+{backward}"


def test_a_records_dtype_reaches_its_workload():
    """An fp32 attention run uses the FP32 lanes (19.5 TFLOP/s on the A100, not 312); a tiled
    fp16 GEMM the tensor cores."""
    run = {"kind": "attention", "batch": 1, "heads": 8, "seq": 4096, "head_dim": 64, "dtype": "fp32",
           "attention": "flash", "passes": "forward"}
    fp32 = published.compare(_record("A100-40GB", run, 10, "TFLOP/s"))
    assert fp32.model == gm.predict(gm.attention(1, 8, 4096, 64, "fp32", "flash", l2_reuse=True), "A100-40GB").time
    assert fp32.model > published.compare(_record("A100-40GB", {**run, "dtype": "fp16"}, 10, "TFLOP/s")).model
    tiled = {"kind": "gemm", "size": 4096, "dtype": "fp16", "block": [128, 128, 32], "thread": [8, 8]}
    assert published.compare(_record("A100-40GB", tiled, 20, "ms")).model == gm.predict(
        gm.gemm(4096, 4096, 4096, block=(128, 128, 32), thread=(8, 8), dtype="fp16"), "A100-40GB").time


def test_a_read_of_exactly_the_l2_capacity_is_an_l2_read():
    l2 = gm.gpu("A100-40GB").capacity("l2")  # 40 MiB
    assert published.compare(_record("A100-40GB", {"kind": "read", "bytes": l2}, 5, "TB/s")).bound == "l2"


def test_the_bound_uses_the_highest_rates_and_the_rated_prediction_stays_beside_it():
    """Item 3 of issue 27: against every record, the bound's inputs (the highest clock a part
    reaches, tensor peaks scaled to it) never make the model slower than the rated figures do,
    and they make it faster exactly where a preset runs above its rating and something on
    chip (not HBM alone) binds."""
    bound, rated = published.comparisons(), published.comparisons(rated=True)
    assert [c.record for c in bound] == [r.record for r in rated]
    for c, r in zip(bound, rated):
        if c.quantity == "latency":
            continue
        g = gm.gpu(c.record.gpu)
        run = c.record.run
        tensor = run["kind"] in ("request", "parallel") or (run["kind"] in ("gemm", "attention")
                                                            and run.get("dtype", "fp16") != "fp32")
        above = g.max_clock is not None or (g.tensor_clock is not None and tensor)
        assert c.fraction <= r.fraction + 1e-12
        on_chip = any(part != "hbm" for part in r.bound.split("+"))
        assert (c.fraction < r.fraction) == (above and on_chip), (c.record.gpu, c.record.what)


def test_a_decode_record_is_held_against_the_decode_step():
    """Tokens per second become seconds per step of the batch, against `gm.decode.step`'s bound:
    Llama-2-7B's 6.7 G bf16 weights less its 32,000 x 4,096 input table, plus the one row of it a
    sequence looks up, at batch 1 read about 13.1 GB, 6.4 ms at the A100-80GB's 2.039 TB/s."""
    run = {"kind": "decode", "model": "Llama-2-7B", "batch": 1, "context": 5, "weight": "bf16", "kv": "bf16"}
    c = published.compare(_record("A100-80GB", run, 100.0, "tokens/s"))
    weights, cache = (6.7e9 - 32000 * 4096 + 4096) * 2, 6 * 32 * 2 * 32 * 128 * 2
    assert c.model == pytest.approx((weights + cache) / 2.039e12) and c.bound == "hbm"
    assert (c.quantity, c.measured) == ("time", pytest.approx(0.01)) and c.fraction == pytest.approx(c.model / 0.01)
    batch = published.compare(_record("A100-80GB", {**run, "batch": 4}, 400.0, "tokens/s"))
    assert batch.measured == pytest.approx(0.01) and batch.model > c.model  # four caches, one set of weights
    int8 = published.compare(_record("A100-80GB", {**run, "weight": "int8"}, 100.0, "tokens/s"))
    assert int8.model == pytest.approx((weights / 2 + cache) / 2.039e12)
    batch4 = (6.7e9 - 32000 * 4096 + 4 * 4096) * 2 + 4 * cache  # four rows of the table, four caches
    assert batch.model == pytest.approx(batch4 / 2.039e12)


AZURE_ALL_REDUCE = 'gpus = 8, message = 8589934592, link = "NVLink 4", algorithm = "in-switch" }'


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace(AZURE_ALL_REDUCE, AZURE_ALL_REDUCE.replace("gpus = 8", "gpus = 16"), 1),
     r"^azure_benchmarks.toml record \d+.run.gpus must be at most 8, the GPUs NVLink 4 joins as one, got 16$"),
    (lambda t: t.replace(AZURE_ALL_REDUCE, AZURE_ALL_REDUCE.replace('"NVLink 4"', '"NVLink 3"'), 1),
     r"^azure_benchmarks.toml record \d+.run.link must be a link the H100-SXM has \(NVLink 4, PCIe 5, InfiniBand NDR, A3 Mega network\), "
     r"got 'NVLink 3'$"),
    (lambda t: t.replace(AZURE_ALL_REDUCE, AZURE_ALL_REDUCE.replace('"in-switch"', '"tree"'), 1),
     r"^azure_benchmarks.toml record \d+.run.algorithm must be one NVLink 4 runs \(ring, in-switch\), got 'tree'$"),
])
def test_a_collective_record_past_its_link_is_refused(edit, message, tmp_path, monkeypatch):
    """Accepted before: 16 GPUs on an 8-GPU link, a link the GPU does not have, an algorithm the link does not run."""
    _refused("azure_benchmarks.toml", edit, message, tmp_path, monkeypatch)


@pytest.mark.parametrize("run, message", [
    ('{ kind = "decode", model = "GPT-5", batch = 1, context = 5 }', r"record 1.run.model must be one of \('Llama-2-7B'"),
    ('{ kind = "decode", model = "Llama-2-7B", batch = 1 }', r"record 1.run: missing \['context'\]"),
    ('{ kind = "decode", model = "Llama-2-7B", batch = 1, context = 5, kv = "int3" }', r"record 1.run.kv must be one of"),
    ('{ kind = "decode", model = "Llama-2-7B", batch = 0, context = 5 }', r"record 1.run.batch must be a positive whole"),
])
def test_a_bad_decode_record_is_refused_naming_its_field(run, message, tmp_path, monkeypatch):
    text = (f'source = "x_src"\n[[record]]\ngpu = "H200"\nwhat = "r"\nwhere = "w"\nrun = {run}\nvalue = 100\n'
            'unit = "tokens/s"\nchapter = 9\n')
    monkeypatch.setattr(presets, "bib_keys", lambda: frozenset({"x_src"}))
    with pytest.raises(presets.DataError, match=message):
        _load(tmp_path, monkeypatch, "x.toml", text)


def test_every_unit_has_a_ceiling_above_every_record():
    assert set(published.MOST) == set(published.SCALE)
    assert all(r.value * published.SCALE[r.unit] <= published.MOST[r.unit] / 5 for r in published.records())


def test_a_collective_is_held_against_its_links_bytes_and_a_parallel_step_against_one_gpus_share():
    """NCCL's bus bandwidth against the rate the link carries for the algorithm it ran (a ring:
    the link's; in-switch: 2(n - 1)/n of it); a tensor-parallel step against gm.parallel.step
    without latencies, which is the step of one GPU's share of the weights plus the bytes of its
    collectives over the link."""
    ring = next(c for c in BOUNDED if c.record.run["kind"] == "collective" and c.record.run.get("algorithm", "ring") == "ring")
    nvls = next(c for c in BOUNDED if c.record.run.get("algorithm") == "in-switch")
    link = gm.links.link(ring.record.run["link"]).bandwidth
    assert ring.model == pytest.approx(link) and nvls.model == pytest.approx(gm.links.link("NVLink 4").bandwidth * 1.75)
    assert nvls.expected.limiter == "link" and nvls.expected.time > 8 * 2**30 / gm.links.link("NVLink 4").facts["in_switch_bandwidth"].value
    tp = next(c for c in BOUNDED if c.record.run["kind"] == "parallel" and c.record.run["gpus"] == 8)
    run = tp.record.run
    alone = gm.predict(gm.decode.step(run["model"], 1, run["context"], run["weight"], run["kv"]), gm.gpu(tp.record.gpu).bound())
    assert tp.model == pytest.approx(float(alone.time) / 8, rel=0.02) and tp.model > float(alone.time) / 8
