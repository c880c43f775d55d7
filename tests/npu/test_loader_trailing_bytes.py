"""A .npubin with bytes after its end is refused, by the loader and by `npu-run`.

The header's total size must equal the file's (docs/binary-format.md, Validation 3) and
nothing but zeros may follow the last section: a file extended by a transfer or a
concatenation must not load as if it were whole.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from npu_programs import fix_crcs
from tool_runner import run_tool

from npuc.backend.npubin import encode_program
from npuc.diagnostics import NpucError
from npuc.runtime.loader import load, load_file

TOTAL_SIZE_AT = 16  # the header's u64 total size


@pytest.fixture
def binary(programs) -> bytes:
    return encode_program(programs["eltwise"])


def with_total(data: bytes) -> bytes:
    """`data` with the header's total size and the CRCs made to match it."""
    fixed = bytearray(data)
    struct.pack_into("<Q", fixed, TOTAL_SIZE_AT, len(fixed))
    fix_crcs(fixed)
    return bytes(fixed)


@pytest.mark.parametrize("fill", [0x00, 0xA5])
@pytest.mark.parametrize("count", [1, 8, 64])
def test_appended_bytes_are_refused_at_the_total_size(binary, count, fill):
    extended = binary + bytes([fill]) * count
    with pytest.raises(NpucError) as e:
        load(extended)
    assert e.value.message == (
        f"byte {TOTAL_SIZE_AT} ({TOTAL_SIZE_AT:#x}): the header says the file has "
        f"{len(binary)} bytes, it has {len(binary) + count} (truncated or extended)"
    )


@pytest.mark.parametrize("count", [1, 8, 64])
def test_non_zero_bytes_after_the_last_section_are_refused(binary, count):
    # The header is made to agree with the longer file: only the padding rule is left.
    tail = bytes(count - 1) + b"\x01"
    with pytest.raises(NpucError) as e:
        load(with_total(binary + tail))
    at = len(binary) + count - 1
    assert e.value.message == f"byte {at} ({at:#x}): padding after the last section must be zero"


def test_zero_padding_after_the_last_section_is_allowed(binary):
    # "nothing follows the last section but zeros": zeros the header counts are padding.
    assert load(with_total(binary + bytes(64))) == load(binary)


@pytest.mark.parametrize(
    "tail, header_fixed, message",
    [
        (bytes(8), False, "byte 16 (0x10): the header says the file has"),
        (b"\x7f" * 8, True, "padding after the last section must be zero"),
    ],
)
def test_npu_run_refuses_the_extended_file(binary, tmp_path: Path, tail, header_fixed, message):
    path = tmp_path / "extended.npubin"
    data = binary + tail
    path.write_bytes(with_total(data) if header_fixed else data)
    with pytest.raises(NpucError) as e:
        load_file(path)
    assert message in e.value.message and e.value.location == str(path)
    result = run_tool("npu-run", path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"npu-run: {path}: error: ") and message in lines[0], lines
