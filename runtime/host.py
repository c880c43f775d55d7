"""Host instructions: the body's `nn`/`qnn` ops run on the reference interpreter
(qnn_interpreter.py)."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
from xdsl.context import Context
from xdsl.ir import Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from npuc.diagnostics import KernelError, NpucError
from npuc.dialects import npu_isa as isa
from npuc.dialects.context import make_context
from npuc.plugin_registry import plugin_names
from npuc.plugins import PluginError


def parse_body(text: str, ctx: Context | None = None) -> Region:
    from npuc.ir_text import IRParser, string_literals_closed, unrepresentable

    if not string_literals_closed(text):
        raise NpucError("the host body has an unterminated string")
    try:
        return IRParser(ctx or make_context(), text, "<host body>").parse_region()
    except PluginError:  # the plugin of an op in the body could not be loaded
        raise
    except ParseError as e:
        where = e.span.get_location()
        raise NpucError(
            f"the host body does not parse: line {where.line} column {where.col}: {e.msg}"
        ) from None
    except DiagnosticException as e:
        raise NpucError(f"the host body does not parse: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise NpucError("the host body does not parse: it nests too deeply") from None
    except Exception as e:  # a value the parser cannot represent (out of range, too wide)
        raise NpucError(f"the host body does not parse: {unrepresentable(e)}") from None


def _check_body(body: Region) -> None:
    """The body's ops verify (its terminator, npu.yield, needs the npu.host it was taken
    from) and use only values defined before them."""
    from npuc.ir_text import check_region_dominance

    try:
        if len(body.blocks) != 1:
            raise VerifyException(f"it has {len(body.blocks)} blocks, not 1")
        for op in list(body.blocks[0].ops)[:-1]:
            op.verify()
        check_region_dominance(body)
    except VerifyException as e:
        raise NpucError(f"the host body does not verify: {e}") from None


@lru_cache(maxsize=512)
def _checked_body(text: str) -> Region:
    """The parsed and checked body, shared read-only by every step with this text (the
    tiles of one host op carry the same body)."""
    body = parse_body(text, _shared_context(tuple(plugin_names())))
    _check_body(body)
    return body


@lru_cache(maxsize=1)
def _shared_context(plugins: tuple[str, ...]) -> Context:
    """One context for every body, made again when the plugins found change."""
    return make_context()


def host_step(inst: isa.Instruction, views: list[np.ndarray]) -> Callable[[], None]:
    """A step running the host body on the input views and writing the output views."""
    from .qnn_interpreter import evaluate

    block = _checked_body(inst.params["body"]).blocks[0]
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
        if len(yielded) != len(outs):  # the binary's body disagrees with its operands
            raise KernelError(f"the host body yields {len(yielded)} values for {len(outs)} outputs")
        for out, value in zip(outs, yielded, strict=True):
            if np.shape(value) != out.shape:
                raise KernelError(
                    f"the host body yields shape {list(np.shape(value))} for {list(out.shape)}"
                )
            np.copyto(out, value, casting="unsafe")

    return step
