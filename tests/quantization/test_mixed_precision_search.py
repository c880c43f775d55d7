"""The mixed-precision search's decisions, with scripted fidelity: it keeps a promotion only
if the fidelity the target measures does not drop, and says when and why it stops short."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from npuc import quantize_flow
from npuc.quantize_flow import search_mixed_precision


def scripted(monkeypatch, cosines: dict[tuple[str, ...], float], order: list[str]) -> None:
    """quantize -> the promoted set; compare -> its scripted cosine; the most sensitive
    layer -> the first of `order` not excluded."""

    def quantize(_module, _stats, config):
        promoted = tuple(config.overrides.layers)
        return promoted, SimpleNamespace(layers={})

    def compare(_module, promoted, _batches, _float_runs=None):
        out = SimpleNamespace(name="y", cosine=cosines[promoted], top1_agreement=None)
        return [out], []

    def most_sensitive(_report, _tensors, exclude=()):
        return next((name for name in order if name not in exclude), None)

    monkeypatch.setattr(quantize_flow, "quantize", quantize)
    monkeypatch.setattr(quantize_flow, "compare", compare)
    monkeypatch.setattr(quantize_flow, "most_sensitive_layer", most_sensitive)


def search(target: float):
    return search_mixed_precision(None, {}, _Config(), [], target_cosine=target)


class _Config:
    """A stand-in QuantizeConfig: `dataclasses.replace` needs a dataclass."""


@pytest.fixture(autouse=True)
def replace_overrides(monkeypatch):
    monkeypatch.setattr(
        quantize_flow, "replace", lambda _config, overrides: SimpleNamespace(overrides=overrides)
    )


def test_a_promotion_that_lowers_the_cosine_is_undone(monkeypatch):
    scripted(
        monkeypatch, {(): 0.990, ("a",): 0.985, ("b",): 0.995, ("b", "c"): 0.9995}, ["a", "b", "c"]
    )
    found = search(0.999)
    assert found.met and found.promoted == ["b", "c"]
    assert [(s.promoted, s.kept) for s in found.history] == [
        ((), True),
        (("a",), False),
        (("b",), True),
        (("b", "c"), True),
    ]
    assert found.module == ("b", "c")


def test_running_out_of_layers_says_so(monkeypatch):
    scripted(monkeypatch, {(): 0.990, ("a",): 0.992, ("a", "b"): 0.991}, ["a", "b"])
    found = search(0.999)
    assert not found.met and found.promoted == ["a"]
    assert found.stopped == "no integer layer is left to promote"
    assert found.limiting_output == "y"
    assert found.module == ("a",)  # the best quantization found, not the last tried
