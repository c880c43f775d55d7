"""Models from the project's shared folder, which sits beside the checkout (../shared)."""

from pathlib import Path

SHARED_MODELS = Path(__file__).resolve().parents[2] / "shared" / "models"
MBV2 = SHARED_MODELS / "mbv2_int8_224.tflite"  # figures of peers: ../shared/models/README.md

# The Vela configuration targets/ethos-u55-256-hee.toml mirrors.
VELA_ARGS = [
    "--accelerator-config",
    "ethos-u55-256",
    "--system-config",
    "Ethos_U55_High_End_Embedded",
    "--memory-mode",
    "Shared_Sram",
]
