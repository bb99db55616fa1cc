"""`python -m gpumodel.estimates`: the one command that estimates what the expected time's
mechanisms leave over (each limiter class's achievable share, on the 'estimate' half of the
published records) and writes it to `data/expect_estimates.toml`; then prints the accuracy on
the judged half (`gpumodel.published.accuracy`) and with each source left out of the estimate
that judges it (`gpumodel.published.left_out_accuracy`). Nothing re-estimates on import: a
record added to `data/published/` moves no expected time until this is run. Chapter 98."""

from __future__ import annotations


def main() -> None:
    """Write `data/expect_estimates.toml` and print, per class, the accuracy on the judged half
    and with each source left out."""
    from . import published
    print(published.write_estimates())
    for label, figures in (("judged half", published.accuracy()), ("source left out", published.left_out_accuracy())):
        for name, a in figures.items():
            print(f"{label:15} {name:10} {a['records']:3} records: median measured/expected {a['median']:.2f}, "
                  f"{a['within']:.0%} within 1.5x, {a['beyond_2']} beyond 2x")


if __name__ == "__main__":
    main()
