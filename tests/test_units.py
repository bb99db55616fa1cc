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
