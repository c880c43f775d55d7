from pathlib import Path

import pytest
from tool_runner import RELU_MLIR


@pytest.fixture
def relu_mlir(tmp_path: Path) -> Path:
    path = tmp_path / "relu.mlir"
    path.write_text(RELU_MLIR)
    return path
