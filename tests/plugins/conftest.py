from __future__ import annotations

import sys
from collections.abc import Callable

import pytest
from plugin_variants import variant_env


@pytest.fixture
def use_variant(monkeypatch: pytest.MonkeyPatch) -> Callable[[str | None], None]:
    """In this process, make tests/plugins/variants/NAME the only plugin (every variant's
    module is named `example`, after its plugin: the one imported before is forgotten)."""

    def use(variant: str | None) -> None:
        for key, value in variant_env(variant).items():
            monkeypatch.setenv(key, value)
        monkeypatch.delitem(sys.modules, "example", raising=False)
        monkeypatch.setattr(sys, "path", list(sys.path))

    return use
