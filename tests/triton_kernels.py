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
