"""`python -m gpumodel.estimates`: the one command that estimates what the expected time's
mechanisms leave over (each limiter class's achievable share, on the 'estimate' half of the
published records) and writes it to `data/expect_estimates.toml`; then prints the accuracy on
the judged half (`gpumodel.published.accuracy`). Nothing re-estimates on import: a record added
to `data/published/` moves no expected time until this is run. Chapter 98."""

from __future__ import annotations


def main() -> None:
    """Write `data/expect_estimates.toml` and print the judged half's accuracy per class."""
    from . import published
    print(published.write_estimates())
    for name, a in published.accuracy().items():
        print(f"judged {name:10} {a['records']:3} records: median measured/expected {a['median']:.2f}, "
              f"{a['within']:.0%} within 1.5x, {a['beyond_2']} beyond 2x")


if __name__ == "__main__":
    main()
