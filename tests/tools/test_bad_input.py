"""Bad input gets a diagnostic with a location and exit code 1, never a traceback."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tool_runner import EXAMPLE, RELU_MLIR, run_tool


def assert_clean_failure(result, *fragments: str) -> None:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def test_malformed_mlir_points_at_line_and_column(tmp_path: Path):
    bad = tmp_path / "bad.mlir"
    bad.write_text(
        "func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {\n  %0 = nn.relu %x : \n}\n"
    )
    result = run_tool("npu-opt", bad)
    assert_clean_failure(result, "bad.mlir:")


def test_unknown_op_is_reported(tmp_path: Path):
    bad = tmp_path / "unknown.mlir"
    bad.write_text(RELU_MLIR.replace("nn.relu", "nn.frobnicate"))
    assert_clean_failure(run_tool("npu-opt", bad), "nn.frobnicate")


def test_verifier_error_names_the_op(tmp_path: Path):
    bad = tmp_path / "shape.mlir"
    bad.write_text(
        "func.func @main(%x: tensor<1x4xf32>) -> tensor<1x5xf32> {\n"
        "  %0 = nn.relu %x : (tensor<1x4xf32>) -> tensor<1x5xf32>\n"
        "  func.return %0 : tensor<1x5xf32>\n"
        "}\n"
    )
    result = run_tool("npu-opt", bad)
    assert_clean_failure(result, "nn.relu", "result shape must be 1x4", "in: %")


def test_unknown_pass(relu_mlir: Path):
    assert_clean_failure(run_tool("npu-opt", relu_mlir, "-p", "no-such-pass"), "no-such-pass")


def test_unknown_pass_option(relu_mlir: Path):
    assert_clean_failure(
        run_tool("npu-opt", relu_mlir, "-p", "fold-constants{no_such_option=1}"), "no_such_option"
    )


def test_unknown_command_line_flag(relu_mlir: Path):
    result = run_tool("npu-opt", relu_mlir, "--no-such-flag")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "--no-such-flag" in result.stderr


def test_missing_file():
    assert_clean_failure(run_tool("npu-opt", "does-not-exist.mlir"), "does-not-exist.mlir")


def test_failed_run_writes_no_output_file(tmp_path: Path, relu_mlir: Path):
    out = tmp_path / "out.mlir"
    result = run_tool("npu-opt", relu_mlir, "-p", "no-such-pass", "-o", out)
    assert_clean_failure(result)
    assert not out.exists()


@pytest.mark.parametrize(
    "content", [b"", b"\x08\x07garbage\xff\xff\xff", b"not a protobuf at all" * 10]
)
def test_garbage_onnx(tmp_path: Path, content: bytes):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(content)
    assert_clean_failure(run_tool("npu-opt", bad), "model.onnx")
    assert_clean_failure(run_tool("npu-run", bad), "model.onnx")


def test_truncated_onnx(tmp_path: Path):
    data = EXAMPLE.read_bytes()
    bad = tmp_path / "truncated.onnx"
    bad.write_bytes(data[: len(data) // 2])
    assert_clean_failure(run_tool("npu-opt", bad), "truncated.onnx")


@pytest.mark.parametrize("spec", ["image", "image:", "image:1,x,16", ":1,3", "image:1,-3,16,16"])
def test_malformed_input_shape_option(spec: str):
    assert_clean_failure(run_tool("npu-opt", EXAMPLE, "--input-shape", spec), "--input-shape")


def test_input_shape_for_unknown_input():
    assert_clean_failure(
        run_tool("npu-opt", EXAMPLE, "--input-shape", "nosuch:1,3,16,16"), "nosuch"
    )


def test_wrong_input_shape_at_run_time(tmp_path: Path):
    feed = tmp_path / "image.npy"
    np.save(feed, np.zeros((1, 3, 8, 8), np.float32))
    result = run_tool("npu-run", EXAMPLE, "--input", f"image={feed}")
    assert_clean_failure(result, "image", "(1, 3, 16, 16)")


def test_input_that_is_not_an_array(tmp_path: Path):
    feed = tmp_path / "image.npy"
    feed.write_text("hello")
    assert_clean_failure(run_tool("npu-run", EXAMPLE, "--input", f"image={feed}"), "image.npy")


def test_unknown_model_format(tmp_path: Path):
    model = tmp_path / "model.txt"
    model.write_text("hello")
    assert_clean_failure(run_tool("npu-run", model), "model.txt")


def test_run_output_not_written_on_failure(tmp_path: Path):
    feed = tmp_path / "image.npy"
    np.save(feed, np.zeros((2, 2), np.float32))
    out = tmp_path / "out.npz"
    assert_clean_failure(run_tool("npu-run", EXAMPLE, "--input", f"image={feed}", "-o", out))
    assert not out.exists()


@pytest.fixture(scope="module")
def lenet_binary(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("lenet")
    model = Path(__file__).resolve().parents[2] / "examples" / "lenet5.onnx"
    result = run_tool("npu-compile", model, "-t", "mcu-64", "--calib-random", "2", "-q", "-o", out)
    assert result.returncode == 0, result.stderr
    return out / "lenet5.npubin"


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["--quantize", "int8"], "--quantize"),
        (["--level", "qnn"], "--level"),
        (["-p", "canonicalize"], "--passes"),
        (["--print-ir"], "--print-ir"),
        (["--input-shape", "x:1,1,28,28"], "--input-shape"),
        (["--activation-strategy", "mse"], "--activation-strategy"),
    ],
)
def test_model_options_are_refused_for_a_binary_not_ignored(lenet_binary: Path, option, named):
    result = run_tool("npu-run", lenet_binary, *option)
    assert_clean_failure(result, f"{named} applies to a model, not to a compiled .npubin")


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--target-cosine", "2"], "--target-cosine must be in (-1, 1], got 2.0"),
        (["--max-top1-drop", "150"], "--max-top1-drop is a percentage in [0, 100], got 150.0"),
    ],
)
def test_out_of_range_search_targets_are_refused(option, message):
    result = run_tool("npu-run", EXAMPLE, "--quantize", "int8", "--calib-random", "2", *option)
    assert_clean_failure(result, message)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1, \x00\x00",
            "not a numpy .npy/.npz array",
        ),
        (b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f4',\n", "not a numpy .npy/.npz array"),
    ],
)
def test_corrupt_npy_headers_are_diagnostics(tmp_path: Path, content: bytes, message: str):
    feed = tmp_path / "image.npy"
    feed.write_bytes(content)
    result = run_tool("npu-run", EXAMPLE, "--input", f"image={feed}")
    assert_clean_failure(result, f"{feed}: error: {message}")


@pytest.mark.parametrize(
    ("option", "content", "message"),
    [
        ("--stats", "[" * 100000 + "]" * 100000, "not a statistics file: JSON nested too deeply"),
        ("--layer-config", "{" * 10, "not a JSON layer configuration: invalid JSON at line 1"),
        ("--layer-config", b"\xbd\xff", "not a JSON layer configuration: not UTF-8 text"),
    ],
)
def test_unreadable_json_files_are_diagnostics(tmp_path: Path, option, content, message):
    path = tmp_path / "file.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    args = (
        ["--quantize", "int8", "--calib-random", "2"]
        if option != "--stats"
        else ["--quantize", "int8"]
    )
    result = run_tool("npu-run", EXAMPLE, *args, option, path)
    assert_clean_failure(result, f"{path}: error: {message}")


@pytest.mark.parametrize("field", ["StrideH", "DilationWFactor"])
def test_tflite_window_options_below_one_are_diagnostics(tmp_path: Path, field: str):
    from tflite_builder import TFLiteModel

    m = TFLiteModel()
    x = m.tensor("x", [1, 8, 8, 3])
    w = m.tensor("w", [4, 3, 3, 3], data=np.ones((4, 3, 3, 3), np.float32))
    y = m.tensor("y", [1, 8, 8, 4])
    options = {
        "Padding": 0,
        "StrideH": 1,
        "StrideW": 1,
        "DilationHFactor": 1,
        "DilationWFactor": 1,
    } | {field: 0}
    m.op("CONV_2D", [x, w, -1], [y], "Conv2DOptions", **options)
    model = tmp_path / "conv.tflite"
    model.write_bytes(m.build(inputs=[x], outputs=[y]))
    result = run_tool("npu-run", model)
    assert_clean_failure(result, f"{field} is 0; it must be at least 1")
