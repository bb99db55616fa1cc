"""The `GPU` record: a GPU's sourced figures and the peaks and bandwidths derived from them.

Introduced in chapter 1 (the hierarchy); every other chapter reads its bandwidths.
SI units throughout: bytes, seconds, hertz, FLOP/s, bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LEVELS = ("registers", "smem", "l2", "hbm")
"""The memory levels, fastest first."""

KINDS = ("spec", "measured", "estimate", "derived")
"""Where a figure comes from: a datasheet or whitepaper (`spec`), a microbenchmark
(`measured`), a reasoned estimate where nothing is published or measured (`estimate`), or a
formula over other figures (`derived`)."""

MATH = ("fp32", "fp16", "bf16")
"""Which units a workload's arithmetic runs on: the FP32 lanes, or the tensor cores with
fp16 or bf16 inputs (dense, FP32 accumulate)."""

SMEM_BANKS = 32
BANK_BYTES = 4
REGISTER_BYTES_PER_FLOP = 6
"""An FMA (2 flops) reads three 4-byte operands: 12 bytes per 2 flops."""


@dataclass(frozen=True)
class Figure:
    """One sourced number: `value` in SI units, its `unit`, its `kind` and its `source`.

    `source` is a key of `references.bib` followed by where in that document the number is
    (a table, a page); `note` says anything a reader must know to trust it.
    """

    value: float
    unit: str
    kind: str
    source: str
    note: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not self.source:
            raise ValueError("source must name where the figure comes from")
        if not (self.value > 0):
            raise ValueError(f"value must be positive, got {self.value!r}")


def spec(value, unit, source, note=""):
    """A figure from a datasheet, whitepaper or programming guide."""
    return Figure(float(value), unit, "spec", source, note)


def measured(value, unit, source, note=""):
    """A figure measured by a microbenchmark (the source names the paper and method)."""
    return Figure(float(value), unit, "measured", source, note)


def estimate(value, unit, source, note):
    """A figure nobody publishes: the note says how it was estimated."""
    return Figure(float(value), unit, "estimate", source, note)


@dataclass(frozen=True)
class GPU:
    """A GPU as the model sees it. Every field but `name` is a sourced `Figure`.

    Derived figures (`peak_flops`, `bandwidth(level)`) are computed here, never stored.
    `latency` maps a level to a measured latency in clock cycles, where one was measured.
    `tensor` maps "fp16"/"bf16" to the dense tensor-core peak (FLOP/s, FP32 accumulate).
    """

    name: str
    sms: Figure
    fp32_lanes_per_sm: Figure
    clock: Figure
    l2_bytes_per_clock: Figure
    hbm_bandwidth: Figure
    register_file_per_sm: Figure
    smem_per_sm: Figure
    l2_capacity: Figure
    hbm_capacity: Figure
    tensor: dict = field(default_factory=dict)
    latency: dict = field(default_factory=dict)

    @property
    def peak_flops(self) -> float:
        """Peak FP32 rate in FLOP/s: SMs x lanes x 2 (an FMA is 2 flops) x clock."""
        return self.sms.value * self.fp32_lanes_per_sm.value * 2 * self.clock.value

    def peak(self, math: str = "fp32") -> float:
        """Peak rate in FLOP/s of the units `math` runs on ("fp32", "fp16" or "bf16")."""
        if math == "fp32":
            return self.peak_flops
        if math not in MATH:
            raise ValueError(f"math must be one of {MATH}, got {math!r}")
        if math not in self.tensor:
            raise ValueError(
                f"{self.name} has no {math} tensor-core peak; it has {sorted(self.tensor) or 'none'}"
            )
        return self.tensor[math].value

    def bandwidth(self, level: str) -> float:
        """Bandwidth of `level` in bytes/s.

        registers: 6 x peak FP32 (three 4-byte operands per FMA); smem: SMs x 32 banks x
        4 B x clock; l2: bytes per clock x clock; hbm: the datasheet figure.
        """
        if level == "registers":
            return REGISTER_BYTES_PER_FLOP * self.peak_flops
        if level == "smem":
            return self.sms.value * SMEM_BANKS * BANK_BYTES * self.clock.value
        if level == "l2":
            return self.l2_bytes_per_clock.value * self.clock.value
        if level == "hbm":
            return self.hbm_bandwidth.value
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")

    def capacity(self, level: str) -> float:
        """Capacity of `level` in bytes, for the whole GPU (per-SM figures times SMs)."""
        if level == "registers":
            return self.register_file_per_sm.value * self.sms.value
        if level == "smem":
            return self.smem_per_sm.value * self.sms.value
        if level == "l2":
            return self.l2_capacity.value
        if level == "hbm":
            return self.hbm_capacity.value
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")

    def figures(self) -> dict:
        """Every sourced figure of this GPU by name (tensor peaks as `tensor_fp16`, latencies
        as `latency_smem` and so on)."""
        out = {
            name: getattr(self, name)
            for name in (
                "sms",
                "fp32_lanes_per_sm",
                "clock",
                "l2_bytes_per_clock",
                "hbm_bandwidth",
                "register_file_per_sm",
                "smem_per_sm",
                "l2_capacity",
                "hbm_capacity",
            )
        }
        out.update({f"tensor_{k}": v for k, v in self.tensor.items()})
        out.update({f"latency_{k}": v for k, v in self.latency.items()})
        return out

    def in_flight(self, level: str) -> float:
        """Little's law: the bytes that must be in flight at once to keep `level` at its
        bandwidth, given its measured latency (bandwidth x latency cycles / clock). Chapter 1."""
        if level not in self.latency:
            raise ValueError(f"{self.name} has no measured {level!r} latency; it has {sorted(self.latency) or 'none'}")
        return self.bandwidth(level) * self.latency[level].value / self.clock.value
