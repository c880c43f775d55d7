"""The STATE section (format 1.1): state pairs of stateful programs in the binary, and
`npu-run NAME.npubin --sequence N` carrying them from call to call.

The layout is checked by a decoder written from docs/binary-format.md; every corruption
of the section (with the CRCs fixed, so the loader reaches its check) is refused with a
message naming a byte offset; a wake-word model from the corpus, compiled and run by
npu-run over a sequence, gives the qnn interpreter's outputs at every step, bit for bit.
"""

from __future__ import annotations

import dataclasses
import random
import re
import struct
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from corpus import CORPUS_DIR
from npu_programs import fix_crcs, inst, tensor

from npuc.backend.npubin import encode_module, encode_program
from npuc.backend.npubin_disasm import disassemble
from npuc.diagnostics import NpucError
from npuc.dialects.npu_isa import IODesc, Program, Region, StatePair
from npuc.printing import print_module
from npuc.runtime.executor import Executor
from npuc.runtime.loader import load
from npuc.tools import npu_compile, npu_opt, npu_run
from npuc.tools.run_binary import random_inputs

STATE_KIND = 8
ACC0 = np.array([[5, -7, 100, 0]], np.int8)  # the running maximum's initial value
COUNT0 = np.array([1, -2, 300], np.int16)  # 6 bytes: the value is padded to 8


def running_max() -> Program:
    """Two states: `acc` (i8) becomes max(acc, x) and is also the output `y`; `count` (i16,
    not quantized) passes through unchanged."""
    x = tensor("mutable", 0, (1, 4))
    acc = tensor("mutable", 8, (1, 4))
    count = tensor("mutable", 16, (3,), "i16")
    acc_next = tensor("mutable", 72, (1, 4))
    y = tensor("mutable", 64, (1, 4))
    count_next = tensor("mutable", 80, (3,), "i16")
    body = (
        inst("eltwise", (acc, x, acc_next), kind="maximum"),
        inst("dma", (acc_next, y), deps=(0,)),
        inst("dma", (count, count_next)),
    )
    return Program(
        "running_max",
        (Region("mutable", 128, "sram"),),
        (IODesc("x", x, 0.5, 3), IODesc("acc", acc, 0.5, 3), IODesc("count", count)),
        (IODesc("y", y, 0.5, 3), IODesc("acc", acc_next, 0.5, 3), IODesc("count", count_next)),
        (),
        body,
        state=(StatePair(1, 1, ACC0.tobytes()), StatePair(2, 2, COUNT0.astype("<i2").tobytes())),
    )


# --------------------------------------------------------------------------- from the doc


def sections(data: bytes) -> dict[int, tuple[int, int, int]]:
    """kind -> (table entry offset, section offset, size)."""
    (count,) = struct.unpack_from("<I", data, 12)
    out = {}
    for i in range(count):
        kind, _, offset, size = struct.unpack_from("<IIQQ", data, 32 + 32 * i)
        out[kind] = (32 + 32 * i, offset, size)
    return out


def doc_state(data: bytes) -> list[tuple[int, int, bytes]]:
    """(input, output, initial bytes) of each pair, checking the documented layout."""
    _, at, size = sections(data)[STATE_KIND]
    count, reserved = struct.unpack_from("<II", data, at)
    assert reserved == 0
    values = at + 8 + 24 * count
    pairs, position = [], 0
    for i in range(count):
        source, result, offset, length = struct.unpack_from("<IIQQ", data, at + 8 + 24 * i)
        assert offset == position and (values + offset) % 8 == 0
        pairs.append((source, result, data[values + offset : values + offset + length]))
        padded = -(-length // 8) * 8
        assert data[values + offset + length : values + offset + padded] == bytes(padded - length)
        position += padded
    assert 8 + 24 * count + position == size
    return pairs


def io_entries(data: bytes) -> list[int]:
    """Offsets of the IO section's entries: inputs, then outputs."""
    _, at, _ = sections(data)[3]
    n_in, n_out = struct.unpack_from("<II", data, at + 4)
    entries, cursor = [], at + 16
    for _ in range(n_in + n_out):
        entries.append(cursor)
        rank = data[cursor + 16 + 2]
        cursor += 32 + 8 * rank
    return entries


# --------------------------------------------------------------------------- the format


def test_state_round_trips_and_follows_the_doc(ctx):
    program = running_max()
    data = encode_program(program)
    assert struct.unpack_from("<HH", data, 4) == (1, 1)  # a STATE section: version 1.1
    assert load(data) == program
    assert doc_state(data) == [(1, 1, ACC0.tobytes()), (2, 2, COUNT0.astype("<i2").tobytes())]
    # binary -> text -> binary is byte-identical, the text states the pairs
    module = disassemble(load(data), ctx)
    text = print_module(module, elide_above=None)
    assert "#npu.state<1 -> 1, dense<[5, -7, 100, 0]> : tensor<4xi8>>" in text
    assert encode_module(module) == data
    from xdsl.parser import Parser

    assert encode_module(Parser(ctx, text).parse_module()) == data


def test_stateless_programs_encode_as_format_1_0(programs):
    for name, program in [*programs.items(), ("stripped", running_max())]:
        program = dataclasses.replace(program, state=())
        data = encode_program(program)
        assert struct.unpack_from("<HH", data, 4) == (1, 0), name
        assert STATE_KIND not in sections(data), name
        assert load(data) == program


def test_the_dialect_verifies_state_pairs(ctx):
    bad = dataclasses.replace(running_max(), state=(StatePair(0, 2, bytes(4)),))
    module = disassemble(bad, ctx)  # the disassembler writes what it is given
    with pytest.raises(Exception, match="state 0: input 0 'x' has shape 1x4, output 2 'count' 3"):
        module.verify()
    with pytest.raises(NpucError, match="cannot encode program 'running_max': state 0"):
        encode_program(bad)
    # trusting that lowering checked each instruction still checks the whole program
    with pytest.raises(NpucError, match="cannot encode program 'running_max': state 0"):
        encode_program(bad, instructions_checked=True)
    assert encode_program(running_max(), instructions_checked=True) == encode_program(running_max())


def patched(edit) -> bytes:
    data = bytearray(encode_program(running_max()))
    edit(data)
    fix_crcs(data)
    return bytes(data)


def _state_at(data: bytearray) -> int:
    return sections(bytes(data))[STATE_KIND][1]


def _set(fmt: str, where, value):
    """An edit writing `value` at `where(data)`."""
    return lambda data: struct.pack_into(fmt, data, where(data), value)


def _entry(i: int, field: int):
    return lambda data: _state_at(data) + 8 + 24 * i + field


def _io(i: int, field: int):
    return lambda data: io_entries(bytes(data))[i] + field


def _resize(delta: int):
    """Grow (zero bytes) or shrink the STATE section, which is the last one, and the file."""

    def edit(data: bytearray) -> None:
        table, _, size = sections(bytes(data))[STATE_KIND]
        if delta > 0:
            data.extend(bytes(delta))
        else:
            del data[delta:]
        struct.pack_into("<Q", data, table + 16, size + delta)
        struct.pack_into("<Q", data, 16, len(data))

    return edit


CORRUPTIONS = {
    "input out of range": (_set("<I", _entry(0, 0), 7), "state 0: input 7 is not among the 3"),
    "output out of range": (_set("<I", _entry(1, 4), 3), "state 1: output 3 is not among the 3"),
    "input twice": (_set("<I", _entry(1, 0), 1),
                    "state 1: input 1 is the state input of an earlier pair"),
    "output twice": (_set("<I", _entry(1, 4), 1),
                     "state 1: output 1 is the state output of an earlier pair"),
    "shape": (_set("<I", _io(4, 16 + 16 + 8), 2),  # output 1's last dimension: 4 -> 2
              "state 0: input 1 'acc' has shape 1x4, output 1 'acc' 1x2"),
    "element type": (_set("<B", _io(4, 16 + 1), 1),  # output 1: i8 -> u8
                     "has element type i8, output 1 'acc' u8"),
    "scale": (_set("<d", _io(4, 8), 0.25), "has scale 0.5, output 1 'acc' 0.25"),
    "zero point": (_set("<i", _io(4, 4), 4), "has zero point 3, output 1 'acc' 4"),
    "initial value too long": (_set("<Q", _entry(1, 16), 8),  # takes its 2 padding bytes
                               "state 1: initial value of 8 bytes, expected 6"),
    "initial value too short": (_set("<Q", _entry(0, 16), 3),  # its last byte is 0
                                "state 0: initial value of 3 bytes, expected 4"),
    "value misplaced": (_set("<Q", _entry(1, 8), 4),
                        "state 1: initial value at offset 4, expected 8"),
    "padding": (_set("<B", lambda d: _state_at(d) + 8 + 48 + 4, 1),
                "state 0: initial value padding must be zero"),
    "reserved": (_set("<I", lambda d: _state_at(d) + 4, 1), "STATE: reserved field must be zero"),
    "count": (_set("<I", _state_at, 1000), "STATE: 1000 entries do not fit"),
    "truncated": (_resize(-8), "state 1: an initial value of 6 bytes runs past the STATE"),
    "extended": (_resize(8), "STATE: 8 bytes after the last initial value"),
    "in a 1.0 file": (_set("<H", lambda d: 6, 0),
                      "a STATE section needs format version 1.1, the file says 1.0"),
}  # fmt: skip


@pytest.mark.parametrize("case", CORRUPTIONS)
def test_the_loader_refuses_a_corrupt_state(case):
    edit, message = CORRUPTIONS[case]
    with pytest.raises(NpucError, match=r"byte \d+ \(0x[0-9a-f]+\): .*" + re.escape(message)):
        load(patched(edit))


def test_state_errors_name_the_entry():
    data = patched(_set("<I", _entry(1, 0), 1))
    entry = sections(data)[STATE_KIND][1] + 8 + 24
    with pytest.raises(NpucError, match=f"byte {entry} "):
        load(data)


def test_corrupted_state_sections_never_crash_the_loader():
    """Bit flips and truncations inside the section: refused, or loaded to a valid program."""
    rng = random.Random(7)
    clean = encode_program(running_max())
    _, at, size = sections(clean)[STATE_KIND]
    for _ in range(400):
        data = bytearray(clean)
        for _ in range(rng.randint(1, 3)):
            data[at + rng.randrange(size)] ^= 1 << rng.randrange(8)
        if rng.random() < 0.3:
            _resize(-8 * rng.randint(1, 3))(data)
        fix_crcs(data)
        try:
            program = load(bytes(data))
        except NpucError as e:
            assert "byte " in e.message
            continue
        assert load(encode_program(program)) == program


# --------------------------------------------------------------------------- npu-run


def shows_state(stdout: str) -> bool:
    return re.search(r"^(step \d+: )?(acc|count)(\.q)?: ", stdout, re.M) is not None


def run_tool(main, argv: list, capsys) -> tuple[int, str, str]:
    """A tool's main run in-process: (exit status, stdout, stderr)."""
    try:
        main([str(a) for a in argv])
        status = 0
    except SystemExit as e:
        status = e.code or 0
    captured = capsys.readouterr()
    return status, captured.out, captured.err


@pytest.fixture
def running_max_bin(tmp_path: Path) -> Path:
    path = tmp_path / "running_max.npubin"
    path.write_bytes(encode_program(running_max()))
    return path


def test_npu_run_carries_the_state(running_max_bin, tmp_path, capsys):
    xs = np.random.default_rng(3).integers(-128, 128, (5, 1, 4)).astype(np.int8)
    np.save(tmp_path / "xs.npy", xs)
    out = tmp_path / "out.npz"
    argv = [running_max_bin, "--sequence", 5, "--input", f"x={tmp_path / 'xs.npy'}", "-o", out]
    status, stdout, stderr = run_tool(npu_run.main, argv, capsys)
    assert status == 0, stderr
    assert "step 4: y: shape (1, 4) float32" in stdout
    assert not shows_state(stdout)  # the state is not an output shown
    want = np.maximum.accumulate(np.concatenate([ACC0[None], xs]), axis=0)[1:]
    saved = np.load(out)
    assert sorted(saved.files) == ["y", "y.q"]
    np.testing.assert_array_equal(saved["y.q"], want)
    np.testing.assert_array_equal(saved["y"], (want.astype(np.float32) - 3) * 0.5)


def test_npu_run_starts_from_the_initial_state(running_max_bin, tmp_path, capsys):
    out = tmp_path / "out.npz"
    status, stdout, stderr = run_tool(npu_run.main, [running_max_bin, "-o", out], capsys)
    assert status == 0, stderr
    assert "note: no --input for 'x': using seeded random data (1, 4) int8" in stdout
    assert "no --input for 'acc'" not in stdout and not shows_state(stdout)
    x = random_inputs(running_max(), skip={"acc", "count"}, seed=0)["x"]
    np.testing.assert_array_equal(np.load(out)["y.q"], np.maximum(ACC0, x))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--sequence", "0"], "--sequence must be at least 1, not 0"),
        (["--sequence", "-3"], "--sequence must be at least 1, not -3"),
        (
            ["--sequence", "3", "--input", "x=XS"],
            "input 'x' has shape (5, 1, 4); with --sequence 3 it needs a leading axis of length 3",
        ),
        (["--input", "acc=XS"], "input 'acc' is state: it starts from the binary's initial"),
    ],
)
def test_npu_run_refuses_bad_sequences(running_max_bin, tmp_path, capsys, argv, message):
    np.save(tmp_path / "xs.npy", np.zeros((5, 1, 4), np.int8))
    argv = [a.replace("XS", str(tmp_path / "xs.npy")) for a in argv]
    status, _, stderr = run_tool(npu_run.main, [running_max_bin, *argv], capsys)
    assert status == 1
    assert message in stderr


def test_npu_run_sequence_of_a_stateless_binary(programs, tmp_path, capsys):
    """N independent calls, each with its own seeded random inputs (seed + step)."""
    program = programs["eltwise"]
    path = tmp_path / "eltwise.npubin"
    path.write_bytes(encode_program(program))
    out = tmp_path / "out.npz"
    status, stdout, stderr = run_tool(
        npu_run.main, [path, "--sequence", 3, "--seed", 10, "-o", out], capsys
    )
    assert status == 0, stderr
    assert "note: no --input for 'h': using seeded random data at each step" in stdout
    assert "step 2: prelu: shape (2, 3, 4) float32" in stdout
    executor = Executor(program)
    want = [executor.run(random_inputs(program, seed=10 + k))["prelu"] for k in range(3)]
    np.testing.assert_array_equal(np.load(out)["prelu.q"], np.stack(want))


def test_random_inputs_span_their_element_type(programs):
    program = programs["eltwise"]  # a: i8, b: u8, h: i16
    feeds = random_inputs(program, seed=1)
    assert {n: a.dtype for n, a in feeds.items()} == {"a": np.int8, "b": np.uint8, "h": np.int16}
    assert feeds["b"].max() > 128 and feeds["h"].min() < -128 and feeds["h"].max() > 127
    floats = random_inputs(programs["empty"], seed=1)["x"]
    assert floats.dtype == np.float32 and floats.min() < 0 < floats.max()


# --------------------------------------------------------------------------- a real model

WAKEWORD = CORPUS_DIR / "wakeword_alexa.tflite"
STEPS = 4


@cache
def wakeword_outputs() -> tuple[str, str, str]:
    """(input, the model's output, the last FULLY_CONNECTED's output): the scores vary
    from step to step on random frames, the model's probability is mostly 0."""
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(WAKEWORD))
    interpreter.allocate_tensors()
    tensors = interpreter.get_tensor_details()
    fc = [op for op in interpreter._get_ops_details() if op["op_name"] == "FULLY_CONNECTED"]
    source = interpreter.get_input_details()[0]["name"]
    output = interpreter.get_output_details()[0]["name"]
    return source, output, tensors[fc[-1]["outputs"][0]]["name"]


def test_compiled_wakeword_runs_a_sequence_bit_exact(tmp_path, capsys, ctx):
    import npuc
    from npuc.frontends.tflite_state import run_sequence

    source, *outputs = wakeword_outputs()
    argv = [WAKEWORD, "-t", "mcu-64", "-q", "--outputs", ",".join(outputs), "-o", tmp_path]
    status, _, stderr = run_tool(npu_compile.main, argv, capsys)
    assert status == 0, stderr
    binary = tmp_path / f"{WAKEWORD.stem}.npubin"
    program = load(binary.read_bytes())
    assert len(program.state) == 6
    frames = np.random.default_rng(5).integers(-128, 128, (STEPS, 1, 3, 40)).astype(np.int8)
    np.save(tmp_path / "frames.npy", frames)
    out = tmp_path / "out.npz"
    argv = [
        binary,
        "--sequence",
        STEPS,
        "--input",
        f"{source}={tmp_path / 'frames.npy'}",
        "-o",
        out,
    ]
    status, stdout, stderr = run_tool(npu_run.main, argv, capsys)
    assert status == 0, stderr
    assert f"step {STEPS - 1}: {outputs[1]}: shape" in stdout
    module = npuc.load_model(WAKEWORD, outputs=outputs)
    want, _ = run_sequence(module, [{source: frame} for frame in frames])
    saved = np.load(out)
    for name in outputs:
        np.testing.assert_array_equal(saved[f"{name}.q"], np.stack([w[name] for w in want]))
    assert len({w[outputs[1]].tobytes() for w in want}) > 1  # the state makes the steps differ
    # One call starts from the stored initial state: step 0.
    np.save(tmp_path / "frame.npy", frames[0])
    argv = [binary, "--input", f"{source}={tmp_path / 'frame.npy'}", "-o", out]
    status, _, stderr = run_tool(npu_run.main, argv, capsys)
    assert status == 0, stderr
    np.testing.assert_array_equal(np.load(out)[f"{outputs[1]}.q"], want[0][outputs[1]])
    # The disassembly keeps the state: text -> binary is byte-identical.
    text = tmp_path / "disassembled.mlir"
    status, _, stderr = run_tool(npu_opt.main, [binary, "-o", text], capsys)
    assert status == 0, stderr
    first = f"#npu.state<1 -> {program.state[0].output}, "  # after the two model outputs
    assert first + "dense<-128> : tensor<1280xi8>>" in text.read_text()
    again = tmp_path / "again.npubin"
    status, _, stderr = run_tool(npu_opt.main, [text, "-t", "npubin", "-o", again], capsys)
    assert status == 0, stderr
    assert again.read_bytes() == binary.read_bytes()
    # NAME.npu.mlir prints every constant: it states the pairs and reassembles to the binary.
    printed = tmp_path / f"{WAKEWORD.stem}.npu.mlir"
    assert first + "dense<-128> : tensor<1280xi8>>" in printed.read_text()
    status, _, stderr = run_tool(npu_opt.main, [printed, "-t", "npubin", "-o", again], capsys)
    assert status == 0, stderr
    assert again.read_bytes() == binary.read_bytes()


def test_the_version_a_section_needs_is_named_in_full(monkeypatch):
    # the message gives major.minor of the version the section needs (STATE needs 1.1,
    # whose two numbers are equal: a format where they differ is made by raising it)
    from npuc.dialects import npubin_format

    data = patched(lambda d: None)
    monkeypatch.setitem(npubin_format.SECTION_SINCE, "STATE", (1, 2))
    with pytest.raises(NpucError, match=re.escape("needs format version 1.2, the file says 1.1")):
        load(data)
