"""Chapter `00_programming_model` (The GPU as a machine you can program): its exercises' checkers.

A checker takes the learner's answer and returns `Feedback`."""

from __future__ import annotations

import math

import numpy as np

from .. import _check
from ..simulate import sectors_touched
from ..hardware import MAX_BLOCK, WARP
from .checks import Feedback, check_number


MAX_ELEMENT = 16
"""The widest element one thread loads in one instruction, bytes (a float4)."""


def check_blocks(n, threads: int, answer) -> Feedback:
    """Chapter 0: how many blocks of `threads` threads a one-thread-per-element kernel
    launches over `n` elements (the grid rounds up; the bounds check idles the rest)."""
    n, threads = _check.integer("n", n, 1, 2**53), _check.integer("threads", threads, 1, MAX_BLOCK)
    blocks = math.ceil(n / threads)
    idle = blocks * threads - n
    return check_number(answer, blocks, "blocks", rtol=0,
                        explain=f"{blocks} blocks x {threads} threads = {blocks * threads:,} threads; the last "
                        f"{idle} fail `if (i < n)` and do nothing.",
                        hint="Every element needs a thread, and a grid holds whole blocks only: round the "
                        "division the way that leaves no element without a thread.")


def warp_load_sectors(elem_bytes: int, stride: int = 1) -> int:
    """Chapter 0: the 32-byte sectors one warp's load touches when thread t reads element
    t x `stride` of an array of `elem_bytes`-byte elements (counted from the addresses)."""
    elem_bytes = _check.integer("elem_bytes", elem_bytes, 1, MAX_ELEMENT)
    stride = _check.integer("stride", stride, 1, 2**32)
    return sectors_touched(np.arange(WARP) * stride * elem_bytes)


def check_sectors(elem_bytes: int, stride: int, answer) -> Feedback:
    """Chapter 0: how many 32-byte sectors one warp's load touches (see `warp_load_sectors`)."""
    sectors = warp_load_sectors(elem_bytes, stride)
    useful = WARP * elem_bytes
    return check_number(answer, sectors, "sectors", rtol=0,
                        explain=f"The warp asks for {useful} bytes and the memory moves {sectors} x 32 = "
                        f"{sectors * 32} bytes: {useful / (sectors * 32):.0%} of them used.",
                        hint="Write down the byte address of threads 0, 1 and 31, divide by 32, and count the "
                        "different whole numbers you would get over all 32 threads.")


WIDGET_EXERCISES = ()
"""This chapter's widget exercises, in the order it shows them (none: its exercises are typed)."""


RELIES_ON = {
    "ex-model-blocks": (),  # the question gives n and the block size; the rule (round up) is taught above
    "ex-model-float4": (),  # the question gives the element and sector sizes
    "ex-model-stride": (),  # the question gives the stride and the sector size
}
"""What each checkpoint and exercise needs from the page above it (tests/test_checkpoints.py)."""
