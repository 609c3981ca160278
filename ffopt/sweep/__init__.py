"""Parameter sweeps on Dask: ``ffopt sweep SWEEP.toml --out DIR`` or, from Python,

    from ffopt.sweep import load_sweep, run_sweep, read_results
    report = run_sweep("problems/sweeps/e12_stiffness_duration.toml", "out/sweep", workers=2)
    df = read_results("out/sweep")          # one row per run (pandas)

The sweep file format is in ``ffopt.sweep.spec``, the output folder in ``ffopt.sweep.store``.
"""

from ffopt.sweep.runner import SweepReport, run_sweep, run_task
from ffopt.sweep.spec import Run, Sweep, load_sweep, sweep_from_dict
from ffopt.sweep.store import read_results

__all__ = ["load_sweep", "sweep_from_dict", "run_sweep", "read_results", "run_task", "Sweep", "Run", "SweepReport"]
