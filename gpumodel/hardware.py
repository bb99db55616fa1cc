"""The `GPU` record: a GPU's sourced facts and the peaks and bandwidths derived from them.

Introduced in chapter 1 (the hierarchy); every other chapter reads its bandwidths. The
records themselves are data: `gpumodel/data/gpus/*.toml`, loaded by `gpumodel.presets`.
SI units throughout: bytes, seconds, hertz, FLOP/s, bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from . import _check

LEVELS = ("registers", "smem", "l2", "hbm")
"""The memory levels, fastest first."""

KINDS = ("spec", "measured", "estimate", "derived")
"""Where a fact comes from: a datasheet or whitepaper (`spec`), a microbenchmark
(`measured`), a reasoned estimate where nothing is published or measured (`estimate`), or a
formula over other facts (`derived`)."""

PLAUSIBLE = {
    # SI unit -> (least, most) a GPU's figure in it may be: a typo of a unit or a digit lands outside
    "SM": (1, 1024), "Hz": (1e8, 5e9), "B/clk": (16, 1e5), "B/s": (1e10, 1e15), "B": (2**20, 1e13),
    "FLOP/s": (1e12, 1e17), "cycle": (1, 1e5), "W": (10, 1e4), "s": (1e-8, 1e-2),
}
"""The plausible range of a GPU's figure in each SI unit, in a GPU file (`gpumodel.presets`) or
given to `GPU.at_clock`: clocks from 100 MHz to 5 GHz, up to 1024 SMs, capacities from 1 MiB to
10 TB, power from 10 W to 10 kW...; SMs are whole."""

MATH = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4")
"""Which units a workload's arithmetic runs on: the FP32 units, or the tensor cores with
tf32 (FP32 inputs rounded to TF32), fp16, bf16, fp8 or fp4 inputs (dense, FP32 accumulate)."""

WARP = 32
"""Threads in a warp."""
MAX_BLOCK = 1024
"""The most threads a block may have on every GPU of the course (compute capability 3.0 on)."""
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)
"""The most threads a block and blocks a grid may have along x, y and z, on every capability
from 3.0 (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability";
references.bib: nvidia_cuda_guide)."""
SMEM_BANKS = 32
BANK_BYTES = 4
WAVEFRONT_BYTES = SMEM_BANKS * BANK_BYTES
"""Shared memory serves a warp in wavefronts: one pass over the 32 banks, 128 bytes."""
VECTOR_WORDS = 4
"""Words (4 bytes) in the widest load a thread can issue, 128 bits."""
SECTOR_BYTES = 32
"""The unit in which L1 and L2 move global memory: a 32-byte sector."""
LINE_BYTES = 4 * SECTOR_BYTES
"""A cache line of L1 and L2: four sectors, 128 bytes, allocated whole, filled by the sector."""
REGISTER_BYTES = 4
REGISTER_BYTES_PER_FLOP = 6
"""An FMA (2 flops) reads three 4-byte operands: 12 bytes per 2 flops."""
KIB = 1024
"""Capacities on chip are binary (a 40 MiB L2 is 40 x 2^20 bytes)."""
DYNAMIC_SMEM_WITHOUT_OPT_IN = 48 * KIB
"""Dynamic shared memory a block may have without opting in (cudaFuncSetAttribute with
cudaFuncAttributeMaxDynamicSharedMemorySize), on every capability from 7.0 (CUDA C++
Programming Guide, "Shared Memory" of each capability's section). Chapter 6."""


@dataclass(frozen=True)
class Fact:
    """One sourced number: `value` in the SI `unit`, its `kind`, its `source` (a key of
    `references.bib`), `where` in that document (a table, a page) and a `note` a reader needs
    to trust it."""

    value: float
    unit: str
    kind: str
    source: str
    where: str = ""
    note: str = ""

    def __post_init__(self):
        _check.choice("kind", self.kind, KINDS)
        if not self.source:
            raise ValueError("source must name where the fact comes from")
        if _check.real("value", self.value) <= 0:
            raise ValueError(f"value must be positive, got {self.value!r}")


@dataclass(frozen=True)
class Capability:
    """One compute capability's facts (CUDA C++ Programming Guide): FP32 units and
    special-function results (exponentials, reciprocals...) per clock per SM, and the per-SM,
    per-block and per-thread limits that decide occupancy. Shared memory in bytes."""

    version: tuple
    fp32_lanes_per_sm: int
    special_functions_per_sm: int
    max_threads_per_sm: int
    max_warps_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    max_registers_per_thread: int
    max_threads_per_block: int
    smem_per_sm: int
    max_smem_per_block: int
    reserved_smem_per_block: int
    l1_per_sm: int

    SOURCE = "nvidia_cuda_guide"

    def fact(self, value: float, unit: str, where: str) -> Fact:
        """A figure of this capability as a sourced `Fact`."""
        return Fact(float(value), unit, "spec", self.SOURCE, f"{where} (compute capability {self.name})")

    @property
    def name(self) -> str:
        """"9.0" for (9, 0)."""
        return ".".join(map(str, self.version))


@dataclass(frozen=True)
class GPU:
    """A GPU as the model sees it: its `name`, its compute `capability`, and sourced facts as
    its file states them (`l2_bandwidth` is bytes per clock or bytes/s, as its source gives it).

    Derived figures (`peak_flops`, `bandwidth(level)`, `capacity(level)`) are computed here,
    never stored. `latency` maps a level to a measured latency in clock cycles, where one was
    measured; `tensor` maps "tf32", "fp16", "bf16", "fp8" or "fp4" to the dense tensor-core peak
    (FLOP/s, FP32 accumulate). `tensor_clock`, where the source states one, is the lower clock
    those peaks are rated at (the H100's 1.83 GHz against its 1.98 GHz boost); see `running`.
    `max_clock`, where a source shows the part running above its rated boost `clock`, is the
    highest SM clock it reaches; see `bound`. `power`, where stated, is the board's power
    limit in watts. `die_link`, for a GPU of two dies, is the rate (B/s) of the link between
    them: bytes one die reads from the other's half of L2 or of memory cross it, so they take
    at least bytes / `die_link` (chapter 7); the model does not charge it, as a workload does not
    say which bytes cross. `memory` is the kind of device memory ("HBM3", "GDDR6X"): the level
    the model calls "hbm", whichever kind it is. `devices` are the names the driver reports for the parts this preset
    stands for; `family` marks the preset that stands for the devices of its compute capability
    that no preset names (`gpumodel.presets.match_device`).
    """

    name: str
    capability: Capability
    sms: Fact
    clock: Fact
    l2_bandwidth: Fact
    hbm_bandwidth: Fact
    l2_capacity: Fact
    hbm_capacity: Fact
    memory: str
    tensor: dict = field(default_factory=dict)
    latency: dict = field(default_factory=dict)
    tensor_clock: Fact | None = None
    max_clock: Fact | None = None
    power: Fact | None = None
    die_link: Fact | None = None
    devices: tuple = ()
    family: bool = False

    @property
    def fp32_lanes_per_sm(self) -> Fact:
        """FP32 units per SM, from the compute capability."""
        return self.capability.fact(self.capability.fp32_lanes_per_sm, "lane", "Arithmetic Instructions")

    @property
    def register_file_per_sm(self) -> Fact:
        """Register file per SM in bytes: 32-bit registers per SM x 4."""
        return self.capability.fact(REGISTER_BYTES * self.capability.registers_per_sm, "B",
                                    "Technical Specifications per Compute Capability")

    @property
    def smem_per_sm(self) -> Fact:
        """Shared memory per SM in bytes (the most an SM can configure)."""
        return self.capability.fact(self.capability.smem_per_sm, "B", "Technical Specifications per Compute Capability")

    @property
    def l1_per_sm(self) -> Fact:
        """The SM's unified data cache in bytes: L1 and shared memory are one SRAM, so this is
        the most L1 can hold when a kernel uses no shared memory."""
        return self.capability.fact(self.capability.l1_per_sm, "B", "the capability's section, unified data cache")

    @property
    def peak_flops(self) -> float:
        """Peak FP32 rate in FLOP/s: SMs x lanes x 2 (an FMA is 2 flops) x clock."""
        return self.sms.value * self.capability.fp32_lanes_per_sm * 2 * self.clock.value

    @property
    def special_rate(self) -> float:
        """Special-function results per second (exponentials, reciprocals, square roots on
        the SFUs): SMs x results per clock per SM x clock."""
        return self.sms.value * self.capability.special_functions_per_sm * self.clock.value

    @property
    def l2_bytes_per_clock(self) -> float:
        """L2 bandwidth in bytes per clock, whichever way the source states it."""
        return self.l2_bandwidth.value if self.l2_bandwidth.unit == "B/clk" else self.l2_bandwidth.value / self.clock.value

    def _at(self, clock: Fact) -> GPU:
        """A copy whose on-chip rates run at `clock`: shared memory, the SFUs and the L2. The
        L2 is taken in the SMs' clock domain, as NVIDIA states its rate (bytes per GPU clock:
        the A100's 5120 B/clk), so a rate measured in B/s at the boost `clock` becomes bytes
        per clock first; HBM, on its own memory clock, does not scale."""
        l2 = self.l2_bandwidth
        if l2.unit != "B/clk":
            l2 = replace(l2, value=self.l2_bytes_per_clock, unit="B/clk")
        return replace(self, clock=clock, l2_bandwidth=l2)

    def running(self, math: str = "fp32") -> GPU:
        """This GPU at the clock it runs `math` at: for tensor-core math on a GPU whose
        tensor peaks are rated at a lower `tensor_clock`, a copy at that clock (shared memory,
        the L2 and the SFUs slow with it; HBM does not); else the GPU itself. A ridge of
        tensor math against on-chip bandwidth at the boost clock would mix two clocks."""
        if _check.choice("math", math, MATH) == "fp32":
            return self
        self.peak(math)  # refuses a math type this GPU lacks
        if self.tensor_clock is None:
            return self
        return self._at(self.tensor_clock)

    def bound(self) -> GPU:
        """This GPU at the highest rates the part reaches, the inputs of a bound: every on-chip
        rate at `max_clock` (the boost `clock` where no higher one is shown), the tensor peaks
        scaled to it from the clock they are rated at, `tensor_clock` gone (one clock for all
        math). HBM stays as stated (its file gives the exact or highest measured figure).
        Predictions at the rated clocks are `running`'s. Chapter 98."""
        return self._held(self.max_clock or self.clock)

    def at_clock(self, mhz) -> GPU:
        """This GPU held at `mhz` MHz, as power or heat hold a loaded part below its boost: as
        `bound`, every on-chip rate and tensor peak at that one clock (the peaks scaled from
        the clock they are rated at); HBM as stated. `mhz` must be a plausible clock (PLAUSIBLE,
        as in a GPU file). Chapter 7."""
        least, most = PLAUSIBLE["Hz"]
        hz = _check.real("mhz", mhz, least=least / 1e6, most=most / 1e6) * 1e6
        return self._held(Fact(hz, "Hz", "derived", self.clock.source, note=f"held at {hz / 1e6:g} MHz"))

    def _held(self, top: Fact) -> GPU:
        """A copy at the one clock `top` for all math (`bound`, `at_clock`)."""
        rated = (self.tensor_clock or self.clock).value
        tensor = {m: f if top.value == rated else replace(f, value=f.value * (top.value / rated), kind="derived")
                  for m, f in self.tensor.items()}  # at the rated clock exactly the rated peak, never an ulp below
        return replace(self._at(top), tensor=tensor, tensor_clock=None, max_clock=None)

    def ridge(self, level: str, math: str = "fp32") -> float:
        """The ridge point of `level` for `math` in FLOP/B: the peak over the level's
        bandwidth, both at the clock `math` runs at (`running`)."""
        g = self.running(math)
        return g.peak(math) / g.bandwidth(level)

    def peak(self, math: str = "fp32") -> float:
        """Peak rate in FLOP/s of the units `math` runs on (one of MATH)."""
        if _check.choice("math", math, MATH) == "fp32":
            return self.peak_flops
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
        _check.choice("level", level, LEVELS)
        if level == "registers":
            return REGISTER_BYTES_PER_FLOP * self.peak_flops
        if level == "smem":
            return self.sms.value * SMEM_BANKS * BANK_BYTES * self.clock.value
        if level == "l2":
            return self.l2_bytes_per_clock * self.clock.value
        if level == "hbm":
            return self.hbm_bandwidth.value

    def capacity(self, level: str) -> float:
        """Capacity of `level` in bytes, for the whole GPU (per-SM figures times SMs)."""
        _check.choice("level", level, LEVELS)
        if level == "registers":
            return self.register_file_per_sm.value * self.sms.value
        if level == "smem":
            return self.smem_per_sm.value * self.sms.value
        if level == "l2":
            return self.l2_capacity.value
        if level == "hbm":
            return self.hbm_capacity.value

    def facts(self) -> dict:
        """Every sourced fact of this GPU by name (tensor peaks as `tensor_fp16`, latencies
        as `latency_smem` and so on)."""
        out = {name: getattr(self, name) for name in (
            "sms", "fp32_lanes_per_sm", "clock", "l2_bandwidth", "hbm_bandwidth", "register_file_per_sm",
            "smem_per_sm", "l2_capacity", "hbm_capacity")}
        out.update({f"tensor_{k}": v for k, v in self.tensor.items()})
        out.update({f"latency_{k}": v for k, v in self.latency.items()})
        out.update({name: getattr(self, name) for name in ("tensor_clock", "max_clock", "power", "die_link") if getattr(self, name) is not None})
        return out

    def in_flight(self, level: str) -> float:
        """Little's law: the bytes that must be in flight at once to keep `level` at its
        bandwidth, given its measured latency (bandwidth x latency cycles / clock). Chapter 1."""
        if not isinstance(level, str) or level not in self.latency:
            raise ValueError(f"level must be one of {sorted(self.latency)}: the {self.name} has no measured {level!r} latency")
        return self.bandwidth(level) * self.latency[level].value / self.clock.value
