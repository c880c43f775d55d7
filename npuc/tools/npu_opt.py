"""`npu-opt`: the xdsl-opt/mlir-opt style driver for npuc's dialects and passes."""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import IO

from xdsl.xdsl_opt_main import xDSLOptMain

from .. import __version__
from ..diagnostics import NpucError, reported_errors, user_file, working_on
from ..output_files import write_file
from ..registry import DIALECTS, PASSES
from .cli_options import add_debug_option, add_import_options, import_options


class _HeldOutput(io.StringIO):
    """Collects the output so that a failed run never leaves a half-written file."""

    def close(self) -> None:
        pass


class NpuOptMain(xDSLOptMain):
    version_format = f"npu-opt {__version__} (xDSL {{xdsl_version}})"

    def register_all_dialects(self) -> None:
        for name, factory in DIALECTS.items():
            self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        def mlir_target():
            from xdsl.targets.mlir import MLIRTarget

            return MLIRTarget

        self.available_targets["mlir"] = mlir_target
        self.available_targets["npubin"] = _npubin_target

        def memory_target(name: str):
            def load():
                from ..backend import memory_report

                return getattr(memory_report, name)

            return load

        self.available_targets["memory-report"] = memory_target("MemoryReportTarget")
        self.available_targets["memory-json"] = memory_target("MemoryJsonTarget")

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["onnx"] = self._import_onnx
        self.available_frontends["tflite"] = self._import_tflite
        self.available_frontends["npubin"] = self._import_npubin

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add_import_options(arg_parser)
        add_debug_option(arg_parser)

    def setup_pipeline(self) -> None:
        try:
            super().setup_pipeline()
        except ValueError as e:  # xDSL's unknown pass or bad pass option
            raise NpucError(str(e)) from None

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        with user_file(self.get_input_name(), "read"):
            return super().get_input_stream()

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except ValueError as e:  # xDSL's unrecognised file extension
            raise NpucError(str(e), self.get_input_name()) from None

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        with working_on("step", f"import ({file_extension})"):
            return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog) -> None:
        """The pipeline's passes one by one, each named in an internal error's context."""
        passes, callback = self.pipeline.passes, self.pipeline.callback
        if callback is not None:  # as PassPipeline.apply calls it: verify, print, time
            callback(None, prog, passes[0] if passes else None)
        for i, current in enumerate(passes):
            with working_on("pass", current):
                current.apply(self.ctx, prog)
            if callback is not None:
                callback(current, prog, passes[i + 1] if i + 1 < len(passes) else None)

    def _import_onnx(self, stream: IO[bytes]):
        from ..frontends.onnx import import_onnx

        return import_onnx(
            stream.read(), location=self.get_input_name(), **import_options(self.args)
        )

    def _import_tflite(self, stream: IO[bytes]):
        from ..frontends.tflite import import_tflite

        options = import_options(self.args)
        options.pop("prequantized", None)  # int8 TFLite always keeps its quantization
        return import_tflite(stream.read(), location=self.get_input_name(), **options)

    def _import_npubin(self, stream: IO[bytes]):
        from ..backend.npubin_disasm import disassemble
        from ..runtime.loader import load

        location = self.get_input_name()
        return disassemble(load(stream.read(), location=location), self.ctx, location)

    _binary: bytes | None = None

    def output_resulting_program(self, prog) -> str:
        with working_on("step", f"output (-t {self.args.target})"):
            if self.args.target.split("{")[0] != "npubin":
                return super().output_resulting_program(prog)
            if self._binary is not None:
                raise NpucError("the npubin target writes one program; give one input chunk")
            self._binary = _npubin_target()().emit_bytes(self.ctx, prog)
            return ""

    def _write_binary(self, data: bytes) -> None:
        if self.args.output_file is not None:
            write_file(self.args.output_file, data)
        elif sys.stdout.isatty():
            raise NpucError("refusing to write a binary to the terminal; give -o FILE")
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)

    def prepare_output(self) -> IO[str]:
        self._held = _HeldOutput()
        return self._held

    def run(self) -> None:
        if self.args.input_file is not None and not os.path.isfile(self.args.input_file):
            raise NpucError("no such file", self.args.input_file)
        super().run()
        if self._binary is not None:
            return self._write_binary(self._binary)
        text = self._held.getvalue()
        if self.args.output_file is None:
            sys.stdout.write(text)
        else:
            write_file(self.args.output_file, text)


def _npubin_target():
    from ..backend.npubin import NpubinTarget

    return NpubinTarget


def main(argv: list[str] | None = None) -> None:
    with reported_errors("npu-opt"):
        NpuOptMain(description="npuc modular optimizer driver", args=argv).run()


if __name__ == "__main__":
    main()
