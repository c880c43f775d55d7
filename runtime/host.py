"""Host instructions: the body's `nn`/`qnn` ops run with the reference kernels (qnn_kernels)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.context import Context
from xdsl.ir import Region, SSAValue
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError

from npuc.diagnostics import NpucError
from npuc.dialects import npu_isa as isa


def _context() -> Context:
    from npuc.registry import DIALECTS

    ctx = Context()
    for name, factory in DIALECTS.items():
        ctx.register_dialect(name, factory)
    return ctx


def parse_body(text: str, ctx: Context | None = None) -> Region:
    from npuc.backend.npubin_disasm import string_literals_closed

    if not string_literals_closed(text):
        raise NpucError("the host body has an unterminated string")
    try:
        return Parser(ctx or _context(), text, "<host body>").parse_region()
    except (ParseError, DiagnosticException, RecursionError) as e:
        raise NpucError(f"the host body does not parse: {e}") from None


def host_step(inst: isa.Instruction, views: list[np.ndarray]) -> Callable[[], None]:
    """A step running the host body on the input views and writing the output views."""
    from .qnn_kernels import evaluate

    body = parse_body(inst.params["body"])
    block = body.blocks[0]
    n = inst.params["inputs"]
    ins, outs = views[:n], views[n:]
    if len(block.args) != n:
        raise NpucError(f"the host body takes {len(block.args)} arguments, not {n}")
    ops = list(block.ops)

    def step() -> None:
        env: dict[SSAValue, np.ndarray] = {
            a: v.copy() for a, v in zip(block.args, ins, strict=True)
        }
        for op in ops[:-1]:
            results = evaluate(op, [env[v] for v in op.operands])
            env.update(zip(op.results, results, strict=True))
        yielded = [env[v] for v in ops[-1].operands]
        if len(yielded) != len(outs):
            raise ValueError(f"the host body yields {len(yielded)} values for {len(outs)} outputs")
        for out, value in zip(outs, yielded, strict=True):
            if np.shape(value) != out.shape:
                raise ValueError(
                    f"the host body yields shape {list(np.shape(value))} for {list(out.shape)}"
                )
            np.copyto(out, value, casting="unsafe")

    return step
