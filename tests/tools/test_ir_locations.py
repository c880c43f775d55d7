"""The parser's op locations (`file:line:col`, from an index of the input's newlines) equal
xDSL's own `Span.get_location`, which counts the newlines before each span anew."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp
from xdsl.utils.lexer import Input, Span

from npuc.dialects.context import make_context
from npuc.ir_text import IRParser, parse_module

text = st.text(alphabet=st.sampled_from(["\n", "a", " ", "é", "%", "\u2028"]), max_size=60)


@settings(max_examples=300, deadline=None)
@given(text, st.data(), st.booleans(), st.integers(0, 5))
def test_a_span_is_located_as_xdsl_locates_it(content, data, as_bytes, line_offset):
    source = content.encode() if as_bytes else content
    parser = IRParser(make_context(), "")
    spans = [
        Span(start, start, Input(source, "f.mlir"), line_offset)
        for start in data.draw(st.lists(st.integers(0, len(source)), max_size=8))
    ]
    for span in spans:  # in any order, over one newline index
        assert parser._location_of(span) == span.get_location()


def test_every_op_of_a_parsed_file_is_located_where_it_is_written():
    lines = ["// the relu chain", "func.func @main(%x: tensor<1x4xf32>) -> tensor<1x4xf32> {"]
    for k in range(40):
        previous = "%x" if k == 0 else f"%r{k - 1}"
        indent = " " * (2 + k % 3)  # columns differ from op to op
        lines.append(f"{indent}%r{k} = nn.relu {previous} : (tensor<1x4xf32>) -> tensor<1x4xf32>")
    lines += ["  func.return %r39 : tensor<1x4xf32>", "}"]
    module = parse_module(make_context(), "\n".join(lines), "chain.mlir")
    assert isinstance(module, ModuleOp)
    relus = [op for op in module.walk() if op.name == "nn.relu"]
    assert len(relus) == 40
    for k, op in enumerate(relus):
        loc = op.location
        assert isinstance(loc, FileLineColLoc)
        assert (loc.filename.data, loc.line.data, loc.column.data) == (
            "chain.mlir",
            k + 3,
            3 + k % 3,
        )
