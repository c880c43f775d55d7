"""The `manual` option of the `tile` pass: `(first, last, h_parts[, w_parts]); ...`.

Each entry runs layers `first..last` (0-based numbers, docs/tiling.md) as one group
whose last layer's output is cut into `h_parts` stripes along H and `w_parts` (default
1) along W; a range of more than one layer is a cascade. Whitespace is free and a
trailing `;` is allowed. The grammar is LALR (lark); a syntax error names the line,
column, the expected tokens and the token found, then shows the line with a caret.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from npuc.diagnostics import NpucError, caret

from .layers import Layer, run_problem

if TYPE_CHECKING:  # lark loads on the first manual string, not with the tile pass
    from lark import Lark, UnexpectedInput

GRAMMAR = r"""
start: entry (";" entry)* ";"?
entry: "(" INT "," INT "," INT ("," INT)? ")"
%import common.INT
%import common.WS
%ignore WS
"""

_TOKENS = {"LPAR": "'('", "RPAR": "')'", "COMMA": "','", "SEMICOLON": "';'", "INT": "a number"}
_ORDER = ["INT", "COMMA", "RPAR", "LPAR", "SEMICOLON", "$END"]


@dataclass(frozen=True)
class Entry:
    """One `(first, last, h_parts, w_parts)` entry and its source text."""

    first: int
    last: int
    h_parts: int
    w_parts: int
    text: str

    def as_tuple(self) -> tuple[int, int, int, int]:
        return self.first, self.last, self.h_parts, self.w_parts


@functools.cache
def _lark() -> Lark:
    from lark import Lark

    return Lark(GRAMMAR, parser="lalr", propagate_positions=True)


def parse_manual(text: str) -> list[Entry]:
    """The entries of a `manual` string (empty: none); NpucError on a syntax error."""
    if not text.strip():
        return []
    from lark import Token, Transformer, UnexpectedInput, v_args
    from lark.tree import Meta

    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise NpucError(_syntax_error(text, e)) from None

    @v_args(meta=True)
    class Entries(Transformer[Token, list[Entry]]):
        def entry(self, meta: Meta, items: list[Token]) -> Entry:
            first, last, h_parts, *w_parts = [int(t) for t in items]
            w = w_parts[0] if w_parts else 1
            return Entry(first, last, h_parts, w, text[meta.start_pos : meta.end_pos])

        def start(self, meta: Meta, entries: list[Entry]) -> list[Entry]:
            return entries

    return Entries().transform(tree)


def _syntax_error(text: str, e: UnexpectedInput) -> str:
    from lark import UnexpectedCharacters

    lines = text.split("\n")
    if isinstance(e, UnexpectedCharacters):
        expected, got = e.allowed, repr(e.char)
        line, column = e.line, e.column
    else:
        expected = getattr(e, "expected", set()) or set()
        token = getattr(e, "token", None)
        at_end = token is None or token.type == "$END"
        got = "end of input" if at_end else repr(str(token))
        if at_end:
            line, column = len(lines), len(lines[-1]) + 1
        else:
            line, column = e.line, e.column
    parser = getattr(e, "interactive_parser", None)
    if parser is not None:
        expected = parser.accepts()  # the parser state's full set, end of input included
    names = [_TOKENS.get(t, "end of input") for t in sorted(expected, key=_rank)]
    wanted = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    return f"manual: line {line}, column {column}: expected {wanted}, got {got}" + caret(
        source, column
    )


def _rank(token: str) -> int:
    return _ORDER.index(token) if token in _ORDER else len(_ORDER)


def check_entries(entries: Sequence[Entry], layers: Sequence[Layer]) -> None:
    """Refuse entries that name missing layers, overlap, are not chains, or cut too finely."""
    n = len(layers)
    for i, entry in enumerate(entries):

        def fail(message: str, entry: Entry = entry, i: int = i) -> None:
            raise NpucError(f"manual: entry {i + 1} '{entry.text}': {message}")

        for index in (entry.first, entry.last):
            if index >= n:
                fail(f"layer {index} is out of range (the layers are numbered 0 to {n - 1})")
        if entry.last < entry.first:
            fail(f"the last layer {entry.last} comes before the first layer {entry.first}")
        for what, parts in (("h_parts", entry.h_parts), ("w_parts", entry.w_parts)):
            if parts < 1:
                fail(f"{what} must be at least 1, got {parts}")
        for j, other in enumerate(entries[:i]):
            if entry.first <= other.last and other.first <= entry.last:
                fail(f"its layers overlap those of entry {j + 1} '{other.text}'")
        reason = run_problem(layers, entry.first, entry.last)
        if reason is not None:
            fail(f"layers {entry.first}..{entry.last} cannot run as one cascade: {reason}")
        last = layers[entry.last]
        if (entry.h_parts, entry.w_parts) != (1, 1) and not last.spatial:
            fail(f"{last.describe()} cannot be split along H and W")
        if last.spatial:
            rows, cols = last.extent(0), last.extent(1)
            if entry.h_parts > rows:
                fail(f"h_parts {entry.h_parts} exceed the {rows} rows of {last.describe()}")
            if entry.w_parts > cols:
                fail(f"w_parts {entry.w_parts} exceed the {cols} columns of {last.describe()}")
        for axis, (parts, what) in enumerate(((entry.h_parts, "H"), (entry.w_parts, "W"))):
            fixed = [x for x in layers[entry.first : entry.last + 1] if x.fixed[axis]]
            if parts > 1 and fixed:
                fail(f"{fixed[0].describe()} cannot be split along {what} (its softmax axis)")
