"""npu-compile: the one-shot driver, from flags and from a config file."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from shared_models import MBV2, VELA_ARGS
from tool_runner import REPO, run_tool

LENET = REPO / "examples" / "lenet5.onnx"
VELA_SIZE_OPTIMISED_PEAK_SRAM = int(353.50 * 1024)  # models/README.md


def macros(header: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"^#define (\w+) (\d+)$", header, re.M)}


@pytest.fixture(scope="module")
def lenet_build(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("lenet") / "build"
    done = run_tool("npu-compile", LENET, "--target", "mcu-64", "--calib-random", "8", "-o", out)
    assert done.returncode == 0, done.stderr
    return out, done.stdout + done.stderr


def test_float_model_is_quantized_and_every_file_is_written(lenet_build):
    out, log = lenet_build
    names = sorted(p.name for p in out.iterdir())
    for suffix in (
        "h",
        "layers.csv",
        "summary.csv",
        "weights.bin",
        "weights.txt",
        "memory.txt",
        "memory.json",
        "memory.png",
        "accuracy.txt",
        "accuracy.json",
        "npubin",
        "npu.mlir",
        "profile.txt",
        "profile.json",
        "profile.html",
        "trace.json",
    ):
        assert f"lenet5.{suffix}" in names
    for stage in ("import", "optimise", "quantize", "tile", "plan memory", "lower", "emit"):
        assert re.search(rf"\[\d/7\] {stage}\b.* \d+\.\d\d s", log), stage
    accuracy = json.loads((out / "lenet5.accuracy.json").read_text())
    assert accuracy["outputs"][0]["name"] == "prob"
    assert accuracy["outputs"][0]["cosine"] > 0.99


def test_int8_weights_are_the_quantized_initializers(lenet_build):
    """Every int8 weight tensor is the float initializer quantized per tensor (symmetric)."""
    out, _ = lenet_build
    blob = (out / "lenet5.weights.bin").read_bytes()
    header = macros((out / "lenet5.h").read_text())
    assert header["LENET5_CONSTANT_MEM_SIZE"] == len(blob)
    model = onnx.load(LENET)
    for init in model.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.ndim < 2:
            continue  # biases become int32 with the product of scales
        q = np.round(w / (np.abs(w).max() / 127)).astype(np.int8).tobytes()
        assert q in blob, init.name


def test_header_sizes_match_the_memory_report(lenet_build):
    out, _ = lenet_build
    header = macros((out / "lenet5.h").read_text())
    report = json.loads((out / "lenet5.memory.json").read_text())
    sizes = {r["name"]: r["size"] for r in report["regions"]}
    assert header["LENET5_ACTIVATIONS_MEM_SIZE"] == sizes["activations"]
    assert header["LENET5_CONSTANT_MEM_SIZE"] == sizes["constants"]
    assert header["LENET5_IO_IN_ACTIVATIONS"] == 1  # mcu-64 keeps I/O in the SRAM arena


def test_header_and_weights_describe_the_binary_constants(lenet_build):
    """The binary's constants region holds the weights and the tables lowering appends
    (bias/scale, LUTs): the header, weights.bin and the memory report say its size."""
    from npuc.runtime.loader import load_file

    out, _ = lenet_build
    program = load_file(out / "lenet5.npubin")
    region = program.region("constants")
    assert region is not None and len(program.constants) <= region.size
    header = macros((out / "lenet5.h").read_text())
    assert header["LENET5_CONSTANT_MEM_SIZE"] == region.size
    blob = (out / "lenet5.weights.bin").read_bytes()
    assert blob == program.constants + bytes(region.size - len(program.constants))
    report = json.loads((out / "lenet5.memory.json").read_text())
    assert {r["name"]: r["size"] for r in report["regions"]}["constants"] == region.size


@pytest.fixture(scope="module")
def mbv2_build(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("mbv2") / "build"
    done = run_tool(
        "npu-compile",
        MBV2,
        "--target",
        "ethos-u55-256-hee",
        "--optimise",
        "size",
        "--name",
        "mbv2",
        "-o",
        out,
        "-q",
        "--compare-vela",
    )
    assert done.returncode == 0, done.stderr
    return out, done.stdout + done.stderr


def test_size_mode_on_the_shared_mobilenet_fits_below_vela(mbv2_build):
    out, log = mbv2_build
    header = macros((out / "mbv2.h").read_text())
    peak = header["MBV2_ACTIVATIONS_MEM_SIZE"]
    assert 224 * 224 * 3 < peak < VELA_SIZE_OPTIMISED_PEAK_SRAM
    assert not list(out.glob("*.accuracy.*"))  # the model keeps its own quantization
    assert "[1/7]" not in log  # -q: no progress lines
    for suffix in ("npubin", "npu.mlir", "profile.html", "profile.json", "trace.json"):
        assert (out / f"mbv2.{suffix}").is_file(), suffix


def test_compiled_mobilenet_runs_bit_exact_with_litert(mbv2_build, tmp_path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    out, _ = mbv2_build
    x = np.random.default_rng(11).integers(-128, 128, (1, 224, 224, 3)).astype(np.int8)
    np.save(tmp_path / "x.npy", x)
    done = run_tool(
        "npu-run",
        out / "mbv2.npubin",
        "--input",
        f"input={tmp_path / 'x.npy'}",
        "-o",
        tmp_path / "y.npz",
    )
    assert done.returncode == 0, done.stderr
    litert = Interpreter(
        model_path=str(MBV2), experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    litert.allocate_tensors()
    litert.set_tensor(litert.get_input_details()[0]["index"], x)
    litert.invoke()
    want = litert.get_tensor(litert.get_output_details()[0]["index"])
    got = np.load(tmp_path / "y.npz")
    np.testing.assert_array_equal(got["softmax.q"], want)


def test_tiling_none_gives_one_instruction_a_layer_and_the_same_outputs(mbv2_build, tmp_path):
    from npuc.runtime.executor import Executor
    from npuc.runtime.loader import load_file

    out = tmp_path / "untiled"
    done = run_tool(
        "npu-compile",
        MBV2,
        "--target",
        "ethos-u55-256-hee",
        "--tiling",
        "none",
        "--name",
        "mbv2",
        "-o",
        out,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"tile\b.*none", done.stdout + done.stderr)
    untiled, tiled = load_file(out / "mbv2.npubin"), load_file(mbv2_build[0] / "mbv2.npubin")
    layers = [i.layer for i in untiled.instructions if i.op == "conv2d"]
    assert len(layers) == len(set(layers)) == 52  # MobileNetV2's convolutions, one each
    assert not [i for i in untiled.instructions if i.op == "dma"]
    assert len(tiled.instructions) > 5 * len(untiled.instructions)
    x = np.random.default_rng(5).integers(-128, 128, (1, 224, 224, 3)).astype(np.int8)
    (name,) = (d.name for d in untiled.inputs)
    a, b = Executor(untiled).run({name: x}), Executor(tiled).run({name: x})
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_profile_json_has_the_contract_fields(mbv2_build, tmp_path):
    out, _ = mbv2_build
    done = run_tool("npu-run", out / "mbv2.npubin", "--profile", "--json", tmp_path / "p.json")
    assert done.returncode == 0, done.stderr
    profile = json.loads((tmp_path / "p.json").read_text())
    assert profile["clock_mhz"] == 500
    assert profile["inference_ms"] == pytest.approx(profile["total_cycles"] / 500e3)
    names = [layer["name"] for layer in profile["layers"]]
    assert "conv0" in names and "logits" in names  # the TFLite model's own names
    for layer in profile["layers"]:
        assert {"name", "cycles", "macs", "utilization", "bytes_read", "bytes_written"} <= set(
            layer
        )
        assert 0 <= layer["utilization"] <= 1
    assert sum(layer["cycles"] for layer in profile["layers"]) >= profile["total_cycles"] * 0.99
    # About 300 M MACs in the model (models/README.md); cascades may recompute halo rows,
    # at most 50 % more (the tile pass's overlap limit).
    assert 295e6 < sum(layer["macs"] for layer in profile["layers"]) <= 1.5 * 301e6
    assert "conv0" in done.stdout  # the table


def test_dump_tensors_and_bad_binaries(mbv2_build, tmp_path):
    out, _ = mbv2_build
    done = run_tool(
        "npu-run", out / "mbv2.npubin", "--dump-tensors", "conv0", "-o", tmp_path / "d.npz"
    )
    assert done.returncode == 0, done.stderr
    dumped = [k for k in np.load(tmp_path / "d.npz").files if k.startswith("conv0/")]
    assert dumped
    bad = run_tool("npu-run", out / "mbv2.npubin", "--dump-tensors", "nope")
    assert bad.returncode == 1 and "no layer named nope" in bad.stderr
    data = bytearray((out / "mbv2.npubin").read_bytes())
    data[len(data) // 2] ^= 0x40
    (tmp_path / "corrupt.npubin").write_bytes(bytes(data))
    bad = run_tool("npu-run", tmp_path / "corrupt.npubin", "-o", tmp_path / "never.npz")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "CRC" in bad.stderr or "crc" in bad.stderr
    assert not (tmp_path / "never.npz").exists()


def test_config_file_gives_the_same_build(lenet_build, tmp_path):
    config = tmp_path / "build.toml"
    config.write_text(
        f'[build]\nmodel = "{LENET}"\ntarget = "mcu-64"\ncalib_random = 8\noutput = "out"\n'
        "[run]\nprofile = true\n"
    )
    done = run_tool("npu-compile", "--config", config, "-q")
    assert done.returncode == 0, done.stderr
    ours, theirs = tmp_path / "out", lenet_build[0]
    for name in ("lenet5.h", "lenet5.weights.bin", "lenet5.memory.json"):
        assert (ours / name).read_bytes() == (theirs / name).read_bytes(), name


@pytest.mark.parametrize(
    ("args", "config", "message"),
    [
        ([str(LENET), "--target", "mcu-64"], None, "missing -o OUTDIR"),
        (
            [str(LENET), "--target", "mcu-64", "-o", "{out}"],
            None,
            "is a float model: give calibration data with --calib DIR or --calib-random N",
        ),
        (
            [str(MBV2), "--target", "mcu-64", "--scheme", "int8", "-o", "{out}"],
            None,
            "is already quantized: it keeps its own quantization (drop --scheme)",
        ),
        ([str(LENET), "--target", "nope", "--calib-random", "2", "-o", "{out}"], None, "nope"),
        (["--config", "{config}"], "[build]\ntargett = 'mcu-64'\n", "unknown key 'build.targett'"),
        (
            ["--config", "{config}"],
            "[build]\ncalib_random = 'x'\n",
            "'build.calib_random' must be an integer",
        ),
        (["--config", "{config}"], "[bild]\n", "unknown section [bild]"),
        (["--config", "{config}"], "[build\n", "not a valid TOML file"),
    ],
)
def test_bad_input_is_one_diagnostic_and_writes_nothing(tmp_path, args, config, message):
    out = tmp_path / "out"
    if config is not None:
        (tmp_path / "c.toml").write_text(config)
    argv = [a.format(out=out, config=tmp_path / "c.toml") for a in args]
    done = run_tool("npu-compile", *argv)
    assert done.returncode == 1
    assert message in done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["c.toml"] if config else [])


def test_config_run_section_runs_the_build(lenet_build, tmp_path):
    out, _ = lenet_build
    x = np.random.default_rng(3).normal(size=(1, 1, 28, 28)).astype(np.float32)
    np.save(tmp_path / "digit.npy", x)
    config = tmp_path / "c.toml"
    config.write_text(
        f'[build]\nmodel = "{LENET}"\noutput = "{out}"\n'
        '[run]\ninput = { image = "digit.npy" }\noutput = "y.npz"\nprofile = true\n'
    )
    done = run_tool("npu-run", "--config", config)
    assert done.returncode == 0, done.stderr
    assert "conv1" in done.stdout  # the profile table
    flags = run_tool(
        "npu-run",
        out / "lenet5.npubin",
        "--input",
        f"image={tmp_path / 'digit.npy'}",
        "-o",
        tmp_path / "z.npz",
    )
    assert flags.returncode == 0, flags.stderr
    np.testing.assert_array_equal(
        np.load(tmp_path / "y.npz")["prob.q"], np.load(tmp_path / "z.npz")["prob.q"]
    )


def test_the_quantize_stage_of_a_float_model_without_data_says_so(tmp_path):
    done = run_tool("npu-compile", LENET, "--target", "mcu-64", "-o", tmp_path / "out")
    assert done.returncode == 1
    assert "[3/7] quantize: a float model, without calibration data ..." in done.stderr
    assert "None" not in done.stderr


# ------------------------------------------------------------------ the files agree with each other


def csv_lines(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("build", ["lenet_build", "mbv2_build"])
def test_npu_mlir_reassembles_into_the_binary_byte_for_byte(build, request, tmp_path):
    out, _ = request.getfixturevalue(build)
    (text,) = out.glob("*.npu.mlir")
    assert "__elided__" not in text.read_text()
    again = tmp_path / "again.npubin"
    done = run_tool("npu-opt", text, "-t", "npubin", "-o", again)
    assert done.returncode == 0, done.stderr
    (binary,) = out.glob("*.npubin")
    assert again.read_bytes() == binary.read_bytes()


@pytest.mark.parametrize("build", ["lenet_build", "mbv2_build"])
def test_layer_and_summary_csv_agree_with_the_profile_header_and_plan(build, request):
    out, _ = request.getfixturevalue(build)
    name = next(out.glob("*.npubin")).stem
    profile = json.loads((out / f"{name}.profile.json").read_text())
    header = macros((out / f"{name}.h").read_text())
    layers = csv_lines(out / f"{name}.layers.csv")
    assert [line["layer"] for line in layers] == [layer["name"] for layer in profile["layers"]]
    for line, layer in zip(layers, profile["layers"], strict=True):
        assert int(line["cycles"]) == layer["cycles"]
        assert int(line["macs"]) == layer["macs"]
        parts = ("compute_cycles", "exposed_dma_cycles", "host_cycles")
        assert sum(int(line[k]) for k in parts) == layer["cycles"]
        assert line["runs_on"] in ("NPU", "host", "NPU+host")
        assert line["bound"] in ("compute", "memory", "DMA", "host")
        assert 0 <= int(line["sram_in_use_bytes"]) <= header[f"{name.upper()}_ACTIVATIONS_MEM_SIZE"]
    (summary,) = csv_lines(out / f"{name}.summary.csv")
    assert int(summary["cycles_total"]) == profile["total_cycles"]
    assert int(summary["macs"]) == profile["total_macs"]
    prefix = name.upper()
    assert int(summary["constants_bytes"]) == header[f"{prefix}_CONSTANT_MEM_SIZE"]
    assert int(summary["activations_bytes"]) == header[f"{prefix}_ACTIVATIONS_MEM_SIZE"]
    weights, tables = int(summary["weights_bytes"]), int(summary["tables_bytes"])
    decoded = int(summary["constants_decoded_bytes"])
    assert weights > 0 and tables > 0 and weights + tables == decoded
    assert int(summary["constants_bytes"]) <= decoded  # encoded streams only where they pay
    assert int(summary["peak_sram_in_use_bytes"]) == max(
        int(line["sram_in_use_bytes"]) for line in layers
    )
    # the memory report says what the constants region holds, in the same figures
    report = (out / f"{name}.memory.txt").read_text()
    assert (
        f"tensors, {weights} bytes; bias/scale tables and LUTs added by lowering: {tables} bytes"
        in report
    )
    holds = {
        r["name"]: r["holds"]
        for r in json.loads((out / f"{name}.memory.json").read_text())["regions"]
    }
    assert (
        holds["activations"].startswith("inputs ")
        and "intermediate tensors" in holds["activations"]
    )


def test_memory_plot_is_a_real_picture(lenet_build):
    from PIL import Image

    out, _ = lenet_build
    with Image.open(out / "lenet5.memory.png") as image:
        assert image.format == "PNG" and image.size == (1200, 600)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is not None and len(colours) > 20  # curve, fill, text, not a blank canvas
    white = max(colours)[1]
    assert white == (255, 255, 255) and max(colours)[0] < 0.95 * 1200 * 600


def vela_summary(model: Path, tmp_path: Path) -> dict[str, str]:
    """Vela's own summary CSV for the size-optimised build, run here, not through npuc."""
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "vela"),
            str(model),
            *VELA_ARGS,
            "--optimise",
            "Size",
            "--output-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    (line,) = csv_lines(next(tmp_path.glob("*_summary_*.csv")))
    return line


def test_compare_vela_sets_vela_beside_npuc(mbv2_build, tmp_path):
    out, log = mbv2_build
    (ours,) = csv_lines(out / "mbv2.summary.csv")
    theirs = vela_summary(MBV2, tmp_path)
    table = {
        m[1]: (m[2], m[3])
        for m in re.finditer(r"^  (\w[\w ()]*?)\s{2,}([\d,.]+)\s+([\d,.]+)$", log, re.M)
    }
    assert table["sram used (KiB)"] == (
        f"{int(ours['sram_used_bytes']) / 1024:,.1f}",
        f"{float(theirs['sram_memory_used']):,.1f}",
    )
    assert table["flash used (KiB)"] == (
        f"{int(ours['flash_used_bytes']) / 1024:,.1f}",
        f"{float(theirs['off_chip_flash_memory_used']):,.1f}",
    )
    assert table["cycles"] == (
        f"{int(ours['cycles_total']):,}",
        f"{int(float(theirs['cycles_total'])):,}",
    )


@pytest.mark.parametrize(
    ("model", "target", "message"),
    [
        (LENET, "ethos-u55-256-hee", "--compare-vela needs an int8 TFLite model"),
        (MBV2, "mcu-64", "target 'mcu-64' mirrors no Vela configuration"),
    ],
)
def test_compare_vela_refuses_what_vela_cannot_compare(model, target, message, tmp_path):
    done = run_tool("npu-compile", model, "-t", target, "--compare-vela", "-o", tmp_path / "out")
    assert done.returncode == 1 and message in done.stderr
    assert not (tmp_path / "out").exists()


def test_the_collector_pauses_for_the_compile_and_resumes_after(monkeypatch, tmp_path):
    """Off while compiling; while writing, on with the compile's objects frozen (out of
    every collection); after, on with nothing frozen, also when the compile fails."""
    import gc

    from npuc import compile_flow, output_files
    from npuc.tools import npu_compile

    seen = []
    real = compile_flow.compile_model
    real_write = output_files.write_folder
    frozen = []

    def write_folder(*args, **kwargs):
        frozen.append((gc.isenabled(), gc.get_freeze_count()))
        return real_write(*args, **kwargs)

    monkeypatch.setattr(output_files, "write_folder", write_folder)

    def compile_model(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    def failing(*args, **kwargs):
        seen.append(gc.isenabled())
        raise RuntimeError("stop")

    assert gc.isenabled()
    out = tmp_path / "out"
    argv = [str(LENET), "--target", "mcu-64", "--calib-random", "2", "-q", "-o", str(out)]
    monkeypatch.setattr(compile_flow, "compile_model", compile_model)
    assert npu_compile.run(argv) == 0
    assert seen == [False] and gc.isenabled() and (out / "lenet5.npubin").is_file()
    assert len(frozen) == 1 and frozen[0][0] and frozen[0][1] > 1000
    assert gc.get_freeze_count() == 0
    monkeypatch.setattr(compile_flow, "compile_model", failing)
    with pytest.raises(RuntimeError, match="stop"):
        npu_compile.run([*argv[:-1], str(tmp_path / "other")])
    assert seen == [False, False] and gc.isenabled() and gc.get_freeze_count() == 0
