"""The GPU data files: every file loads; the loader refuses an incomplete or wrong file,
naming the file and the key; adding a GPU is adding one file."""

import shutil

import pytest

import gpumodel as gm
from gpumodel import presets

FILES = sorted(presets.GPU_DIR.glob("*.toml"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_gpu_file_loads_with_sourced_facts(path):
    g = presets.load_gpu(path)
    assert path.stem == g.name.lower(), "a file is named after its GPU"
    assert gm.gpu(g.name) == g
    for name, fact in g.facts().items():
        assert fact.source in presets.bib_keys(), (path.name, name)
        assert fact.kind != "estimate" or fact.note, (path.name, name)
    assert g.capability in presets.capabilities().values()


def test_every_capability_is_consistent():
    for cap in presets.capabilities().values():
        assert cap.max_warps_per_sm * gm.hardware.WARP == cap.max_threads_per_sm, cap.name
        assert cap.max_smem_per_block <= cap.smem_per_sm, cap.name
        assert cap.fp32_lanes_per_sm in (64, 128), cap.name
        assert cap.registers_per_sm == 65536 and cap.max_registers_per_thread == 255, cap.name


def test_facts_are_converted_to_si_units():
    h100 = gm.gpu("H100-SXM")
    assert h100.clock.value == 1.98e9 and h100.clock.unit == "Hz"
    assert h100.l2_capacity.value == 50 * 1024**2 and h100.hbm_capacity.value == 80e9
    assert h100.l2_bandwidth.value == 10.6192e12 and h100.l2_bytes_per_clock == pytest.approx(10.6192e12 / 1.98e9)
    assert gm.gpu("A100-40GB").l2_bandwidth.unit == "B/clk" and gm.gpu("A100-40GB").bandwidth("l2") == 5120 * 1.41e9
    assert h100.smem_per_sm.value == 228 * 1024 and h100.smem_per_sm.source == "nvidia_cuda_guide"


def _write(tmp_path, text, name="test-gpu.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.fixture
def good(tmp_path):
    """The text of a valid file (the V100's)."""
    return (presets.GPU_DIR / "v100.toml").read_text()


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda t: t.replace("[sms]\nvalue = 80\n", "[sms]\n"), r"test-gpu.toml.sms: missing \['value'\]"),
        (lambda t: t.replace('capability = "7.0"', 'capability = "6.1"'), "test-gpu.toml.capability version must be one of"),
        (lambda t: t.replace('name = "V100"\n', ""), r"test-gpu.toml: missing \['name'\]"),
        (lambda t: 'colour = "green"\n' + t, r"test-gpu.toml: unknown keys \['colour'\]"),
        (lambda t: t.replace('memory = "HBM2"', 'memory = "HBM9"'), r"test-gpu.toml.memory must be one of \['HBM2'"),
        (lambda t: t.replace('memory = "HBM2"', ''), r"test-gpu.toml: missing \['memory'\]"),
        (lambda t: t.replace('unit = "MHz"', 'unit = "MB"'), r"test-gpu.toml.clock.unit must be one of \['GHz', 'MHz'\]"),
        (lambda t: t.replace('unit = "MiB"', 'unit = "MHz"'), "test-gpu.toml.l2_capacity.unit must be one of"),
        (lambda t: t.replace('source = "jia2018volta"', 'source = "someone2030"', 1), "someone2030' is not a key of references.bib"),
        (lambda t: t.replace('kind = "spec"', 'kind = "guess"', 1), "test-gpu.toml.sms.kind must be one of"),
        (lambda t: t.replace("[sms]\nvalue = 80", "[sms]\nvalue = -80"), "test-gpu.toml.sms.value must be a finite positive number"),
        (lambda t: t.replace("[sms]\nvalue = 80", "[sms]\nvalue = true"), "test-gpu.toml.sms.value must be a finite positive number"),
        (lambda t: t.replace("[sms]\n", '[sms]\nsize = "big"\n'), r"test-gpu.toml.sms: unknown keys \['size'\]"),
        (lambda t: t.replace("[latency.smem]", "[latency.l1]"), "test-gpu.toml.latency may hold only"),
        (lambda t: t + '\n[tensor_clock]\nvalue = 1.3\nunit = "TB/s"\nkind = "spec"\nsource = "jia2018volta"\n',
         r"test-gpu.toml.tensor_clock.unit must be one of \['GHz', 'MHz'\]"),
        (lambda t: t + "\n[tensor.fp6]\nvalue = 1\nunit = \"TFLOP/s\"\n", "test-gpu.toml.tensor may hold only"),
        (lambda t: t.replace("value = 2048", "value = [2048]"), "test-gpu.toml.l2_bandwidth.value must be a finite positive number"),
        (lambda t: t.replace("[clock]", "clock ="), "not valid TOML"),
        # issue 26: infinite, absurd and fractional figures name file and key
        (lambda t: t.replace("[sms]\nvalue = 80", "[sms]\nvalue = inf"), "test-gpu.toml.sms.value must be a finite positive"),
        (lambda t: t.replace("[hbm_bandwidth]\nvalue = 900\nunit = \"GB/s\"", "[hbm_bandwidth]\nvalue = 1e300\nunit = \"TB/s\""),
         "test-gpu.toml.hbm_bandwidth.value must be from 0.01 to 1000 TB/s, got 1e"),
        (lambda t: t.replace("[clock]\nvalue = 1530\nunit = \"MHz\"", "[clock]\nvalue = 1530\nunit = \"GHz\""),
         "test-gpu.toml.clock.value must be from 0.1 to 5 GHz, got 1530"),
        (lambda t: t.replace("[sms]\nvalue = 80", "[sms]\nvalue = 79.5"), "test-gpu.toml.sms.value must be a whole number of SMs"),
        (lambda t: t.replace("[sms]\nvalue = 80\n", "[sms]\nvalue = 0\n"), "test-gpu.toml.sms.value must be a finite positive number, got 0"),
        (lambda t: "sms = 80\n" + t[:t.index("[sms]")] + t[t.index("[clock]"):],
         "test-gpu.toml.sms must be a table with value, unit, kind and source"),
        (lambda t: t.replace('[tensor.fp16]\nvalue = 125\nunit = "TFLOP/s"\nkind = "spec"', '[tensor.fp16]\nvalue = 125\nunit = "TFLOP/s"\nkind = "guess"'),
         "test-gpu.toml.tensor.fp16.kind must be one of"),
        # a probe of bad input: figures that contradict each other were accepted
        (lambda t: t + '\n[tensor_clock]\nvalue = 1600\nunit = "MHz"\nkind = "spec"\nsource = "nvidia2017v100"\n',
         r"^test-gpu.toml.tensor_clock must be below clock \(1.53e\+09 Hz\), got 1.6e\+09 Hz$"),
        (lambda t: t + '\n[max_clock]\nvalue = 1400\nunit = "MHz"\nkind = "measured"\nsource = "jia2018volta"\n',
         r"^test-gpu.toml.clock must be below max_clock \(1.4e\+09 Hz\), got 1.53e\+09 Hz$"),
        (lambda t: t.replace('[l2_capacity]\nvalue = 6\n', '[l2_capacity]\nvalue = 20000\n'),
         r"^test-gpu.toml.l2_capacity must be below hbm_capacity \(1.6e\+10 B\), got 2.09715e\+10 B$"),
    ],
)
def test_loader_refuses_a_bad_file_naming_file_and_key(tmp_path, good, change, message):
    path = _write(tmp_path, change(good))
    with pytest.raises(presets.DataError, match=message):
        presets.load_gpu(path)


def test_an_estimate_must_say_how_it_was_made(tmp_path):
    text = (presets.GPU_DIR / "t4.toml").read_text()
    note = next(line for line in text.splitlines() if line.startswith("note = \"neither published"))
    with pytest.raises(presets.DataError, match="t4.toml.l2_bandwidth.note must say how an estimate was made"):
        presets.load_gpu(_write(tmp_path, text.replace(note + "\n", ""), "t4.toml"))


@pytest.mark.parametrize("line, new, message", [
    ("max_threads_per_block = 1024", "", r"capabilities.toml \[7.0\]: missing \['max_threads_per_block'\]"),
    # issue 26: 0 FP32 lanes divided by zero inside predict, 0 warps gave 0 warps silently
    ("fp32_lanes_per_sm = 64", "fp32_lanes_per_sm = 0", r"capabilities.toml \[7.0\].fp32_lanes_per_sm must be a whole number >= 1, got 0"),
    ("max_warps_per_sm = 64", "max_warps_per_sm = 0", r"capabilities.toml \[7.0\].max_warps_per_sm must be a whole number >= 1, got 0"),
    # a probe of bad input: 512 threads in 64 warps was accepted
    ("max_threads_per_sm = 2048", "max_threads_per_sm = 512",
     r"^capabilities.toml \[7.0\].max_threads_per_sm must be max_warps_per_sm x 32 = 2048, got 512$"),
])
def test_a_bad_capability_file_is_refused(tmp_path, monkeypatch, line, new, message):
    text = (presets.DATA / "capabilities.toml").read_text()
    assert line in text
    (tmp_path / "capabilities.toml").write_text(text.replace(line, new, 1))
    monkeypatch.setattr(presets, "DATA", tmp_path)
    presets.capabilities.cache_clear()
    try:
        with pytest.raises(presets.DataError, match=message):
            presets.capabilities()
    finally:
        monkeypatch.undo()
        presets.capabilities.cache_clear()


def test_adding_a_gpu_is_adding_one_file(tmp_path, monkeypatch):
    for path in FILES:
        shutil.copy(path, tmp_path)
    text = (presets.GPU_DIR / "h200.toml").read_text().replace('name = "H200"', 'name = "H200-NVL"')
    text = text.replace("value = 4.8\n", "value = 4.0\n")  # the H200 NVL's lower HBM bandwidth is only a test value here
    text = text.replace('devices = ["NVIDIA H200"]', 'devices = ["NVIDIA H200 NVL"]')
    (tmp_path / "h200-nvl.toml").write_text(text)
    monkeypatch.setattr(presets, "GPU_DIR", tmp_path)
    presets._presets.cache_clear()
    try:
        assert "H200-NVL" in gm.preset_names()
        assert gm.gpu("H200-NVL").bandwidth("hbm") == 4.0e12
        assert "| H200-NVL |" in gm.course.tables.preset_table()
        assert gm.occupancy.occupancy("H200-NVL", 256, 64).warps == 32
        assert presets.match_device("NVIDIA H200 NVL", (9, 0))[0] == "H200-NVL"  # the live GPU path finds it
    finally:
        monkeypatch.undo()
        presets._presets.cache_clear()


def test_two_files_may_not_name_one_gpu(tmp_path, monkeypatch):
    shutil.copy(presets.GPU_DIR / "t4.toml", tmp_path / "t4.toml")
    shutil.copy(presets.GPU_DIR / "t4.toml", tmp_path / "t4-copy.toml")
    monkeypatch.setattr(presets, "GPU_DIR", tmp_path)
    presets._presets.cache_clear()
    try:
        with pytest.raises(presets.DataError, match="name the same GPU"):
            gm.preset_names()
    finally:
        monkeypatch.undo()
        presets._presets.cache_clear()


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('devices = ["Tesla T4"]', 'devices = ["NVIDIA H200"]'), "H200 and T4 both list the device"),
    (lambda t: t.replace("family = true", "family = true\n", 1).replace('capability = "7.5"', 'capability = "9.0"'),
     "both stand for the family of capability 9.0"),
    (lambda t: t.replace('devices = ["Tesla T4"]', 'devices = "Tesla T4"'), "t4.toml.devices must be a list"),
    (lambda t: t.replace("family = true", 'family = "yes"'), "t4.toml.family must be true or false"),
])
def test_device_names_and_families_are_refused_when_ambiguous_or_malformed(edit, message, tmp_path, monkeypatch):
    for path in FILES:
        shutil.copy(path, tmp_path)
    t4 = tmp_path / "t4.toml"
    t4.write_text(edit(t4.read_text()))
    monkeypatch.setattr(presets, "GPU_DIR", tmp_path)
    presets._presets.cache_clear()
    try:
        with pytest.raises(presets.DataError, match=message):
            gm.preset_names()
    finally:
        monkeypatch.undo()
        presets._presets.cache_clear()


def test_gpu_accepts_a_record_or_a_name_and_refuses_anything_else():
    h100 = gm.gpu("H100-SXM")
    assert gm.gpu(h100) is h100
    with pytest.raises(TypeError, match="gpu must be a GPU record or a preset name"):
        gm.gpu(3)


@pytest.mark.parametrize("call", [
    lambda g: gm.predict(gm.vector_add(2**20), g).time,
    lambda g: gm.occupancy.occupancy(g, 256, 64).warps,
    lambda g: len(gm.tiles.search(g, 512, 512, 512)["time"]),
    lambda g: gm.waves.gemm_hbm(1024, 1024, 1024, gpu=g).hbm,
    lambda g: gm.waves.warm_read_time(g, 2**20),
    lambda g: gm.course.tables.level_table(g),
])
def test_every_analysis_takes_a_record_as_well_as_a_name(call):
    assert call("H100-SXM") == call(gm.gpu("H100-SXM"))


def test_a_value_below_one_in_a_larger_unit_loads(tmp_path, good):
    text = good.replace('[hbm_bandwidth]\nvalue = 900\nunit = "GB/s"', '[hbm_bandwidth]\nvalue = 0.9\nunit = "TB/s"')
    assert presets.load_gpu(_write(tmp_path, text)).bandwidth("hbm") == pytest.approx(900e9)


def test_an_unknown_capability_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"^capability version must be one of \['7.0', '7.5', '8.0', .*'9.0'.*\] .*, got '6.1'$"):
        presets.capability("6.1")


def test_an_unknown_name_far_from_every_preset_still_gets_a_suggestion():
    with pytest.raises(ValueError, match=r"\(closest: '[^']+'\)$"):
        gm.gpu("zzzz")


def test_the_b200_states_its_die_link_and_no_other_gpu_invents_one():
    link = gm.gpu("B200").die_link
    assert link.value == 10e12 and link.kind == "spec" and link.source in presets.bib_keys()
    assert "die_link" in gm.gpu("B200").facts()
    assert all(gm.gpu(name).die_link is None for name in presets.preset_names() if not name.startswith("B"))
