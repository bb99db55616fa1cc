"""Workloads: what a kernel asks of each level, as counts of flops and bytes.

Each builder returns a `Workload`. Every numeric argument broadcasts (NumPy rules), so a
sweep over sizes or tiles is one call. Sizes need not be multiples of a tile: a partial tile
counts as a whole tile (the number of tiles is a ceiling), which is what the bounds-checked
kernels in `kernels/` execute.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check
from .hardware import (LEVELS, MATH, REGISTER_BYTES_PER_FLOP, SECTOR_BYTES, SMEM_BANKS, VECTOR_WORDS, WARP,
                       WAVEFRONT_BYTES)
from .kernel_info import KERNELS

TRANSPOSE_TILE = 32
"""The transpose kernels move 32 x 32 tiles: one warp per tile row."""


@dataclass(frozen=True)
class Workload:
    """A kernel's demand: `flops` (FLOP) and `bytes[level]` (bytes moved at that level).

    `math` names the units its arithmetic runs on ("fp32" lanes, or "fp16"/"bf16" tensor
    cores); `special` counts the results it needs from the special-function units
    (exponentials, reciprocals), which run beside them. Arrays have one broadcast shape; a
    scalar workload holds 0-d arrays.
    """

    name: str
    flops: np.ndarray
    bytes: dict
    math: str = "fp32"
    note: str = ""
    special: np.ndarray = 0

    def __post_init__(self):
        if not isinstance(self.bytes, dict) or set(self.bytes) != set(LEVELS):
            raise ValueError(f"bytes must be a dict with exactly the levels {LEVELS}, got {self.bytes!r}")
        _check.choice("math", self.math, MATH)
        names = ("flops", "special", *(f"bytes[{lv!r}]" for lv in LEVELS))
        values = (self.flops, self.special, *(self.bytes[lv] for lv in LEVELS))
        checked = [(name, _check.amount(name, v)) for name, v in zip(names, values)]
        _check.broadcast(*checked)
        arrays = np.broadcast_arrays(*(a for _, a in checked))
        object.__setattr__(self, "flops", np.asarray(arrays[0], dtype=np.float64))
        object.__setattr__(self, "special", np.asarray(arrays[1], dtype=np.float64))
        object.__setattr__(
            self, "bytes", {lv: np.asarray(a, dtype=np.float64) for lv, a in zip(LEVELS, arrays[2:])}
        )

    @property
    def shape(self) -> tuple:
        """The broadcast shape of the workload's arrays (() for a single configuration)."""
        return self.flops.shape


def _tiles(size, tile):
    """How many tiles of `tile` cover `size`: a partial tile counts as a whole one."""
    return np.ceil(size / tile)


def vector_add(n) -> Workload:
    """`c = a + b` over `n` fp32 elements: n flops; 12n bytes at L2 and HBM (read a and b,
    write c); 12 register bytes per add. Chapter 1."""
    n = _check.size("n", n)
    _check.broadcast(("n", n))
    return Workload(
        "vector add",
        flops=n,
        bytes={"registers": 12 * n, "smem": 0 * n, "l2": 12 * n, "hbm": 12 * n},
        note="each element read twice and written once, nothing reused",
    )


def elementwise_chain(n, ops=3, fused=False, dtype="fp32") -> Workload:
    """A chain of `ops` elementwise operations (one flop each, like relu, scale, bias) over
    `n` elements. Unfused, each op is a kernel that reads and writes the whole array
    (2 x ops trips); fused, one kernel reads once and writes once (2 trips). Chapter 2."""
    n = _check.size("n", n)
    ops = _check.size("ops", ops)
    _check.broadcast(("n", n), ("ops", ops))
    fused = _check.flag("fused", fused)
    s = _check.dtype_bytes(dtype)
    trips = 2 * np.ones_like(ops) if fused else 2 * ops
    global_bytes = trips * n * s
    flops = ops * n
    return Workload(
        f"elementwise chain of {_show(ops)} ({'fused' if fused else 'unfused'}, {dtype})",
        flops=flops,
        bytes={"registers": 12 * flops, "smem": 0 * flops, "l2": global_bytes, "hbm": global_bytes},
        note=f"{'2' if fused else '2 x ops'} trips through HBM per element",
    )


NAIVE_BLOCK = KERNELS["gemm_naive"].functions["gemm_naive"]
"""The naive kernel's thread block (16 x 16): one result per thread."""
LAYOUTS = ("strided", "strided_a128", "warp_tiled")
"""How an FP32 tiled GEMM's threads read their operands from shared memory (`gemm`)."""
LOAD_STEPS = {"strided": 1, "strided_a128": VECTOR_WORDS, "warp_tiled": 1}
"""Steps of k one round of a layout's operand loads covers (`gpumodel.simulate.operand_loads`)."""
WARP_GRID = (4, 8)
"""The warp-tiled layout arranges a warp's 32 threads as 4 rows x 8 columns of thread tiles."""
PAIRED_VECTOR_WAVEFRONTS = VECTOR_WORDS // 2
"""Wavefronts of a 128-bit load whose lanes n and n^1 read the same address (a warp-uniform
one included): the return path packs two lanes' registers per slot (`gpumodel.simulate.wavefronts`)."""


def operand_load_instructions(thread=(8, 8), layout: str = "strided") -> float:
    """Shared-memory load instructions one thread issues per step of k to read its FP32
    operands, for thread tile `thread` = (tM, tN) read as `layout` reads them: tM + tN 4-byte
    loads ("strided"), A's four steps of k in one 128-bit load (tM / 4 + tN, "strided_a128"),
    both in 128-bit loads ((tM + tN) / 4, "warp_tiled"). What each course kernel's SASS shows
    (`gpumodel.cuda.compiler.instructions`); `gpumodel.expected.gemm_launch` issues them."""
    t_m, t_n = _check.pair("thread", thread)
    _check.choice("layout", layout, LAYOUTS)
    return {"strided": t_m + t_n, "strided_a128": t_m / VECTOR_WORDS + t_n,
            "warp_tiled": (t_m + t_n) / VECTOR_WORDS}[layout]


def operand_wavefronts(block=(128, 128, 8), thread=(8, 8), layout: str = "strided"):
    """Shared-memory wavefronts one warp takes per step of k to read its threads' operands,
    for FP32 block tiles `block` = (bM, bN[, bK]) and thread tiles `thread` = (tM, tN).
    Shared memory returns 128 B per clock, one 32-bit register per lane, so a 128-bit load
    takes 4 wavefronts, 2 when lanes n and n^1 share its address, and a bank holding several
    distinct words the warp reads takes one wavefront per word. Chapters 1 and 3;
    `gpumodel.simulate.operand_loads` gives the addresses behind it.

    - "strided" (this course's kernels): thread (ty, tx) of a (bM/tM) x (bN/tN) grid owns
      rows ty + (bM/tM) i and columns tx + (bN/tN) j and reads them one 4-byte word at a
      time: tM + tN loads. A warp's threads of one row share an `As[m][k]` word (a broadcast)
      and its rows read words bK apart, which share banks when the warp spans more rows than
      32 / gcd(bK, 32) (bK = 1 when not given); its columns read consecutive `Bs[k][n]` words.
      Exact for power-of-two tiles; with others a warp can straddle rows unevenly.
    - "strided_a128": the same threads, but each reads its A words four steps of k at a time
      (`As[m][k..k+3]`, one 128-bit load, as nvcc emits when it unrolls the k loop; bK a
      multiple of 4). Lanes n and n^1 of one row share the address, so a load takes 2
      wavefronts (or the bank ways, if more): A costs tM x max(2, ways) / 4 per step of k.
    - "warp_tiled": the warp's threads form a 4 x 8 grid (`WARP_GRID`) and read 128-bit loads
      of 4 consecutive values, A stored transposed. An A load's lanes n and n^1 (one grid row)
      share an address: 2 wavefronts; a B load gives 8 columns 16 distinct bytes each: 4.
      tM / 2 + tN in all.
    """
    if not isinstance(block, (tuple, list)) or len(block) not in (2, 3):
        raise ValueError(f"block must be (bM, bN) or (bM, bN, bK), got {block!r}")
    b_m, b_n = _check.pair("block", block[:2])
    b_k = _check.size("block[2]", block[2]) if len(block) == 3 else 1
    t_m, t_n = _check.pair("thread", thread)
    _check.broadcast(("block[0]", b_m), ("block[1]", b_n), ("block[2]", b_k), ("thread[0]", t_m), ("thread[1]", t_n))
    _check.choice("layout", layout, LAYOUTS)
    if layout != "warp_tiled":
        rows, cols = b_m / t_m, b_n / t_n
        warp_rows = np.minimum(np.ceil(WARP / cols), rows)  # distinct ty in one warp
        a_ways = np.ceil(warp_rows * np.gcd(np.int64(b_k), SMEM_BANKS) / SMEM_BANKS)
        if layout == "strided":
            return t_m * a_ways + t_n
        if np.any(b_k % VECTOR_WORDS) or np.any(cols % 2):
            raise ValueError(f"block[2] and block[1] / thread[1] must be multiples of {VECTOR_WORDS} and 2 for "
                             f"layout='strided_a128', got {_show(b_k)} and {_show(cols)}")
        return t_m * np.maximum(PAIRED_VECTOR_WAVEFRONTS, a_ways) / VECTOR_WORDS + t_n
    for name, t in (("thread[0]", t_m), ("thread[1]", t_n)):
        if np.any(t % VECTOR_WORDS):
            raise ValueError(f"{name} must be a multiple of {VECTOR_WORDS} for layout='warp_tiled' "
                             f"(128-bit loads of {VECTOR_WORDS} floats), got {_show(t)}")
    _check.divides("4 x thread[0]", WARP_GRID[0] * t_m, "block[0]", b_m)
    _check.divides("8 x thread[1]", WARP_GRID[1] * t_n, "block[1]", b_n)
    return t_m / VECTOR_WORDS * PAIRED_VECTOR_WAVEFRONTS + t_n


def gemm(m, n, k, block=None, thread=(1, 1), dtype="fp32", l2_reuse=True, layout="strided") -> Workload:
    """`C = A @ B` with A m x k, B k x n, elements of `dtype`. Chapters 1, 3 and 4.

    `block=None` is the naive kernel: one thread per result, no shared memory, scalar FMAs on
    the FP32 units whatever the dtype. Its threads request 2sMNK bytes (`gemm_requests`),
    but that is not a bound: at best the L1 cache keeps what the threads of one block share,
    so L2 must supply each block's rows of A and columns of B once, as for a tile of the
    naive kernel's block shape (`NAIVE_BLOCK`); that is what is charged at L2. Every load
    and store still passes the SM's L1/shared-memory data path (one SRAM, one return path
    of one 32-bit register per lane per clock), whatever the cache keeps: each warp's
    instruction is at least one 128 B wavefront there, 2K + 1 per warp, charged as `smem`.

    `block=(bM, bN)` or `(bM, bN, bK)` stages bM x bK tiles of A and bK x bN tiles of B in
    shared memory; each thread keeps a `thread=(tM, tN)` tile of results in registers.
    With s bytes per element and sizes rounded up to whole tiles (M', N', K'):

    - L2:   s (M'K' N'/bN + K'N' M'/bM) + s MN        (tiles read, C written)
    - smem: s (M'K' N'/bN + K'N' M'/bM)               (tiles written; FP32 only)
            + 128 B x wavefronts per warp per k x warps x K' x blocks   (operands read)
      FP32: the wavefronts of `layout` (`operand_wavefronts`); for the strided layout without
      bank conflicts and whole warps, s K' (M'N' / (tM tN)) (tM + tN). A partial warp still
      takes whole wavefronts. Tensor cores: a warp's fragments, s (tM + tN) bytes per k,
      conflict-free (swizzled, chapter 6); the copies that fill the tiles (TMA, cp.async) are
      not charged against the operand reads' 128 B per clock: NVIDIA publishes no figure for
      them, and Tilus V5 on the B200 ran faster than it could if they shared it (chapter 98).
    - HBM:  s (MK + KN + MN) if L2 catches the reuse (`l2_reuse=True`), else the L2 bytes.
    - registers: 12 bytes per FMA on the FP32 units; not modelled on tensor cores (0).

    fp32 runs on the FP32 units; fp16/bf16 tiled GEMMs run on the tensor cores, where the
    register tile is a warp's, not a thread's: pass the warp tile as `thread` (e.g. (64, 64)).
    """
    m, n, k = _check.size("m", m), _check.size("n", n), _check.size("k", k)
    s = _check.dtype_bytes(dtype)
    l2_reuse = _check.flag("l2_reuse", l2_reuse)
    t_m, t_n = _check.pair("thread", thread)
    _check.broadcast(("m", m), ("n", n), ("k", k), ("thread[0]", t_m), ("thread[1]", t_n))
    _check.choice("layout", layout, LAYOUTS)
    if layout != "strided" and (block is None or dtype != "fp32"):
        raise ValueError(f"layout must be 'strided' unless the GEMM is tiled and FP32, got {layout!r}")
    flops = 2 * m * n * k
    compulsory = s * (m * k + k * n + m * n)
    if block is None:
        if np.any(t_m != 1) or np.any(t_n != 1):
            raise ValueError("thread must be (1, 1) for the naive kernel (block=None)")
        b_m, b_n = NAIVE_BLOCK
        rows, cols = _tiles(m, b_m), _tiles(n, b_n)
        l2 = s * k * (rows * b_m * cols + cols * b_n * rows) + s * m * n
        l1 = WAVEFRONT_BYTES * np.ceil(m * n / WARP) * (2 * k + 1)  # two loads per FMA, one store
        return Workload(
            f"naive GEMM ({dtype})",
            flops=flops,
            bytes={
                "registers": REGISTER_BYTES_PER_FLOP * flops,
                "smem": l1,
                "l2": l2,
                "hbm": compulsory if l2_reuse else l2,
            },
            note="at best: L1 keeps what a block's threads share, so L2 supplies its rows and columns once; "
                 "every load and store a wavefront of the L1/shared-memory path",
        )
    if not isinstance(block, (tuple, list)) or len(block) not in (2, 3):
        raise ValueError(f"block must be None, (bM, bN) or (bM, bN, bK), got {block!r}")
    b_m, b_n = _check.pair("block", block[:2])
    b_k = _check.size("block[2]", block[2]) if len(block) == 3 else np.float64(1)
    _check.broadcast(("m", m), ("n", n), ("k", k), ("thread[0]", t_m), ("thread[1]", t_n), ("block[0]", b_m),
                     ("block[1]", b_n), ("block[2]", b_k))
    _check.not_larger("block[0]", b_m, "m", m)
    _check.not_larger("block[1]", b_n, "n", n)
    _check.not_larger("block[2]", b_k, "k", k)
    _check.divides("thread[0]", t_m, "block[0]", b_m)
    _check.divides("thread[1]", t_n, "block[1]", b_n)
    rows, cols = _tiles(m, b_m), _tiles(n, b_n)
    m_p, n_p, k_p = rows * b_m, cols * b_n, _tiles(k, b_k) * b_k
    tiles = s * (m_p * k_p * cols + k_p * n_p * rows)
    l2 = tiles + s * m * n
    tensor = dtype != "fp32"
    if tensor:
        operands = s * k_p * (m_p * n_p / (t_m * t_n)) * (t_m + t_n)
    else:
        warps = np.ceil(b_m * b_n / (t_m * t_n) / WARP)
        operands = WAVEFRONT_BYTES * operand_wavefronts(block, (t_m, t_n), layout) * warps * k_p * rows * cols
    return Workload(
        f"tiled GEMM ({dtype})",
        flops=flops,
        bytes={
            "registers": 0 * flops if tensor else 2 * REGISTER_BYTES_PER_FLOP * m_p * n_p * k_p,
            "smem": operands if tensor else tiles + operands,
            "l2": l2,
            "hbm": compulsory if l2_reuse else l2,
        },
        math=dtype if tensor else "fp32",
        note="tensor-core register traffic is not modelled" if tensor else "",
    )


def gemm_requests(m, n, k, dtype="fp32") -> Workload:
    """The naive GEMM as its threads ask for it: two operands through L2 for every FMA,
    2sMNK + sMN bytes, as if no cache below L2 kept anything. An estimate, not a bound (the
    L1 cache serves part of it; `gemm` charges what must cross L2 at best). Chapter 3."""
    m, n, k = _check.size("m", m), _check.size("n", n), _check.size("k", k)
    _check.broadcast(("m", m), ("n", n), ("k", k))
    s = _check.dtype_bytes(dtype)
    flops = 2 * m * n * k
    return Workload(f"naive GEMM, every request ({dtype})", flops=flops,
                    bytes={"registers": REGISTER_BYTES_PER_FLOP * flops, "smem": 0 * flops,
                           "l2": 2 * s * m * n * k + s * m * n, "hbm": s * (m * k + k * n + m * n)},
                    note="every operand a thread requests, through L2: an estimate, not a bound")


def gemm_ideal(m, n, k, dtype="fp32") -> Workload:
    """The least any `C = A @ B` must do, whoever wrote it: 2mnk flops on the units `dtype`
    runs on (the tensor cores for fp16/bf16), each of A, B and C crossing L2 and HBM once,
    and nothing charged to shared memory or registers. A library GEMM (cuBLAS) is held
    against this bound (fp8 too, on the tensor cores). Appendix "How good is the model?"."""
    m, n, k = _check.size("m", m), _check.size("n", n), _check.size("k", k)
    _check.broadcast(("m", m), ("n", n), ("k", k))
    s = _check.dtype_bytes(dtype, tuple(_check.DTYPE_BYTES))
    compulsory = s * (m * k + k * n + m * n)
    return Workload(f"ideal GEMM ({dtype})", flops=2 * m * n * k,
                    bytes={"registers": 0 * compulsory, "smem": 0 * compulsory, "l2": compulsory, "hbm": compulsory},
                    math=dtype, note="the compulsory bytes and the flops; nothing else")


def attention(batch, heads, seq, head_dim, dtype="fp16", kind="standard", block=(128, 64), l2_reuse=False) -> Workload:
    """Attention forward, `softmax(Q K^T / sqrt(d)) V`, for `batch` x `heads` heads of
    `seq` x `head_dim`. Chapter 5. Flops: the two matmuls, 4 N^2 d per head; the softmax's
    N^2 exponentials per head are counted apart (`special`), for the SFUs. Global traffic
    follows Dao et al. (2022):

    - `kind="standard"` (their Algorithm 0): S = QK^T is written to HBM, read and written
      back as P by the softmax, then read with V: s (4Nd + 4N^2) bytes per head.
    - `kind="flash"`, query blocks outer: each block of `block[0]` query rows is loaded once
      and walks over all of K and V in `block[1]`-row tiles, keeping scores and the running
      softmax on chip; K and V are re-read once per query block:
      s (2Nd + 2Nd ceil(N/Br)) bytes per head.

    - `kind="flash1"`, key/value blocks outer (their Algorithm 1, and FlashAttention's first
      release, `fmha_fprop_kernel_1xN.h` at commit 1fcbe6f0): each block of `block[1]` key
      and value rows is loaded once and walks all query rows, re-reading Q; between two
      key/value blocks each row's output so far and its softmax statistic go out to global
      memory in fp32 and come back: s (3Nd + Nd ceil(N/Bc)) + 8 (ceil(N/Bc) - 1) N (d + 1)
      bytes per head.

    `block=(Br, Bc)` is the flash kernel's tile; the standard kind has none.
    L2 sees every global access. HBM sees the same bytes (the paper's count) unless
    `l2_reuse=True` for a flash kind: then the re-reads stay in L2 (the query blocks of a
    head, running together, share its K and V; a head's partial outputs come back from L2),
    and HBM sees each of Q, K, V and O once. Shared memory:
    each staged byte is written once and read once (a lower bound). Registers: not modelled
    on the tensor cores (0); 12 bytes per FMA in fp32.
    """
    batch, heads = _check.size("batch", batch), _check.size("heads", heads)
    seq, d = _check.size("seq", seq), _check.size("head_dim", head_dim)
    _check.broadcast(("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", d))
    s = _check.dtype_bytes(dtype)
    kind = _check.choice("kind", kind, ("standard", "flash", "flash1"))
    bh = batch * heads
    flops = 4 * bh * seq**2 * d
    if kind == "standard":
        global_bytes = s * bh * (4 * seq * d + 4 * seq**2)
        staged = s * bh * (3 * seq * d + seq**2)
    elif kind == "flash1":
        _, b_c = _check.pair("block", block)
        _check.broadcast(("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", d), ("block[1]", b_c))
        _check.not_larger("block[1]", b_c, "seq", seq)
        steps = _tiles(seq, b_c)
        q_reads = seq * d * steps
        partial = 8 * (steps - 1) * seq * (d + 1)  # fp32 outputs and statistics, out and back between steps
        global_bytes = s * bh * (3 * seq * d + q_reads) + bh * partial
        staged = s * bh * (2 * seq * d + q_reads)
    else:
        b_r, b_c = _check.pair("block", block)
        _check.broadcast(("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", d), ("block[0]", b_r),
                         ("block[1]", b_c))
        _check.not_larger("block[0]", b_r, "seq", seq)
        _check.not_larger("block[1]", b_c, "seq", seq)
        kv_reads = 2 * seq * d * _tiles(seq, b_r)
        global_bytes = s * bh * (2 * seq * d + kv_reads)
        staged = s * bh * (seq * d + kv_reads)
    l2_reuse = _check.flag("l2_reuse", l2_reuse)
    hbm = s * bh * 4 * seq * d * np.ones_like(global_bytes) if (l2_reuse and kind != "standard") else global_bytes
    note = "the N x N scores go through HBM" if kind == "standard" else "the N x N scores never reach HBM"
    exps = bh * seq**2  # one exponential per score
    return _attention_workload(f"{kind} attention ({dtype})", flops, global_bytes, 2 * staged, hbm, dtype, note, exps)


def _attention_workload(name, flops, global_bytes, smem, hbm, dtype, note, exps) -> Workload:
    """Attention's workloads share their shape: tensor-core math (no register traffic
    modelled) unless fp32, every global access at L2, `exps` exponentials on the SFUs."""
    tensor = dtype != "fp32"
    return Workload(
        name,
        flops=flops,
        bytes={
            "registers": 0 * flops if tensor else REGISTER_BYTES_PER_FLOP * flops,
            "smem": smem,
            "l2": global_bytes,
            "hbm": hbm,
        },
        math=dtype,
        note=note,
        special=exps,
    )


def attention_backward(batch, heads, seq, head_dim, dtype="fp16", kind="standard", block=(128, 128),
                       l2_reuse=False) -> Workload:
    """Attention's backward pass, given dO: dQ, dK, dV. Chapter 5.

    - "standard" (Dao et al. 2022, Algorithm 3): P was stored by the forward pass; five
      kernels compute dV = P^T dO, dP = dO V^T, dS (softmax backward), dQ = dS K and
      dK = dS^T Q, with P, dP and dS going through HBM: s (8Nd + 7N^2) bytes per head,
      four matmuls, 8 N^2 d flops.
    - "flash" (the FlashAttention-2 order): nothing N x N was stored; key/value blocks of
      `block[1]` rows are outer, and for each one the kernel walks all query blocks,
      recomputing S and P on chip (a fifth matmul: 10 N^2 d flops), re-reading Q and dO and
      accumulating dQ in HBM: s (6Nd + 4Nd ceil(N/Bc)) bytes per head, counting the
      preliminary pass that reads dO and O. With `l2_reuse=True` those re-reads and the dQ
      accumulation stay in L2, and HBM sees Q, K, V, O and dO read once and dQ, dK, dV
      written once: s 8Nd.
    """
    batch, heads = _check.size("batch", batch), _check.size("heads", heads)
    seq, d = _check.size("seq", seq), _check.size("head_dim", head_dim)
    _check.broadcast(("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", d))
    s = _check.dtype_bytes(dtype)
    kind = _check.choice("kind", kind, ("standard", "flash"))
    bh = batch * heads
    l2_reuse = _check.flag("l2_reuse", l2_reuse)
    if kind == "standard":
        flops = 8 * bh * seq**2 * d
        global_bytes = s * bh * (8 * seq * d + 7 * seq**2)
        hbm = global_bytes
    else:
        _, b_c = _check.pair("block", block)
        _check.broadcast(("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", d), ("block[1]", b_c))
        _check.not_larger("block[1]", b_c, "seq", seq)
        flops = 10 * bh * seq**2 * d
        global_bytes = s * bh * (6 * seq * d + 4 * seq * d * _tiles(seq, b_c))
        hbm = s * bh * 8 * seq * d * np.ones_like(global_bytes) if l2_reuse else global_bytes
    note = "recomputes the scores on chip" if kind == "flash" else "reads the stored probabilities"
    exps = bh * seq**2 if kind == "flash" else 0 * seq  # flash recomputes P: an exponential per score
    return _attention_workload(f"{kind} attention backward ({dtype})", flops, global_bytes, 2 * global_bytes, hbm,
                               dtype, note, exps)


def attention_memory(batch, heads, seq, head_dim, dtype="fp16", kind="standard"):
    """Bytes attention's forward pass keeps in HBM: Q, K, V and O, plus the N x N scores and
    probabilities for the standard kind (the flash kind keeps only O(N) statistics, not
    counted). Chapter 5."""
    batch, heads = _check.size("batch", batch), _check.size("heads", heads)
    seq, d = _check.size("seq", seq), _check.size("head_dim", head_dim)
    _check.broadcast(("batch", batch), ("heads", heads), ("seq", seq), ("head_dim", d))
    bh = batch * heads
    s = _check.dtype_bytes(dtype)
    kind = _check.choice("kind", kind, ("standard", "flash"))
    matrices = 2 * seq**2 if kind == "standard" else 0 * seq
    return s * bh * (4 * seq * d + matrices)


def score_matrix_bytes(batch, heads, seq, dtype="fp16"):
    """Bytes of the N x N attention scores of `batch` x `heads` heads (the intermediate
    standard attention writes to HBM). Chapter 5."""
    batch, heads, seq = _check.size("batch", batch), _check.size("heads", heads), _check.size("seq", seq)
    _check.broadcast(("batch", batch), ("heads", heads), ("seq", seq))
    return batch * heads * seq**2 * _check.dtype_bytes(dtype)


def transpose(n, padded=False) -> Workload:
    """Transpose an n x n fp32 matrix through 32 x 32 shared-memory tiles. Chapter 3.

    L2 and HBM: 8 n^2 (read once, write once). Shared memory, counted in wavefronts of
    128 bytes: rows are written conflict-free; columns are read back one element per row,
    so in a 32 x 32 float tile the whole warp hits one bank (32-way conflict: 32 wavefronts
    where 1 would do). Padding each row to 33 floats spreads a column over all 32 banks.
    No arithmetic: flops and register traffic are 0.
    """
    n = _check.size("n", n)
    _check.broadcast(("n", n))
    padded = _check.flag("padded", padded)
    tiled = (_tiles(n, TRANSPOSE_TILE) * TRANSPOSE_TILE) ** 2
    conflict = 1 if padded else TRANSPOSE_TILE
    return Workload(
        f"{'padded' if padded else 'plain'} shared-memory transpose",
        flops=0 * n,
        bytes={
            "registers": 0 * n,
            "smem": 4 * tiled * (1 + conflict),
            "l2": 8 * n**2,
            "hbm": 8 * n**2,
        },
        note="column reads are conflict-free" if padded else "column reads are 32-way bank conflicts",
    )


def _show(a) -> str:
    a = np.asarray(a)
    return str(int(a)) if a.ndim == 0 else "several"




def warp_sectors(stride, elem_bytes=4):
    """Sectors one warp's load touches when thread t reads element t x `stride` (elements
    of `elem_bytes`, the first one sector-aligned): 32 / elements-per-sector for small
    strides, one sector per thread once a stride spans a sector. Chapter 2."""
    stride = _check.size("stride", stride)
    elem_bytes = _check.size("elem_bytes", elem_bytes)
    _check.broadcast(("stride", stride), ("elem_bytes", elem_bytes))
    span = (WARP - 1) * stride * elem_bytes + elem_bytes  # bytes from first to last
    return np.where(stride * elem_bytes >= SECTOR_BYTES, WARP, np.ceil(span / SECTOR_BYTES))


def strided_read(n, stride) -> Workload:
    """Copy n fp32 elements read at `stride` (y[i] = x[i * stride]) into a contiguous array.
    Useful bytes: 8n. Moved: the sectors each warp's read touches, plus the coalesced
    writes (4n). Chapter 2."""
    n, stride = _check.size("n", n), _check.size("stride", stride)
    _check.broadcast(("n", n), ("stride", stride))
    warps = np.ceil(n / WARP)
    moved = warps * warp_sectors(stride) * SECTOR_BYTES + 4 * n
    return Workload(
        f"strided read (stride {_show(stride)})",
        flops=0 * n,
        bytes={"registers": 0 * n, "smem": 0 * n, "l2": moved, "hbm": moved},
        note="each warp's read costs every 32-byte sector it touches",
    )


def kernel_gemm(kernel: str, m, n, k, dtype: str = "fp32") -> Workload:
    """The m x n x k GEMM that the course's GEMM `kernel` (an id of `gpumodel.kernel_info`)
    runs, with its tiles and the layout its compiled loads read (`gemm`)."""
    if not isinstance(kernel, str) or kernel not in KERNELS or not kernel.startswith("gemm"):
        raise ValueError(f"kernel must be one of the course's GEMM kernels "
                         f"{[k_ for k_ in KERNELS if k_.startswith('gemm')]}, got {kernel!r}")
    info = KERNELS[kernel]
    return gemm(m, n, k, block=info.block, thread=info.thread, dtype=dtype, layout=info.layout)


def seed_kernels() -> dict:
    """Chapter 1's three kernels, by kernel id: vector add of 2^28 floats, and a 4096^3 FP32
    GEMM with 16 x 16 tiles (one result per thread) and with 128 x 128 tiles (8 x 8 per thread)."""
    return {"vector_add": vector_add(2**28), "gemm_smem16": kernel_gemm("gemm_smem16", 4096, 4096, 4096),
            "gemm_reg128": kernel_gemm("gemm_reg128", 4096, 4096, 4096)}


def catalogue() -> dict:
    """The kernels of chapters 1 to 5 by kernel id (see `gpumodel.kernel_info`), at the
    chapters' sizes, with the fp16 GEMM of chapters 4 and 6 (8192^3 on the tensor cores) and
    chapter 5's attention (batch 8, 32 heads, N = 4096, d = 128, fp16). Chapter 4 draws a
    roofline per level for each."""
    return {
        **seed_kernels(),
        "chain_unfused": elementwise_chain(2**26, 3, False),
        "chain_fused": elementwise_chain(2**26, 3, True),
        "gemm_naive": kernel_gemm("gemm_naive", 4096, 4096, 4096),
        "strided_read": strided_read(2**24, 8),
        "transpose_smem": transpose(8192, False),
        "transpose_padded": transpose(8192, True),
        "gemm_fp16": kernel_gemm("gemm_fp16", 8192, 8192, 8192, "fp16"),
        "attention_standard": attention(8, 32, 4096, 128, "fp16", "standard"),
        "attention_flash": attention(8, 32, 4096, 128, "fp16", "flash", block=(128, 128), l2_reuse=True),
    }


def flash_block(sram_bytes: int, head_dim: int, dtype: str = "fp16") -> int:
    """Chapter 5: the largest power-of-two query block Br (with key blocks Bc = Br) whose
    Q, K and V tiles (Br x d each) and score tile (Br x Br) fit in `sram_bytes`."""
    s = _check.dtype_bytes(dtype)
    d = _check.one("head_dim", head_dim)
    sram = _check.one("sram_bytes", sram_bytes)
    block = 1
    while s * (3 * (2 * block) * d + (2 * block) ** 2) <= sram:
        block *= 2
    if s * (3 * block * d + block**2) > sram:
        raise ValueError(f"sram_bytes must hold at least a 1-row block: {sram} bytes is too small for d = {d}")
    return block
