"""Rolling buffers: a cascade along H in which no row of any layer is computed twice.

For each stripe of the last layer's output, going backwards, layer k+1 reads the rows
`need` of layer k's output (its window with halo). Rows that an earlier stripe already
computed are kept from that stripe's buffer (the *tail*: the rows the next stripe still
needs, about kernel height - stride of them through dilation and stride); layer k
computes only the rows above them. The stripe's buffer is the tail followed by the new
rows, assembled with `tile.empty` + `tile.insert` (value semantics: the previous
buffer's tail is a `tile.slice`). Needs grow monotonically from stripe to stripe, so
the tail always comes from the previous buffer that was built, and a stripe whose
need is already covered computes nothing for that layer (and for the layers before).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .layers import Layer, itemsize
from .working_set import Range, Span, align, layer_span, split


@dataclass(frozen=True)
class Roll:
    """Layer k in one stripe: the rows it computes (None: none), the rows of its output
    the next layer reads (its buffer; the last layer: its stripe), and the rows of that
    buffer kept for the next stripe that reads this layer (None: nothing kept)."""

    span: Span | None
    need: Range | None
    keep: Range | None


def rolling_spans(
    layers: Sequence[Layer], axis: int, parts: int, known: Sequence[list[Roll]] = ()
) -> list[list[Roll]]:
    """`result[k][i]`: layer k of the chain in stripe i of the last layer's output. `known`:
    the result for a suffix of `layers` (a layer's rows depend only on the layers after
    it), which is kept and continued instead of computed again."""
    if known:
        needs: list[Range | None] = [r.span.inp if r.span is not None else None for r in known[0]]
    else:
        needs = list(split(layers[-1].extent(axis), parts))
    result: list[list[Roll]] = [[] for _ in layers[: len(layers) - len(known)]]
    result += known
    for k in range(len(layers) - len(known) - 1, -1, -1):
        done: int | None = None  # one past the highest row computed so far
        spans: list[Span | None] = []
        for need in needs:
            if need is None or (done is not None and need[1] <= done):
                spans.append(None)
                continue
            lo = need[0] if done is None else max(need[0], done)
            spans.append(layer_span(layers[k], axis, (lo, need[1])))
            done = need[1]
        following = [n for n in needs if n is not None]
        rolls, later = [], iter(following[1:])
        for need, span in zip(needs, spans, strict=True):
            keep = None
            if need is not None:
                nxt = next(later, None)
                if nxt is not None and nxt[0] < need[1]:
                    keep = (nxt[0], need[1])
            rolls.append(Roll(span, need, keep))
        result[k] = rolls
        needs = [s.inp if s is not None else None for s in spans]
    return result


def length(r: Range | None) -> int:
    return r[1] - r[0] if r is not None else 0


@dataclass(frozen=True)
class RollingBytes:
    """SRAM of a rolling cascade beyond its layers' tiles: what intermediate layers hold
    between stripes, and the largest assembly of a new buffer."""

    held: int  # over intermediate layers and column parts: the largest kept tail
    assembly: int  # the largest (new buffer + new rows) of one layer
    copied: int  # bytes of tails copied into new buffers, over all stripes


@dataclass(frozen=True)
class Summary:
    """One intermediate layer's rolls, in rows: what it holds between stripes (0: nothing),
    the distinct (buffer, new) row counts of its assemblies, and the tail rows copied."""

    held: int
    assemblies: frozenset[tuple[int, int]]
    copied: int


def summarise(layer: Layer, rolls: Sequence[Roll]) -> Summary:
    """A tail is a slice across channels, which the memory planner copies (a non-contiguous
    region); with one image of one channel it is a view, and the whole buffer stays live."""
    n, c = layer.out_shape[:2]
    kept = [r for r in rolls if r.keep is not None]
    held = max((length(r.need if n * c == 1 else r.keep) for r in kept), default=0)
    assemblies, copied = set(), 0
    for r in rolls:
        new = length(r.span.out) if r.span is not None else 0
        tail = length(r.need) - new
        if tail and new:
            assemblies.add((length(r.need), new))
            copied += tail
    return Summary(held, frozenset(assemblies), copied)


def rolling_bytes(
    layers: Sequence[Layer], summaries: Sequence[Summary], columns: list[list[Span]], alignment: int
) -> RollingBytes:
    """`summaries[k]` of the intermediate layers; `columns[k][j]`: layer k's span along W in
    column part j (each column part has its own buffers)."""
    held = assembly = copied = 0
    for layer, summary, spans in zip(layers, summaries, columns, strict=False):
        if not summary.held and not summary.assemblies:
            continue
        n, c = layer.out_shape[:2]
        unit = n * c * itemsize(layer.result)
        for span in spans:
            row = unit * length(span.out)
            held += align(summary.held * row, alignment)
            for rows, new in summary.assemblies:
                assembly = max(assembly, align(rows * row, alignment) + align(new * row, alignment))
            copied += summary.copied * row
    return RollingBytes(held, assembly, copied)
