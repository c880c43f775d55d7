"""Resource limits: a tensor too large to hold is refused before anything allocates it.

A model, IR file or input can declare shapes whose product is astronomically large
(a dimension of 99999999999, a dilation of 2**31). numpy would fail with "Unable to
allocate 745 GiB" deep inside a kernel, or, worse, succeed lazily and let the machine
swap. The importers, the IR parser and the interpreters check each tensor's byte size
against a limit first and report the tensor that exceeds it.

The limit is `DEFAULT_MAX_TENSOR_BYTES` (2 GiB), or the environment variable
NPUC_MAX_TENSOR_BYTES, or the tools' `--max-tensor-bytes` option (which wins), as a number of
bytes with an optional K, M, G or T suffix (powers of 1024).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from .diagnostics import KernelError, NpucError
from .shape_text import shape_text

DEFAULT_MAX_TENSOR_BYTES = 2 << 30
#: The most samples, steps or batch entries a count option takes (a C int's range).
MAX_COUNT = 2**31 - 1
ENV = "NPUC_MAX_TENSOR_BYTES"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_OPTION: ContextVar[int | None] = ContextVar("npuc_max_tensor_bytes", default=None)


class TensorTooLarge(KernelError):
    """A tensor whose byte size exceeds the limit: a user error (the input declares it),
    reported with the op that would have made it when a kernel meets it."""


def parse_size(text: str) -> int:
    """'4G' -> 4 GiB; a plain number is bytes. ValueError if it is not a positive size."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE | re.ASCII)
    if match is None or int(match.group(1)) <= 0:
        raise ValueError(f"not a positive size: '{text}' (bytes, or a number with K, M, G, T)")
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def max_tensor_bytes() -> int:
    option = _OPTION.get()
    if option is not None:
        return option
    text = os.environ.get(ENV, "")
    if not text:
        return DEFAULT_MAX_TENSOR_BYTES
    try:
        return parse_size(text)
    except ValueError as e:
        raise NpucError(f"{ENV}: {e}") from None


@contextmanager
def tensor_limit(limit: int | None) -> Iterator[None]:
    """Within the block, the limit is `limit` bytes (None: the default or NPUC_MAX_TENSOR_BYTES)."""
    token = _OPTION.set(limit)
    try:
        yield
    finally:
        _OPTION.reset(token)


def _size_text(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} bytes"


def check_tensor(
    shape: Sequence[int], itemsize: int, what: str, location: str | None = None
) -> None:
    """Refuse a tensor of `shape` and `itemsize`-byte elements larger than the limit.

    `what` names it in the message ("input 'image'", "the padded input of layer 'conv1'")."""
    dims = [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise NpucError(f"{what} has a negative dimension ({shape_text(dims)})", location)
    size = math.prod(dims) * max(int(itemsize), 1)
    limit = max_tensor_bytes()
    if size > limit:
        raise TensorTooLarge(
            f"{what} of shape {shape_text(dims)} would take {_size_text(size)}, more than the "
            f"limit of {_size_text(limit)} (--max-tensor-bytes or {ENV} raise it)",
            location,
        )


def sequence_of(name: str, steps: int) -> str:
    """How check_tensor names the data of input `name` over `steps` calls (--sequence)."""
    return f"input '{name}' over {steps} steps (--sequence)"


class _LimitAction(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        try:
            limit = parse_size(str(values))
        except ValueError as e:
            parser.error(f"argument {option_string}: {e}")
        setattr(namespace, self.dest, limit)
        _OPTION.set(limit)  # reset when the enclosing reported_errors ends


def add_limit_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-tensor-bytes",
        action=_LimitAction,
        metavar="SIZE",
        help=f"refuse tensors larger than SIZE bytes (K, M, G suffixes; default "
        f"{_size_text(DEFAULT_MAX_TENSOR_BYTES)}, or {ENV})",
    )
