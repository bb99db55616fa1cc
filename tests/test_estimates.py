"""`python -m gpumodel.estimates` (gpumodel.estimates.main): it writes the estimates through
`published.write_estimates` and prints each class's accuracy, on the judged half and with each
source left out, one line each in a fixed layout (issue 72: its mutants had no test). The data
file is never written here: `write_estimates` and both accuracies are stand-ins."""

from gpumodel import estimates, published

JUDGED = {"all": {"records": 40, "median": 1.034, "within": 0.875, "beyond_2": 1},
          "memory": {"records": 7, "median": 0.9, "within": 1.0, "beyond_2": 0}}
LEFT_OUT = {"all": {"records": 80, "median": 1.2, "within": 0.5, "beyond_2": 12}}


def _stand_ins(monkeypatch):
    written = []
    monkeypatch.setattr(published, "write_estimates", lambda: written.append(1) or "# the estimates")
    monkeypatch.setattr(published, "accuracy", lambda: JUDGED)
    monkeypatch.setattr(published, "left_out_accuracy", lambda: LEFT_OUT)
    return written


def test_main_writes_the_estimates_then_prints_each_classs_accuracy(monkeypatch, capsys):
    written = _stand_ins(monkeypatch)
    assert estimates.main() is None and written == [1]
    assert capsys.readouterr().out.splitlines() == [
        "# the estimates",
        "judged half     all         40 records: median measured/expected 1.03, 88% within 1.5x, 1 beyond 2x",
        "judged half     memory       7 records: median measured/expected 0.90, 100% within 1.5x, 0 beyond 2x",
        "source left out all         80 records: median measured/expected 1.20, 50% within 1.5x, 12 beyond 2x"]

