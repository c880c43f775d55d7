"""Output files harm nothing: atomic over regular files, through links, in place on FIFOs
and devices, refused over directories; new files follow the umask (npuc/output_files.py)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest
from tool_runner import EXAMPLE, run_tool

from npuc.diagnostics import NpucError
from npuc.output_files import write_file, write_folder


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_file_follows_the_umask(tmp_path: Path, umask_022):
    write_file(tmp_path / "out.bin", b"abc")
    assert (tmp_path / "out.bin").read_bytes() == b"abc"
    assert stat.S_IMODE((tmp_path / "out.bin").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]  # no temporary left


def test_a_replaced_file_keeps_its_mode_and_a_failure_keeps_its_contents(tmp_path: Path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    path.chmod(0o600)
    write_file(path, "new")
    assert path.read_text() == "new" and stat.S_IMODE(path.stat().st_mode) == 0o600

    def broken(f) -> None:
        f.write(b"partial")
        raise RuntimeError("the writer fails")

    with pytest.raises(RuntimeError):
        write_file(path, broken)
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_a_symlink_stays_a_link_to_the_written_target(tmp_path: Path, capsys):
    target, link = tmp_path / "target.txt", tmp_path / "link.txt"
    target.write_text("old")
    link.symlink_to(target)
    write_file(link, "new")
    assert link.is_symlink() and target.read_text() == "new"
    assert capsys.readouterr().err == f"note: {link}: a symbolic link; wrote its target {target}\n"
    write_file(target, "plain")  # a regular file: nothing to say
    assert capsys.readouterr().err == ""


def fifo_reader(fifo: Path) -> tuple[threading.Thread, list[bytes]]:
    """A new FIFO at `fifo` and a started thread that reads it whole into the list."""
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    return reader, received


def test_a_fifo_is_written_through_not_replaced(tmp_path: Path):
    fifo = tmp_path / "pipe"
    reader, received = fifo_reader(fifo)
    write_file(fifo, b"through the pipe")
    reader.join(timeout=10)
    assert received == [b"through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_device_is_written_in_place(tmp_path: Path, capsys):
    write_file("/dev/null", b"discarded")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    note = "note: /dev/null: wrote through a character device, in place (not atomically)\n"
    assert capsys.readouterr().err == note


def test_a_folder_of_outputs_replaces_only_its_files_keeping_their_modes(tmp_path: Path, umask_022):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.h").write_text("old")
    (out / "a.h").chmod(0o600)
    (out / "mine.txt").write_text("not npuc's")
    write_folder(out, {"a.h": b"new", "b.bin": b"\x00"})
    assert (out / "a.h").read_text() == "new" and stat.S_IMODE(
        (out / "a.h").stat().st_mode
    ) == 0o600
    assert stat.S_IMODE((out / "b.bin").stat().st_mode) == 0o644
    assert (out / "mine.txt").read_text() == "not npuc's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary folder left


def test_a_directory_is_refused(tmp_path: Path):
    with pytest.raises(NpucError, match="cannot write: it is a directory"):
        write_file(tmp_path, b"x")


def test_npu_run_output_onto_a_fifo_and_dev_null(tmp_path: Path):
    fifo = tmp_path / "outputs.npz"
    reader, received = fifo_reader(fifo)
    result = run_tool("npu-run", EXAMPLE, "-o", fifo)
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    (tmp_path / "copy.npz").write_bytes(received[0])
    with np.load(tmp_path / "copy.npz") as saved:
        assert saved.files
    assert f"note: {fifo}: wrote through a FIFO" in result.stderr
    assert run_tool("npu-run", EXAMPLE, "-o", "/dev/null").returncode == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_export_qdq_writes_atomically_and_through_a_link(tmp_path: Path):
    import onnx

    target, link = tmp_path / "model.qdq.onnx", tmp_path / "link.onnx"
    target.write_bytes(b"old")
    target.chmod(0o640)
    link.symlink_to(target)
    args = (
        "--outputs",
        "logits",
        "--quantize",
        "int8",
        "--calib-random",
        "2",
        "--export-qdq",
        link,
    )
    result = run_tool("npu-run", EXAMPLE, *args)
    assert result.returncode == 0, result.stderr
    assert f"note: {link}: a symbolic link; wrote its target {target}" in result.stderr
    assert link.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o640
    onnx.checker.check_model(onnx.load(target))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.onnx", "model.qdq.onnx"]


def test_npu_compile_refuses_to_rename_over_a_link_in_its_output_folder(tmp_path: Path):
    out = tmp_path / "build"
    out.mkdir()
    elsewhere = tmp_path / "precious.h"
    elsewhere.write_text("keep me")
    (out / "lenet5.h").symlink_to(elsewhere)
    model = Path(__file__).resolve().parents[2] / "examples" / "lenet5.onnx"
    result = run_tool("npu-compile", model, "-t", "mcu-64", "--calib-random", "2", "-q", "-o", out)
    assert result.returncode == 1, result.stderr
    assert "lenet5.h: error: cannot replace: it is a symbolic link" in result.stderr
    assert elsewhere.read_text() == "keep me" and (out / "lenet5.h").is_symlink()
