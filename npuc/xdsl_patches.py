"""Fixes for xDSL behaviour that user input can trigger (applied on import; the tools import
this through npuc.registry and npuc.ir_text).

- The lexer's string-literal pattern nests a `+` inside a `*`, so a string left open on its
  line (`{name = "fc    (tensor<...` in a hand-edited .mlir file) backtracks exponentially:
  the parser hangs instead of reporting the unterminated string. The replacement matches
  the same strings, one character or escape at a time, in linear time.
"""

from __future__ import annotations

import re

from xdsl.utils.mlir_lexer import MLIRLexer

_BACKTRACKING = r'"(?:[^"\\\n\v\f]+|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'
_LINEAR = r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"'


def apply() -> None:
    regex = MLIRLexer._unescaped_characters_regex
    if regex.pattern == _BACKTRACKING:  # a newer xDSL may have fixed it differently
        MLIRLexer._unescaped_characters_regex = re.compile(_LINEAR)


apply()
