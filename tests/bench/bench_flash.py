"""Flash of compiled models with and without constant compression, next to its peers.

Run: PYTHONPATH=tests:tests/models .venv/bin/python tests/bench/bench_flash.py [--models a,b]
     [--no-vela]

Each model is compiled by npu-compile's flow for ethos-u55-256-hee (a target with a weight
decoder, so compress-constants runs; float models quantized per channel on 2 random
samples). Per model: the constants region as stored raw (every constant: weights, bias/
scale tables, LUTs), npuc's flash image (the encoded CONSTANTS section, NAME.h's
CONSTANT_MEM_SIZE), Vela 5.2's "Total Off-chip Flash used" where Vela compiles the model
(int8 TFLite only), and two peers for the codec on the same streams: zlib level 9 per
stream and the order-0 entropy (a lower bound for any per-tensor code of single values,
e.g. canonical Huffman, before its table). Decode time: the streams decoded by npuc's
numpy Rice decoder against zlib.decompress of the same streams, in one process.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np
from bench_vela import TARGET, VELA_ARGS
from corpus import MODELS
from shared_models import MBV2
from test_corpus import INPUT_SHAPES

from npuc.backend.npubin import constants_image
from npuc.compile_flow import CompileOptions, compile_model
from npuc.dialects import constant_codec
from npuc.dialects import npu_isa as isa
from npuc.runtime.loader import load


def vela_flash_kib(model: Path) -> float | None:
    vela = shutil.which("vela") or str(Path(__file__).parents[2] / ".venv" / "bin" / "vela")
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run(
            [vela, str(model), *VELA_ARGS, "--output-dir", out], capture_output=True, text=True
        )
    found = re.search(r"Total Off-chip Flash used\s+([\d.]+) KiB", done.stdout)
    return float(found[1]) if done.returncode == 0 and found else None


def order0_bytes(data: bytes, dtype: str) -> float:
    values = np.frombuffer(data, constant_codec.ELEMENT_TYPES[dtype])
    _, counts = np.unique(values, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum() * values.size / 8)


def compiled(model: Path, name: str, is_float: bool) -> isa.Program:
    shapes = INPUT_SHAPES.get(name)
    with tempfile.TemporaryDirectory() as out:
        options = CompileOptions(
            model=model,
            target=TARGET,
            output=Path(out),
            calib_random=2 if is_float else None,
            scheme="int8-per-channel" if is_float else None,
            import_options={"input_shapes": shapes} if shapes else {},
        )
        result = compile_model(options, progress=False)
        return load(result.files[f"{result.name}.npubin"])


def row(name: str, model: Path, is_float: bool, vela: bool) -> str:
    program = compiled(model, name, is_float)
    region = program.region("constants")
    raw = 0 if region is None else region.size
    image = len(constants_image(program))
    runs = []
    for s in program.streams:
        data = program.constants[s.offset : s.end]
        runs.append((data, s.dtype, constant_codec.encode(data, s.dtype)))
    stream_raw = sum(len(d) for d, _, _ in runs)
    rice = sum(len(p) for _, _, p in runs)
    deflated = [zlib.compress(d, 9) for d, _, _ in runs]
    entropy = sum(order0_bytes(d, t) for d, t, _ in runs)
    start = time.perf_counter()
    for d, t, p in runs:
        constant_codec.decode(p, t, len(d))
    rice_s = time.perf_counter() - start
    start = time.perf_counter()
    for z in deflated:
        zlib.decompress(z)
    zlib_s = time.perf_counter() - start
    theirs = vela_flash_kib(model) if vela and model.suffix == ".tflite" else None
    return (
        f"{name:22s} {raw / 1024:9.1f} {image / 1024:9.1f} "
        f"{'-' if theirs is None else f'{theirs:.1f}':>9s} "
        f"{len(runs):5d} {rice / max(stream_raw, 1):6.3f} "
        f"{sum(map(len, deflated)) / max(stream_raw, 1):6.3f} {entropy / max(stream_raw, 1):6.3f} "
        f"{stream_raw / 1e6 / max(rice_s, 1e-9):8.1f} {rice_s / max(zlib_s, 1e-9):7.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    parser.add_argument("--no-vela", action="store_true")
    args = parser.parse_args()
    cases = [("mbv2_int8_224", MBV2, False)]
    cases += [(m.name, m.file, "float" in m.kind) for m in MODELS if m.file.exists()]
    if args.models:
        wanted = args.models.split(",")
        cases = [case for case in cases if case[0] in wanted]
    print(f"flash on {TARGET}: constants raw and as npuc stores them (KiB), Vela's where it")
    print("compiles the model; codec ratios (stored / raw bytes of the encoded streams) of")
    print("npuc's Rice coding, zlib -9 and the order-0 entropy; Rice decode MB/s and its time")
    print("as a multiple of zlib.decompress's on the same streams")
    print(
        f"{'model':22s} {'raw':>9s} {'npuc':>9s} {'Vela':>9s} {'strms':>5s} {'rice':>6s} "
        f"{'zlib':>6s} {'H0':>6s} {'MB/s':>8s} {'x zlib':>7s}"
    )
    for name, path, is_float in cases:
        try:
            line = row(name, path, is_float, not args.no_vela)
        except Exception as e:  # a model npuc cannot compile: say so and go on
            line = f"{name:22s} fails: {str(e).splitlines()[0][:70]}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
