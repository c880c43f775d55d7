"""Figures for quantization: float vs int8 vs int16 on the trained digits CNN, next to onnxruntime.

Run: PYTHONPATH=tests .venv/bin/python tests/bench/bench_quantization.py
Both toolchains quantize the same float model with the same 200 calibration
images (min/max ranges) and run the same 397 test images.
"""

from __future__ import annotations

from quantization_peers import CALIBRATION_IMAGES, side_by_side


def main() -> None:
    print(f"digits CNN, {CALIBRATION_IMAGES} calibration images, 397 test images")
    print(f"{'model':<32} {'SQNR dB':>8} {'top-1 agreement':>16} {'accuracy':>9}")
    for name, f in side_by_side().items():
        agreement, accuracy = 100 * f.top1_agreement, 100 * f.accuracy
        print(f"{name:<32} {f.sqnr_db:>8.2f} {agreement:>15.2f}% {accuracy:>8.2f}%")


if __name__ == "__main__":
    main()
