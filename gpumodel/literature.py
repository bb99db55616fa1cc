"""Figures other people measured, kept apart from ours and cited. Chapter 5."""

GPT2_MEDIUM = {
    "config": {"batch": 64, "heads": 16, "seq": 1024, "head_dim": 64, "gpu": "A100"},
    "standard": {"gflops": 66.6, "hbm_gb": 40.3, "runtime_ms": 41.7},
    "flash": {"gflops": 75.2, "hbm_gb": 4.4, "runtime_ms": 7.3},
    "source": "dao2022flashattention, Figure 2 (left), arXiv:2205.14135v2",
    "note": "forward + backward of the attention layer, as printed in the figure",
}
"""FlashAttention against standard attention for GPT-2 medium on an A100 (Dao et al. 2022)."""
