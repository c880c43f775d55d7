"""npu-bundle: the header (compiled with gcc), the weights, and the LeNet-5 example's sizes
checked against a calculation from the ONNX file and the layer shapes."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from tool_runner import tool_command

import npuc.api as api
from npuc.backend.bundle import check_name, sanitised_names
from npuc.diagnostics import NpucError
from npuc.registry import DEFAULT_PIPELINE
from npuc.tensors import from_dense

REPO = Path(__file__).resolve().parents[2]
LENET = REPO / "examples" / "lenet5.onnx"
INT8 = DEFAULT_PIPELINE + ",quantize{samples=8},plan-memory{target=mcu-64}"
FILES = ["h", "weights.bin", "weights.txt", "mem.mlir", "memory.txt", "memory.json", "memory.png"]


def bundle(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*tool_command("npu-bundle"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def macros(header: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define (\w+) (\d+)$", header, re.M)}


def align(n: int, a: int = 64) -> int:
    return -(-n // a) * a


@pytest.fixture(scope="module")
def lenet_float(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("float") / "bundle"
    proc = bundle(LENET, "--target", "mcu-64", "-o", out)
    assert proc.returncode == 0, proc.stderr
    (out / "stdout.txt").write_text(proc.stdout)
    return out


@pytest.fixture(scope="module")
def lenet_int8(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("int8") / "bundle"
    proc = bundle(LENET, "--target", "mcu-64", "-p", INT8, "--name", "lenet5_int8", "-o", out)
    assert proc.returncode == 0, proc.stderr
    return out


# --------------------------------------------------------------------------- LeNet-5 sizes


def lenet_maps(itemsize: int) -> list[int]:
    """Bytes of each layer's output, computed from the layer shapes (valid 5x5 convs,
    2x2 pools): conv1 20x24x24, pool1 20x12x12, conv2 50x8x8, pool2 50x4x4, fc1 500, fc2 10."""
    maps, size = [], 28
    for channels in (20, 50):
        size -= 4
        maps.append(channels * size * size)
        size //= 2
        maps.append(channels * size * size)
    return [n * itemsize for n in [*maps, 500, 10]]


def chain_lower_bound(maps: list[int]) -> int:
    """A chain whose ops read one map and write the next: the peak pair (64-byte aligned)."""
    return max(align(a) + align(b) for a, b in itertools.pairwise(maps))


def initializers() -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(LENET).graph.initializer}


def test_lenet5_float_sizes(lenet_float):
    m = macros((lenet_float / "lenet5.h").read_text())
    weights = initializers()
    assert m["LENET5_CONSTANT_MEM_SIZE"] == sum(align(w.nbytes) for w in weights.values())
    assert m["LENET5_MUTABLE_MEM_SIZE"] == align(28 * 28 * 4) + align(10 * 4)
    # The float softmax writes the output (mutable), so the chain ends at fc2.
    assert m["LENET5_ACTIVATIONS_MEM_SIZE"] == chain_lower_bound(lenet_maps(4)) == 57600
    assert m["LENET5_MEM_ALIGN"] == 64
    assert (m["LENET5_INPUT_IMAGE_OFFSET"], m["LENET5_INPUT_IMAGE_SIZE"]) == (0, 3136)
    assert (m["LENET5_OUTPUT_PROB_OFFSET"], m["LENET5_OUTPUT_PROB_SIZE"]) == (3136, 40)
    stdout = (lenet_float / "stdout.txt").read_text()
    assert "constant memory: 1724608 bytes" in stdout
    assert "activations memory: 57600 bytes" in stdout


def test_lenet5_int8_sizes(lenet_int8):
    m = macros((lenet_int8 / "lenet5_int8.h").read_text())
    weights = initializers()
    # int8 weights, int32 biases.
    expected = sum(align(w.size * (4 if name.endswith(".b") else 1)) for name, w in weights.items())
    assert m["LENET5_INT8_CONSTANT_MEM_SIZE"] == expected == 433088
    assert m["LENET5_INT8_MUTABLE_MEM_SIZE"] == align(28 * 28 * 4) + align(10 * 4)
    # Float I/O: quantize the image (784 int8) first; dequantize fc2 (40 bytes f32) last.
    maps = [784, *lenet_maps(1), 40]
    assert m["LENET5_INT8_ACTIVATIONS_MEM_SIZE"] == chain_lower_bound(maps) == 14400


def test_docs_state_the_lenet5_sizes():
    text = (REPO / "docs" / "memory-planning.md").read_text()
    section = text[text.index("## Example: LeNet-5") :]
    for n in (1724608, 3200, 57600, 433088, 14400):
        assert f"{n:,}".replace(",", " ") in section or str(n) in section, n


# --------------------------------------------------------------------------- header and weights


def test_header_compiles_and_uses_every_macro(lenet_float, tmp_path):
    header = (lenet_float / "lenet5.h").read_text()
    names = list(macros(header))
    assert header.count("#ifndef LENET5_H") == 1 and header.rstrip().endswith("#endif  // LENET5_H")
    checks = "\n".join(
        f'_Static_assert({n} % LENET5_MEM_ALIGN == 0, "{n}");'
        for n in names
        if n.endswith("_MEM_SIZE") or n.endswith("_OFFSET")
    )
    uses = " + ".join(f"(unsigned long){n}" for n in names)
    source = tmp_path / "use.c"
    source.write_text(
        f'#include "lenet5.h"\n#include "lenet5.h"\n{checks}\n'
        "static const unsigned char weights[LENET5_CONSTANT_MEM_SIZE] = {\n"
        '#include "lenet5.weights.txt"\n};\n'
        '_Static_assert(sizeof weights == LENET5_CONSTANT_MEM_SIZE, "weights");\n'
        "static unsigned char arena[LENET5_ACTIVATIONS_MEM_SIZE]"
        " __attribute__((aligned(LENET5_MEM_ALIGN)));\n"
        f"unsigned long total(void) {{ return {uses} + weights[0] + arena[0]; }}\n"
    )
    proc = subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-I",
            lenet_float,
            "-c",
            source,
            "-o",
            tmp_path / "use.o",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "use.o").stat().st_size > 0


def test_float_weights_are_the_initializers_at_their_offsets(lenet_float):
    data = (lenet_float / "lenet5.weights.bin").read_bytes()
    report = json.loads((lenet_float / "lenet5.memory.json").read_text())
    constants = [b for b in report["buffers"] if b["kind"] == "constant"]
    weights = initializers()
    assert len(constants) == len(weights)
    covered = np.zeros(len(data), bool)
    # (Gemm biases take their node's name in the IR, so match by content: all distinct.)
    found = set()
    for name, w in weights.items():
        raw = w.astype("<f4").tobytes()
        hits = [b for b in constants if data[b["offset"] : b["offset"] + b["size"]] == raw]
        assert len(hits) == 1, name
        b = hits[0]
        assert b["region"] == "constants" and b["offset"] % 64 == 0
        covered[b["offset"] : b["offset"] + b["size"]] = True
        found.add(b["offset"])
    assert len(found) == len(weights)
    assert len(data) == macros((lenet_float / "lenet5.h").read_text())["LENET5_CONSTANT_MEM_SIZE"]
    assert not any(np.frombuffer(data, np.uint8)[~covered])  # padding is zeros


def test_int8_weights_match_the_planned_ir(lenet_int8):
    data = (lenet_int8 / "lenet5_int8.weights.bin").read_bytes()
    module = api.parse_mlir((lenet_int8 / "lenet5_int8.mem.mlir").read_text())
    seen = 0
    for op in module.walk():
        if op.name == "qnn.constant":
            b = op.attributes["mem.buffer"]
            array = from_dense(op.properties["value"])
            raw = np.ascontiguousarray(array).tobytes()
            assert b.region.data == "constants"
            assert data[b.offset.data : b.offset.data + b.size.data] == raw
            seen += len(raw)
    assert seen == sum(w.size for w in initializers().values()) + 3 * (20 + 50 + 500 + 10)


def test_weights_text_is_the_same_bytes(lenet_float):
    data = (lenet_float / "lenet5.weights.bin").read_bytes()
    lines = (lenet_float / "lenet5.weights.txt").read_text().splitlines()
    assert all(len(re.findall(r"0x[0-9a-f]{2}", line)) == 16 for line in lines[:-1])
    values = re.findall(r"0x([0-9a-f]{2}),", "\n".join(lines))
    assert bytes(int(v, 16) for v in values) == data


def test_bundle_files_and_determinism(lenet_float, tmp_path):
    out = tmp_path / "again"
    assert bundle(LENET, "--target", "mcu-64", "-o", out).returncode == 0
    for suffix in FILES:
        a, b = lenet_float / f"lenet5.{suffix}", out / f"lenet5.{suffix}"
        assert a.read_bytes() == b.read_bytes(), suffix
    assert (lenet_float / "lenet5.memory.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_planned_mlir_is_bundled_as_is(lenet_int8, tmp_path):
    out = tmp_path / "replanned"
    proc = bundle(
        lenet_int8 / "lenet5_int8.mem.mlir",
        "--target",
        "mcu-64",
        "--name",
        "lenet5_int8",
        "-o",
        out,
    )
    assert proc.returncode == 0, proc.stderr
    for suffix in ("h", "weights.bin", "memory.json"):
        a, b = (
            (lenet_int8 / f"lenet5_int8.{suffix}").read_bytes(),
            (out / f"lenet5_int8.{suffix}").read_bytes(),
        )
        if suffix == "h":
            a, b = a.split(b"\n", 1)[1], b.split(b"\n", 1)[1]  # the first line names the model
        assert a == b, suffix


# --------------------------------------------------------------------------- names and errors


def test_names_are_sanitised_without_collisions(tmp_path):
    assert sanitised_names(["in-1", "in.1", "IN_1", "x", ""]) == [
        "IN_1",
        "IN_1_2",
        "IN_1_3",
        "X",
        "UNNAMED",
    ]
    model = tmp_path / "two.mlir"
    model.write_text("""
    func.func @main(%a: tensor<4xf32> {nn.name = "in-1"}, %b: tensor<4xf32> {nn.name = "in.1"})
        -> (tensor<4xf32> {nn.name = "out:0"}) {
      %0 = nn.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }
    """)
    out = tmp_path / "b"
    assert bundle(model, "--target", "mcu-64", "-o", out).returncode == 0
    m = macros((out / "two.h").read_text())
    assert (m["TWO_INPUT_IN_1_OFFSET"], m["TWO_INPUT_IN_1_2_OFFSET"]) == (0, 64)
    assert m["TWO_OUTPUT_OUT_0_OFFSET"] == 128 and m["TWO_MUTABLE_MEM_SIZE"] == 192
    source = tmp_path / "use.c"
    source.write_text('#include "two.h"\nint x[TWO_INPUT_IN_1_2_SIZE + TWO_OUTPUT_OUT_0_SIZE];\n')
    gcc = subprocess.run(
        ["gcc", "-std=c11", "-Werror", "-I", out, "-c", source, "-o", tmp_path / "use.o"],
        capture_output=True,
        text=True,
    )
    assert gcc.returncode == 0, gcc.stderr


@pytest.mark.parametrize("name", ["9lives", "int", "le-net", ""])
def test_bad_names(name):
    with pytest.raises(NpucError, match="not a valid C identifier"):
        check_name(name)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "9lives"], "'9lives' is not a valid C identifier"),
        (["--target", "no-such-npu"], "unknown target 'no-such-npu'"),
        (["-p", "no-such-pass"], "bad pass pipeline"),
        (["-p", "plan-memory{target=mcu-64 alignment=3}"], "alignment must be a power of two"),
    ],
)
def test_bad_options_write_nothing(tmp_path, args, message):
    out = tmp_path / "out"
    base = ["--target", "mcu-64"] if "--target" not in args else []
    proc = bundle(REPO / "examples" / "tiny_cnn.onnx", *base, *args, "-o", out)
    assert proc.returncode == 1
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []  # no temporary folder left behind either


def test_bad_model_and_output_dir_write_nothing(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    out = tmp_path / "out"
    proc = bundle(bad, "--target", "mcu-64", "-o", out)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert not out.exists()
    taken = tmp_path / "file"
    taken.write_text("x")
    proc = bundle(REPO / "examples" / "tiny_cnn.onnx", "--target", "mcu-64", "-o", taken)
    assert proc.returncode == 1 and "output directory is a file" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.onnx", "file"]
