"""Export of quantized modules as ONNX QDQ models, run in onnxruntime and compared with npuc.

Tolerance: onnxruntime evaluates the exported graph's float op between DequantizeLinear and
QuantizeLinear (or an equivalent fused kernel computing in float32) and rounds half to even;
npuc's kernels compute exactly in integers (and qnn.avg_pool2d rounds its mean half away from
zero before requantizing). Where the real result lies on or next to a rounding tie the two
can land one step apart. So per layer, a value whose layer inputs agree exactly must agree
within one step, and most agree exactly; a one-step difference can grow downstream where a
steep activation follows, so whole-model outputs are compared on models without one.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_models import float_graph, random_init, residual_cnn
from onnxruntime_reference import reference_session
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from npuc.api import parse_mlir
from npuc.backend.onnx_export import export_qdq
from npuc.diagnostics import NpucError
from npuc.dialects import qnn
from npuc.dialects.arrays import ints
from npuc.frontends.onnx import import_onnx
from npuc.graph_io import entry_function
from npuc.integer import quantize_multiplier
from npuc.passes.quantization.statistics import collect_statistics
from npuc.passes.quantize import QuantizeConfig, quantize_module, ranges_from_statistics
from npuc.runtime.nn_interpreter import FunctionRunner
from npuc.runtime.qnn_interpreter import run_module

SAMPLES = 24

# --------------------------------------------------------------------------- float models


def mlp() -> onnx.ModelProto:
    """MatMul + bias + Relu6, a transpose and reshape, a second MatMul, Relu, and a Gemm."""
    rng = np.random.default_rng(1)
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w1"], ["m1"], name="mm1"),
        n("Add", ["m1", "b1"], ["a1"], name="bias1"),
        n("Clip", ["a1", "lo", "hi"], ["c1"], name="relu6"),
        n("Transpose", ["c1"], ["t"], name="transpose", perm=[1, 0]),
        n("Reshape", ["t", "shape"], ["r"], name="reshape"),
        n("MatMul", ["r", "w2"], ["m2"], name="mm2"),
        n("Relu", ["m2"], ["h"], name="relu"),
        n("Gemm", ["h", "w3", "b3"], ["y"], name="fc"),
    ]
    inits = [
        random_init(rng, "w1", [16, 32]), random_init(rng, "b1", [32], 0.1),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
        numpy_helper.from_array(np.array([2, 32], np.int64), "shape"),
        random_init(rng, "w2", [32, 8]), random_init(rng, "w3", [8, 4]),
        random_init(rng, "b3", [4], 0.1),
    ]  # fmt: skip
    return float_graph(nodes, inits, [2, 16], [2, 4])


def inputs(module: ModuleOp, count: int, seed: int) -> list[np.ndarray]:
    shape = entry_function(module).body.block.args[0].type.get_shape()
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * 1.5).astype(np.float32) for _ in range(count)]


def npuc_quantized(model: onnx.ModelProto, **config) -> ModuleOp:
    """The model quantized by npuc's quantize pass, calibrated on a few random inputs."""
    module = import_onnx(model)
    batches = [{"x": x} for x in inputs(module, 8, seed=100)]
    stats = collect_statistics(module, batches, progress=False)
    quantize_module(module, ranges_from_statistics(stats), QuantizeConfig(**config))
    return module


# --------------------------------------------------------------------------- comparison


def layer_agreement(module: ModuleOp, exported: onnx.ModelProto, xs: list[np.ndarray]):
    """Per quantized layer: (values compared, values equal, max |diff|) where inputs agree.

    Exported tensors carry npuc's interpreter keys, so layers pair up by name.
    """
    func = entry_function(module)
    keys = FunctionRunner(func).keys
    names = {t for node in exported.graph.node for t in node.output}
    layers = {
        keys[r]: r
        for op in func.body.block.ops
        if not isinstance(op, qnn.ConstantOp)
        for r in op.results
        if keys.get(r) in names and _quantized(r)
    }
    traced = onnx.ModelProto()
    traced.CopyFrom(exported)
    probe = run_module(module, {"x": xs[0]}, keep=set(layers))[1]
    for key in layers:
        elem = helper.np_dtype_to_tensor_dtype(probe[key].dtype)
        traced.graph.output.append(helper.make_tensor_value_info(key, elem, None))
    out_names = [o.name for o in traced.graph.output]

    def sources(value: SSAValue) -> set[str]:
        if keys.get(value) in layers:
            return {keys[value]}
        owner = value.owner
        if not hasattr(owner, "operands") or isinstance(owner, qnn.ConstantOp):
            return set()
        return set().union(*(sources(v) for v in owner.operands))

    inputs_of = {
        key: set().union(set(), *(sources(v) for v in value.owner.operands))
        for key, value in layers.items()
    }
    stats = {key: [0, 0, 0] for key in layers}
    sess = reference_session(traced)
    for x in xs:
        theirs = dict(zip(out_names, sess.run(None, {"x": x}), strict=True))
        ours = run_module(module, {"x": x}, keep=set(layers))[1]
        for key in layers:
            if any(not np.array_equal(ours[k], theirs[k]) for k in inputs_of[key]):
                continue
            diff = ours[key].astype(np.int64) - theirs[key].astype(np.int64)
            stat = stats[key]
            stat[0] += diff.size
            stat[1] += int((diff == 0).sum())
            stat[2] = max(stat[2], int(np.abs(diff).max()))
    return stats


def _quantized(value: SSAValue) -> bool:
    ty = value.type
    return isinstance(getattr(ty, "element_type", None), qnn.UniformQuantizedType)


def output_steps(module: ModuleOp, exported: onnx.ModelProto, xs: list[np.ndarray]) -> np.ndarray:
    """npuc minus onnxruntime on the (dequantized) output, in output quantization steps."""
    ret = list(entry_function(module).body.block.ops)[-1]
    scale = qnn.qtype(ret.operands[0].owner.operands[0]).scale
    sess = reference_session(exported)
    diffs = [
        np.rint((run_module(module, {"x": x})["y"] - sess.run(None, {"x": x})[0]) / scale)
        for x in xs
    ]
    return np.concatenate([d.ravel() for d in diffs])


def check_layers(stats, min_exact: float) -> float:
    compared = sum(s[0] for s in stats.values())
    exact = sum(s[1] for s in stats.values()) / compared
    assert compared > 0
    assert max(s[2] for s in stats.values()) <= 1, stats
    assert exact >= min_exact, stats
    return exact


# --------------------------------------------------------------------------- tests


@pytest.mark.parametrize("rounding", ["half_away_from_zero", "half_to_even"])
@pytest.mark.parametrize("scheme", ["int8-per-channel", "uint8", "int16"])
@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_qdq_export_of_npuc_quantized_model_runs_in_onnxruntime(name, scheme, rounding):
    module = npuc_quantized(
        residual_cnn() if name == "cnn" else mlp(), scheme=scheme, rounding=rounding
    )
    exported = export_qdq(module)
    onnx.checker.check_model(exported, full_check=True)
    assert [o.version for o in exported.opset_import] == [21]
    xs = inputs(module, SAMPLES, seed=7)
    exact = check_layers(layer_agreement(module, exported, xs), min_exact=0.95)
    steps = output_steps(module, exported, xs)
    print(
        f"{name} {scheme} {rounding}: layers {exact:.1%} exact, output "
        f"{(steps == 0).mean():.1%} exact, max {np.abs(steps).max():.0f} step(s)"
    )
    if name == "mlp":  # no steep activation to amplify a one-step difference
        assert np.abs(steps).max() <= 1


def test_qdq_export_writes_the_qdq_form():
    module = npuc_quantized(residual_cnn())
    exported = export_qdq(module)
    nodes = {n.name: n for n in exported.graph.node}
    conv = nodes["conv1"]
    assert conv.op_type == "Conv"
    producers = {o: n for n in exported.graph.node for o in n.output}
    assert [producers[i].op_type for i in conv.input] == ["DequantizeLinear"] * 3
    weight_dq = producers[conv.input[1]]
    inits = {t.name: numpy_helper.to_array(t) for t in exported.graph.initializer}
    assert inits[weight_dq.input[0]].dtype == np.int8
    assert helper.get_attribute_value(weight_dq.attribute[0]) == 0  # per-channel axis 0
    assert inits[producers[conv.input[2]].input[0]].dtype == np.int32  # the bias
    users = [n for n in exported.graph.node if conv.output[0] in n.input]
    assert [u.op_type for u in users] == ["QuantizeLinear"]  # relu1 is the clamp: zp = qmin
    lut = nodes["sig"]
    assert lut.op_type == "Gather" and producers[lut.input[1]].op_type in ("Add", "Cast")
    assert [i.name for i in exported.graph.input] == ["x"]
    assert [o.name for o in exported.graph.output] == ["y"]


def test_qdq_export_quantized_signature():
    """io="quantized": integer graph inputs and outputs, fed and read as stored integers."""
    module = npuc_quantized(mlp(), io="quantized")
    exported = export_qdq(module)
    elem = TensorProto.INT8
    assert exported.graph.input[0].type.tensor_type.elem_type == elem
    assert exported.graph.output[0].type.tensor_type.elem_type == elem
    q = qnn.qtype(entry_function(module).body.block.args[0])
    rng = np.random.default_rng(3)
    sess = reference_session(exported)
    for _ in range(8):
        x = rng.integers(q.qmin, q.qmax + 1, (2, 16)).astype(np.int8)
        ours = run_module(module, {"x": x})["y"]
        theirs = sess.run(None, {"x": x})[0]
        assert np.abs(ours.astype(int) - theirs.astype(int)).max() <= 1


def test_qdq_export_hybrid_module():
    """int16 has no look-up tables in npuc's quantizer: sigmoid stays float and exports so."""
    module = npuc_quantized(residual_cnn(), scheme="int16")
    kinds = {op.name for op in entry_function(module).body.block.ops}
    assert "nn.sigmoid" in kinds and "qnn.conv2d" in kinds
    exported = export_qdq(module)
    assert "Sigmoid" in {n.op_type for n in exported.graph.node}
    check_layers(layer_agreement(module, exported, inputs(module, 8, seed=9)), min_exact=0.9)


def test_qdq_export_round_trips_a_prequantized_model(tmp_path):
    """onnxruntime's QDQ model -> npuc qnn -> QDQ again: the same integers in onnxruntime."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

    float_model = mlp()
    rng = np.random.default_rng(5)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rng.standard_normal((2, 16)).astype(np.float32)}] * 4)

        def get_next(self):
            return next(self.it, None)

    onnx.save(float_model, tmp_path / "f.onnx")
    quantize_static(
        str(tmp_path / "f.onnx"), str(tmp_path / "q.onnx"), Reader(), quant_format=QuantFormat.QDQ
    )
    original = onnx.load(tmp_path / "q.onnx")
    module = import_onnx(original)
    exported = export_qdq(module)
    xs = inputs(module, SAMPLES, seed=6)
    a, b = reference_session(original), reference_session(exported)
    for x in xs:
        np.testing.assert_array_equal(a.run(None, {"x": x})[0], b.run(None, {"x": x})[0])
    assert np.abs(output_steps(module, exported, xs)).max() <= 1


def _hand_built() -> str:
    """A qnn module with what the quantize pass does not emit here: a narrow storage range,
    pad, split, concat, a negative-step slice, requantize with a clamp, a per-axis
    fully_connected with a clamp, a u8 look-up table, and a quantized graph output."""
    sx, sy, sw, so = 0.05, 0.04, [0.01, 0.02, 0.015], 0.1
    req = quantize_multiplier(sx / sy)
    fc = [quantize_multiplier(sy * w / so) for w in sw]
    fc_m, fc_s = ", ".join(str(m) for m, _ in fc), ", ".join(str(s) for _, s in fc)
    levels = np.round(255 / (1 + np.exp(-(np.arange(256) - 128) * 0.05))).astype(int)
    table = ", ".join(map(str, levels))
    x = "!qnn.uniform<i8<-127:127>:f32, 0.05>"
    y = "!qnn.uniform<u8:f32, 0.04:128>"
    w = "!qnn.uniform<i8:f32:0, {0.01, 0.02, 0.015}>"
    o = "!qnn.uniform<u8:f32, 0.1:10>"
    g = "!qnn.uniform<u8:f32, 0.00392156862745098>"
    weights = "[[1, -2, 3, 4, -5, 6], [7, 8, -9, 10, 11, -12], [-13, 14, 15, -16, 17, 18]]"
    return f"""
    func.func @main(%x: tensor<2x4xf32> {{nn.name = "x"}})
        -> (tensor<2x3xf32> {{nn.name = "y"}}, tensor<2x3x{g}> {{nn.name = "gate"}}) {{
      %q = qnn.quantize %x {{name = "q"}} : (tensor<2x4xf32>) -> tensor<2x4x{x}>
      %p = qnn.pad %q {{pads = array<i64: 0, 1, 0, 1>, name = "pad"}}
          : (tensor<2x4x{x}>) -> tensor<2x6x{x}>
      %r = qnn.requantize %p {{multiplier = array<i64: {req[0]}>, shift = array<i64: {req[1]}>,
          rounding = "half_to_even", clamp_min = 128 : i64, name = "relu"}}
          : (tensor<2x6x{x}>) -> tensor<2x6x{y}>
      %w = qnn.constant {{value = dense<{weights}> : tensor<3x6xi8>}} : tensor<3x6x{w}>
      %b = qnn.constant {{value = dense<[100, -50, 25]> : tensor<3xi32>}} : tensor<3xi32>
      %fc = qnn.fully_connected %r, %w, %b {{multiplier = array<i64: {fc_m}>,
          shift = array<i64: {fc_s}>, clamp_max = 200 : i64, name = "fc"}}
          : (tensor<2x6x{y}>, tensor<3x6x{w}>, tensor<3xi32>) -> tensor<2x3x{o}>
      %s0, %s1 = qnn.split %fc {{axis = 1 : i64, name = "split"}}
          : (tensor<2x3x{o}>) -> (tensor<2x1x{o}>, tensor<2x2x{o}>)
      %c = qnn.concat %s1, %s0 {{axis = 1 : i64, name = "swap"}}
          : (tensor<2x2x{o}>, tensor<2x1x{o}>) -> tensor<2x3x{o}>
      %sl = qnn.slice %c {{starts = array<i64: 1, 2>, ends = array<i64: -1, -1>,
          steps = array<i64: -1, -1>, name = "flip"}} : (tensor<2x3x{o}>) -> tensor<2x3x{o}>
      %gate = qnn.lut %sl {{table = dense<[{table}]> : tensor<256xi32>, name = "gate"}}
          : (tensor<2x3x{o}>) -> tensor<2x3x{g}>
      %out = qnn.dequantize %sl {{name = "out"}} : (tensor<2x3x{o}>) -> tensor<2x3xf32>
      func.return %out, %gate : tensor<2x3xf32>, tensor<2x3x{g}>
    }}
    """


def test_qdq_export_hand_built_qnn_module():
    module = parse_mlir(_hand_built())
    exported = export_qdq(module)
    onnx.checker.check_model(exported, full_check=True)
    assert [o.name for o in exported.graph.output] == ["y", "gate"]
    assert exported.graph.output[1].type.tensor_type.elem_type == TensorProto.UINT8
    sess = reference_session(exported)
    rng = np.random.default_rng(2)
    exact = total = 0
    for _ in range(SAMPLES):
        x = (rng.standard_normal((2, 4)) * 4).astype(np.float32)
        ours = run_module(module, {"x": x})
        y, gate = sess.run(None, {"x": x})
        steps = np.rint((ours["y"] - y) / 0.1)
        assert np.abs(steps).max() <= 1
        assert np.abs(ours["gate"].astype(int) - gate.astype(int)).max() <= 1
        exact += int((steps == 0).sum())
        total += steps.size
    assert exact / total >= 0.9


def test_qdq_export_rejects_a_multiplier_that_does_not_match_the_types():
    module = npuc_quantized(mlp())
    fc = next(
        op for op in entry_function(module).body.block.ops if isinstance(op, qnn.FullyConnectedOp)
    )
    fc.properties["multiplier"] = ints([m // 2 for m in fc.multiplier.get_values()])
    with pytest.raises(NpucError, match="do not match its types' scales"):
        export_qdq(module)


def test_qdq_export_reports_ops_without_an_onnx_form():
    module = parse_mlir(
        """
        func.func @main(%x: tensor<1x4x2x2xf32> {nn.name = "x"})
            -> (tensor<1x4x2x2xf32> {nn.name = "y"}) {
          %y = nn.lrn %x {size = 3 : i64, alpha = 1.0e-4 : f32, beta = 0.75 : f32,
              bias = 1.0 : f32} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
          func.return %y : tensor<1x4x2x2xf32>
        }
        """
    )
    with pytest.raises(NpucError, match=r"no ONNX form for nn\.lrn"):
        export_qdq(module)


def test_qdq_export_clamps_are_clips_before_quantize():
    """Clamps narrower than the storage range (fused activations, a narrow storage range)
    become a Relu or Clip in front of the QuantizeLinear."""
    exported = export_qdq(parse_mlir(_hand_built()))
    producers = {o: n for n in exported.graph.node for o in n.output}
    inits = {t.name: numpy_helper.to_array(t) for t in exported.graph.initializer}

    def before_quantize(tensor: str) -> onnx.NodeProto:
        quantize = producers[tensor]
        assert quantize.op_type == "QuantizeLinear"
        return producers[quantize.input[0]]

    assert before_quantize("relu").op_type == "Relu"  # clamp_min = zero point 128
    narrow = before_quantize("q")  # i8<-127:127>: only the lower bound is narrower
    assert narrow.op_type == "Clip" and narrow.input[2:] in ([], [""])
    assert float(inits[narrow.input[1]]) == pytest.approx(-127 * 0.05)
    fc = before_quantize("fc")  # clamp_max 200 on zero point 10, scale 0.1
    assert fc.op_type == "Clip" and fc.input[1] == ""
    assert float(inits[fc.input[2]]) == pytest.approx(19.0)
