"""A small CNN trained at test time on scikit-learn's handwritten digits, exported to ONNX.

The data ships with scikit-learn (1,797 8x8 images); training is plain numpy
(SGD with momentum, manual backprop) and deterministic for a seed, so
quantization accuracy figures mean something without any download.

Network: conv 3x3 (1->8, pad 1) + relu -> conv 3x3 (8->16, pad 1) + relu ->
avg-pool 2x2 -> flatten -> fully connected (256 -> 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


@dataclass(frozen=True)
class DigitsData:
    train_x: np.ndarray  # [N, 1, 8, 8] float32 in [0, 1]
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray


@cache
def digits_data(seed: int = 0) -> DigitsData:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    split = 1400
    return DigitsData(x[:split], y[:split], x[split:], y[split:])


def _im2col(x: np.ndarray) -> np.ndarray:
    """[N, C, 8, 8] -> [N, C*9, 64] patches of a 3x3, pad-1 convolution."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    view = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    return view.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * 9, h * w)


def _col2im(cols: np.ndarray, c: int) -> np.ndarray:
    """Adjoint of _im2col: scatter-add patch gradients back to [N, C, 8, 8]."""
    n = cols.shape[0]
    cols = cols.reshape(n, c, 3, 3, 8, 8)
    out = np.zeros((n, c, 10, 10), np.float32)
    for i in range(3):
        for j in range(3):
            out[:, :, i : i + 8, j : j + 8] += cols[:, :, i, j]
    return out[:, :, 1:9, 1:9]


class _Net:
    def __init__(self, rng: np.random.Generator):
        def init(*shape: int) -> np.ndarray:
            fan_in = int(np.prod(shape[1:]))
            return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

        self.params = {
            "w1": init(8, 1, 3, 3),
            "b1": np.zeros(8, np.float32),
            "w2": init(16, 8, 3, 3),
            "b2": np.zeros(16, np.float32),
            "w3": init(10, 256),
            "b3": np.zeros(10, np.float32),
        }

    def forward(self, x: np.ndarray):
        p = self.params
        c1 = _im2col(x)
        z1 = np.einsum("ok,nkp->nop", p["w1"].reshape(8, -1), c1) + p["b1"][:, None]
        a1 = np.maximum(z1, 0).reshape(-1, 8, 8, 8)
        c2 = _im2col(a1)
        z2 = np.einsum("ok,nkp->nop", p["w2"].reshape(16, -1), c2) + p["b2"][:, None]
        a2 = np.maximum(z2, 0).reshape(-1, 16, 8, 8)
        pooled = a2.reshape(-1, 16, 4, 2, 4, 2).mean(axis=(3, 5))
        flat = pooled.reshape(len(x), -1)
        logits = flat @ p["w3"].T + p["b3"]
        return logits, (c1, z1, c2, z2, flat)

    def gradients(self, x: np.ndarray, y: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
        p = self.params
        logits, (c1, z1, c2, z2, flat) = self.forward(x)
        shifted = logits - logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        n = len(x)
        loss = float(-np.log(probs[np.arange(n), y] + 1e-12).mean())
        d_logits = probs
        d_logits[np.arange(n), y] -= 1
        d_logits /= n
        g = {"w3": d_logits.T @ flat, "b3": d_logits.sum(axis=0)}
        d_pooled = (d_logits @ p["w3"]).reshape(n, 16, 4, 1, 4, 1)
        d_a2 = np.broadcast_to(d_pooled / 4, (n, 16, 4, 2, 4, 2)).reshape(n, 16, 64)
        d_z2 = d_a2 * (z2 > 0)
        g["w2"] = np.einsum("nop,nkp->ok", d_z2, c2).reshape(p["w2"].shape)
        g["b2"] = d_z2.sum(axis=(0, 2))
        d_c2 = np.einsum("ok,nop->nkp", p["w2"].reshape(16, -1), d_z2)
        d_a1 = _col2im(d_c2, 8).reshape(n, 8, 64)
        d_z1 = d_a1 * (z1 > 0)
        g["w1"] = np.einsum("nop,nkp->ok", d_z1, c1).reshape(p["w1"].shape)
        g["b1"] = d_z1.sum(axis=(0, 2))
        return loss, g


def train(seed: int = 0, epochs: int = 12, batch: int = 32, lr: float = 0.05) -> _Net:
    data = digits_data()
    rng = np.random.default_rng(seed)
    net = _Net(rng)
    velocity = {k: np.zeros_like(v) for k, v in net.params.items()}
    for _ in range(epochs):
        order = rng.permutation(len(data.train_y))
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            _, grads = net.gradients(data.train_x[idx], data.train_y[idx])
            for k, grad in grads.items():
                velocity[k] = 0.9 * velocity[k] - lr * grad.astype(np.float32)
                net.params[k] += velocity[k]
    return net


def to_onnx(net: _Net, batch: int = 1) -> onnx.ModelProto:
    p = net.params
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in p.items()]
    inits.append(numpy_helper.from_array(np.array([batch, 256], np.int64), "flat_shape"))
    nodes = [
        helper.make_node("Conv", ["image", "w1", "b1"], ["z1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["z1"], ["a1"], name="relu1"),
        helper.make_node("Conv", ["a1", "w2", "b2"], ["z2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["z2"], ["a2"], name="relu2"),
        helper.make_node(
            "AveragePool", ["a2"], ["pool"], name="pool", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node("Reshape", ["pool", "flat_shape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "w3", "b3"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "digits_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [batch, 1, 8, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 10])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


@cache
def digits_cnn(seed: int = 0, batch: int = 1) -> onnx.ModelProto:
    """The trained network as an ONNX model (cached per process)."""
    return to_onnx(_trained(seed), batch)


@cache
def _trained(seed: int) -> _Net:
    return train(seed)


def float_accuracy(seed: int = 0) -> float:
    data = digits_data()
    logits, _ = _trained(seed).forward(data.test_x)
    return float((logits.argmax(axis=1) == data.test_y).mean())
