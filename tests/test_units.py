import pytest

import gpumodel as gm


@pytest.mark.parametrize(
    "fmt, value, text",
    [
        (gm.fmt_time, 2.0714e-3, "2.07 ms"),
        (gm.fmt_time, 0.030, "30.0 ms"),
        (gm.fmt_time, 13.8e-6, "13.8 µs"),
        (gm.fmt_time, 0.99996e-3, "1.00 ms"),
        (gm.fmt_time, 1.2, "1.20 s"),
        (gm.fmt_bandwidth, 7.219e12, "7.22 TB/s"),
        (gm.fmt_bandwidth, 1.555e12, "1.56 TB/s"),
        (gm.fmt_bandwidth, 999.96e9, "1.00 TB/s"),
        (gm.fmt_bandwidth, 116.95e12, "117 TB/s"),
        (gm.fmt_flops, 19.49e12, "19.5 TFLOP/s"),
        (gm.fmt_bytes, 8.59e9, "8.59 GB"),
        (gm.fmt_bytes, 999.7e6, "1.00 GB"),
        (gm.fmt_count, 1.0995e12, "1.10 TFLOP"),
        (gm.fmt_intensity, 0.25, "0.250 FLOP/B"),
        (gm.fmt_percent, 0.0066, "0.66%"),
        (gm.fmt_percent, 1.0, "100%"),
        (gm.fmt_number, 20.0, "20.0"),
        (gm.fmt_number, 0.12345, "0.123"),
    ],
)
def test_formats(fmt, value, text):
    assert fmt(value) == text


def test_digits():
    assert gm.fmt_bandwidth(7.219e12, digits=4) == "7.219 TB/s"


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_is_refused(bad):
    with pytest.raises(ValueError, match="seconds must be a finite number"):
        gm.fmt_time(bad)


@pytest.mark.parametrize(
    "nbytes, text",
    [
        (256 * 1024, "256 KiB"),      # on-chip sizes in binary units, as the datasheets state them
        (40 * 1024**2, "40 MiB"),
        (80e9, "80 GB"),              # memory in decimal GB
        (1e9, "1 GB"),                # each unit starts at exactly its scale
        (1024**2, "1 MiB"),
        (1024, "1 KiB"),
        (1000, "1000 B"),             # under 1 KiB stays in bytes
        (1, "1 B"),
        (1536, "1.50 KiB"),           # a fractional count gets three significant figures
        (int(40.5 * 1024**2), "40.5 MiB"),
        (1.5, "1.50 B"),
    ],
)
def test_capacities_use_binary_units_on_chip_and_decimal_gb(nbytes, text):
    assert gm.fmt_capacity(nbytes) == text


def test_zero_and_values_below_the_smallest_unit():
    assert gm.fmt_time(0) == "0 ns"
    assert gm.fmt_bytes(0) == "0 B"
    assert gm.fmt_number(0) == "0"
    assert gm.fmt_time(0.5e-9) == "0.500 ns"
    assert gm.fmt_time(0.5e-9, digits=2) == "0.50 ns"
    assert gm.fmt_bytes(0.5) == "0.500 B"
    assert gm.fmt_bytes(0.5, digits=2) == "0.50 B"


def test_rounding_is_half_up_as_written_not_half_even():
    # Python's round() and Decimal's default round half to even (2.5 -> 2, 0.125 -> 0.12);
    # the book rounds as a person writes numbers.
    assert gm.fmt_number(2.5, digits=1) == "3"
    assert gm.fmt_number(0.125, digits=2) == "0.13"
    assert gm.fmt_number(1.565) == "1.57"


@pytest.mark.parametrize("fmt, name", [
    (gm.fmt_time, "seconds"), (gm.fmt_bytes, "nbytes"), (gm.fmt_capacity, "nbytes"),
    (gm.fmt_bandwidth, "bytes_per_second"), (gm.fmt_flops, "flops_per_second"), (gm.fmt_count, "flops"),
    (gm.fmt_number, "x"), (gm.fmt_intensity, "flops_per_byte"), (gm.fmt_percent, "fraction"),
])
def test_a_non_finite_value_is_refused_naming_the_parameter(fmt, name):
    with pytest.raises(ValueError, match=f"^{name} must be a finite number, got nan$"):
        fmt(float("nan"))


@pytest.mark.parametrize("bound, text", [
    ("compute", "compute"), ("sfu", "the special-function units"), ("smem", "shared memory"),
    ("hbm", "HBM"), ("l2", "L2"), ("registers", "registers"),
])
def test_bounds_are_named_as_prose_names_them(bound, text):
    assert gm.fmt_bound(bound) == text


def test_an_unknown_bound_is_refused():
    with pytest.raises(ValueError, match="^bound must be one of"):
        gm.fmt_bound("dram")


def test_mega_is_a_million():
    """Decimal prefixes: 33.5e6 bytes are 33.5 MB, 2^20 bytes 1.05 MB (a mutant took M as 2^20)."""
    assert gm.fmt_bytes(33.5e6) == "33.5 MB" and gm.fmt_bytes(2**20) == "1.05 MB"
    assert gm.fmt_bandwidth(1.5e12) == "1.50 TB/s" and gm.fmt_bytes(1e3) == "1.00 kB"


@pytest.mark.parametrize("words, text", [
    (["T4"], "T4"), (("T4", "L4"), "T4 and L4"), (["T4", "L4", "B200"], "T4, L4 and B200"),
])
def test_a_list_reads_as_prose(words, text):
    assert gm.fmt_list(words) == text


@pytest.mark.parametrize("words, error", [
    ("T4", TypeError), ([], ValueError), (["T4", ""], ValueError), ([4], ValueError),
])
def test_a_list_of_no_words_or_of_one_string_is_refused(words, error):
    with pytest.raises(error, match="^words must be"):
        gm.fmt_list(words)


def test_caret_powers_are_written_as_a_reader_writes_them():
    assert gm.units.powers("cuBLASLt fp16 GEMM, 16384^3") == "cuBLASLt fp16 GEMM, 16384³"
    assert gm.units.powers("S = QK^T, 2^-7, no power ^ here") == "S = QKᵀ, 2⁻⁷, no power ^ here"
    assert gm.units.fmt_exact(5.369e8) == "536,900,000" and gm.units.fmt_exact(5.3691e-8) == "5.369 × 10⁻⁸"
