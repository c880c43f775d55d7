"""The lowering's tokens (passes/npu_lowering/deps.py) against a brute-force oracle.

Random instruction streams over random byte ranges (contiguous and strided views, two
regions and the read-only constants) get their `deps` from `with_deps`; the oracle marks
every byte each instruction reads and writes in numpy arrays and computes happens-before
(a token, or an earlier instruction on the same engine, or a chain of those) as a
reachability matrix. Streams are long enough that a region's access log is compacted
(more than 256 accesses) several times.
"""

from __future__ import annotations

import numpy as np
import pytest
from npu_programs import inst, tensor

from npuc.dialects.npu_isa import Instruction, TensorRef
from npuc.passes.npu_lowering.deps import with_deps

# (region sizes, share of DMAs, share of host ops). Small regions conflict densely, so most
# waits are implied by others; in large ones, mostly on one engine, few waits are implied and
# an access the log forgot shows as a missing wait.
STREAMS = {
    "dense": ({"sram": 320, "activations": 192}, 0.45, 0.15),
    "sparse": ({"sram": 3072, "activations": 640}, 0.45, 0.15),
    "sparse, mostly compute": ({"sram": 3072, "activations": 640}, 0.08, 0.02),
}


def random_view(rng: np.random.Generator, region: str, size: int) -> TensorRef:
    """A contiguous run or a strided block of rows (rows never overlap: a written view)."""
    dtype = str(rng.choice(["i8", "i16"]))
    item = 2 if dtype == "i16" else 1
    if rng.random() < 0.6:
        length = int(rng.integers(1, 40))
        offset = int(rng.integers(0, (size - length * item) // item + 1)) * item
        return tensor(region, offset, (length,), dtype)
    rows, cols, gap = (int(v) for v in rng.integers((2, 1, 1), (5, 9, 12)))
    pitch = cols + gap
    extent = ((rows - 1) * pitch + cols) * item
    offset = int(rng.integers(0, (size - extent) // item + 1)) * item
    return tensor(region, offset, (rows, cols), dtype, (pitch, 1))


def random_stream(
    seed: int, count: int, sizes: dict[str, int], dmas: float, hosts: float
) -> list[Instruction]:
    rng = np.random.default_rng(seed)
    regions = list(sizes)
    out = []
    for _ in range(count):

        def view() -> TensorRef:
            region = regions[int(rng.random() < 0.3)]
            return random_view(rng, region, sizes[region])

        kind = rng.random()
        if kind < dmas / 4:
            src = tensor("constants", 16 * int(rng.integers(0, 8)), (16,))
            out.append(inst("dma", (src, view())))
        elif kind < dmas:
            out.append(inst("dma", (view(), view())))
        elif kind < 1 - hosts:
            out.append(inst("move", (view(), view())))
        else:
            inputs = int(rng.integers(1, 3))
            operands = [view() for _ in range(inputs + 1)]
            out.append(inst("host", operands, body="x", inputs=inputs))
    return out


def byte_masks(insts: list[Instruction], sizes: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(reads, writes): one row of bytes per instruction, the regions end to end; the
    constants are left out."""
    base = {"sram": 0, "activations": sizes["sram"]}
    reads = np.zeros((len(insts), sum(sizes.values())), bool)
    writes = np.zeros_like(reads)
    for i, x in enumerate(insts):
        for refs, mask in ((x.read(), reads), (x.written(), writes)):
            for t in refs:
                if t.region == "constants":
                    continue
                first = base[t.region] + t.byte_offsets()
                for b in range(t.itemsize):
                    mask[i, first + b] = True
    return reads, writes


def reachability(insts: list[Instruction]) -> tuple[np.ndarray, list[list[int]]]:
    """before[a, b]: a happens before b. Also each instruction's direct predecessors: its
    deps and the previous instruction on its engine."""
    n = len(insts)
    before = np.zeros((n, n), bool)
    previous: dict[str, int] = {}
    preds = []
    for b, x in enumerate(insts):
        direct = list(x.deps)
        if x.engine in previous:
            direct.append(previous[x.engine])
        previous[x.engine] = b
        for p in direct:
            before[p, b] = True
            before[:, b] |= before[:, p]
        preds.append(direct)
    return before, preds


def assert_tokens_exact(insts: list[Instruction], sizes: dict[str, int]) -> None:
    """Every pair of conflicting accesses on two engines is ordered, and every token is a
    conflict that no other wait of its instruction already implies."""
    reads, writes = byte_masks(insts, sizes)
    r, w = reads.astype(np.float32), writes.astype(np.float32)
    # conflict[a, b]: one of the two writes a byte the other reads or writes
    conflict = (w @ (r + w).T + r @ w.T) > 0
    before, preds = reachability(insts)
    n = len(insts)
    earlier = np.triu(np.ones((n, n), bool), 1)
    missing = np.argwhere(conflict & earlier & ~before)
    assert missing.size == 0, f"unordered conflicts (earlier, later): {missing[:5].tolist()}"
    for b, x in enumerate(insts):
        for d in x.deps:
            assert d < b and conflict[d, b], f"{b} waits for {d}, which touches none of its bytes"
            others = [p for p in preds[b] if p != d]
            implied = any(p == d or before[d, p] for p in others)
            assert not implied, f"{b}'s token from {d} is implied by {others}"


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("stream", list(STREAMS))
def test_every_conflicting_access_is_ordered_and_every_token_is_needed(stream, seed):
    sizes, dmas, hosts = STREAMS[stream]
    insts = with_deps(random_stream(seed, 600, sizes, dmas, hosts))
    assert_tokens_exact(insts, sizes)
    assert sum(len(x.deps) for x in insts) > len(insts) // 20  # enough conflicts to matter


def test_a_write_the_log_forgets_only_once_later_writes_cover_it():
    """The log drops accesses whose bytes later writes wrote (after 256 entries). Writes of
    [5, 20), then [100, 110), then [0, 10) cover [0, 20) and [100, 110), not the DMA's
    [30, 40): the compute op reading it after the log is compacted must wait for the DMA."""
    sizes = {"sram": 4096, "activations": 4096}
    elsewhere = iter(range(0, 4096, 8))

    def move(src: TensorRef, dst: TensorRef) -> Instruction:
        return inst("move", (src, dst))

    def spare() -> TensorRef:
        return tensor("activations", next(elsewhere), (4,))

    stream = [
        inst("dma", (tensor("constants", 0, (10,)), tensor("sram", 30, (10,)))),
        move(spare(), tensor("sram", 5, (15,))),
        move(spare(), tensor("sram", 100, (10,))),
        move(spare(), tensor("sram", 0, (10,))),
        *(move(tensor("sram", 200 + 8 * k, (4,)), spare()) for k in range(260)),
        move(tensor("sram", 30, (10,)), spare()),
    ]
    insts = with_deps(stream)
    assert insts[-1].deps == (0,)
    assert_tokens_exact(insts, sizes)


def test_a_stream_of_disjoint_accesses_waits_for_nothing():
    insts = [
        inst("dma", (tensor("sram", 8 * i, (4,)), tensor("sram", 8 * i + 4, (4,))))
        if i % 2
        else inst("move", (tensor("activations", 8 * i, (4,)), tensor("sram", 8 * i + 4, (4,))))
        for i in range(300)
    ]
    assert all(x.deps == () for x in with_deps(insts))


@pytest.mark.parametrize("seed", range(3))
def test_views_of_more_runs_than_the_log_lists(seed):
    """Views of more than MAX_SPANS (1024) runs, which the log cannot list byte by byte:
    kept while a later write does not cover their whole byte range, forgotten once one
    does; the tokens stay exact."""
    rng = np.random.default_rng(seed)
    sizes = {"sram": 8192, "activations": 640}

    def long_view() -> TensorRef:
        rows, pitch = int(rng.integers(1025, 1400)), int(rng.integers(2, 4))
        offset = int(rng.integers(0, sizes["sram"] - (rows - 1) * pitch - 1))
        return tensor("sram", offset, (rows, 1), "i8", (pitch, 1))

    def short_view() -> TensorRef:
        return random_view(rng, "sram", sizes["sram"])

    def whole() -> TensorRef:
        return tensor("sram", 0, (sizes["sram"],))

    stream = []
    for position in range(700):
        kind = rng.random()
        spare = random_view(rng, "activations", sizes["activations"])
        if kind < 0.2:
            stream.append(inst("move", (spare, long_view())))  # a long write
        elif kind < 0.4:
            stream.append(inst("dma", (long_view(), spare)))  # a long read
        elif position in (350, 520):
            stream.append(inst("move", (spare, whole())))  # covers every earlier access
        else:
            engine = "dma" if rng.random() < 0.5 else "move"
            stream.append(inst(engine, (short_view(), short_view())))
    insts = with_deps(stream)
    assert_tokens_exact(insts, sizes)
