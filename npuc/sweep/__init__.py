"""Design-space sweeps (`npu-sweep`, docs/sweeps.md): compile models over a grid, a random
sample or an Optuna search of npu-compile options, pass pipelines, targets and target fields,
and tabulate what each point costs.

    frame = npuc.sweep.run("study.toml", "results", jobs=2)  # a pandas DataFrame
    npuc.sweep.write_report("results")                        # results/report.html
"""

from .driver import run
from .report import write_report

__all__ = ["run", "write_report"]
