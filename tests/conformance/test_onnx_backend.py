"""ONNX's backend conformance suite run through npuc's Backend adapter."""

from __future__ import annotations

import pytest
from onnx_conformance import all_cases, claimed, exclusions, selected_cases

CASES = selected_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_backend_case(case):
    case.run()


def test_every_exclusion_names_a_claimed_case():
    cases = all_cases()
    stale = [name for name in exclusions() if name not in cases or not claimed(cases[name])]
    assert not stale, f"exclusions.toml lists cases that are not claimed: {stale}"


def test_every_model_zoo_graph_is_run():
    light = {c.name for c in CASES if c.kind == "real"}
    assert len(light) == 9, sorted(light)
