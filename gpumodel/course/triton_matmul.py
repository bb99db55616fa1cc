"""Chapter 4's Triton kernel: a matrix product whose programs take their tiles of C in grouped
order, `GROUP` rows of tiles at a time, column by column within the group, as Triton's matmul
tutorial orders them (our own kernel, in its style). It needs Triton, so only
`roofline_levels.triton_order` imports it, where Triton is installed."""

import triton
import triton.language as tl


@triton.jit
def grouped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   GROUP: tl.constexpr):
    # program pid takes the tile (pm, pn) of C: GROUP rows of tiles, walked column by column
    pid = tl.program_id(0)
    across = tl.cdiv(N, BN)
    per_group = GROUP * across
    first = (pid // per_group) * GROUP
    height = min(tl.cdiv(M, BM) - first, GROUP)
    pm = first + (pid % per_group) % height
    pn = (pid % per_group) // height
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])  # a BM x BK tile of A's row panel
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])  # a BK x BN tile of B's column panel
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
