"""Triton kernels in the style of Triton's tutorials, written for the lab's tests."""
import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    x = tl.load(x_ptr + offs, mask=keep)
    y = tl.load(y_ptr + offs, mask=keep)
    tl.store(out_ptr + offs, x + y, mask=keep)


@triton.jit
def column_sum(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr):
    col = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * cols + col, mask=offs < rows, other=0.0)
    tl.store(out_ptr + col, tl.sum(x, axis=0))


@triton.jit
def softmax_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    keep = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=keep, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=keep)


@triton.jit
def copy_through_helper(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, _load_block(x_ptr, offs, n), mask=offs < n)


@triton.jit
def _load_block(ptr, offs, n):
    return tl.load(ptr + offs, mask=offs < n)


@triton.jit
def past_the_end(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs + 1000))


@triton.jit
def layernorm_rows(x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    # a row per program, in chunks of BLOCK: the mean, the variance, then the normalised row
    row = tl.program_id(0)
    start = x_ptr + row * cols
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(0, cols, BLOCK):
        offs = c + tl.arange(0, BLOCK)
        total += tl.load(start + offs, mask=offs < cols, other=0.0)
    mean = tl.sum(total, axis=0) / cols
    spread = tl.zeros((BLOCK,), dtype=tl.float32)
    for c in range(0, cols, BLOCK):
        offs = c + tl.arange(0, BLOCK)
        x = tl.load(start + offs, mask=offs < cols, other=0.0)
        spread += tl.where(offs < cols, (x - mean) * (x - mean), 0.0)
    rstd = 1 / tl.sqrt(tl.sum(spread, axis=0) / cols + eps)
    for c in range(0, cols, BLOCK):
        offs = c + tl.arange(0, BLOCK)
        keep = offs < cols
        x = tl.load(start + offs, mask=keep, other=0.0)
        w = tl.load(w_ptr + offs, mask=keep)
        b = tl.load(b_ptr + offs, mask=keep)
        tl.store(y_ptr + row * cols + offs, (x - mean) * rstd * w + b, mask=keep)


@triton.jit
def transpose_tile(x_ptr, y_ptr, M, N, B: tl.constexpr):
    # program (i, j) reads the B x B tile at rows i*B, columns j*B of the M x N x and writes it transposed
    i, j = tl.program_id(0), tl.program_id(1)
    r = i * B + tl.arange(0, B)
    c = j * B + tl.arange(0, B)
    tile = tl.load(x_ptr + c[:, None] + r[None, :] * N)  # element (c, r): x[r, c], a transposed load
    tl.store(y_ptr + c[:, None] * M + r[None, :], tile)


@triton.jit
def histogram(x_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    bins = tl.load(x_ptr + offs, mask=keep, other=0)
    tl.atomic_add(counts_ptr + bins, 1, mask=keep)


@triton.jit
def spin_once(lock_ptr, out_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(out_ptr + tl.program_id(0), 1.0)
    tl.atomic_xchg(lock_ptr, 0)


@triton.jit
def divides_by_zero_index(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs), mask=offs < BLOCK // 0)


@triton.jit
def spin(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    while tl.sum(x, axis=0) >= 0:
        x = x + 1.0
    tl.store(x_ptr + offs, x)


@triton.jit
def scaled(x_ptr, y_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = offs < n
    a = alpha.to(tl.float32)  # as Liger-Kernel's kernels cast their float arguments
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=keep) * a, mask=keep)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)],
                 key=["n"])
@triton.jit
def tuned_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def doubled_tiles(x_ptr, y_ptr, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    """A descriptor made in the kernel (tl.make_tensor_descriptor), as Triton's tutorials now write tiles."""
    src = tl.make_tensor_descriptor(x_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[rows, cols], strides=[cols, 1], block_shape=[BM, BN])
    at = [tl.program_id(0) * BM, tl.program_id(1) * BN]
    dst.store(at, src.load(at) * 2)


def _descriptor_blocks(nargs):
    """What a tutorial's autotune pre_hook does: the host descriptors' tiles set from the configuration."""
    for name, rows in (("q_desc", "BM"), ("k_desc", "BN"), ("v_desc", "BN"), ("o_desc", "BM")):
        nargs[name].block_shape = [nargs[rows], nargs["D"]]


@triton.autotune(configs=[triton.Config({"BM": 32, "BN": 16}, num_warps=4, pre_hook=_descriptor_blocks),
                          triton.Config({"BM": 64, "BN": 32}, num_warps=8, pre_hook=_descriptor_blocks)],
                 key=["seq"])
@triton.jit
def attention_by_descriptors(q_desc, k_desc, v_desc, o_desc, scale, seq, D: tl.constexpr, BM: tl.constexpr,
                             BN: tl.constexpr):
    """A FlashAttention forward over host descriptors of (heads x seq) x D fp16 rows: a query tile
    kept, the key and value tiles of its head streamed, the softmax online in base 2."""
    head_row = tl.program_id(1) * seq
    q = q_desc.load([head_row + tl.program_id(0) * BM, 0])
    best = tl.full([BM], float("-inf"), tl.float32)
    total = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for start in range(0, seq, BN):
        k = k_desc.load([head_row + start, 0])
        s = tl.dot(q, k.T) * (scale * 1.4426950408889634)
        new_best = tl.maximum(best, tl.max(s, 1))
        p = tl.math.exp2(s - new_best[:, None])
        fade = tl.math.exp2(best - new_best)
        total = total * fade + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v_desc.load([head_row + start, 0]), acc * fade[:, None])
        best = new_best
    o_desc.store([head_row + tl.program_id(0) * BM, 0], (acc / total[:, None]).to(tl.float16))


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 32}, num_warps=1)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def even_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """Triton's heuristics decorator under its autotuner: EVEN computed from the chosen BLOCK."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1)
    else:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) - 1, mask=offs < n)


@triton.jit
def summed_by_table(table_ptr, lengths_ptr, out_ptr, BLOCK: tl.constexpr):
    """Each program sums the array whose address is its entry of a table (a grouped GEMM's way in)."""
    g = tl.program_id(0)
    base = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    offs = tl.arange(0, BLOCK)
    n = tl.load(lengths_ptr + g)
    x = tl.load(base + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + g, tl.sum(x, axis=0))


def _tiles_that_fit(configs, named_args, **kwargs):
    """An early_config_prune as the fused-attention tutorial writes one: the tiles no longer than
    the rows, read from the launch's keywords."""
    return [c for c in configs if c.kwargs["BLOCK"] <= kwargs["n"]]


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 32}, num_warps=1)],
                 key=["n"], prune_configs_by={"early_config_prune": _tiles_that_fit})
@triton.jit
def doubled_rows(x_ptr, y_ptr, rows, n, BLOCK: tl.constexpr):
    """Each program doubles a row of n floats, unmasked: it relies on the pruning to get BLOCK == n."""
    offs = tl.program_id(0) * n + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


@triton.jit
def softmax_persistent(y_ptr, x_ptr, x_stride, y_stride, rows, cols, BLOCK: tl.constexpr, num_stages: tl.constexpr):
    """The fused-softmax tutorial's form now: fewer programs than rows, each striding over the rows
    in a pipelined tl.range, num_stages a parameter of the kernel's own."""
    for r in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=num_stages):
        offs = tl.arange(0, BLOCK)
        row = tl.load(x_ptr + r * x_stride + offs, mask=offs < cols, other=-float("inf"))
        e = tl.exp(row - tl.max(row, axis=0))
        tl.store(y_ptr + r * y_stride + offs, e / tl.sum(e, axis=0), mask=offs < cols)
