"""Writing a file the user named, without harming anything else (docs/robustness.md,
"Output files"): every file npuc writes goes through `write_file` or, for a folder of
outputs, `write_folder`.

- A regular file (or a new one) is written atomically: into a temporary file beside
  it, then renamed over it, so a failure leaves the old contents. A new file's mode
  follows the umask; a replaced file keeps its mode.
- A symbolic link stays a link: its target is written (atomically, by these rules).
- A device or a FIFO (`/dev/null`, `/dev/stdout`, a named pipe) is written through,
  in place; nothing is renamed over it.
- A directory, or anything else, is refused.
- Following a link or writing through a device or FIFO is said in one line on stderr
  (`note: ...`), since neither is the plain atomic replacement.
- Nothing the user did not name is deleted or replaced: a folder of outputs replaces only
  the files it writes, and refuses one of them that is not a regular file.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO

from .diagnostics import NpucError, user_file

Writer = Callable[[BinaryIO], None]


def write_file(path: str | os.PathLike[str], data: bytes | str | Writer) -> None:
    """Write `data` (bytes, text as UTF-8, or a function writing to a binary file) to `path`."""
    writer = _writer(data)
    with user_file(path, "write"):
        target = Path(os.path.realpath(path))  # a symlink's (final) target
        try:
            mode = target.stat().st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            buffer = io.BytesIO()  # a stream that may not seek: hand it finished bytes
            writer(buffer)
            with open(target, "wb") as f:
                f.write(buffer.getvalue())
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a character device"
            _note(f"{os.fspath(path)}: wrote through {kind}, in place (not atomically)")
            return
        if mode is not None and not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise NpucError(f"cannot write: it is {kind}", os.fspath(path))
        _replace_atomically(target, writer, None if mode is None else stat.S_IMODE(mode))
        if os.path.islink(path):
            _note(f"{os.fspath(path)}: a symbolic link; wrote its target {target}")


def check_output_dir(outdir: Path) -> None:
    with user_file(outdir, "use as the output directory"):
        if outdir.exists() and not outdir.is_dir():
            raise NpucError("the output directory is a file", str(outdir))
        if not outdir.resolve().parent.is_dir():
            raise NpucError("the output directory's parent does not exist", str(outdir))


def write_folder(outdir: Path, files: dict[str, bytes]) -> list[Path]:
    """Write `files` (name -> contents) into the folder `outdir` (made if missing), all or
    nothing: each into a temporary folder beside `outdir` first, then renamed into place,
    so a failure leaves `outdir` as it was. A replaced file keeps its mode; an entry that
    is not a regular file (a link, a device) is refused; other files are left alone."""
    with user_file(outdir, "write"):
        if outdir.is_symlink():
            _note(f"{outdir}: a symbolic link; wrote into its target {outdir.resolve()}")
        tmp = Path(tempfile.mkdtemp(prefix=".npuc-out-", dir=outdir.resolve().parent))
        try:
            modes = {}
            for file in files:  # never rename over a link, device or FIFO in the folder
                check_replaceable(outdir / file)
                with suppress(FileNotFoundError):
                    modes[file] = stat.S_IMODE((outdir / file).stat().st_mode)
            for file, data in files.items():
                (tmp / file).write_bytes(data)
                os.chmod(tmp / file, modes.get(file, _new_file_mode()))
            outdir.mkdir(exist_ok=True)
            paths = []
            for file in files:
                os.replace(tmp / file, outdir / file)
                paths.append(outdir / file)
            return paths
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr)


def _writer(data: bytes | str | Writer) -> Writer:
    if isinstance(data, str):
        data = data.encode()
    if isinstance(data, bytes):
        payload = data
        return lambda f: f.write(payload)  # type: ignore[return-value]
    return data


def _replace_atomically(target: Path, writer: Writer, mode: int | None) -> None:
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            writer(f)
        os.chmod(tmp, _new_file_mode() if mode is None else mode)
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def _new_file_mode() -> int:
    """0o666 less the process's umask, as open(2) would create the file."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def check_replaceable(path: Path) -> None:
    """Refuse an output entry (in a folder of outputs) that is not a regular file."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
        raise NpucError(
            f"cannot replace: it is {kind} (the outputs are regular files)", os.fspath(path)
        )
