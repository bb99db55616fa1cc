"""Runs recorded on real GPUs by `python -m gpumodel.cuda.validate` (ours), shipped with the
package in `gpumodel/data/measurements/*.json`. Chapters show them when no GPU answers.
None is ever made up: where nothing was recorded, `recorded()` is empty and the chapters
say so. Chapters 1 to 5.
"""

from __future__ import annotations

import json
import pathlib

from ..presets import DATA

DATA_DIR = DATA / "measurements"
REQUIRED = ("gpu", "date", "command", "kernels")
COMMAND = "python -m gpumodel.cuda.validate --out DIR"
"""The command that records a run on a GPU: the landing page shows it, once ("GPU or not")."""
NONE_YET = ("A run on a GPU would put its measured times here, beside the model's; none is recorded "
            "yet (the landing page's \"GPU or not\" says how to record one).")
"""What a chapter says where no run is recorded: what one would add, in one sentence."""


def load(directory=DATA_DIR) -> list[dict]:
    """Every validation record in `directory`, oldest first. Each has the GPU (name,
    driver, CUDA and CuPy versions), the date, the command and a row per kernel."""
    directory = pathlib.Path(directory)
    records = []
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
        record = json.loads(path.read_text())
        missing = [key for key in REQUIRED if key not in record]
        if missing:
            raise ValueError(f"{path.name} is not a validation record: it lacks {missing}")
        record["file"] = path.name
        records.append(record)
    return sorted(records, key=lambda r: r["date"])


def rows(kernel: str, directory=DATA_DIR) -> list[dict]:
    """The rows recorded for kernel id `kernel` (such as "gemm_reg128"), each with the
    record's GPU, date and command added."""
    rows = []
    for record in load(directory):
        for row in record["kernels"]:
            if row["kernel"] == kernel:
                rows.append({**row, "gpu": record["gpu"]["name"], "date": record["date"], "command": record["command"]})
    return rows


def sweeps(directory=DATA_DIR) -> list[dict]:
    """The working-set sweeps recorded by `validate` (GPU name, date, command, sizes in
    bytes, bandwidth in bytes/s). Chapter 1."""
    return [{"gpu": r["gpu"]["name"], "date": r["date"], "command": r["command"], **r["sweep"]}
            for r in load(directory) if "sweep" in r]
