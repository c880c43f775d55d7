"""The rounding modes of npuc/integer.py on exact rationals: the reference the integer and
float64 requantization tests compare against."""

from __future__ import annotations

import math
from fractions import Fraction

MODES = ("half_away_from_zero", "half_to_even", "half_up")


def round_fraction(value: Fraction, mode: str) -> int:
    """`value` rounded to an integer, ties by `mode` (half away from zero, half to even, or
    half up: toward +infinity)."""
    floor = math.floor(value)
    rest = value - floor
    if rest != Fraction(1, 2):
        return floor + (rest > Fraction(1, 2))
    if mode == "half_to_even":
        return floor + floor % 2
    if mode == "half_up":
        return floor + 1
    if mode != "half_away_from_zero":
        raise ValueError(f"unknown rounding mode {mode!r}")
    return floor + 1 if value > 0 else floor
