# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # E12 over gear stiffness, path duration and torque bound: a sweep on Dask
#
# **Question.** Over a range of gear stiffnesses and path durations of E12 (Moberg & Hanssen,
# *inverse dynamics of flexible manipulators*), where does exact tracking by BDF alone stay within the
# motors' torque bounds, where does it break them so that the NLP must relax the tracking, and how do
# the verified tool error and the planning time vary?
#
# The sweep is `problems/sweeps/e12_stiffness_duration.toml`: block `bdf` plans every (stiffness,
# duration) by BDF-6; block `nlp` plans the same points under the torque bounds with penalty
# tracking. It runs through `ffopt.sweep.run_sweep` on a local Dask cluster and leaves one row per run
# in `results.parquet`, which this notebook analyses with the classification of
# `results/e12_sweep_map.py`.
#
# Size: `FFOPT_NOTEBOOK_SIZE=ci` runs the same sweep on a 2 x 2 grid under one bound (8 runs, one
# worker, a temporary folder); `full` (default) runs the shipped sweep (75 runs, minutes on 2 cores)
# into `out/e12_sweep`, the folder `results/e12_sweep_map.py` uses, so either resumes the other's runs.
#
# Run it as a notebook (Jupyter, or `python results/notebooks/nbsupport.py d_sweep_analysis`): as a
# plain script, Dask's worker processes would import the script itself as their main module.

# %%
import sys
import tempfile
import tomllib

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import ffopt
import nbsupport
from ffopt.sweep import read_results, run_sweep, sweep_from_dict

if "__file__" in globals():
    raise SystemExit("run this study as a notebook: python results/notebooks/nbsupport.py d_sweep_analysis "
                     "(Dask's worker processes import a plain script as their main module)")
sys.path.insert(0, str(nbsupport.ROOT / "results"))
import e12_sweep_map  # noqa: E402  (the classification and the map of the shipped study)

SIZE = nbsupport.size()
pd.set_option("display.max_colwidth", None)  # whole texts in the tables
FULL = SIZE == "full"
SWEEP_FILE = nbsupport.ROOT / "problems" / "sweeps" / "e12_stiffness_duration.toml"
data = tomllib.loads(SWEEP_FILE.read_text())
if not FULL:  # the same sweep on a 2 x 2 grid under the shipped bound
    for block in data["runs"]:
        parameters = block["parameters"]
        parameters["gear_stiffness"] = {"fields": parameters["gear_stiffness"]["fields"], "values": [1.0e5, 2.0e5]}
        parameters["reference.duration"] = [0.3, 0.4]
        if "nlp.torque_max" in parameters:
            parameters["nlp.torque_max"] = [[1.2e5, 7.5e4]]
sweep = sweep_from_dict(data, SWEEP_FILE)
OUT = nbsupport.ROOT / "out" / "e12_sweep" if FULL else tempfile.mkdtemp(prefix="ffopt-sweep-") + "/sweep"
WORKERS = None if FULL else 1  # None: one worker process per CPU
print(f"size {SIZE}: {len(sweep.runs)} runs into {OUT}; ffopt {ffopt.__version__}")
pd.DataFrame([{"block": r.block, **r.params} for r in sweep.runs]).groupby("block").agg(lambda v: sorted(set(map(str, v))))

# %% [markdown]
# ## Running the sweep
#
# A finished run is committed at once (its plan files, then its row); a rerun skips it.

# %%
report = run_sweep(sweep, OUT, workers=WORKERS, progress=print)
print(report.text())

# %%
df = read_results(OUT)
print(f"{len(df)} rows, {len(df.columns)} columns:", ", ".join(df.columns[:12]), "...")
df[["block", "gear_stiffness", "reference.duration", "nlp.torque_max", "status", "peak_u_q1_Nm", "peak_u_q2_Nm",
    "error_feedforward_pd_max_mm", "t_inverse_dynamics_s", "t_plan_s"]].round(4)

# %% [markdown]
# ## The map
#
# Per grid point and bound: exact tracking by BDF-6 within the bound ("BDF alone"), beyond it with the
# NLP's relaxed tracking solved ("NLP relaxes"), or no plan (the NLP not solved within the sweep's
# iteration limit). The number in the first panel is BDF's peak torque over the bound.

# %%
study = e12_sweep_map.classify(df)
fig = e12_sweep_map.map_figure(study)
plt.show()
regions = study.groupby("bound")["region"].value_counts().unstack(fill_value=0)
regions.reindex(columns=e12_sweep_map.REGIONS, fill_value=0)

# %% [markdown]
# ## Error, torque and time against the duration
#
# Exact tracking's peak torque falls with the duration of the move (the accelerations scale like
# 1/T^2), and so does its verified error; the planning time depends on the method.

# %%
planned = df.status.isin(e12_sweep_map.PLANNED)  # verified or missed_tolerance: the run planned
bdf = df[(df.block == "bdf") & planned].sort_values("reference.duration")
nlp = df[(df.block == "nlp") & planned]
fig, axs = plt.subplots(1, 3, figsize=(16, 4))
for k, sub in bdf.groupby("gear_stiffness"):
    axs[0].plot(sub["reference.duration"], sub["peak_u_q1_Nm"] / 1e3, "o-", label=f"k = {k:.3g} N m/rad")
    axs[1].plot(sub["reference.duration"], sub["error_feedforward_pd_max_mm"], "o-", label=f"k = {k:.3g}")
for b in sorted({tuple(b) for b in df.loc[df.block == "nlp", "nlp.torque_max"]}):
    axs[0].axhline(b[0] / 1e3, color="r", ls="--", lw=1)
axs[0].set(xlabel="duration [s]", ylabel="BDF peak |u_q1| [kN m]", title="exact tracking: peak torque (dashed: bounds)")
axs[1].set(xlabel="duration [s]", ylabel="verified error, FF + PD [mm]", title="BDF-6: verified tool error")
for ax in axs[:2]:
    ax.legend(fontsize=8)
axs[2].boxplot([bdf["t_inverse_dynamics_s"], nlp["t_inverse_dynamics_s"]], tick_labels=["BDF-6 (VM)", "NLP"])
axs[2].set(yscale="log", ylabel="inverse dynamics [s]", title="planning time per run")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## The sweep machinery's own cost
#
# Per run: the task on the worker (building the problem, `ffopt.plan`, writing the plan files) minus the
# time inside `ffopt.plan`, and the commit on the client.

# %%
ok = df[planned]
overhead = (ok["t_task_s"] - ok["t_plan_s"]) + ok["t_commit_s"]
machinery = pd.Series({"median plan time [s]": ok["t_plan_s"].median(),
                       "median overhead per run [ms]": 1e3 * overhead.median(),
                       "overhead / plan time": overhead.sum() / ok["t_plan_s"].sum()})
machinery.round(4)

# %% [markdown]
# ## A rerun recomputes nothing

# %%
again = run_sweep(sweep, OUT, workers=WORKERS)
print(again.text())

# %% [markdown]
# ## Conclusions

# %%
c = nbsupport.Conclusions()
counts = df["status"].value_counts()
c.add("every run is in the table (failed ones with their error)",
      f"{len(df)} rows for {len(sweep.runs)} runs: {int(planned.sum())} planned ("
      f"{counts.get('missed_tolerance', 0)} of them missed their tolerance), {counts.get('failed', 0)} failed",
      len(df) == len(sweep.runs) and set(df["run_id"]) == {r.run_id for r in sweep.runs})
c.add("a rerun recomputes nothing", f"{again.computed} computed, {again.skipped_ok} finished before",
      again.computed == 0 and again.skipped_ok == int(planned.sum()))
for region in e12_sweep_map.REGIONS:
    sub = study[study.region == region]
    c.add(f"grid points where the plan is: {region}",
          f"{len(sub)} of {len(study)}" + (f" (BDF peak / bound {sub['peak_over_bound'].min():.2f}-"
                                           f"{sub['peak_over_bound'].max():.2f})" if len(sub) else ""))
c.add("BDF alone exactly where exact tracking stays within the bound",
      f"{(study.region == 'BDF alone').sum()} points, all with peak / bound <= 1",
      bool(((study.region == "BDF alone") == (study.peak_over_bound <= 1)).all()))
c.add("exact tracking breaks the bound somewhere on this grid (the NLP is needed)",
      f"{(study.peak_over_bound > 1).sum()} of {len(study)} points, up to {study.peak_over_bound.max():.2f}x",
      bool((study.peak_over_bound > 1).any()))
falls = [bool(np.all(np.diff(sub["peak_u_q1_Nm"]) < 0) and np.all(np.diff(sub["peak_u_q2_Nm"]) < 0))
         for _, sub in bdf.groupby("gear_stiffness")]
c.add("exact tracking's peak torques fall with the duration, at every stiffness",
      f"at {sum(falls)} of {len(falls)} stiffnesses", all(falls))
errors = [bool(np.all(np.diff(sub["error_feedforward_pd_max_mm"]) < 0)) for _, sub in bdf.groupby("gear_stiffness")]
by_t = bdf.groupby("reference.duration")["error_feedforward_pd_max_mm"].agg(["min", "max"])
c.add("BDF's verified error (FF + PD) falls with the duration, at every stiffness",
      ", ".join(f"{t:g} s: {r['min']:.3g}-{r['max']:.3g} mm" for t, r in by_t.iterrows()), all(errors))
c.add("BDF-6's verified error below 0.1 mm wherever it runs", f"max {bdf['error_feedforward_pd_max_mm'].max():.3g} mm",
      bool(bdf["error_feedforward_pd_max_mm"].max() < 0.1))
bounds = np.array([list(b) for b in nlp["nlp.torque_max"]], float)
use = np.max(nlp[["peak_u_q1_Nm", "peak_u_q2_Nm"]].to_numpy() / bounds, axis=1)
c.add("every solved NLP respects its torque bound", f"largest peak / bound {use.max():.6f} over {len(nlp)} plans",
      bool(use.max() <= 1 + 1e-6))
relaxed = study[study.region == "NLP relaxes"]
if len(relaxed):
    c.add("where the NLP relaxes the tracking: verified error (FF + PD)",
          f"{relaxed['error_mm'].min():.3g}-{relaxed['error_mm'].max():.3g} mm at {len(relaxed)} points")
t_bdf, t_nlp = bdf["t_inverse_dynamics_s"].median(), nlp["t_inverse_dynamics_s"].median()
c.add("the NLP takes longer than BDF (median inverse-dynamics time)",
      f"BDF {t_bdf:.2g} s (CasADi's VM), NLP {t_nlp:.2g} s: {t_nlp / t_bdf:.0f}x", t_nlp > t_bdf)
c.add("sweep machinery overhead per run", f"median {1e3 * overhead.median():.0f} ms, "
      f"{machinery['overhead / plan time']:.1%} of the time inside ffopt.plan")
conclusions = c.table()
conclusions

# %%
c.check()
