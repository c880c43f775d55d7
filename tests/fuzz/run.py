"""The fuzz runner: mutated inputs of every kind through npuc's tools, each outcome classified.

    PYTHONPATH=tests .venv/bin/python tests/fuzz/run.py --kind onnx --cases 500 --seed 1
    PYTHONPATH=tests .venv/bin/python tests/fuzz/run.py --cases 200 --jobs 2 --save
    PYTHONPATH=tests .venv/bin/python tests/fuzz/run.py --replay   # the committed crashes

Each case is a tool (`npu-opt`, `npu-run`, `npu-compile`, `npu-bundle`), its arguments and
the files it reads. Worker processes run the tool's `main` in-process (imports paid once)
with a soft timeout per case (SIGALRM); the parent kills a worker that overruns a hard
timeout (a hang in C code) or dies (a crash), and starts another. Workers run with an
address-space limit, so a huge allocation fails instead of swapping the machine.

Outcomes, per the rule "input at fault: a diagnostic naming the file, exit 1; npuc at fault:
the internal-error report, exit 70; never a traceback, a hang, exit 0 on bad input or a
half-written output":

    clean      exit 1 (or argparse's usage error, exit 2), no traceback, and the error line
               names the file (or the option) at fault
    ok         exit 0 on an input that may be valid
    raw        exit 1, but the diagnostic is not one: it holds a Python exception's text
               (`ValueError:`, `Exception:`, a repr like `('EOF in ...', (2, 0))`), or its
               first line is not the whole diagnostic (`TOOL: LOCATION: error: WHAT`, any
               further lines indented)
    unnamed    exit 1, but the error line names neither the file nor the option
    internal   exit 70: npuc's internal-error report (a bug to fix when the input is bad)
    traceback  an exception escaped `main`, or stderr holds a Python traceback
    hang       the case overran its timeout
    crash      the worker died (a signal: segfault, out of memory)
    exit0-bad  exit 0 on an input the mutation made definitely invalid
    half-written  a failed run left an output file, or a temporary file beside one
    other      any other exit status

`--save` writes a failing case (one per kind of failure, a few per kind and outcome) to
tests/fuzz/crashes/<kind>/<hash>.case.json (the tool, its arguments, the other files in
base64) and its main input as <hash>.<ext>; `--minimize` first drops lines (or 64-byte
chunks) of that input while the outcome stays, within a few dozen reruns.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import pickle
import random
import re
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
if str(TESTS) not in sys.path:  # tests/ holds this package and tflite_builder.py
    sys.path.insert(0, str(TESTS))

from fuzz import mutators as mut  # noqa: E402

KINDS = ("onnx", "tflite", "mlir", "npubin", "npy", "calib", "json", "cli")
FAILURES = (
    "raw",
    "unnamed",
    "internal",
    "traceback",
    "hang",
    "crash",
    "exit0-bad",
    "half-written",
    "other",
)
COLUMNS = ("tried", "clean", "ok", *FAILURES)
CRASHES = HERE / "crashes"
TOOLS = {
    "npu-opt": "npuc.tools.npu_opt",
    "npu-run": "npuc.tools.npu_run",
    "npu-compile": "npuc.tools.npu_compile",
    "npu-bundle": "npuc.tools.npu_bundle",
}
#: The address space a worker may use (a huge allocation fails rather than swapping).
WORKER_MEMORY = 6 << 30


@dataclass
class Case:
    """One run of a tool. Arguments may use `{dir}` (the case's own folder) and `{root}`
    (the shared seed folder); `files` are written into the case's folder first."""

    kind: str
    tool: str
    argv: list[str]
    files: dict[str, bytes] = field(default_factory=dict)
    dirs: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # the error line names one of these
    outputs: list[str] = field(default_factory=list)  # must not exist after a failure
    bad: bool = False
    description: str = ""
    main_file: str | None = None  # the input saved beside a crash

    def digest(self) -> str:
        h = hashlib.sha256(self.tool.encode())
        for arg in self.argv:
            h.update(arg.encode() + b"\0")
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + self.files[name])
        return h.hexdigest()[:16]


@dataclass
class Result:
    outcome: str
    status: int | None
    stderr: str
    seconds: float
    detail: str = ""


# =========================================================================== case generation


class Generator:
    """Cases of every kind from the seed corpus, deterministic for a seed."""

    def __init__(self, corpus: Any):
        self.corpus = corpus
        self.root = str(corpus.root)

    def case(self, kind: str, rng: random.Random) -> Case:
        for _ in range(20):
            case = getattr(self, f"_{kind}")(rng)
            if case is not None:
                return case
        raise RuntimeError(f"no {kind} case could be generated")

    # ------------------------------------------------------------------ model files

    def _onnx(self, rng: random.Random) -> Case | None:
        name = rng.choice(list(self.corpus.onnx))
        proto = self.corpus.onnx[name]
        if rng.random() < 0.55:
            m = mut.mutate_onnx(proto, rng)
            if rng.random() < 0.2:
                m2 = mut.mutate_onnx(_parse_onnx(m.data), rng)  # it may undo the first
                m = mut.Mutant(f"{m.description}; {m2.description}", m2.data, m2.bad)
        else:
            m = mut.mutate_bytes(proto.SerializeToString(), rng)
        args: list[str] = []
        if name == "dynamic" and rng.random() < 0.7:
            args += ["--input-shape", "x:2,3,4,4"]
        elif rng.random() < 0.08:  # the seed as it is, a static dimension overridden
            shape = _static_override(
                [
                    (i.name, [d.dim_value for d in i.type.tensor_type.shape.dim])
                    for i in proto.graph.input
                ],
                rng,
            )
            if shape is not None:
                args += ["--input-shape", shape]
                m = mut.Mutant(f"--input-shape {shape}", proto.SerializeToString(), bad=True)
        roll = rng.random()
        if roll < 0.55:
            tool, args, out = (
                "npu-opt",
                ["{dir}/case.onnx", *args, "-o", "{dir}/out.mlir"],
                "out.mlir",
            )
        elif roll < 0.95:
            tool, args, out = (
                "npu-run",
                ["{dir}/case.onnx", *args, "-o", "{dir}/out.npz"],
                "out.npz",
            )
        else:
            tool, out = "npu-run", "out.npz"
            args = [
                "{dir}/case.onnx",
                *args,
                "--quantize",
                "int8",
                "--calib-random",
                "2",
                "-o",
                "{dir}/out.npz",
            ]
        return _model_case("onnx", tool, args, out, name, m)

    def _tflite(self, rng: random.Random) -> Case | None:
        name = rng.choice(list(self.corpus.tflite))
        model = self.corpus.tflite[name]
        inputs = [(t.name, list(t.shape)) for t in model.tensors if t.name in model.fuzz_inputs]
        override = _static_override(inputs, rng) if rng.random() < 0.08 else None
        if override is not None:  # the seed as it is, a static dimension overridden
            data = model.build(model.fuzz_inputs, model.fuzz_outputs)
            m = mut.Mutant(f"--input-shape {override}", data, bad=True)
        elif rng.random() < 0.75:
            m = mut.mutate_tflite(self.corpus.tflite_copy(name), rng)
            if m.data is None:
                return None
        else:
            model = self.corpus.tflite[name]
            m = mut.mutate_bytes(model.build(model.fuzz_inputs, model.fuzz_outputs), rng)
        if rng.random() < 0.7:
            tool, args, out = "npu-run", ["{dir}/case.tflite", "-o", "{dir}/out.npz"], "out.npz"
        else:
            tool, args, out = "npu-opt", ["{dir}/case.tflite", "-o", "{dir}/out.mlir"], "out.mlir"
        if override is not None:
            args[1:1] = ["--input-shape", override]
        return _model_case("tflite", tool, args, out, name, m)

    def _mlir(self, rng: random.Random) -> Case | None:
        runnable = self.corpus.runnable_mlir
        name = rng.choice(runnable if rng.random() < 0.6 else list(self.corpus.mlir))
        text, descriptions, bad = self.corpus.mlir[name], [], False
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            m = mut.mutate_mlir(text, rng)
            text, bad = m.data, m.bad  # a later mutation may undo an earlier one
            descriptions.append(m.description)
        data = text.encode("utf-8", "surrogateescape")
        roll = rng.random()
        if roll < 0.45 or name not in runnable:
            tool, args, out = "npu-opt", ["{dir}/case.mlir", "-o", "{dir}/out.mlir"], "out.mlir"
            if rng.random() < 0.2:
                args += [
                    "-p",
                    rng.choice(
                        (
                            "canonicalize,cse,dce",
                            "fold-constants",
                            "fuse-activation,eliminate-identity",
                        )
                    ),
                ]
        else:
            tool, args, out = "npu-run", ["{dir}/case.mlir", "-o", "{dir}/out.npz"], "out.npz"
            if roll > 0.9:
                args += ["-p", "default"]
        return Case(
            "mlir",
            tool,
            args,
            {"case.mlir": data},
            names=["case.mlir"],
            outputs=[out],
            bad=bad,
            description=f"{name}: {'; '.join(descriptions)}",
            main_file="case.mlir",
        )

    def _npubin(self, rng: random.Random) -> Case | None:
        name = rng.choice(list(self.corpus.npubin))
        m = mut.mutate_npubin(self.corpus.npubin[name], rng)
        roll = rng.random()
        if roll < 0.7:
            tool, args, out = "npu-run", ["{dir}/case.npubin", "-o", "{dir}/out.npz"], "out.npz"
            if roll > 0.6:
                args += ["--profile", "--target", "mcu-64"]
        else:
            tool, args, out = "npu-opt", ["{dir}/case.npubin", "-o", "{dir}/out.mlir"], "out.mlir"
        return _model_case("npubin", tool, args, out, name, m)

    # ------------------------------------------------------------------ data files

    def _npy(self, rng: random.Random) -> Case | None:
        target = rng.choice(("onnx", "onnx", "npubin", "dynamic"))
        if target == "onnx":
            model, input_name, shape = "{root}/tiny_cnn.onnx", "image", (1, 3, 16, 16)
        elif target == "dynamic":
            model, input_name, shape = "{root}/dynamic.onnx", "x", (2, 3, 4, 4)
        else:
            model, input_name = "{root}/tiny_cnn.npubin", "image"
            shape = self.corpus.npubin_inputs["tiny_cnn"]["image"][0]
        m = mut.mutate_npy(shape, rng)
        data, file = m.data, "x.npy"
        if isinstance(data, tuple):
            file, data = "x.npz", data[1]
        args = [model, "--input", f"{input_name}={{dir}}/{file}", "-o", "{dir}/out.npz"]
        return Case(
            "npy",
            "npu-run",
            args,
            {file: data},
            names=[file],
            outputs=["out.npz"],
            bad=m.bad,
            description=f"{target}: {m.description}",
            main_file=file,
        )

    def _calib(self, rng: random.Random) -> Case | None:
        import numpy as np

        gen = np.random.default_rng(rng.getrandbits(32))
        files: dict[str, bytes] = {}
        n = rng.choice((1, 2, 3))
        sample_shape = rng.choice(((1, 3, 16, 16), (3, 16, 16)))
        for k in range(n):
            files[f"calib/s{k}.npy"] = mut.npy_bytes(
                gen.standard_normal(sample_shape).astype(np.float32)
            )
        how = rng.choice(("npy", "npy", "npy", "empty", "junk", "subdir", "image", "npz"))
        bad, dirs, desc = False, ["calib"], how
        if how == "npy":
            m = mut.mutate_npy(sample_shape, rng)
            data = m.data[1] if isinstance(m.data, tuple) else m.data
            suffix = "npz" if isinstance(m.data, tuple) else "npy"
            files[f"calib/s{rng.randrange(n)}.{suffix}"] = data
            desc, bad = f"a sample: {m.description}", m.bad and suffix == "npy" and n == 1
        elif how == "empty":
            files.clear()
            bad = True
        elif how == "junk":
            files["calib/readme.npy"] = b"not an array"
            bad = True
        elif how == "subdir":
            dirs.append("calib/nested")
            files["calib/nested/s9.npy"] = files["calib/s0.npy"]
        elif how == "image":
            files["calib/pic.png"] = rng.choice((b"\x89PNG\r\n\x1a\n" + bytes(20), b"", b"GIF89a"))
            bad = True
        else:
            out = io.BytesIO()
            np.savez(out, wrong=gen.standard_normal(sample_shape).astype(np.float32))
            files["calib/s0.npz"] = out.getvalue()  # one array: taken whatever its key
            files.pop("calib/s0.npy", None)
        extra = []
        if rng.random() < 0.3:
            option = rng.choice(
                (
                    "--batch-size",
                    "--mean",
                    "--scale",
                    "--outlier-std",
                    "--outlier-percentile",
                    "--activation-strategy",
                )
            )
            value = rng.choice(mut.OPTION_VALUES["float"] + ("2", "kl", "mse", "percentile"))
            extra, desc = [option, value], f"{desc}; {option} {value!r}"
        if rng.random() < 0.1:
            args = [
                "{root}/tiny_cnn.onnx",
                "-t",
                "mcu-64",
                "--calib",
                "{dir}/calib",
                "-q",
                "-o",
                "{dir}/out",
            ]
            return Case(
                "calib",
                "npu-compile",
                args,
                files,
                dirs,
                names=["calib"],
                outputs=["out"],
                bad=bad,
                description=f"compile: {desc}",
            )
        args = [
            "{root}/tiny_cnn.onnx",
            "--quantize",
            rng.choice(("int8", "int16", "uint8")),
            "--calib",
            "{dir}/calib",
            *extra,
            "-o",
            "{dir}/out.npz",
        ]
        names = ["calib", *(extra[:1])]
        return Case(
            "calib",
            "npu-run",
            args,
            files,
            dirs,
            names=names,
            outputs=["out.npz"],
            bad=bad,
            description=desc,
        )

    def _json(self, rng: random.Random) -> Case | None:
        which = rng.choice(("stats", "layer_config", "ranges"))
        m = mut.mutate_json(self.corpus.json[which], rng)
        if which == "stats":
            args = [
                "{root}/tiny_cnn.onnx",
                "--quantize",
                "int8",
                "--stats",
                "{dir}/file.json",
                "-o",
                "{dir}/out.npz",
            ]
            tool, out = "npu-run", "out.npz"
        elif which == "layer_config":
            args = [
                "{root}/tiny_cnn.onnx",
                "--quantize",
                "int8",
                "--calib-random",
                "2",
                "--layer-config",
                "{dir}/file.json",
                "-o",
                "{dir}/out.npz",
            ]
            tool, out = "npu-run", "out.npz"
        else:
            args = [
                "{root}/tiny_cnn.onnx",
                "-p",
                'quantize{scheme=int8 ranges="{dir}/file.json"}',
                "-o",
                "{dir}/out.mlir",
            ]
            tool, out = "npu-opt", "out.mlir"
        return Case(
            "json",
            tool,
            args,
            {"file.json": m.data},
            names=["file.json"],
            outputs=[out],
            bad=m.bad,
            description=f"{which}: {m.description}",
            main_file="file.json",
        )

    # ------------------------------------------------------------------ options

    def _cli(self, rng: random.Random) -> Case | None:
        tool = rng.choices(list(CLI_OPTIONS), [3, 5, 2, 1])[0]
        base = list(CLI_BASE[tool](rng))
        option, kind = rng.choice(CLI_OPTIONS[tool])
        files: dict[str, bytes] = {}
        if kind == "config":
            m = mut.mutate_toml(self.corpus.toml, rng)
            files["config.toml"] = m.data
            value, desc, bad = "{dir}/config.toml", f"config: {m.description}", False
        elif kind == "flag":
            value, desc, bad = "", option, False
        else:
            value = rng.choice(mut.OPTION_VALUES[kind])
            if kind == "shape" and rng.random() < 0.7:
                value = value.replace("x:", "image:", 1)
            bad = _definitely_bad(option, kind, value)
            desc = f"{option} {value[:60]!r}"
        argv = [*base, option, value] if kind != "flag" else [*base, option]
        if kind != "flag" and rng.random() < 0.15:  # the value glued to the option
            argv = [*base, f"{option}={value}"] if option.startswith("--") else argv
        # The diagnostic names the option, its value, a part of a pipeline, or a file.
        names = [option, f"'{value}'", *(v for v in (value, value.rstrip("/")) if v.strip())]
        if kind == "pipeline":
            names += [t for t in re.split(r"[,{}= ]+", value) if len(t) > 1]
        names += [Path(a).name for a in base if a.startswith("{root}/")]
        names += [a for a in base if a.startswith("{dir}/")]
        outputs = [a.split("/")[-1] for a in base if a.startswith("{dir}/out")]
        return Case(
            "cli",
            tool,
            argv,
            files,
            names=names,
            outputs=outputs,
            bad=bad,
            description=f"{tool} {desc}",
        )


def _static_override(inputs: list[tuple[str, list[int]]], rng: random.Random) -> str | None:
    """An --input-shape NAME:DIMS that changes one static (positive) dimension of an input."""
    static = [(name, dims) for name, dims in inputs if dims and any(d > 0 for d in dims)]
    if not static:
        return None
    name, dims = rng.choice(static)
    dims = list(dims)
    axis = rng.choice([i for i, d in enumerate(dims) if d > 0])
    dims[axis] += rng.choice((1, 2, 7))
    return f"{name}:{','.join(str(max(d, 1)) for d in dims)}"


def _parse_onnx(data: bytes):
    import onnx

    m = onnx.ModelProto()
    m.ParseFromString(data)
    return m


CLI_BASE = {
    "npu-opt": lambda rng: rng.choice(
        (
            ["{root}/tiny_cnn.onnx", "-o", "{dir}/out.mlir"],
            ["{root}/tiny.npubin", "-o", "{dir}/out.mlir"],
        )
    ),
    "npu-run": lambda rng: rng.choice(
        (
            ["{root}/tiny_cnn.onnx", "-o", "{dir}/out.npz"],
            ["{root}/tiny_cnn.npubin", "-o", "{dir}/out.npz"],
            [
                "{root}/tiny_cnn.onnx",
                "--quantize",
                "int8",
                "--calib-random",
                "2",
                "-o",
                "{dir}/out.npz",
            ],
        )
    ),
    "npu-compile": lambda rng: [
        "{root}/tiny_cnn.onnx",
        "-t",
        "mcu-64",
        "--calib-random",
        "2",
        "-q",
        "-o",
        "{dir}/out",
    ],
    "npu-bundle": lambda rng: ["{root}/tiny_cnn.onnx", "-t", "mcu-64", "-o", "{dir}/out"],
}
_IMPORT = [
    ("--input-shape", "shape"),
    ("--inputs", "text"),
    ("--outputs", "text"),
    ("--prequantized", "choice"),
    ("--max-tensor-bytes", "size"),
    ("--debug", "flag"),
]
# Not fuzzed: npu-opt --disable-verify (xDSL then replaces Attribute.__post_init__ for the
# whole process, which would leak into the worker's later cases) and -h/--version.
CLI_OPTIONS: dict[str, list[tuple[str, str]]] = {
    "npu-opt": [
        ("-p", "pipeline"),
        ("-t", "choice"),
        ("-o", "output"),
        ("-f", "choice"),
        ("--split-input-file", "flag"),
        ("--verify-diagnostics", "flag"),
        ("--parsing-diagnostics", "flag"),
        ("--print-op-generic", "flag"),
        ("--print-no-properties", "flag"),
        ("--no-implicit-module", "flag"),
        ("--allow-unregistered-dialect", "flag"),
        ("--print-between-passes", "flag"),
        ("--time-passes", "flag"),
        *_IMPORT,
    ],
    "npu-run": [
        ("--print-ir", "flag"),
        ("--compare", "flag"),
        ("--profile", "flag"),
        ("--reverse-channels", "flag"),
        ("--input", "text"),
        ("-o", "output"),
        ("-p", "pipeline"),
        ("--export-qdq", "output"),
        ("--level", "choice"),
        ("--seed", "int"),
        ("--sequence", "int"),
        ("--quantize", "choice"),
        ("--calib", "path"),
        ("--calib-random", "int"),
        ("--stats", "path"),
        ("--save-stats", "output"),
        ("--outlier-std", "float"),
        ("--outlier-percentile", "float"),
        ("--activation-strategy", "text"),
        ("--weight-strategy", "text"),
        ("--io", "choice"),
        ("--batch-size", "int"),
        ("--mean", "float"),
        ("--scale", "float"),
        ("--layer-config", "path"),
        ("--write-layer-config", "output"),
        ("--data", "path"),
        ("--json", "output"),
        ("--target-cosine", "float"),
        ("--max-top1-drop", "float"),
        ("--promote-to", "choice"),
        ("--target", "text"),
        ("--dump-tensors", "text"),
        ("--config", "config"),
        *_IMPORT,
    ],
    "npu-compile": [
        ("--no-host-fallback", "flag"),
        ("--show-host-ops", "flag"),
        ("--target", "text"),
        ("--optimise", "choice"),
        ("--calib", "path"),
        ("--calib-random", "int"),
        ("--scheme", "choice"),
        ("--tiling", "manual"),
        ("--name", "text"),
        ("--config", "config"),
        ("-o", "output"),
        *_IMPORT,
    ],
    "npu-bundle": [
        ("--target", "text"),
        ("-p", "pipeline"),
        ("--name", "text"),
        ("-o", "output"),
        *_IMPORT,
    ],
}


def _definitely_bad(option: str, kind: str, value: str) -> bool:
    """Option values no tool may accept silently."""
    if kind == "choice":
        return True
    if kind == "pipeline":
        return value not in ("cse,",)
    if kind == "int":
        try:
            number = int(value)
        except ValueError:
            return True
        positive = ("--sequence", "--calib-random", "--batch-size")
        return (option in positive and number < 1) or abs(number) > 2**63
    if kind == "float":
        try:
            number = float(value)
        except ValueError:
            return True
        if option == "--target-cosine":
            return not -1 < number <= 1
        if option == "--max-top1-drop":
            return not 0 <= number <= 100
        return number != number or (option == "--outlier-percentile" and not 0 < number <= 100)
    if kind == "shape":
        return value not in ("image:" + ",".join(["1"] * 40),)
    if kind == "size":  # a positive count of bytes in ASCII digits, K/M/G/T(iB) allowed
        size = re.fullmatch(r"\s*0*[1-9]\d*\s*[KMGT]?(?:i?B)?\s*", value, re.I | re.A)
        return size is None
    return option == "--target"


# =========================================================================== running


class _Timeout(BaseException):
    """Raised by SIGALRM in a worker: the case overran its soft timeout."""


def _on_alarm(signum, frame):
    raise _Timeout


def run_case(case: Case, case_dir: Path, root: str, timeout: float) -> Result:
    """Run one case in this process (a worker): files written, main called, outputs checked.
    An internal error runs again with NPUC_DEBUG=1, for its traceback."""
    result = _run_case(case, case_dir, root, timeout)
    if result.status == 70:
        shutil.rmtree(case_dir, ignore_errors=True)
        os.environ["NPUC_DEBUG"] = "1"
        try:
            result.detail = _run_case(case, case_dir, root, timeout).stderr
        finally:
            del os.environ["NPUC_DEBUG"]
    return result


def _run_case(case: Case, case_dir: Path, root: str, timeout: float) -> Result:
    import importlib

    case_dir.mkdir(parents=True, exist_ok=True)
    for d in case.dirs:
        (case_dir / d).mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        path = case_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith(".toml"):  # a config names the seeds and outputs by placeholder
            data = data.replace(b"{dir}", str(case_dir).encode()).replace(b"{root}", root.encode())
        path.write_bytes(data)
    argv = [a.replace("{dir}", str(case_dir)).replace("{root}", root) for a in case.argv]
    main = importlib.import_module(TOOLS[case.tool]).main
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace")
    err = io.StringIO()
    status: int | None = 0
    escaped = ""
    started = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as e:
                status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, int | None):
                    print(e.code, file=sys.stderr)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    except _Timeout:
        status, escaped = None, "timeout"
    except BaseException as e:
        status = None
        escaped = "".join(traceback.format_exception(e))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    seconds = time.perf_counter() - started
    stderr = err.getvalue()
    if escaped == "timeout":
        return Result("hang", None, _clip(stderr), seconds, f"over {timeout} s")
    if escaped:
        return Result("traceback", None, _clip(stderr), seconds, escaped[-4000:])
    leftovers = _leftovers(case, case_dir, status)
    names = [n.replace("{dir}", str(case_dir)).replace("{root}", root) for n in case.names]
    outcome = classify(dataclasses.replace(case, names=names), status, stderr, leftovers)
    return Result(outcome, status, _clip(stderr), seconds, leftovers)


def _clip(text: str, keep: int = 2000) -> str:
    return text if len(text) <= 2 * keep else f"{text[:keep]}\n[...]\n{text[-keep:]}"


def _leftovers(case: Case, case_dir: Path, status: int | None) -> str:
    stray = [
        p.name
        for p in case_dir.rglob("*")
        if p.name.endswith(".tmp") or p.name.startswith(".npuc-out-")
    ]
    if status != 0:
        stray += [o for o in case.outputs if (case_dir / o).exists()]
    return ", ".join(stray)


def classify(case: Case, status: int | None, stderr: str, leftovers: str = "") -> str:
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if leftovers:
        return "half-written"
    if status == 0:
        diagnostics_mode = any(
            a in case.argv for a in ("--verify-diagnostics", "--parsing-diagnostics")
        )
        return "exit0-bad" if case.bad and not diagnostics_mode else "ok"
    if status == 70:
        return "internal"
    if status == 2 and "usage: " in stderr and "error: argument" in stderr:
        return "clean"  # argparse's usage error names the option
    if status == 1:
        if raw_diagnostic(stderr):
            return "raw"
        line = error_line(stderr)
        names = [*case.names, *(n.encode("unicode_escape").decode() for n in case.names)]
        return "clean" if any(name in line for name in names) else "unnamed"
    return "other"


#: Python's own text in a message: an exception's name and message, or a tuple's repr
#: (tokenize's `('EOF in multi-line statement', (2, 0))`).
RAW_TEXT = re.compile(r"\b\w*(?:Error|Exception|Warning):|\('[^']*', \(\d+, \d+\)\)")


def raw_diagnostic(stderr: str) -> str:
    """What makes stderr's diagnostic not one (docs/robustness.md), or ''."""
    lines = stderr.splitlines()
    at = next((i for i, line in enumerate(lines) if "error" in line), None)
    if at is None:
        return "no error line"
    if not re.search(r"(?:^|: )error: \S", lines[at]):
        return f"the error line does not say `error: WHAT`: {lines[at][:120]}"
    for line in lines[at + 1 :]:
        if line.strip() and not line[0].isspace():
            return f"a continuation line is not indented: {line[:120]}"
    found = RAW_TEXT.search("\n".join(lines[at:]))
    return f"Python's text in the message: {found.group()}" if found else ""


def _gist(result: Result, case: Case) -> str:
    """The failure without paths and numbers (or, for a silent exit 0, the mutation):
    one saved crash per kind of failure."""
    text = re.sub(r"\S*/npuc-fuzz-\S*", "", _summary(result))
    if result.outcome == "exit0-bad":
        text = case.description.split(":", 1)[-1]
    return re.sub(r"[\d\[\](),'\"-]+", "", text)[:100]


def _summary(result: Result) -> str:
    if result.outcome in ("traceback", "hang", "crash", "half-written") and result.detail:
        return result.detail.strip().splitlines()[-1]
    return error_line(result.stderr) or result.detail.strip()


def error_line(stderr: str) -> str:
    """The line of stderr that carries the error (the first one saying 'error')."""
    for line in stderr.splitlines():
        if "error" in line:
            return line
    return stderr.strip().splitlines()[0] if stderr.strip() else ""


# ------------------------------------------------------------------ workers


def _send(stream, obj: Any) -> None:
    data = pickle.dumps(obj)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def _recv(stream) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(n))


def worker_main() -> None:
    """Serve cases over stdin/stdout; the tools' own output is captured per case."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    os.environ.pop("NPUC_DEBUG", None)
    import warnings

    warnings.simplefilter("default")
    for module in TOOLS.values():  # pay the imports once
        __import__(module)
    _send(replies, "ready")
    while True:
        try:
            case, case_dir, root, timeout = _recv(requests)
        except EOFError:
            return
        try:
            result = run_case(case, Path(case_dir), root, timeout)
        except BaseException as e:  # the harness itself failed: report, keep serving
            result = Result("traceback", None, "", 0.0, "harness: " + repr(e))
        shutil.rmtree(case_dir, ignore_errors=True)
        _send(replies, result)


class Worker:
    def __init__(self, cwd: Path) -> None:
        paths = [str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        env.pop("NPUC_DEBUG", None)
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "run.py"), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            cwd=str(cwd),
        )
        self.busy: tuple[int, Case, float] | None = None
        self.started = False

    def wait_ready(self, timeout: float = 120) -> None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready or _recv(self.proc.stdout) != "ready":
            raise RuntimeError("a fuzz worker did not start")
        self.started = True

    def submit(self, index: int, case: Case, case_dir: Path, root: str, timeout: float) -> None:
        _send(self.proc.stdin, (case, str(case_dir), root, timeout))
        self.busy = (index, case, time.monotonic())

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()


class Pool:
    """Worker processes that run cases; reusable (the minimizer reruns one case often)."""

    def __init__(
        self, root: str, jobs: int = 2, timeout: float = 10.0, hard_timeout: float | None = None
    ):
        self.root, self.jobs, self.timeout = root, max(1, jobs), timeout
        self.hard = hard_timeout or timeout + 20
        self.scratch = Path(tempfile.mkdtemp(prefix="npuc-fuzz-"))
        self.workers: list[Worker] = []
        self.count = 0  # case folders are numbered across calls

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for w in self.workers:
            w.kill()
        self.workers = []
        shutil.rmtree(self.scratch, ignore_errors=True)

    def run(self, cases: list[Case]) -> list[Result]:
        """Results in the cases' order."""
        while len(self.workers) < min(self.jobs, len(cases)):
            self.workers.append(Worker(self.scratch))
        for w in self.workers:
            if not w.started:
                w.wait_ready()
        results: list[Result | None] = [None] * len(cases)
        pending = list(range(len(cases)))[::-1]
        workers = self.workers
        while pending or any(w.busy for w in workers):
            for w in workers:
                if w.busy is None and pending:
                    i = pending.pop()
                    self.count += 1
                    w.submit(
                        i, cases[i], self.scratch / f"case{self.count}", self.root, self.timeout
                    )
            busy = [w for w in workers if w.busy]
            ready, _, _ = select.select([w.proc.stdout for w in busy], [], [], 1.0)
            now = time.monotonic()
            for k, w in enumerate(workers):
                if w.busy is None:
                    continue
                index, _, since = w.busy
                if w.proc.stdout in ready:
                    try:
                        results[index] = _recv(w.proc.stdout)
                        w.busy = None
                        continue
                    except (EOFError, pickle.UnpicklingError):
                        code = w.proc.wait()
                        results[index] = Result(
                            "crash", code, "", now - since, f"worker died: status {code}"
                        )
                elif now - since > self.hard:
                    results[index] = Result(
                        "hang", None, "", now - since, f"killed after {self.hard} s"
                    )
                else:
                    continue
                w.kill()  # a fresh worker for the next case
                workers[k] = Worker(self.scratch)
                workers[k].wait_ready()
        return results  # type: ignore[return-value]


def run_cases(
    cases: list[Case],
    root: str,
    jobs: int = 2,
    timeout: float = 10.0,
    hard_timeout: float | None = None,
) -> list[Result]:
    """Run cases on `jobs` fresh workers; results in the cases' order."""
    with Pool(root, jobs, timeout, hard_timeout) as pool:
        return pool.run(cases)


# =========================================================================== reports


def generate(
    corpus: Any, kinds: list[str], cases: int, seed: int, weights: dict[str, int] | None = None
) -> list[Case]:
    """`cases` cases per kind (scaled by `weights`), deterministic for the seed."""
    gen = Generator(corpus)
    out = []
    for kind in kinds:
        rng = random.Random(f"{seed}:{kind}")
        n = cases * (weights or {}).get(kind, 100) // 100
        out += [gen.case(kind, rng) for _ in range(n)]
    return out


def tally(cases: list[Case], results: list[Result]) -> dict[str, Counter]:
    counts: dict[str, Counter] = {}
    for case, result in zip(cases, results, strict=True):
        c = counts.setdefault(case.kind, Counter())
        c["tried"] += 1
        c[result.outcome] += 1
    return counts


def table(counts: dict[str, Counter]) -> str:
    widths = [max(len(c), 5) for c in COLUMNS]
    lines = ["kind    " + " ".join(c.rjust(w) for c, w in zip(COLUMNS, widths, strict=True))]
    total: Counter = Counter()
    for kind, c in counts.items():
        total.update(c)
        lines.append(
            f"{kind:8}"
            + " ".join(str(c[col]).rjust(w) for col, w in zip(COLUMNS, widths, strict=True))
        )
    lines.append(
        f"{'total':8}"
        + " ".join(str(total[col]).rjust(w) for col, w in zip(COLUMNS, widths, strict=True))
    )
    return "\n".join(lines)


def save_crash(case: Case, result: Result, directory: Path = CRASHES) -> Path:
    """tests/fuzz/crashes/<kind>/<hash>.json (the tool, its arguments, the other files in
    base64), and the main input as <hash>.<ext>."""
    folder = directory / case.kind
    folder.mkdir(parents=True, exist_ok=True)
    digest = case.digest()
    main = case.main_file if case.main_file in case.files else None
    record = {
        "tool": case.tool,
        "argv": case.argv,
        "main_file": main,
        "files": {n: base64.b64encode(d).decode() for n, d in case.files.items() if n != main},
        "dirs": case.dirs,
        "names": case.names,
        "outputs": case.outputs,
        "bad": case.bad,
        "description": case.description,
        "found": {
            "outcome": result.outcome,
            "status": result.status,
            "error": error_line(result.stderr)[:300] or result.detail[-300:],
        },
    }
    path = folder / f"{digest}.case.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    if main is not None:
        (folder / f"{digest}{Path(main).suffix}").write_bytes(case.files[main])
    return path


def load_crashes(directory: Path = CRASHES) -> list[Case]:
    cases = []
    for path in sorted(directory.glob("*/*.case.json")):
        r = json.loads(path.read_text())
        files = {n: base64.b64decode(d) for n, d in r["files"].items()}
        main = r.get("main_file")
        if main is not None:
            digest = path.name.removesuffix(".case.json")
            files[main] = (path.parent / f"{digest}{Path(main).suffix}").read_bytes()
        cases.append(
            Case(
                kind=path.parent.name,
                tool=r["tool"],
                argv=r["argv"],
                files=files,
                main_file=main,
                dirs=r.get("dirs", []),
                names=r["names"],
                outputs=r.get("outputs", []),
                bad=r.get("bad", False),
                description=f"{path.name}: {r.get('description', '')}",
            )
        )
    return cases


def minimize(case: Case, outcome: str, pool: Pool, budget: int = 40) -> Case:
    """Drop lines of a text input (or 64-byte chunks of a small binary) while the outcome
    stays the same, within `budget` reruns."""
    if case.main_file is None or case.main_file not in case.files:
        return case
    data = case.files[case.main_file]
    if len(data) > 64 * 1024:
        return case
    text = case.main_file.endswith((".mlir", ".json"))
    units: list[bytes] = (
        data.splitlines(keepends=True)
        if text
        else [data[i : i + 64] for i in range(0, len(data), 64)]
    )

    def with_units(chosen: list[bytes]) -> Case:
        return dataclasses.replace(case, files={**case.files, case.main_file: b"".join(chosen)})

    runs, chunk = 0, max(1, len(units) // 2)
    while chunk >= 1 and runs < budget:
        i, changed = 0, False
        while i < len(units) and runs < budget:
            trial = units[:i] + units[i + chunk :]
            runs += 1
            if pool.run([with_units(trial)])[0].outcome == outcome:
                units, changed = trial, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return with_units(units)


def build_corpus(root: Path | None = None):
    from fuzz import seeds

    root = root or Path(tempfile.mkdtemp(prefix="npuc-fuzz-seeds-"))
    corpus = seeds.build(root)
    import onnx

    onnx.save(corpus.onnx["dynamic"], root / "dynamic.onnx")
    return corpus


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kind", action="append", choices=KINDS, help="default: every kind")
    parser.add_argument("--cases", type=int, default=200, help="cases per kind (default 200)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per case")
    parser.add_argument("--save", action="store_true", help="write failures to crashes/")
    parser.add_argument("--minimize", action="store_true", help="minimize saved inputs")
    parser.add_argument(
        "--save-limit",
        type=int,
        default=6,
        metavar="N",
        help="save at most N failures per kind and outcome (default 6)",
    )
    parser.add_argument("--replay", action="store_true", help="run the committed crashes")
    parser.add_argument(
        "--crash-dir",
        type=Path,
        default=CRASHES,
        metavar="DIR",
        help="where --save writes and --replay reads (tests/fuzz/crashes)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show every failure")
    parser.add_argument("--report", metavar="FILE", help="write every failure as JSON lines")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    root = Path(tempfile.mkdtemp(prefix="npuc-fuzz-seeds-"))
    try:
        started = time.perf_counter()
        corpus = build_corpus(root)
        if args.replay:
            cases = load_crashes(args.crash_dir)
        else:
            cases = generate(corpus, args.kind or list(KINDS), args.cases, args.seed)
        results = run_cases(cases, str(root), args.jobs, args.timeout)
        failures = [(c, r) for c, r in zip(cases, results, strict=True) if r.outcome in FAILURES]
        shown: Counter = Counter()
        saved: Counter = Counter()
        for case, result in failures:
            key = (case.kind, result.outcome, _gist(result, case))
            shown[key] += 1
            if args.verbose or shown[key] == 1:
                print(f"[{case.kind} {result.outcome}] {case.tool} {case.description}")
                print("    " + _summary(result)[:300])
            if args.save and shown[key] == 1 and saved[key[:2]] < args.save_limit:
                saved[key[:2]] += 1
                if args.minimize:
                    with Pool(str(root), 1, args.timeout) as pool:
                        case = minimize(case, result.outcome, pool)
                save_crash(case, result, args.crash_dir)
        if args.report:
            with open(args.report, "w") as f:
                for case, result in failures:
                    f.write(
                        json.dumps(
                            {
                                "kind": case.kind,
                                "outcome": result.outcome,
                                "tool": case.tool,
                                "argv": case.argv,
                                "description": case.description,
                                "error": _summary(result),
                                "stderr": result.stderr[-1500:],
                                "detail": result.detail[-3000:],
                            }
                        )
                        + "\n"
                    )
        print(table(tally(cases, results)))
        print(f"{len(cases)} cases in {time.perf_counter() - started:.1f} s")
        return 1 if failures else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    # Run as `fuzz.run`, so the cases and results pickled between the runner and its workers
    # name one module whether it runs as a script or under pytest.
    from fuzz import run as _module

    sys.exit(_module.main())


def _model_case(kind: str, tool: str, args: list[str], out: str, name: str, m) -> Case:
    """A mutated model file `case.KIND` run by `tool`, writing `out`."""
    file = f"case.{kind}"
    return Case(
        kind,
        tool,
        args,
        {file: m.data},
        names=[file],
        outputs=[out],
        bad=m.bad,
        description=f"{name}: {m.description}",
        main_file=file,
    )
