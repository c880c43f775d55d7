"""Helpers of the `lower-to-npu` pass: strided views, op rules, dependencies (tokens)."""
