"""Compile time and peak memory against model depth: ONNX chains of 10, 100 and 1000
3x3 convolutions (16 channels, 32x32, each followed by ReLU), compiled whole-process by
`npu-compile --calib-random 2` for ethos-u55-256-hee, next to Vela compiling the shared
MobileNetV2 in the same run (the peer figure the 1000-layer chain is held to: at most
20x its time and 1 GiB peak RSS). Per layer figures show whether the cost grows
linearly.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_compile_scale.py [--layers 10,100,1000]
"""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import numpy as np
import onnx
from bench_vela import TARGET, VELA_ARGS
from onnx import TensorProto, helper, numpy_helper
from shared_models import MBV2
from whole_process import VENV_BIN, Run, paired

CHANNELS, SIDE = 16, 32


def conv_chain(layers: int, seed: int = 0) -> onnx.ModelProto:
    """`layers` 3x3 same-padded convolutions with ReLU, He-scaled random weights."""
    rng = np.random.default_rng(seed)
    scale = np.sqrt(2 / (9 * CHANNELS))
    nodes, inits = [], []
    x = "x"
    for k in range(layers):
        w = (rng.standard_normal((CHANNELS, CHANNELS, 3, 3)) * scale).astype(np.float32)
        b = (rng.standard_normal(CHANNELS) * 0.01).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{k}"), numpy_helper.from_array(b, f"b{k}")]
        y = "y" if k == layers - 1 else f"t{k}"
        nodes.append(helper.make_node("Conv", [x, f"w{k}", f"b{k}"], [f"c{k}"], pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{k}"], [y]))
        x = y
    dims = [1, CHANNELS, SIDE, SIDE]
    graph = helper.make_graph(
        nodes,
        f"chain{layers}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def vela_command(model: Path, out: Path, optimise: str = "performance") -> list[str]:
    return [
        str(VENV_BIN / "vela"),
        str(model),
        *VELA_ARGS,
        "--optimise",
        optimise.capitalize(),
        "--output-dir",
        str(out),
    ]


def npuc_command(model: Path, out: Path, *extra: str) -> list[str]:
    return [str(VENV_BIN / "npu-compile"), str(model), "--target", TARGET, "-o", str(out), *extra]


def stage_times(run: Run) -> str:
    """The stage times npu-compile printed, as `stage 1.23`."""
    found = re.findall(r"\] ([a-z ]+):[^\n]*?([\d.]+) s$", run.stderr, re.M)
    return ", ".join(f"{name} {float(s):.2f}" for name, s in found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        vela = paired(vela_command(MBV2, work / "vela"), None, repeat=3).a
        print(f"peer: Vela, {MBV2.name}: {vela.cpu:.2f} s CPU, {vela.peak_mib:.0f} MiB peak")
        print(
            f"{'layers':>6} {'cpu s':>8} {'wall s':>8} {'ms/layer':>9} {'x Vela':>7} "
            f"{'peak MiB':>9}  stages (wall s)"
        )
        for n in (int(x) for x in args.layers.split(",")):
            model = work / f"chain{n}.onnx"
            onnx.save(conv_chain(n), model)
            command = npuc_command(model, work / f"out{n}", "--calib-random", "2")
            ours = paired(command, None, repeat=args.repeat, warmup=0).a
            failed = f"  (exit {ours.status})" if ours.status else ""
            print(
                f"{n:>6} {ours.cpu:>8.2f} {ours.wall:>8.2f} {1000 * ours.cpu / n:>9.1f} "
                f"{ours.cpu / vela.cpu:>7.1f} {ours.peak_mib:>9.0f}  {stage_times(ours)}{failed}",
                flush=True,
            )


if __name__ == "__main__":
    main()
