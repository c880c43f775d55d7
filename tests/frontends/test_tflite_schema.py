"""The `tflite` package as the frontend imports it: generated modules load on first use,
and every name of the real package is still there, bound as its star imports bind it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout.strip()


def test_importing_the_frontend_loads_few_generated_modules() -> None:
    count = run(
        """
        import sys
        import npuc.frontends.tflite
        print(sum(1 for m in sys.modules if m.startswith("tflite.")))
        """
    )
    every = run(
        """
        import sys
        import tflite
        print(sum(1 for m in sys.modules if m.startswith("tflite.")))
        """
    )
    assert int(count) < 20 < 150 < int(every)


def test_names_resolve_as_in_the_real_package() -> None:
    out = run(
        """
        import importlib, inspect
        from npuc.frontends.tflite_schema import tflite
        import tflite as again
        assert again is tflite
        # a class whose module the generated readers imported themselves
        import tflite.SubGraph
        assert inspect.isclass(tflite.SubGraph) and tflite.SubGraph.__name__ == "SubGraph"
        assert tflite.Model is importlib.import_module("tflite.Model").Model
        assert tflite.Conv2DOptions.__module__ == "tflite.Conv2DOptions"
        assert tflite.TensorType.INT8 == 9
        assert callable(tflite.ModelStart)  # a builder function: the whole package loads
        assert tflite.utils.opcode2name(3) == "CONV_2D"
        print(len(dir(tflite)))
        """
    )
    real = run("import tflite; print(len(dir(tflite)))")
    assert out == real
