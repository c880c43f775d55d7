"""Structured fuzzing with hypothesis: inputs drawn field by field, each run as a fuzz case.

Where tests/fuzz/mutators.py edits bytes and tokens at random, these strategies draw the
fields a format is made of (hypothesis shrinks a failure to its smallest draw):

- `tflite_edits`: a seed TFLite model (tests/tflite_builder.py records) with tensor shapes,
  type codes, quantization parameters, operand indices and operator options set to drawn
  values, then built into a flatbuffer;
- `npubin_edits`: a seed `.npubin` with header and section-table fields set to drawn
  integers, its CRCs recomputed so the loader reaches the checks behind them;
- `quantized_types`: a `!qnn.uniform` type (storage, scales, zero points, axis) on a drawn
  tensor shape, in a function argument that `qnn.dequantize` reads; `valid_quantized_type`
  says, from the rules of docs/quantization.md alone, whether npuc must accept it;
- `cli_values`: a tool, one of its options and a drawn value.

Each draw becomes a `run.Case`; `check` runs it in this process (run.run_case) and fails
on any outcome but a clean diagnostic or, for input that may be valid, exit 0. The tests
in test_fuzz_structured.py run a derandomized slice of each; `make fuzz` runs them with
more examples and a seed, and under atheris (tests/fuzz/coverage_fuzz.py), coverage-guided,
where atheris is installed.
"""

from __future__ import annotations

import math
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

from fuzz import run
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from npu_programs import fix_crcs

#: Draws per test: a derandomized slice by default; `make fuzz` sets NPUC_FUZZ_EXAMPLES.
EXAMPLES = int(os.environ.get("NPUC_FUZZ_EXAMPLES", "0"))


def fuzz_settings(examples: int) -> settings:
    """`examples` derandomized draws (the make test slice), or NPUC_FUZZ_EXAMPLES random
    ones (hypothesis' seed: pytest --hypothesis-seed)."""
    return settings(
        max_examples=EXAMPLES or examples,
        derandomize=not EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def check(case: run.Case, root: str, timeout: float = 20.0) -> run.Result:
    """Run `case` in this process; AssertionError unless its outcome keeps the rules."""
    with tempfile.TemporaryDirectory(prefix="npuc-structured-") as scratch:
        result = run.run_case(case, Path(scratch) / "case", root, timeout)
    assert result.outcome in ("clean", "ok"), (
        f"{result.outcome}: {case.tool} {case.argv} ({case.description}): "
        f"{run._summary(result)[:400]}"
    )
    return result


# --------------------------------------------------------------------------- TFLite

INT32 = st.integers(-(2**31), 2**31 - 1)
SCALES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -0.0, 1e-45, 1e-38, 3.4e38]),
)


@st.composite
def tflite_edits(draw: st.DrawFn, corpus: Any) -> run.Case:
    name = draw(st.sampled_from(sorted(corpus.tflite)))
    model = corpus.tflite_copy(name)
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["shape", "type", "quant", "operand", "option"]))
        if what == "option" and any(op.fields for op in model.ops):
            with_options = [op for op in model.ops if op.fields]
            op = with_options[draw(st.integers(0, len(with_options) - 1))]
            key = draw(st.sampled_from(sorted(op.fields)))
            old = op.fields[key]
            if isinstance(old, float):
                op.fields[key] = draw(SCALES)
            elif isinstance(old, bool):
                op.fields[key] = draw(st.booleans())
            else:
                op.fields[key] = draw(st.integers(-128, 127) if key == "Padding" else INT32)
            edits.append(f"option {key} = {op.fields[key]}")
            continue
        if what == "operand":
            op = model.ops[draw(st.integers(0, len(model.ops) - 1))]
            operands = op.inputs if op.inputs else op.outputs
            i = draw(st.integers(0, len(operands) - 1))
            operands[i] = draw(st.integers(-3, len(model.tensors) + 2) | INT32)
            edits.append(f"op {op.code} operand {i} = {operands[i]}")
            continue
        t = model.tensors[draw(st.integers(0, len(model.tensors) - 1))]
        if what == "shape":
            t.shape = draw(st.lists(st.integers(-2, 70) | INT32, max_size=6))
            edits.append(f"tensor '{t.name}' shape {t.shape}")
        elif what == "type":
            t.type_code = draw(st.integers(-128, 127))
            edits.append(f"tensor '{t.name}' type {t.type_code}")
        else:
            n = draw(st.integers(1, 6))
            t.scales = draw(st.lists(SCALES, min_size=n, max_size=n))
            t.zero_points = draw(st.lists(st.integers(-(2**40), 2**40), min_size=n, max_size=n))
            t.axis = draw(st.integers(-2, 6) | INT32)
            edits.append(f"tensor '{t.name}' quant {t.scales} {t.zero_points} axis {t.axis}")
    try:
        data = model.build(model.fuzz_inputs, model.fuzz_outputs)
    except Exception:  # the builder refuses values out of a field's range: not a file
        data = None
    assume(data is not None)
    tool = draw(st.sampled_from(["npu-opt", "npu-run"]))
    return file_case("tflite", tool, data, f"{name}: {'; '.join(edits)}")


def file_case(kind: str, tool: str, data: bytes, description: str, bad: bool = False) -> run.Case:
    """`tool` reading `data` as case.KIND and writing its output (IR, or .npz)."""
    file, out = f"case.{kind}", "out.mlir" if tool == "npu-opt" else "out.npz"
    return run.Case(
        kind,
        tool,
        [f"{{dir}}/{file}", "-o", f"{{dir}}/{out}"],
        {file: data},
        names=[file],
        outputs=[out],
        bad=bad,
        description=description,
        main_file=file,
    )


# --------------------------------------------------------------------------- .npubin

HEADER_FIELDS = {  # name -> (offset, struct format) in the 32-byte header
    "major": (4, "<H"),
    "minor": (6, "<H"),
    "header size": (8, "<I"),
    "sections": (12, "<I"),
    "total size": (16, "<Q"),
    "flags": (24, "<I"),
}
SECTION_FIELDS = {  # name -> (offset in the 32-byte entry, format)
    "kind": (0, "<I"),
    "alignment": (4, "<I"),
    "offset": (8, "<Q"),
    "size": (16, "<Q"),
    "reserved": (28, "<I"),
}


@st.composite
def npubin_edits(draw: st.DrawFn, corpus: Any) -> run.Case:
    name = draw(st.sampled_from(sorted(corpus.npubin)))
    data = bytearray(corpus.npubin[name])
    (sections,) = struct.unpack_from("<I", data, 12)
    edits = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.booleans()):
            field = draw(st.sampled_from(sorted(HEADER_FIELDS)))
            at, fmt = HEADER_FIELDS[field]
            where = f"header {field}"
        else:
            i = draw(st.integers(0, sections - 1))
            field = draw(st.sampled_from(sorted(SECTION_FIELDS)))
            offset, fmt = SECTION_FIELDS[field]
            at, where = 32 + 32 * i + offset, f"section {i} {field}"
        bits = 8 * struct.calcsize(fmt)
        (old,) = struct.unpack_from(fmt, data, at)
        value = draw(
            st.integers(0, 2**bits - 1)
            | st.sampled_from([0, 1, old - 1, old + 1, old * 2, 2**bits - 1]).map(
                lambda v, bits=bits: v % (2**bits)
            )
        )
        struct.pack_into(fmt, data, at, value)
        edits.append(f"{where} {old} -> {value}")
    if draw(st.booleans()):
        fix_crcs(data)
        edits.append("CRCs fixed")
    tool = draw(st.sampled_from(["npu-opt", "npu-run"]))
    return file_case("npubin", tool, bytes(data), f"{name}: {'; '.join(edits)}")


# --------------------------------------------------------------------------- quantized types

STORAGE = {"i4": (-8, 7), "i8": (-128, 127), "u8": (0, 255), "i16": (-32768, 32767)}
STORAGE |= {"u16": (0, 65535)}


@st.composite
def quantized_types(draw: st.DrawFn) -> tuple[str, list[int], list[float], list[int], int | None]:
    """(storage, shape, scales, zero points, axis or None)."""
    storage = draw(st.sampled_from(sorted(STORAGE)))
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    axis = draw(st.none() | st.integers(0, 5))
    count = 1 if axis is None else draw(st.integers(1, 6))
    scales = draw(st.lists(SCALES, min_size=count, max_size=count))
    low, high = STORAGE[storage]
    zps = draw(
        st.lists(
            st.integers(low, high) | st.integers(low - 300, high + 300),
            min_size=count,
            max_size=count,
        )
    )
    return storage, shape, scales, zps, axis


def valid_quantized_type(
    storage: str, shape: list[int], scales: list[float], zps: list[int], axis: int | None
) -> bool:
    """docs/quantization.md's rules: positive finite scales, zero points in the storage
    range, and a per-axis type's axis below the rank with one scale per index of it."""
    low, high = STORAGE[storage]
    if not all(s > 0 and math.isfinite(s) for s in scales):
        return False
    if not all(low <= z <= high for z in zps):
        return False
    return axis is None or (axis < len(shape) and len(scales) == shape[axis])


def quantized_type_text(storage: str, scales: list[float], zps: list[int], axis: int | None) -> str:
    pairs = [f"{_float(s)}:{z}" for s, z in zip(scales, zps, strict=True)]
    if axis is None:
        return f"!qnn.uniform<{storage}:f32, {pairs[0]}>"
    return f"!qnn.uniform<{storage}:f32:{axis}, {{{', '.join(pairs)}}}>"


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"  # not an MLIR float literal: a parse error, as good as any refusal
    if math.isinf(value):
        return "1e999" if value > 0 else "-1e999"
    text = repr(float(value))
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text


def quantized_type_case(
    storage: str, shape: list[int], scales: list[float], zps: list[int], axis: int | None
) -> run.Case:
    element = quantized_type_text(storage, scales, zps, axis)
    dims = "x".join(map(str, shape))
    q, f = f"tensor<{dims}x{element}>", f"tensor<{dims}xf32>"
    text = (
        f"func.func @main(%x: {q}) -> {f} {{\n"
        f"  %0 = qnn.dequantize %x : ({q}) -> {f}\n"
        f"  func.return %0 : {f}\n}}\n"
    )
    bad = not valid_quantized_type(storage, shape, scales, zps, axis)
    return file_case("mlir", "npu-run", text.encode(), f"{q}{' (invalid)' * bad}", bad)


# --------------------------------------------------------------------------- CLI options

#: Values of an option's kind (run.CLI_OPTIONS) drawn from the grammar it should accept.
OPTION_TEXT = {
    "int": st.integers(-(2**70), 2**70).map(str) | st.text(max_size=12),
    "float": st.floats(allow_nan=True, allow_infinity=True).map(repr) | st.text(max_size=12),
    "size": st.from_regex(r"-?\d{0,25}(\.\d)?[KMGTkmgt]?(i?B)?", fullmatch=True),
    "shape": st.builds(
        lambda name, dims: f"{name}:{','.join(map(str, dims))}",
        st.sampled_from(["image", "x", "", "image:0"]),
        st.lists(st.integers(-3, 2**40), max_size=6),
    ),
    "manual": st.lists(
        st.tuples(*[st.integers(-2, 2**33)] * 4).map(lambda t: "(" + ",".join(map(str, t)) + ")"),
        min_size=1,
        max_size=3,
    ).map(";".join),
    "text": st.text(max_size=30),
}


#: Counts of work (calls, samples): a valid count runs as long as it says, so the draws are
#: a few, or more than the tools take (2**31 - 1, npuc/limits.py MAX_COUNT).
WORK_COUNTS = {"--sequence", "--calib-random", "--batch-size"}
WORK_COUNT_TEXT = (st.integers(-3, 8) | st.integers(2**31, 2**70)).map(str) | st.text(max_size=12)


@st.composite
def cli_values(draw: st.DrawFn, tools: tuple[str, ...] = tuple(run.CLI_OPTIONS)) -> run.Case:
    tool = draw(st.sampled_from(sorted(tools)))
    options = [(o, k) for o, k in run.CLI_OPTIONS[tool] if k in OPTION_TEXT]
    option, kind = draw(st.sampled_from(options))
    text = WORK_COUNT_TEXT if option in WORK_COUNTS else OPTION_TEXT[kind]
    value = draw(text).replace("\x00", "")
    base = list(run.CLI_BASE[tool](_FirstChoice()))
    names = [option, f"'{value}'", *(v for v in (value, value.rstrip("/")) if v.strip())]
    names += [Path(a).name for a in base if a.startswith("{root}/")]
    outputs = [a.split("/")[-1] for a in base if a.startswith("{dir}/out")]
    given = [f"{option}={value}"] if option.startswith("--") else [option, value]
    return run.Case(
        "cli",
        tool,
        [*base, *given],
        names=names,
        outputs=outputs,
        bad=run._definitely_bad(option, kind, value),
        description=f"{tool} {option} {value[:60]!r}",
    )


class _FirstChoice:
    """A stand-in for random.Random that picks the first base command line of a tool."""

    def choice(self, options: Any) -> Any:
        return options[0]
