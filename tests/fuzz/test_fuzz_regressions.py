"""Hand-made inputs for each crash the fuzzer found (and the earlier campaign's list): each
is now a diagnostic naming the file (and where in it) with exit 1."""

from __future__ import annotations

import copy
import json

import numpy as np
import onnx
import pytest
from fuzz import mutators, run

from npuc.diagnostics import NpucError
from npuc.limits import DEFAULT_MAX_TENSOR_BYTES, check_tensor, parse_size, tensor_limit

TINY_MLIR = """func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {
  %0 = nn.relu %x : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %1 = nn.add %0, %x : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return %1 : tensor<1x4xf32>
}
"""


def _tflite(corpus, name: str, edit) -> bytes:
    model = corpus.tflite_copy(name)
    edit(model)
    return model.build(model.fuzz_inputs, model.fuzz_outputs)


def _tensor(model, name: str):
    return next(t for t in model.tensors if t.name == name)


def _onnx(corpus, name: str, edit) -> bytes:
    model = copy.deepcopy(corpus.onnx[name])
    edit(model)
    return model.SerializeToString()


def _set(obj, **values):
    for key, value in values.items():
        setattr(obj, key, value)


def _cases(corpus) -> dict[str, tuple[run.Case, str]]:
    """name -> (case, a fragment its error line must hold)."""
    c: dict[str, tuple[run.Case, str]] = {}

    def model(name, tool, file, data, fragment, *extra):
        out = "{dir}/out.npz" if tool == "npu-run" else "{dir}/out.mlir"
        argv = [f"{{dir}}/{file}", *extra, "-o", out]
        case = run.Case(
            name.split(":")[0],
            tool,
            argv,
            {file: data},
            names=[file],
            bad=True,
            outputs=[out.split("/")[-1]],
            description=name,
        )
        c[name] = (case, fragment)

    def with_file(name, tool, argv, file, data, fragment):
        """A bad `file` (an array, JSON, a config) that `argv` gives beside a good model."""
        case = run.Case(name.split(":")[0], tool, argv, {file: data}, names=[file], bad=True)
        c[name] = (case, fragment)

    def cli(name, tool, argv, fragment):
        c[name] = (run.Case("cli", tool, argv, names=[""], bad=True, description=name), fragment)

    model(
        "tflite:axis past rank",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "int8_conv", lambda m: _set(_tensor(m, "db"), axis=7)),
        "tensor 'db' is quantized along dimension 7",
    )
    model(
        "tflite:line separator in a quoted name",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "int8_conv", lambda m: _set(_tensor(m, "db"), axis=7, name="d\u2028b")),
        "tensor 'd\\u2028b' is quantized along dimension 7",
    )
    whole = _tflite(corpus, "float_conv", lambda m: None)
    model(
        "tflite:truncated",
        "npu-run",
        "m.tflite",
        whole[: len(whole) // 2],
        "has a field of 4 bytes at byte",
    )
    model(
        "tflite:scale 0 on an intermediate tensor",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "int8_conv", lambda m: _set(_tensor(m, "c"), scales=[0.0])),
        "tensor 'c' has scale 0.0; a quantized tensor's scales must be positive",
    )
    model(
        "tflite:type byte 0xFF",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "float_conv", lambda m: _set(_tensor(m, "w"), type_code=-1)),
        "unsupported type type -1",
    )
    model(
        "tflite:type 15 activation",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "int8_reshape", lambda m: _set(_tensor(m, "r"), type_code=15)),
        "is not a quantized int8",
    )
    model(
        "tflite:huge dilation",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "float_conv", lambda m: m.ops[0].fields.update(DilationHFactor=2**31 - 1)),
        "more than the limit",
    )
    model(
        "tflite:bias zero point",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "int8_fc", lambda m: _set(_tensor(m, "b"), zero_points=[3] * 10)),
        "bias 'b' has zero point 3",
    )
    model(
        "tflite:nan input scale",
        "npu-run",
        "m.tflite",
        _tflite(corpus, "int8_reshape", lambda m: _set(_tensor(m, "x"), scales=[float("nan")])),
        "input 'x'",
    )
    model(
        "tflite:rank-3 conv input",
        "npu-opt",
        "m.tflite",
        _tflite(corpus, "float_conv", lambda m: _set(_tensor(m, "x"), shape=[1, 8, 8])),
        "invalid operator",
    )
    model(
        "onnx:initializer dim -5",
        "npu-run",
        "m.onnx",
        _onnx(corpus, "dynamic", lambda m: m.graph.initializer[2].dims.__setitem__(0, -5)),
        "negative dimension",
    )
    model(
        "onnx:conv with 5 inputs",
        "npu-opt",
        "m.onnx",
        _onnx(corpus, "conv", lambda m: m.graph.node[0].input.extend(["w", "b"])),
        "Conv-11 takes 2 to 3 inputs, not 5",
    )
    model(
        "onnx:repeated attribute",
        "npu-opt",
        "m.onnx",
        _onnx(
            corpus,
            "conv",
            lambda m: m.graph.node[0].attribute.append(copy.deepcopy(m.graph.node[0].attribute[0])),
        ),
        "is given more than once",
    )
    for tool in ("npu-opt", "npu-run"):
        model(
            f"onnx:--input-shape against a static dimension ({tool})",
            tool,
            "m.onnx",
            corpus.onnx["conv"].SerializeToString(),
            "--input-shape x:1,3,9,8 contradicts the model's shape 1x3x8x8 for input 'x'",
            "--input-shape",
            "x:1,3,9,8",
        )
        model(
            f"tflite:--input-shape against a static dimension ({tool})",
            tool,
            "m.tflite",
            _tflite(corpus, "float_conv", lambda m: None),
            "--input-shape x:2,8,8,3 contradicts the model's shape 1x8x8x3 for input 'x'",
            "--input-shape",
            "x:2,8,8,3",
        )
    raw = bytearray(corpus.onnx["tiny_cnn"].SerializeToString())
    raw[raw.find(b"conv1")] = 0xFF
    model("onnx:name not UTF-8", "npu-opt", "m.onnx", bytes(raw), "is not UTF-8 text")
    model(
        "mlir:array<i642>",
        "npu-run",
        "m.mlir",
        b"func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {\n"
        b"  %0 = nn.transpose %x {perm = array<i642: 0, 1>} : (tensor<1x4xf32>) -> "
        b"tensor<1x4xf32>\n  func.return %0 : tensor<1x4xf32>\n}\n",
        "m.mlir:2:",
    )
    moved = TINY_MLIR.splitlines(keepends=True)
    moved[1], moved[2] = moved[2], moved[1]
    model(
        "mlir:use before def (npu-opt)",
        "npu-opt",
        "m.mlir",
        "".join(moved).encode(),
        "used before its definition",
    )
    model(
        "mlir:use before def (npu-run)",
        "npu-run",
        "m.mlir",
        "".join(moved).encode(),
        "used before its definition",
    )
    model(
        "mlir:i8 out of range",
        "npu-opt",
        "m.mlir",
        b'%0 = "nn.constant"() {value = dense<4294967296> : tensor<2xi8>} : () -> tensor<2xi8>\n',
        "m.mlir:1:",
    )
    model(
        "mlir:huge splat",
        "npu-opt",
        "m.mlir",
        b'%0 = "nn.constant"() {value = dense<1.0> : tensor<99999x99999x9xf32>} : () -> '
        b"tensor<99999x99999x9xf32>\n",
        "more than the limit",
    )
    model(
        "mlir:nan scale",
        "npu-run",
        "m.mlir",
        b"func.func @main(%x: tensor<4x!qnn.uniform<i8:f32, nan>>) -> "
        b"tensor<4x!qnn.uniform<i8:f32, nan>> {\n  func.return %x : "
        b"tensor<4x!qnn.uniform<i8:f32, nan>>\n}\n",
        "m.mlir:1:",
    )
    model("mlir:not UTF-8", "npu-opt", "m.mlir", b"func.func @\xff() {\n}\n", "not a UTF-8")
    for tool in ("npu-opt", "npu-run"):
        for element, fragment in (
            ("!qnn.uniform<i8:f32:7, {0.5, 0.5}>", "quantization axis 7 is out of range"),
            ("!qnn.uniform<i8:f32:0, {0.5, 0.5}>", "2 scales do not match dimension 0 of size 4"),
        ):
            arg = f"tensor<4x{element}>"
            text = f"func.func @main(%x: {arg}) -> {arg} {{\n  func.return %x : {arg}\n}}\n"
            model(
                f"mlir:per-axis argument {fragment[:6]} ({tool})",
                tool,
                "m.mlir",
                text.encode(),
                f"m.mlir:1:1: error: 'func.func' @main argument 0: {fragment}",
            )
    model(
        "mlir:huge input",
        "npu-run",
        "m.mlir",
        TINY_MLIR.replace("1x4", "99999999x9999999").encode(),
        "would take",
    )

    for tool in ("npu-opt", "npu-run", "npu-bundle"):
        extra = ["-t", "mcu-64", "-o", "{dir}/out"] if tool == "npu-bundle" else []
        cli(
            f"cli:huge --input-shape ({tool})",
            tool,
            ["{root}/tiny_cnn.onnx", "--input-shape", "image:99999999999999999999,1,28,28", *extra],
            "--input-shape",
        )
    cli("cli:--seed -1", "npu-run", ["{root}/tiny_cnn.onnx", "--seed", "-1"], "--seed")
    cli(
        "cli:--sequence huge",
        "npu-run",
        ["{root}/tiny_cnn.npubin", "--sequence", "99999999999999999999"],
        "--sequence",
    )
    for model_file in ("tiny_cnn.onnx", "tiny_cnn.npubin"):  # the steps' data is all kept
        cli(
            f"cli:--sequence too long ({model_file})",
            "npu-run",
            [f"{{root}}/{model_file}", "--sequence", "2147483647"],
            "over 2147483647 steps (--sequence) of shape 2147483647x1x3x16x16 would take",
        )
    cli(
        "cli:--max-tensor-bytes",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--max-tensor-bytes", "1K"],
        "limit of 1 KiB",
    )
    cli(
        "cli:--tiling",
        "npu-compile",
        ["{root}/tiny_cnn.onnx", "-t", "mcu-64", "-o", "{dir}/out", "--tiling", "(a"],
        "--tiling",
    )
    cli(
        "cli:--tiling layer out of range",
        "npu-compile",
        [
            *("{root}/tiny_cnn.onnx", "-t", "mcu-64", "-o", "{dir}/out", "--calib-random", "2"),
            *("--tiling", "(0,99,1,1)"),
        ],
        "--tiling: entry 1 '(0,99,1,1)': layer 99 is out of range",
    )
    cli(
        "cli:--export-qdq float model",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--export-qdq", "{dir}/q.onnx"],
        "no ONNX form for",
    )
    cli(
        "cli:--mean without --quantize",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--mean", "abc"],
        "--mean needs --quantize",
    )
    cli(
        "cli:long target name",
        "npu-compile",
        ["{root}/tiny_cnn.onnx", "-t", "x" * 5000, "-o", "{dir}/out"],
        "unknown target",
    )
    cli("cli:-t ''", "npu-opt", ["{root}/tiny_cnn.onnx", "-t", ""], "-t")

    corrupt = bytearray(mutators.npy_bytes(np.zeros((1, 3, 16, 16), np.float32)))
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("x.npy", bytes(corrupt))
    zipped = bytearray(archive.getvalue())
    zipped[60] ^= 0xFF  # inside the member's data: a CRC error on reading
    with_file(
        "npy:corrupt npz",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--input", "image={dir}/x.npz"],
        "x.npz",
        bytes(zipped),
        "x.npz",
    )
    with_file(
        "npy:wrong shape",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--input", "image={dir}/x.npy"],
        "x.npy",
        mutators.npy_bytes(np.zeros(7, np.float32)),
        "input 'image' has shape (7,)",
    )
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1,\n"
    unclosed = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header
    with_file(
        "npy:header dict not closed",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--input", "image={dir}/x.npy"],
        "x.npy",
        unclosed,
        "x.npy",
    )
    with_file(
        "calib:config not UTF-8",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--config", "{dir}/config.toml"],
        "config.toml",
        b"[run]\nseed = 1 # \xff\n",
        "UTF-8",
    )
    stats = copy.deepcopy(corpus.json["stats"])
    next(iter(stats["tensors"].values()))["histogram"]["counts"][0] = 10**30
    with_file(
        "json:huge histogram count",
        "npu-run",
        ["{root}/tiny_cnn.onnx", "--quantize", "int8", "--stats", "{dir}/s.json"],
        "s.json",
        json.dumps(stats).encode(),
        "below 2**63",
    )
    with_file(
        "json:huge range",
        "npu-opt",
        ["{root}/tiny_cnn.onnx", "-p", 'quantize{scheme=int8 ranges="{dir}/r.json"}'],
        "r.json",
        b'{"image": [0, 1e400000], "conv1": [0, 10' + b"0" * 40 + b"]}",
        "must be finite",
    )
    return c


def test_each_crash_is_a_located_diagnostic(corpus):
    cases = _cases(corpus)
    results = run.run_cases(
        [case for case, _ in cases.values()], str(corpus.root), jobs=2, timeout=30
    )
    problems = []
    for (name, (case, fragment)), result in zip(cases.items(), results, strict=True):
        line = run.error_line(result.stderr)
        if result.status != 1 or "Traceback" in result.stderr or fragment not in result.stderr:
            problems.append(f"{name}: {result.outcome} {result.status}: {line or result.detail}")
        elif case.kind != "cli" and result.outcome != "clean":
            problems.append(f"{name}: {result.outcome}: {line}")
    assert not problems, "\n".join(problems)


def test_size_limit_parsing_and_override(monkeypatch):
    assert parse_size("4096") == 4096
    assert parse_size("2K") == 2048
    assert parse_size("3g") == 3 << 30
    assert parse_size("1GiB") == 1 << 30
    for bad in ("0", "-1", "abc", "1.5G", "", "\u0661K"):  # digits in ASCII only
        with pytest.raises(ValueError):
            parse_size(bad)
    check_tensor([1024, 1024], 4, "t")  # 4 MiB: fine
    with pytest.raises(NpucError, match=r"t of shape 2x1073741824 would take 8 GiB"):
        check_tensor([2, 1 << 30], 4, "t")
    with tensor_limit(1000), pytest.raises(NpucError, match="limit of 1000 bytes"):
        check_tensor([251], 4, "t")
    monkeypatch.setenv("NPUC_MAX_TENSOR_BYTES", "16G")
    check_tensor([2, 1 << 30], 4, "t")
    monkeypatch.setenv("NPUC_MAX_TENSOR_BYTES", "lots")
    with pytest.raises(NpucError, match="NPUC_MAX_TENSOR_BYTES"):
        check_tensor([1], 4, "t")
    assert DEFAULT_MAX_TENSOR_BYTES == 2 << 30


def test_mutators_are_deterministic(corpus):

    for kind in run.KINDS:
        a = run.generate(corpus, [kind], 5, 7)
        b = run.generate(corpus, [kind], 5, 7)
        assert [x.digest() for x in a] == [y.digest() for y in b], kind


def test_onnx_mutation_keeps_the_seed(corpus):
    before = corpus.onnx["conv"].SerializeToString()
    import random

    mutators.mutate_onnx(corpus.onnx["conv"], random.Random(1))
    assert corpus.onnx["conv"].SerializeToString() == before
    assert isinstance(onnx.load_from_string(before), onnx.ModelProto)
