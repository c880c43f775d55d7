"""The example plugin's model and the plugin variants the tests install one at a time
(tests/plugins/variants/NAME/example.py, through NPUC_PLUGIN_PATH)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "plugins" / "npuc-example-ops"
MODEL = EXAMPLE / "model.onnx"
VARIANTS = REPO / "tests" / "plugins" / "variants"


def variant_env(variant: str | None) -> dict[str, str]:
    """The environment in which only variants/`variant` is installed (None: no plugin)."""
    return {
        "NPUC_NO_PLUGIN_ENTRY_POINTS": "1",
        "NPUC_PLUGIN_PATH": str(VARIANTS / variant) if variant else "",
    }
