"""`npu-opt`: the xdsl-opt/mlir-opt style driver for npuc's dialects and passes."""

from __future__ import annotations

import argparse
import io
import os
import sys
from typing import IO

from xdsl.xdsl_opt_main import xDSLOptMain

from ..diagnostics import NpucError, pipeline_error, user_file, working_on
from ..dialects.context import register_dialects
from ..output_files import write_file
from ..printing import add_printing_options
from ..registry import PASSES, applying, pass_factories, verify_after
from ..version import __version__
from .cli_options import add_debug_option, add_import_options, import_options
from .listing import ListTargetsAction, PassHelpAction
from .plugin_listing import add_list_plugins_option, plugin_listing
from .reporting import (
    EXIT_USER_ERROR,
    finish,
    report_user_error,
    reported_errors,
    user_error_text,
)


class _HeldOutput(io.StringIO):
    """Collects the output so that a failed run never leaves a half-written file."""

    def close(self) -> None:
        pass


class NpuOptMain(xDSLOptMain):
    version_format = f"npu-opt {__version__} (xDSL {{xdsl_version}})"

    def register_all_dialects(self) -> None:
        register_dialects(self.ctx)

    def register_all_passes(self) -> None:
        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        def mlir_target():
            from ..printing import TextTarget

            return TextTarget

        self.available_targets["mlir"] = mlir_target
        self.available_targets["npubin"] = _npubin_target

        def memory_target(name: str):
            def load():
                from ..passes.memory import report as memory_report

                return getattr(memory_report, name)

            return load

        self.available_targets["memory-report"] = memory_target("MemoryReportTarget")
        self.available_targets["memory-json"] = memory_target("MemoryJsonTarget")

    def register_all_frontends(self) -> None:
        super().register_all_frontends()
        self.available_frontends["mlir"] = self._parse_mlir
        self.available_frontends["onnx"] = self._import_onnx
        self.available_frontends["tflite"] = self._import_tflite
        self.available_frontends["npubin"] = self._import_npubin

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        # Our -h replaces argparse's: it lists the passes with their options.
        arg_parser._optionals.conflict_handler = "resolve"
        arg_parser.add_argument("-h", "--help", action=PassHelpAction, passes=self.available_passes)
        arg_parser._optionals.conflict_handler = "error"
        for action in arg_parser._actions:
            if action.dest == "passes":
                action.help = "comma-separated pass pipeline, e.g. 'tile{target=mcu-64},dce' "
                action.help += "(the passes and their options are listed below)"
            if action.dest == "input_file":
                action.help = "path to input file ('-' or none: standard input)"
        arg_parser.add_argument("--list-targets", action=ListTargetsAction)
        add_printing_options(arg_parser, debuginfo=False)  # xDSL has --print-debuginfo
        add_import_options(arg_parser)
        add_debug_option(arg_parser, version=False)
        add_list_plugins_option(arg_parser)

    def setup_pipeline(self) -> None:
        """xDSL's pipeline, with --time-passes and --print-between-passes on stderr so that
        stdout stays the output IR (as mlir-opt keeps it)."""
        import time

        from xdsl.passes import PassPipeline
        from xdsl.printer import Printer
        from xdsl.utils.exceptions import ArgSpecParseError

        for name, factory in pass_factories(self.args.passes).items():
            if name not in self.available_passes:  # a plugin's pass the pipeline names
                self.register_pass(name, factory)
        started = time.perf_counter()

        def callback(previous, module, following) -> None:
            nonlocal started
            if self.args.time_passes and previous is not None:
                seconds = time.perf_counter() - started
                print(f"Pass {previous.name} took {seconds:.6f} seconds", file=sys.stderr)
            if not self.args.disable_verify:
                if previous is None:
                    module.verify()
                else:
                    verify_after(previous, module)
            if previous is not None and following is not None and self.args.print_between_passes:
                print(f"// IR after {previous.name}:", file=sys.stderr)
                Printer(stream=sys.stderr).print_op(module)
                print("\n", file=sys.stderr)
            if self.args.time_passes and following is not None:
                started = time.perf_counter()

        try:
            passes = self.args.passes
            self.pipeline = PassPipeline.parse_spec(self.available_passes, passes, callback)
        except (ValueError, ArgSpecParseError) as e:  # an unknown pass, a bad pass option
            raise NpucError(f"-p '{self.args.passes}': {pipeline_error(e)}") from None

    def get_input_stream(self) -> tuple[IO[bytes], str]:
        with user_file(self.get_input_name(), "read"):
            return super().get_input_stream()

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except ValueError as e:  # xDSL's unrecognised file extension
            raise NpucError(str(e), self.get_input_name()) from None

    def _diagnostics_mode(self) -> bool:
        """--verify-diagnostics/--parsing-diagnostics print xDSL's own exceptions."""
        return bool(self.args.verify_diagnostics or self.args.parsing_diagnostics)

    def _parse_mlir(self, stream: IO[bytes]):
        from ..ir_text import parse_module

        return parse_module(
            self.ctx,
            stream.read(),
            self.get_input_name(),
            implicit_module=not self.args.no_implicit_module,
            line_offset=self._chunk_offset,
            located_errors=not self._diagnostics_mode(),
        )

    _chunk_offset = 0

    def parse_chunk(self, chunk: IO[bytes], file_extension: str, start_offset: int = 0):
        from ..ir_text import verify_module

        self._chunk_offset = start_offset
        with working_on("step", f"import ({file_extension})"):
            module = super().parse_chunk(chunk, file_extension, start_offset)
        checked = file_extension in ("mlir", "npubin")  # the importers verify their own
        if module is not None and checked and not self.args.disable_verify:
            # The verifiers and a dominance check, with the file named (the pipeline's own
            # verification follows; --verify-diagnostics prints xDSL's exception instead).
            location = None if self._diagnostics_mode() else self.get_input_name()
            verify_module(module, location)
        return module

    def apply_passes(self, prog) -> None:
        """The pipeline's passes one by one, each named in an internal error's context."""
        passes, callback = self.pipeline.passes, self.pipeline.callback
        if callback is not None:  # as PassPipeline.apply calls it: verify, print, time
            callback(None, prog, passes[0] if passes else None)
        from ..graph_io import ModelStructureError
        from ..locations import name_locations

        for i, current in enumerate(passes):
            with applying(current):
                try:
                    current.apply(self.ctx, prog)
                except ModelStructureError as e:  # the input lacks what the pass needs
                    e.location = e.location or self.get_input_name()
                    raise
            name_locations(prog)  # the ops the pass built, located by their layer
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
            name = self.args.target.split("{")[0]
            if name == "mlir":
                return self._text(prog)
            if name != "npubin":
                return super().output_resulting_program(prog)
            if self._binary is not None:
                raise NpucError("the npubin target writes one program; give one input chunk")
            self._binary = _npubin_target()().emit_bytes(self.ctx, prog)
            return ""

    def _text(self, prog) -> str:
        """The mlir target with xDSL's printing flags and --mlir-elide-elementsattrs-if-larger."""
        from dataclasses import replace

        from xdsl.utils.arg_spec import parse_spec

        from ..printing import TextTarget

        target = replace(
            TextTarget.from_spec(parse_spec(self.args.target)),
            print_generic_format=self.args.print_op_generic,
            print_properties_as_attributes=self.args.print_no_properties,
            print_debuginfo=self.args.print_debuginfo,
            syntax_highlight=self.args.syntax_highlight,
        )
        if self.args.elide_above is not None:
            target = replace(target, elide_above=self.args.elide_above)
        output = io.StringIO()
        target.emit(self.ctx, prog, output)
        return output.getvalue()

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

    def _check_options(self) -> None:
        """Refuse malformed import options, and import options without a model."""
        options = import_options(self.args)  # malformed --input-shape values
        given = [o for o in ("input_shapes", "inputs", "outputs") if options[o]]
        kind = self.args.frontend or os.path.splitext(self.args.input_file or "")[1][1:]
        if given and kind not in ("onnx", "tflite"):
            option = {"input_shapes": "--input-shape"}.get(given[0], f"--{given[0]}")
            raise NpucError(
                f"{option} applies to ONNX and TFLite models, not to this input",
                self.get_input_name(),
            )

    def run(self) -> None:
        if self.args.list_plugins:
            sys.stdout.write(plugin_listing())
            return
        if self.args.input_file == "-":
            self.args.input_file = None  # standard input, as mlir-opt reads it
        if self.args.input_file is not None and not os.path.isfile(self.args.input_file):
            raise NpucError("no such file", self.args.input_file)
        self._check_options()
        failed = self._run_chunks()
        if self._binary is not None:
            self._write_binary(self._binary)
        else:
            text = self._held.getvalue()
            if self.args.output_file is None:
                sys.stdout.write(text)
            else:
                write_file(self.args.output_file, text)
        if failed:
            raise SystemExit(EXIT_USER_ERROR)

    def _run_chunks(self) -> int:
        """xDSL's loop over the input's chunks, except that with --split-input-file a chunk
        with a user error is reported and the others still run and print (mlir-opt's way);
        returns the number of chunks that failed."""
        from dataclasses import replace

        from xdsl.utils.exceptions import DiagnosticException, ParseError

        chunks, extension = self.prepare_input()
        output = self.prepare_output()
        failed = 0
        for i, (chunk, offset) in enumerate(chunks):
            try:
                if i > 0:
                    output.write("// -----\n")
                module = self.parse_chunk(chunk, extension, offset)
                if module is not None:
                    self.apply_passes(module)
                    output.write(self.output_resulting_program(module))
            except ParseError as e:
                e.span = replace(e.span, line_offset=offset)
                if not self.args.parsing_diagnostics:
                    failed += self._chunk_failed(e)
                else:
                    print(e)
            except DiagnosticException as e:
                if not self.args.verify_diagnostics:
                    failed += self._chunk_failed(e)
                else:
                    print(e)
                    for note in getattr(e, "__notes__", ()):
                        print(note)
            except Exception as e:
                failed += self._chunk_failed(e)
            finally:
                chunk.close()
        return failed

    def _chunk_failed(self, error: Exception) -> int:
        """Report a chunk's user error and go on (--split-input-file), else raise it."""
        text = user_error_text(error) if self.args.split_input_file else None
        if text is None:
            raise error
        report_user_error("npu-opt", text)
        return 1


def _npubin_target():
    from ..backend.npubin import NpubinTarget

    return NpubinTarget


def main(argv: list[str] | None = None) -> None:
    from xdsl.utils.exceptions import ArgSpecParseError

    with reported_errors("npu-opt"):
        try:
            tool = NpuOptMain(description="npuc modular optimizer driver", args=argv)
        except ArgSpecParseError as e:  # xDSL parses the -t spec while it sets up
            raise NpucError(f"-t: {pipeline_error(e)}") from None
        tool.run()
    if argv is None:  # the command (called in-process, it returns)
        finish(0, argv)


if __name__ == "__main__":
    main()
