"""Tiling: layers, working sets, the cost model, manual and automatic plans, the rewrite."""
