"""Programs that do the work and count the bytes they move.

Small NumPy versions of the course's algorithms. Each computes the real result and counts
every byte it moves between levels as it moves it, so the formulas in `workloads` can be
checked against a program rather than believed. Tests hold the counts equal to the formulas.

Counting conventions (the same as `workloads`):

- `l2`: every global-memory access the kernel issues (loads and stores), in bytes.
- `hbm`: the bytes that must cross HBM: each distinct element once, when L2 catches the
  reuse (GEMM); every global access, when nothing is reused between blocks (attention).
- `smem`: bytes written to and read from shared memory; where bank conflicts matter
  (transpose), counted as wavefronts of 128 bytes.
- `registers`: 12 bytes per FP32 FMA (three 4-byte operands).
- A partial tile at a matrix edge costs what a whole tile does (zero-padded on chip).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _check
from .hardware import REGISTER_BYTES_PER_FLOP, SECTOR_BYTES, SMEM_BANKS, VECTOR_WORDS, WARP, WAVEFRONT_BYTES
from .presets import capabilities
from .workloads import LOAD_STEPS, TRANSPOSE_TILE, WARP_GRID, gemm, operand_wavefronts

MAX_WORK = 2**26
"""The most multiply-adds (or elements held) a simulation takes on: about a second of NumPy."""
MAX_STEPS = 2**13
"""The most steps of a simulation's Python loop (tile steps, warps): about a second."""


@dataclass
class Run:
    """A simulation's `result` and the bytes it moved: `bytes[level]` for the levels it
    counts, `parts[name]` for the pieces they are made of (tiles written, operands read)."""

    result: np.ndarray
    bytes: dict = field(default_factory=dict)
    parts: dict = field(default_factory=dict)

    def add(self, part: str, nbytes: float) -> None:
        self.parts[part] = self.parts.get(part, 0) + nbytes


def _shapes(a, b) -> tuple:
    """(m, k, n) of matrices `a` (m x k) and `b` (k x n), read before either is copied."""
    shape_a, shape_b = _check.shape("a", a), _check.shape("b", b)
    if len(shape_a) != 2 or len(shape_b) != 2 or shape_a[1] != shape_b[0] or 0 in shape_a + shape_b:
        raise ValueError(f"a and b must be non-empty matrices with a.shape[1] == b.shape[0], got {shape_a} and {shape_b}")
    return shape_a[0], shape_a[1], shape_b[1]


def naive_gemm(a, b, dtype="fp32") -> Run:
    """C = A @ B with one thread per result, each reading its row of A and column of B
    straight from global memory, one pair of operands per FMA: every request counted at L2,
    as `gemm_requests` does (no cache is simulated). Chapters 1 and 3."""
    m, k, n = _shapes(a, b)
    s = _check.dtype_bytes(dtype)
    _check.work("m x n x k", m * n * k, MAX_WORK, "multiply-adds")
    _check.work("k (a's columns, one step each)", k, MAX_STEPS, "steps")
    a, b = _check.array("a", a), _check.array("b", b)
    run = Run(np.zeros((m, n)))
    for kk in range(k):
        # Every thread (i, j) loads a[i, kk] and b[kk, j], then does one FMA.
        run.result += a[:, kk, None] * b[None, kk, :]
        run.add("operands loaded", 2 * s * m * n)
        run.add("fmas", m * n)
    run.add("C written", s * m * n)
    run.bytes = {
        "registers": 2 * REGISTER_BYTES_PER_FLOP * run.parts["fmas"],
        "smem": 0,
        "l2": run.parts["operands loaded"] + run.parts["C written"],
        "hbm": s * (a.size + b.size + m * n),
    }
    return run


def _block(block) -> tuple:
    """A block tile (bM, bN, bK) as three ints."""
    if not isinstance(block, (tuple, list)) or len(block) != 3:
        raise ValueError(f"block must be (bM, bN, bK), got {block!r}")
    return tuple(_check.one(f"block[{i}]", v) for i, v in enumerate(block))


def operand_loads(block=(128, 128, 8), thread=(8, 8), layout="strided") -> list:
    """The word addresses of every warp load that reads an FP32 tiled GEMM's operands from
    shared memory over `LOAD_STEPS[layout]` steps of k from k = 0, one array per warp
    instruction (one row per lane, one column per word of a 128-bit load): `As[m][k]` and
    `Bs[k][n]` for the strided layout, the same with A read 4 steps of k at a time for
    "strided_a128", `As[k][m]` and `Bs[k][n]` with 128-bit loads for the warp-tiled one (see
    `gpumodel.workloads.operand_wavefronts`). Chapter 3."""
    b_m, b_n, b_k = _block(block)
    t_m, t_n = _check.one_pair("thread", thread)
    operand_wavefronts(block, thread, layout)  # refuses the tiles and layouts the formula does
    _check.divides("thread[0]", t_m, "block[0]", b_m)
    _check.divides("thread[1]", t_n, "block[1]", b_n)
    rows, cols = b_m // t_m, b_n // t_n
    most = max(c.max_threads_per_block for c in capabilities().values())
    _check.work("the block's threads", rows * cols, most, "threads")
    tid = np.arange(rows * cols)
    loads = []
    if layout != "warp_tiled":
        steps = np.arange(LOAD_STEPS[layout])
        for warp in np.split(tid, np.arange(WARP, tid.size, WARP)):
            ty, tx = warp // cols, warp % cols
            if layout == "strided":
                loads += [(ty + rows * i) * b_k for i in range(t_m)]
            else:
                loads += [((ty + rows * i) * b_k)[:, None] + steps for i in range(t_m)]
            loads += [tx + cols * j + b_n * k for k in steps for j in range(t_n)]
        return loads
    grid_m, grid_n = WARP_GRID
    lane = np.arange(WARP)
    r, c = lane // grid_n, lane % grid_n
    vector = np.arange(VECTOR_WORDS)
    for w in range(rows * cols // WARP):
        m0 = (w // (b_n // (grid_n * t_n))) * grid_m * t_m
        n0 = (w % (b_n // (grid_n * t_n))) * grid_n * t_n
        loads += [(m0 + q * grid_m * VECTOR_WORDS + VECTOR_WORDS * r)[:, None] + vector for q in range(t_m // VECTOR_WORDS)]
        loads += [(n0 + q * grid_n * VECTOR_WORDS + VECTOR_WORDS * c)[:, None] + vector for q in range(t_n // VECTOR_WORDS)]
    return loads


def counted_operand_wavefronts(block=(128, 128, 8), thread=(8, 8), layout="strided") -> float:
    """Shared-memory wavefronts per step of k of one FP32 tiled GEMM block, summed over its
    warps: every warp load of `operand_loads` counted by `wavefronts`, divided by the steps of
    k one round covers. Equals `gpumodel.workloads.operand_wavefronts` times the warps (the
    tests hold it). Chapter 3."""
    loads = operand_loads(block, thread, layout)
    return sum(wavefronts(addr) for addr in loads) / LOAD_STEPS[layout]


def tiled_gemm(a, b, block=(128, 128, 8), thread=(8, 8), dtype="fp32", layout="strided") -> Run:
    """C = A @ B the way the tiled kernels do it. Chapters 1 and 3.

    Each block of threads owns a bM x bN tile of C. For every step of bK along k it copies
    a bM x bK tile of A and a bK x bN tile of B from global to shared memory (whole tiles,
    zero-padded at the edges), then each of its (bM/tM)(bN/tN) threads reads tM values of
    A's column and tN of B's row from shared memory per k and updates its tM x tN results
    in registers. C is written once. `hbm` counts each distinct element once. FP32 operand
    reads count the wavefronts of each warp's loads in `layout` (`operand_loads`).
    """
    m, k, n = _shapes(a, b)
    s = _check.dtype_bytes(dtype)
    b_m, b_n, b_k = _block(block)
    t_m, t_n = _check.one_pair("thread", thread)
    if b_m % t_m or b_n % t_n:
        raise ValueError(f"thread must divide block: got thread={thread}, block={block}")
    for name, tile, size in (("block[0]", b_m, "m"), ("block[1]", b_n, "n"), ("block[2]", b_k, "k")):
        _check.not_larger(name, tile, size, {"m": m, "n": n, "k": k}[size])
    tiles_m, tiles_n, k_p = -(-m // b_m), -(-n // b_n), -(-k // b_k) * b_k
    _check.work("the tiles' steps along k", tiles_m * tiles_n * k_p, MAX_STEPS, "steps")
    _check.work("the padded m x n x k", tiles_m * b_m * tiles_n * b_n * k_p, MAX_WORK, "multiply-adds")
    a, b = _check.array("a", a), _check.array("b", b)
    rows_t, cols_t = b_m // t_m, b_n // t_n
    tensor = dtype != "fp32"
    gemm(m, n, k, block=block, thread=thread, dtype=dtype, layout=layout)  # refuses the tiles and layouts the model does
    if tensor:  # a warp's fragments (here `thread`), conflict-free
        operand_bytes = s * rows_t * cols_t * (t_m + t_n)
    else:
        operand_bytes = WAVEFRONT_BYTES * counted_operand_wavefronts(block, thread, layout)
    touched_a, touched_b = np.zeros(a.shape, bool), np.zeros(b.shape, bool)
    run = Run(np.zeros((m, n)))
    for i0 in range(0, m, b_m):
        for j0 in range(0, n, b_n):
            acc = np.zeros((rows_t, cols_t, t_m, t_n))  # each thread's results
            for k0 in range(0, k, b_k):
                a_tile, b_tile = np.zeros((b_m, b_k)), np.zeros((b_k, b_n))
                a_part, b_part = a[i0:i0 + b_m, k0:k0 + b_k], b[k0:k0 + b_k, j0:j0 + b_n]
                a_tile[: a_part.shape[0], : a_part.shape[1]] = a_part
                b_tile[: b_part.shape[0], : b_part.shape[1]] = b_part
                touched_a[i0:i0 + b_m, k0:k0 + b_k] = True
                touched_b[k0:k0 + b_k, j0:j0 + b_n] = True
                run.add("tiles written", s * (a_tile.size + b_tile.size))
                for kk in range(b_k):
                    a_frag = a_tile[:, kk].reshape(rows_t, t_m)  # thread row r holds a_frag[r]
                    b_frag = b_tile[kk, :].reshape(cols_t, t_n)
                    acc += a_frag[:, None, :, None] * b_frag[None, :, None, :]
                    run.add("operands read", operand_bytes)
                    run.add("fmas", b_m * b_n)
            tile = acc.transpose(0, 2, 1, 3).reshape(b_m, b_n)
            h, w = min(b_m, m - i0), min(b_n, n - j0)
            run.result[i0:i0 + h, j0:j0 + w] = tile[:h, :w]
            run.add("C written", s * h * w)
    run.bytes = {
        "registers": 0 if tensor else 2 * REGISTER_BYTES_PER_FLOP * run.parts["fmas"],
        # on tensor cores the copies filling the tiles are not charged against the reads (`gemm`)
        "smem": run.parts["operands read"] + (0 if tensor else run.parts["tiles written"]),
        "l2": run.parts["tiles written"] + run.parts["C written"],
        "hbm": s * (touched_a.sum() + touched_b.sum()) + run.parts["C written"],
    }
    return run


def bank_conflicts(addresses) -> int:
    """Wavefronts one warp instruction's shared-memory access takes: the word (4-byte)
    addresses its threads touch in (32 for 4-byte loads; up to 4 per thread, 128 in all, for
    128-bit loads), the largest number of distinct addresses falling in one of the 32 banks
    out. Threads reading the same word share it (a broadcast), so 1 is conflict-free and a
    128-bit load of 32 distinct float4s takes 4. Chapters 3 and 6."""
    addr = np.asarray(addresses).ravel()
    if (not 0 < addr.size <= WARP * VECTOR_WORDS or not np.issubdtype(addr.dtype, np.integer)
            or np.any(addr < 0)):
        raise ValueError(f"addresses must be the word addresses of one warp access: 1 to {WARP * VECTOR_WORDS} "
                         f"non-negative integers, got {addresses!r}")
    return int(np.bincount(np.unique(addr) % SMEM_BANKS).max())  # distinct words per bank


def wavefronts(addresses) -> int:
    """Wavefronts one warp's shared-memory load takes, from the word (4-byte) addresses of
    each lane: shape (lanes,) for 32-bit loads or (lanes, w) for loads of w = 2 or 4 words
    (LDS.64, LDS.128), up to 32 lanes. Two limits, the larger wins:

    - banks: the warp is served in groups of lanes that ask for 128 bytes together (the
      whole warp for 32-bit loads, half-warps for LDS.64, quarter-warps for LDS.128); in each
      group a bank serves one distinct word per wavefront (`bank_conflicts`), and groups do
      not share a fetch, so lanes t and t + 16 reading the same address still cost two;
    - the return path: 128 bytes per clock, one 32-bit register per lane, so lanes x w
      registers take lanes x w / 32 wavefronts.

    When lanes n and n^1 (or n and n^2) hold identical addresses for every lane, the hardware
    packs their registers two per slot: the return path takes half as long and a group holds
    twice the lanes (NVIDIA developer forum threads 77228 and 260900, stated for compute
    capability 7.0 to 7.5). A warp-uniform LDS.128 takes 2, a warp-uniform LDS.64 or LDS.32
    one; an LDS.128 whose lanes t and t + 16 share 32-byte-strided addresses takes 8, and one
    whose half-warps each read one address 2, as Nsight Compute measured on compute
    capability 8.6 and 9.0 (forum thread 373160). Chapters 1 and 3."""
    addr = np.asarray(addresses)
    lanes = addr.shape[0] if addr.ndim else 0
    width = addr.shape[1] if addr.ndim == 2 else 1
    if addr.ndim not in (1, 2) or not 0 < lanes <= WARP or width not in (1, 2, VECTOR_WORDS):
        raise ValueError(f"addresses must be one warp load's word addresses, shape (lanes,) or (lanes, w) with "
                         f"1 to {WARP} lanes and w in (1, 2, {VECTOR_WORDS}), got shape {addr.shape}")
    per_lane = addr.reshape(lanes, width)
    paired = lanes % 2 == 0 and any(
        lanes % (2 * step) == 0 and np.array_equal(per_lane, per_lane[np.arange(lanes) ^ step]) for step in (1, 2))
    group = WARP // width * (2 if paired else 1)  # lanes served together
    banks = sum(bank_conflicts(per_lane[start:start + group]) for start in range(0, lanes, group))
    registers = lanes * width / (2 if paired else 1)
    return max(banks, int(np.ceil(registers / WARP)))


def warp_addresses(shape=(32, 32), pad=0, direction="column", index=0) -> np.ndarray:
    """The word addresses a warp touches in a row-major float array of `shape` whose rows
    are padded by `pad` words: thread t reads element (t, index) for a "column" access, or
    (index, t) for a "row" access. Chapter 3."""
    rows, cols = _check.one_pair("shape", shape)
    pad = _check.integer("pad", pad, 0, 2**20)
    _check.choice("direction", direction, ("row", "column"))
    along, across = (rows, cols) if direction == "column" else (cols, rows)
    if along < WARP:
        raise ValueError(f"shape must hold a whole warp ({WARP} elements) along the {direction}, got {shape}")
    index = _check.integer("index", index, 0, across - 1)
    t = np.arange(WARP)
    row, col = (t, np.full(WARP, index)) if direction == "column" else (np.full(WARP, index), t)
    return row * (cols + pad) + col


def transpose(x, padded=False) -> Run:
    """out = x.T through 32 x 32 shared-memory tiles, one warp per tile row. Chapter 3.

    Each warp writes a row of the tile (conflict-free), then reads back a column, which in
    a 32 x 32 float tile puts all 32 threads in one bank; padding rows to 33 words spreads
    them over all banks. Shared-memory bytes are counted as wavefronts x 128 B, from
    `bank_conflicts` on the addresses each warp actually uses (whole tiles at the edges).
    """
    shape = _check.shape("x", x)
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] == 0:
        raise ValueError(f"x must be a non-empty square matrix, got shape {shape}")
    padded = _check.flag("padded", padded)
    n = shape[0]
    tile_n = TRANSPOSE_TILE
    tiles = -(-n // tile_n)
    _check.work("x's warp steps (2 per row of each 32 x 32 tile)", 2 * tile_n * tiles * tiles, MAX_STEPS // 4, "steps")
    x = _check.array("x", x)
    width = tile_n + (1 if padded else 0)
    run = Run(np.zeros_like(x))
    for r0 in range(0, n, tile_n):
        for c0 in range(0, n, tile_n):
            tile = np.zeros(tile_n * width)  # the shared array, as words
            for ty in range(tile_n):  # warp ty copies row ty of the block's input tile
                cols = np.arange(tile_n)
                if r0 + ty < n:  # threads past the matrix's edge load nothing
                    valid = c0 + cols < n
                    tile[ty * width + cols[valid]] = x[r0 + ty, c0 + cols[valid]]
                    run.add("global loaded", 4 * valid.sum())
                run.add("smem", WAVEFRONT_BYTES * bank_conflicts(ty * width + cols))
            for ty in range(tile_n):  # warp ty writes row c0 + ty of out from column ty
                lanes = np.arange(tile_n)
                addr = lanes * width + ty
                if c0 + ty < n:
                    valid = r0 + lanes < n
                    run.result[c0 + ty, r0 + lanes[valid]] = tile[addr[valid]]
                    run.add("global stored", 4 * valid.sum())
                run.add("smem", WAVEFRONT_BYTES * bank_conflicts(addr))
    moved = run.parts["global loaded"] + run.parts["global stored"]
    run.bytes = {"registers": 0, "smem": run.parts["smem"], "l2": moved, "hbm": moved}
    return run


def _heads(q, k, v):
    shapes = [_check.shape(name, t) for name, t in (("q", q), ("k", k), ("v", v))]
    if len(shapes[0]) != 4 or shapes[1] != shapes[0] or shapes[2] != shapes[0] or 0 in shapes[0]:
        raise ValueError(f"q, k and v must be non-empty arrays of one shape (batch, heads, seq, head_dim), got "
                         f"{shapes[0]}, {shapes[1]}, {shapes[2]}")
    b, h, n, d = shapes[0]
    _check.work("q's batch x heads x seq²", b * h * n * n, MAX_WORK // 4, "scores")
    _check.work("q's batch x heads x seq² x head_dim", b * h * n * n * d, MAX_WORK, "multiply-adds")
    return tuple(_check.array(name, t) for name, t in (("q", q), ("k", k), ("v", v)))


def standard_attention(q, k, v, dtype="fp16") -> Run:
    """softmax(Q K^T / sqrt(d)) V in three passes through HBM, as Dao et al.'s Algorithm 0:
    S is written out, read back by the softmax and written as P, then read with V.
    Computed in float64; bytes counted at `dtype`'s size. Chapter 5."""
    q, k, v = _heads(q, k, v)
    s = _check.dtype_bytes(dtype)
    bh, n, d = q.shape[0] * q.shape[1], q.shape[2], q.shape[3]
    run = Run(np.zeros_like(q))
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(d)  # kernel 1: read Q, K; write S
    run.add("Q, K read", s * bh * 2 * n * d)
    run.add("S written", s * bh * n * n)
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))  # kernel 2: read S; write P
    probs = shifted / shifted.sum(axis=-1, keepdims=True)
    run.add("S read", s * bh * n * n)
    run.add("P written", s * bh * n * n)
    run.result = probs @ v  # kernel 3: read P, V; write O
    run.add("P, V read", s * bh * (n * n + n * d))
    run.add("O written", s * bh * n * d)
    total = sum(run.parts.values())
    run.bytes = {"l2": total, "hbm": total}
    return run


def online_softmax_step(m, l, acc, scores, values):
    """One step of the online softmax: fold a new block of `scores` (rows x cols) and the
    matching `values` (cols x d) into the running row maximum `m`, denominator `l` and
    unnormalised output `acc`. The final output is acc / l. Chapter 5."""
    scores, values = _check.array("scores", scores, np.inf), _check.array("values", values, np.inf)
    if scores.ndim < 2 or values.ndim < 2 or scores.shape[-1] != values.shape[-2]:
        raise ValueError(f"scores and values must be matrices (rows x cols, cols x d) of matching cols, got shapes "
                         f"{scores.shape} and {values.shape}")
    rows = scores.shape[:-1] + (1,)
    m = _check.running("m", m, rows, start=-np.inf)
    l = _check.running("l", l, rows)
    acc = _check.running("acc", acc, scores.shape[:-1] + values.shape[-1:])
    m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))
    p = np.exp(scores - m_new)
    correction = np.exp(m - m_new)  # rescales what was summed under the old maximum
    return m_new, l * correction + p.sum(axis=-1, keepdims=True), acc * correction + p @ values


def online_softmax(x, block: int):
    """softmax(x) along the last axis, reading x one block of `block` columns at a time and
    never holding more than one block: the online softmax of chapter 5, with the identity as
    the values, so that acc collects the exponentials themselves."""
    shape = _check.shape("x", x)
    block = _check.one("block", block)
    if len(shape) != 2 or 0 in shape:
        raise ValueError(f"x must be a non-empty 2-D array (rows x columns), got shape {shape}")
    rows, cols = shape
    _check.work("x's columns²", cols * cols, MAX_WORK // 4, "elements")
    _check.work("x's rows x columns²", rows * cols * cols, MAX_WORK, "multiply-adds")
    _check.work("x's blocks of columns", -(-cols // block), MAX_STEPS, "steps")
    x = _check.array("x", x)
    m, l, acc = np.full((rows, 1), -np.inf), np.zeros((rows, 1)), np.zeros((rows, cols))
    eye = np.eye(cols)  # its rows j0 to j0 + block place that block's exponentials in their columns
    for j0 in range(0, cols, block):
        m, l, acc = online_softmax_step(m, l, acc, x[:, j0:j0 + block], eye[j0:j0 + block])
    return acc / l


def flash_attention(q, k, v, block=(128, 64), dtype="fp16") -> Run:
    """FlashAttention forward with query blocks outer (as FlashAttention-2 orders it). For
    each block of Br query rows: load Q_i once, stream K and V in tiles of Bc rows, keep the
    scores, the running row maximum m and denominator l on chip (online softmax), and write
    O_i once. The N x N matrix never exists. Computed in float64. Chapter 5."""
    q, k, v = _heads(q, k, v)
    s = _check.dtype_bytes(dtype)
    b_r, b_c = _check.one_pair("block", block)
    n, d = q.shape[2], q.shape[3]
    _check.work("the flash blocks (seq / block[0] x seq / block[1])", -(-n // b_r) * -(-n // b_c), MAX_STEPS, "steps")
    scale = 1 / np.sqrt(d)
    run = Run(np.zeros_like(q))
    heads = q.shape[0] * q.shape[1]
    for i0 in range(0, n, b_r):
        q_i = q[:, :, i0:i0 + b_r]
        rows = q_i.shape[2]
        run.add("Q read", s * heads * rows * d)
        m_i = np.full(q_i.shape[:3] + (1,), -np.inf)
        l_i = np.zeros(q_i.shape[:3] + (1,))
        acc = np.zeros(q_i.shape)
        for j0 in range(0, n, b_c):
            k_j, v_j = k[:, :, j0:j0 + b_c], v[:, :, j0:j0 + b_c]
            run.add("K, V read", s * heads * 2 * k_j.shape[2] * d)
            m_i, l_i, acc = online_softmax_step(m_i, l_i, acc, q_i @ k_j.swapaxes(-1, -2) * scale, v_j)
        run.result[:, :, i0:i0 + b_r] = acc / l_i
        run.add("O written", s * heads * rows * d)
    total = sum(run.parts.values())
    run.bytes = {"l2": total, "hbm": total}
    return run


def sectors_touched(byte_addresses) -> int:
    """The 32-byte sectors a warp's access touches, given each thread's byte address:
    the number of distinct `address // 32`. Chapter 2 checks `warp_sectors` with it."""
    addr = np.asarray(byte_addresses)
    if addr.shape != (WARP,) or not np.issubdtype(addr.dtype, np.integer) or np.any(addr < 0):
        raise ValueError(f"byte_addresses must be {WARP} non-negative integers, got {byte_addresses!r}")
    return len(np.unique(addr // SECTOR_BYTES))


def strided_read(x, stride: int) -> Run:
    """y[i] = x[i * stride] for i < len(x) // stride, warp by warp, counting the sectors
    each warp's read touches and the coalesced writes. Chapter 2."""
    shape = _check.shape("x", x)
    stride = _check.one("stride", stride)
    n = shape[0] // stride if len(shape) == 1 else 0
    if n < 1:
        raise ValueError(f"x must be a 1-D array of at least stride={stride} elements, got shape {shape}")
    _check.work("x's warps (len(x) / stride / 32)", -(-n // WARP), MAX_STEPS, "steps")
    x = _check.array("x", x, float(np.finfo(np.float32).max)).astype(np.float32)  # the kernel's floats
    run = Run(np.empty(n, np.float32))
    for w0 in range(0, n, WARP):
        lanes = np.arange(w0, w0 + WARP)  # a partial last warp counts as a whole one
        run.add("sectors read", sectors_touched(lanes * stride * 4))
        live = lanes[lanes < n]
        run.result[live] = x[live * stride]
        run.add("bytes written", 4 * len(live))
    moved = run.parts["sectors read"] * SECTOR_BYTES + run.parts["bytes written"]
    run.bytes = {"registers": 0, "smem": 0, "l2": moved, "hbm": moved}
    return run


# Decode attention over a paged KV cache, split along the context (chapter 9; `gpumodel.decode`).


def paged_decode_attention(q, k, v, page_tokens: int = 16, splits: int = 1, kv: str = "fp16", seed: int = 0) -> Run:
    """One sequence's decode attention for one layer: `q` (heads x d) against the cached `k`
    and `v` (context x kv_heads x d), with the cache stored in pages of `page_tokens` rows
    scattered over a pool (a page table drawn from `seed`), each page holding one key-value
    head's rows end to end (rows of `gpumodel.decode.row_bytes(d, kv)` bytes, pages a whole number
    of sectors apart). The pages are cut into `splits` runs (np.array_split); one block per
    key-value head per run looks up its pages, reads their rows and computes, for the group of
    query heads sharing that head, the partial softmax's output and log-sum-exp; with more than
    one split the partials (fp32) are written, read back and merged. Counts the sectors each
    block's rows fill, the page indices looked up (4 bytes each) and the partials' bytes, in
    `parts`; returns softmax(q k^T / sqrt(d)) v (heads x d), computed in float64. Chapter 9."""
    from .decode import PARTIAL_BYTES, paged_kv, row_bytes

    shape_q, shape_k, shape_v = _check.shape("q", q), _check.shape("k", k), _check.shape("v", v)
    if len(shape_q) != 2 or 0 in shape_q:
        raise ValueError(f"q must be an array of heads x d numbers, got shape {shape_q}")
    heads, d = shape_q
    if len(shape_k) != 3 or 0 in shape_k:
        raise ValueError(f"k must be an array of context x kv_heads x d numbers, got shape {shape_k}")
    if shape_k[2] != d or heads % shape_k[1]:
        raise ValueError(f"q and k must share d, and q's heads be a multiple of k's kv_heads, got shapes {shape_q} "
                         f"and {shape_k}")
    if shape_v != shape_k:
        raise ValueError(f"v must be an array of k's shape {shape_k}, got shape {shape_v}")
    context, kv_heads = shape_k[:2]
    _check.work("k's context x kv_heads", context * kv_heads, MAX_STEPS * 64, "rows")
    q, k, v = (_check.array(name, t) for name, t in (("q", q), ("k", k), ("v", v)))
    row = int(row_bytes(d, kv))
    layout = paged_kv(context, page_tokens, row)
    _check.work("page_tokens x pages x kv_heads (the pool's rows)", layout.pages * layout.page_tokens * kv_heads,
                2 * MAX_STEPS * 64, "rows")
    splits = _check.one("splits", splits)
    _check.not_larger("splits", splits, "the pages", layout.pages)
    table = np.random.default_rng(_check.one("seed", seed, zero=True)).permutation(layout.pages)  # logical -> physical
    pools = {}
    for name, x in (("K", k), ("V", v)):  # write the cache into its pages, through the table
        pool = np.zeros((layout.pages, kv_heads, page_tokens, d))
        t = np.arange(context)
        pool[table[t // page_tokens], :, t % page_tokens] = x
        pools[name] = pool
    group, scale = heads // kv_heads, 1 / np.sqrt(d)
    run = Run(np.zeros((heads, d)))
    outputs, lses = [], []
    for pages in np.array_split(np.arange(layout.pages), splits):
        o_split, lse_split = np.zeros((heads, d)), np.zeros((heads, 1))
        for h in range(kv_heads):  # one block: this key-value head, these pages
            run.add("page table read", 4 * len(pages))
            tokens = np.concatenate([np.arange(p * page_tokens, min(context, (p + 1) * page_tokens)) for p in pages])
            where = table[tokens // page_tokens]  # each row's physical page
            starts = (where * kv_heads + h) * layout.stride + (tokens % page_tokens) * row  # byte offsets in a pool
            touched = len(np.unique((starts[:, None] + np.arange(row)[None, :]) // SECTOR_BYTES))
            rows = {}
            for name, pool in pools.items():
                run.add(f"{name} read", SECTOR_BYTES * touched)
                rows[name] = pool[where, h, tokens % page_tokens]
            q_g = q[h * group:(h + 1) * group]
            scores = q_g @ rows["K"].T * scale
            m = scores.max(axis=1, keepdims=True)
            p = np.exp(scores - m)
            l = p.sum(axis=1, keepdims=True)
            o_split[h * group:(h + 1) * group] = p @ rows["V"] / l
            lse_split[h * group:(h + 1) * group] = m + np.log(l)
        outputs.append(o_split)
        lses.append(lse_split)
        if splits > 1:
            run.add("partials written", PARTIAL_BYTES * heads * (d + 1))
    if splits > 1:  # the merge: read every split's partials, rescale by exp(lse_s - lse) and add
        run.add("partials read", PARTIAL_BYTES * heads * (d + 1) * splits)
        lse = np.logaddexp.reduce(np.stack(lses), axis=0)
        run.result = sum(np.exp(l_s - lse) * o_s for o_s, l_s in zip(outputs, lses))
    else:
        run.result = outputs[0]
    total = sum(run.parts.values())
    run.bytes = {"l2": total, "hbm": total}
    return run


# A ring all-reduce among simulated GPUs (chapter 10; `gpumodel.collectives`).

def ring_allreduce(x) -> Run:
    """Sum the rows of `x` (one row per GPU: n x m, float32) as a ring all-reduce does: the row
    cut into n chunks; n - 1 reduce-scatter steps, in each of which GPU g sends one chunk to GPU
    g + 1, which adds it to its own; then n - 1 all-gather steps that pass the summed chunks on.
    Every GPU's row ends as the sum (`result`, n x m). `parts["bytes sent by GPU g"]` counts what
    each sent, `bytes["link"]` the most any GPU sent; `parts["steps"]` the exchanges, one after
    another. Chunks differ by at most one element when n does not divide m. Chapter 10."""
    shape = _check.shape("x", x)
    if len(shape) != 2 or shape[0] < 2 or shape[1] < 1:
        raise ValueError(f"x must be a 2-D array of one row per GPU, at least 2 rows and 1 column, got shape {shape}")
    _check.work("x's elements times its GPUs", shape[0] * shape[0] * shape[1], MAX_WORK, "element moves")
    rows = _check.array("x", x, float(np.finfo(np.float32).max)).astype(np.float32)
    n, m = shape
    cuts = np.linspace(0, m, n + 1).round().astype(int)
    chunk = [slice(cuts[c], cuts[c + 1]) for c in range(n)]
    run = Run(rows.copy())
    sent = np.zeros(n)
    for step in range(2 * (n - 1)):
        gathering = step >= n - 1
        # GPU g sends chunk (g - step) mod n: a partial sum while reducing, a finished one while gathering.
        outgoing = [run.result[g, chunk[(g - step) % n]].copy() for g in range(n)]
        for g in range(n):
            to, c = (g + 1) % n, chunk[(g - step) % n]
            run.result[to, c] = outgoing[g] if gathering else run.result[to, c] + outgoing[g]
            sent[g] += outgoing[g].nbytes
        run.add("steps", 1)
    for g in range(n):
        run.add(f"bytes sent by GPU {g}", float(sent[g]))
    run.bytes = {"link": float(sent.max())}
    return run
