"""Every reference-interpreter kernel, in one place: the tables the interpreters look up.

`KERNELS` (the float interpreter's, nn_interpreter.py): the `nn` ops (nn_kernels.py, which
also has `arith.constant`'s, found by its name) and the `tile` ops (tile_kernels.py), so
that any runner executes tiled functions. `QNN_KERNELS` (qnn_interpreter.py, which falls
back to `KERNELS`): the `qnn` ops (qnn_kernels.py).
"""

from __future__ import annotations

from xdsl.ir import Operation

from . import nn_kernels, qnn_kernels, tile_kernels
from .kernel_api import Kernel

KERNELS: dict[type[Operation], Kernel] = {**nn_kernels.KERNELS, **tile_kernels.KERNELS}
QNN_KERNELS: dict[type[Operation], Kernel] = dict(qnn_kernels.KERNELS)
