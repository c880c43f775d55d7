"""Structured fuzzing (tests/fuzz/structured.py): hypothesis draws TFLite fields, .npubin
tables, quantization parameters and option values; every draw must end in a clean
diagnostic, or exit 0 where the input may be valid. A derandomized slice runs here (about
25 s); `make fuzz` runs more examples with a seed."""

from __future__ import annotations

from fuzz import structured
from hypothesis import given
from hypothesis import strategies as st


@given(data=st.data())
@structured.fuzz_settings(120)
def test_tflite_fields(corpus, data):
    structured.check(data.draw(structured.tflite_edits(corpus)), str(corpus.root))


@given(data=st.data())
@structured.fuzz_settings(120)
def test_npubin_section_tables(corpus, data):
    structured.check(data.draw(structured.npubin_edits(corpus)), str(corpus.root))


@given(quantized=structured.quantized_types())
@structured.fuzz_settings(150)
def test_quantization_parameters(corpus, quantized):
    """A valid type runs (exit 0); an invalid one is a clean diagnostic, never exit 0."""
    case = structured.quantized_type_case(*quantized)
    result = structured.check(case, str(corpus.root))
    assert (result.outcome == "ok") == (not case.bad), (case.description, result.stderr)


#: The slice draws options of the quick tools; `make fuzz` (NPUC_FUZZ_EXAMPLES) all four.
TOOLS = (
    ("npu-opt", "npu-run")
    if not structured.EXAMPLES
    else ("npu-opt", "npu-run", "npu-compile", "npu-bundle")
)


@given(case=structured.cli_values(TOOLS))
@structured.fuzz_settings(60)
def test_option_values(corpus, case):
    structured.check(case, str(corpus.root))


def test_the_oracle_of_quantized_types():
    """valid_quantized_type on hand-picked types (docs/quantization.md)."""
    valid = structured.valid_quantized_type
    assert valid("i8", [4], [0.5], [3], None)
    assert valid("i8", [2, 3], [0.5, 0.25, 1.0], [0, 0, 0], 1)
    assert not valid("i8", [4], [0.5, 0.5], [0, 0], 0)  # 2 scales, dimension 4
    assert not valid("i8", [4], [0.5, 0.5], [0, 0], 7)  # axis past the rank
    assert not valid("u8", [4], [0.5], [-1], None)
    assert not valid("i8", [4], [0.0], [0], None)
    assert not valid("i8", [4], [float("inf")], [0], None)
