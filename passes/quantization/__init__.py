"""Quantization: calibration (data sets, statistics, range strategies) and its passes."""
