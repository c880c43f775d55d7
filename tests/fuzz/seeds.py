"""The seed corpus: small valid inputs of every kind, built from the repository's own files.

ONNX: examples/tiny_cnn.onnx and a few small graphs built here (convolution, element-wise
and shape ops, a pre-quantized QDQ model, a dynamic batch). TFLite: float and int8 models
built with tests/tflite_builder.py (kept as builders, so field mutations edit them).
.mlir: the single-module chunks of filecheck/**/*.mlir that parse and verify, plus the
runnable ones (one function). .npubin: tests/npu/tiny.mlir encoded, and tiny_cnn compiled
for mcu-64. JSON: statistics, a layer configuration and a ranges file written by npuc for
tiny_cnn. TOML: a config for npu-compile/npu-run.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
TINY_CNN = REPO / "examples" / "tiny_cnn.onnx"
TINY_CNN_INPUT = ("image", (1, 3, 16, 16))


@dataclass
class Corpus:
    onnx: dict[str, Any] = field(default_factory=dict)  # name -> ModelProto
    tflite: dict[str, Any] = field(default_factory=dict)  # name -> TFLiteModel (a template)
    mlir: dict[str, str] = field(default_factory=dict)  # name -> text (verifies)
    runnable_mlir: list[str] = field(default_factory=list)  # names of one-function modules
    npubin: dict[str, bytes] = field(default_factory=dict)
    npubin_inputs: dict[str, dict[str, tuple]] = field(default_factory=dict)
    json: dict[str, Any] = field(default_factory=dict)  # "stats", "layer_config", "ranges"
    toml: str = ""
    root: Path | None = None  # where shared seed files live (the model the JSON belongs to)

    def __repr__(self) -> str:  # hypothesis shows the fixture in a failing example's report
        return f"Corpus(root={self.root})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis' own printer
        printer.text(repr(self))

    def tflite_copy(self, name: str):
        return copy.deepcopy(self.tflite[name])


def build(root: Path) -> Corpus:
    """Every seed; files the cases share (tiny_cnn.onnx, the seed binaries) go under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    corpus = Corpus(root=root)
    _onnx_seeds(corpus)
    _tflite_seeds(corpus)
    _mlir_seeds(corpus)
    _npubin_seeds(corpus, root)
    _json_seeds(corpus, root)
    (root / "tiny_cnn.onnx").write_bytes(TINY_CNN.read_bytes())
    corpus.toml = (
        "[build]\n"
        'model = "{root}/tiny_cnn.onnx"\n'
        'target = "mcu-64"\n'
        "calib_random = 2\n"
        'name = "tiny"\n'
        'output = "{dir}/out"\n'
        "\n[run]\n"
        'output = "{dir}/run.npz"\n'
    )
    return corpus


# --------------------------------------------------------------------------- ONNX


def _onnx_seeds(corpus: Corpus) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)

    def init(name: str, shape, dtype=np.float32, scale: float = 0.3):
        if np.dtype(dtype).kind == "f":
            array = (rng.standard_normal(shape) * scale).astype(dtype)
        else:
            array = np.asarray(shape, dtype) if name.endswith("shape") else np.zeros(shape, dtype)
        return numpy_helper.from_array(array, name)

    def model(nodes, inits, inputs, outputs, opset=13):
        graph = helper.make_graph(nodes, "fuzz", inputs, outputs, inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m

    f = TensorProto.FLOAT
    corpus.onnx["tiny_cnn"] = onnx.load(TINY_CNN)
    corpus.onnx["conv"] = model(
        [
            helper.make_node(
                "Conv",
                ["x", "w", "b"],
                ["c"],
                "conv",
                pads=[1, 1, 1, 1],
                strides=[1, 1],
                kernel_shape=[3, 3],
                dilations=[1, 1],
                group=1,
            ),
            helper.make_node("Relu", ["c"], ["r"], "relu"),
            helper.make_node("MaxPool", ["r"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("Flatten", ["p"], ["f"], "flatten", axis=1),
            helper.make_node("Gemm", ["f", "fw", "fb"], ["g"], "fc", transB=1, alpha=1.0),
            helper.make_node("Softmax", ["g"], ["y"], "softmax", axis=-1),
        ],
        [init("w", [4, 3, 3, 3]), init("b", [4]), init("fw", [5, 64]), init("fb", [5])],
        [helper.make_tensor_value_info("x", f, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", f, [1, 5])],
    )
    corpus.onnx["shapes"] = model(
        [
            helper.make_node("Add", ["x", "k"], ["a"], "add"),
            helper.make_node("Mul", ["a", "k"], ["m"], "mul"),
            helper.make_node("Sigmoid", ["m"], ["s"], "sigmoid"),
            helper.make_node("Reshape", ["s", "shape"], ["r"], "reshape"),
            helper.make_node("Transpose", ["r"], ["t"], "transpose", perm=[1, 0]),
            helper.make_node("Concat", ["t", "t"], ["c"], "concat", axis=0),
            helper.make_node("Clip", ["c", "lo", "hi"], ["y"], "clip"),
        ],
        [
            init("k", [1, 4]),
            numpy_helper.from_array(np.array([4, 2], np.int64), "shape"),
            numpy_helper.from_array(np.array(-1, np.float32), "lo"),
            numpy_helper.from_array(np.array(1, np.float32), "hi"),
        ],
        [helper.make_tensor_value_info("x", f, [2, 4])],
        [helper.make_tensor_value_info("y", f, [4, 4])],
    )
    scale = numpy_helper.from_array(np.array(0.05, np.float32), "s")
    zp = numpy_helper.from_array(np.array(0, np.int8), "z")
    wq = numpy_helper.from_array(rng.integers(-100, 100, [2, 2, 3, 3]).astype(np.int8), "wq")
    ws = numpy_helper.from_array(np.array([0.01, 0.02], np.float32), "ws")
    wz = numpy_helper.from_array(np.zeros(2, np.int8), "wz")
    corpus.onnx["qdq"] = model(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], "q_in"),
            helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"], "dq_in"),
            helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], "dq_w", axis=0),
            helper.make_node("Conv", ["xd", "wd"], ["c"], "qconv", kernel_shape=[3, 3]),
            helper.make_node("QuantizeLinear", ["c", "s", "z"], ["cq"], "q_out"),
            helper.make_node("DequantizeLinear", ["cq", "s", "z"], ["y"], "dq_out"),
        ],
        [scale, zp, wq, ws, wz],
        [helper.make_tensor_value_info("x", f, [1, 2, 5, 5])],
        [helper.make_tensor_value_info("y", f, [1, 2, 3, 3])],
    )
    corpus.onnx["dynamic"] = model(
        [
            helper.make_node("BatchNormalization", ["x", "g", "bb", "mu", "var"], ["n"], "bn"),
            helper.make_node("GlobalAveragePool", ["n"], ["p"], "gap"),
            helper.make_node("Flatten", ["p"], ["y"], "flatten"),
        ],
        [
            init("g", [3]),
            init("bb", [3]),
            init("mu", [3]),
            numpy_helper.from_array(np.ones(3, np.float32), "var"),
        ],
        [helper.make_tensor_value_info("x", f, ["N", 3, 4, 4])],
        [helper.make_tensor_value_info("y", f, ["N", 3])],
    )


# --------------------------------------------------------------------------- TFLite


def _tflite_seeds(corpus: Corpus) -> None:
    from tflite_builder import TFLiteModel

    rng = np.random.default_rng(11)

    def finish(m: TFLiteModel, inputs, outputs) -> TFLiteModel:
        m.fuzz_inputs, m.fuzz_outputs = list(inputs), list(outputs)
        m.build(inputs, outputs)  # a seed builds
        return m

    m = TFLiteModel()
    x = m.tensor("x", [1, 8, 8, 3])
    w = m.tensor("w", [4, 3, 3, 3], data=rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    b = m.tensor("b", [4], data=np.zeros(4, np.float32))
    c = m.tensor("c", [1, 8, 8, 4])
    p = m.tensor("p", [1, 4, 4, 4])
    m.op(
        "CONV_2D",
        [x, w, b],
        [c],
        "Conv2DOptions",
        Padding=0,
        StrideH=1,
        StrideW=1,
        DilationHFactor=1,
        DilationWFactor=1,
        FusedActivationFunction=1,
    )
    m.op(
        "MAX_POOL_2D",
        [c],
        [p],
        "Pool2DOptions",
        Padding=1,
        StrideH=2,
        StrideW=2,
        FilterHeight=2,
        FilterWidth=2,
    )
    corpus.tflite["float_conv"] = finish(m, [x], [p])

    m = TFLiteModel()
    x = m.tensor("x", [1, 9, 9, 3], np.int8, scale=0.05, zero_point=-7)
    wd = rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    ws = rng.uniform(0.002, 0.02, 4).astype(np.float32)
    w = m.tensor("w", [4, 3, 3, 3], np.int8, data=wd, scale=ws, axis=0)
    b = m.tensor(
        "b", [4], np.int32, data=rng.integers(-3000, 3000, 4).astype(np.int32), scale=ws * 0.05
    )
    c = m.tensor("c", [1, 5, 5, 4], np.int8, scale=0.09, zero_point=5)
    d = m.tensor("d", [1, 5, 5, 4], np.int8, scale=0.09, zero_point=5)
    a = m.tensor("a", [1, 5, 5, 4], np.int8, scale=0.13, zero_point=-5)
    m.op(
        "CONV_2D",
        [x, w, b],
        [c],
        "Conv2DOptions",
        Padding=0,
        StrideH=2,
        StrideW=2,
        DilationHFactor=1,
        DilationWFactor=1,
        FusedActivationFunction=3,
    )
    dw = rng.integers(-127, 128, (1, 3, 3, 4)).astype(np.int8)
    dws = rng.uniform(0.002, 0.02, 4).astype(np.float32)
    dwt = m.tensor("dw", [1, 3, 3, 4], np.int8, data=dw, scale=dws, axis=3)
    db = m.tensor("db", [4], np.int32, data=np.zeros(4, np.int32), scale=dws * 0.09)
    m.op(
        "DEPTHWISE_CONV_2D",
        [c, dwt, db],
        [d],
        "DepthwiseConv2DOptions",
        Padding=0,
        StrideH=1,
        StrideW=1,
        DepthMultiplier=1,
        DilationHFactor=1,
        DilationWFactor=1,
    )
    m.op("ADD", [c, d], [a], "AddOptions", FusedActivationFunction=0)
    corpus.tflite["int8_conv"] = finish(m, [x], [a])

    m = TFLiteModel()
    x = m.tensor("x", [3, 32], np.int8, scale=0.037, zero_point=-11)
    wd = rng.integers(-127, 128, (10, 32)).astype(np.int8)
    ws = rng.uniform(0.002, 0.02, 10).astype(np.float32)
    w = m.tensor("w", [10, 32], np.int8, data=wd, scale=ws, axis=0)
    b = m.tensor(
        "b", [10], np.int32, data=rng.integers(-5000, 5000, 10).astype(np.int32), scale=ws * 0.037
    )
    y = m.tensor("y", [3, 10], np.int8, scale=0.21, zero_point=9)
    s = m.tensor("s", [3, 10], np.int8, scale=1 / 256, zero_point=-128)
    m.op("FULLY_CONNECTED", [x, w, b], [y], "FullyConnectedOptions", FusedActivationFunction=1)
    m.op("SOFTMAX", [y], [s], "SoftmaxOptions", Beta=1.0)
    corpus.tflite["int8_fc"] = finish(m, [x], [s])

    m = TFLiteModel()
    x = m.tensor("x", [1, 1, 1, 12], np.int8, scale=0.1, zero_point=3)
    shape = m.tensor("shape", [2], np.int32, data=np.array([1, 12], np.int32))
    r = m.tensor("r", [1, 12], np.int8, scale=0.1, zero_point=3)
    m.op("RESHAPE", [x, shape], [r], "ReshapeOptions", NewShape=[1, 12])
    corpus.tflite["int8_reshape"] = finish(m, [x], [r])


# --------------------------------------------------------------------------- .mlir


def _mlir_seeds(corpus: Corpus) -> None:
    from npuc.api import make_context, parse_mlir

    ctx = make_context()
    for path in sorted((REPO / "filecheck").rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text()
        for k, chunk in enumerate(re.split(r"^// -----\s*$", text, flags=re.M)):
            body = "\n".join(
                line for line in chunk.splitlines() if not line.lstrip().startswith("//")
            ).strip()
            if not body or "expected-" in chunk:
                continue
            try:
                with contextlib.redirect_stderr(io.StringIO()):
                    parse_mlir(body, "seed", ctx)
            except Exception:
                continue
            name = f"{path.parent.name}/{path.stem}#{k}"
            corpus.mlir[name] = body + "\n"
            if body.count("func.func") == 1 and "npu.program" not in body:
                corpus.runnable_mlir.append(name)


# --------------------------------------------------------------------------- .npubin


def _npubin_seeds(corpus: Corpus, root: Path) -> None:
    from npuc.tools import npu_compile, npu_opt

    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet, contextlib.redirect_stderr(io.StringIO()):
        out = root / "tiny.npubin"
        npu_opt.main([str(REPO / "tests" / "npu" / "tiny.mlir"), "-t", "npubin", "-o", str(out)])
        build = root / "tiny_cnn_build"
        with contextlib.suppress(SystemExit):
            npu_compile.main(
                [str(TINY_CNN), "-t", "mcu-64", "--calib-random", "2", "-q", "-o", str(build)]
            )
    corpus.npubin["tiny"] = out.read_bytes()
    compiled = build / "tiny_cnn.npubin"
    if compiled.exists():
        corpus.npubin["tiny_cnn"] = compiled.read_bytes()
    from npuc.runtime.loader import load

    for name, data in corpus.npubin.items():
        program = load(data)
        corpus.npubin_inputs[name] = {
            d.name: (tuple(d.tensor.shape), d.tensor.dtype) for d in program.inputs
        }
        (root / f"{name}.npubin").write_bytes(data)


# --------------------------------------------------------------------------- JSON


def _coarse(stats: dict, bins: int = 8) -> dict:
    """The statistics with each histogram summed into `bins` bins (a small, valid seed)."""
    for tensor in stats["tensors"].values():
        hist = tensor.get("histogram")
        if hist and len(hist["counts"]) % bins == 0:
            counts = np.asarray(hist["counts"], np.int64).reshape(bins, -1).sum(axis=1)
            hist["counts"] = [int(c) for c in counts]
    return stats


def _json_seeds(corpus: Corpus, root: Path) -> None:
    from npuc.tools import npu_run

    stats, config = root / "stats.json", root / "layers.json"
    quiet = contextlib.redirect_stdout(io.StringIO())
    with quiet, contextlib.redirect_stderr(io.StringIO()), contextlib.suppress(SystemExit):
        npu_run.main(
            [
                str(TINY_CNN),
                "--quantize",
                "int8",
                "--calib-random",
                "2",
                "--save-stats",
                str(stats),
                "--write-layer-config",
                str(config),
                "--compare",
            ]
        )
    corpus.json["stats"] = _coarse(json.loads(stats.read_text()))
    corpus.json["layer_config"] = json.loads(config.read_text())
    corpus.json["ranges"] = {"image": [-1.0, 1.0], "conv1": [0.0, 4.0], "probs": [0.0, 1.0]}
