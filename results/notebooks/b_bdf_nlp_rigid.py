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
# # BDF vs collocation NLP vs rigid-model feedforward on E1 and E12
#
# **Question.** For the two benchmark arms of Moberg & Hanssen (*inverse dynamics of flexible
# manipulators*), which feedforward should a motion-control engineer use? We compare three:
#
# - **BDF**: the inverse dynamics of the flexible model by constant-step BDF-6 (exact path tracking);
# - **NLP**: the same exact tracking transcribed by Radau IIA collocation and solved as a sparse NLP
#   (Newton for this square problem, IPOPT otherwise), warm-started from BDF;
# - **rigid**: the torques of the rigid model (stiff gears, passive joints locked), the industrial
#   baseline, and no feedforward at all (the PD loop alone).
#
# Each plan drives the flexible plant in forward simulation (CVODES) from rest: open loop, and with a
# motor-side PD loop tracking the planned motor angles (the two-degree-of-freedom structure of Thuemmel,
# Otter & Bals). We compare the tool error, the torques and the time to plan.
#
# Size: `FFOPT_NOTEBOOK_SIZE=ci` plans each problem at its own step; `full` (default) adds finer and
# coarser grids (the error and time of each method against the step).

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import ffopt
import nbsupport

SIZE = nbsupport.size()
pd.set_option("display.max_colwidth", None)  # whole texts in the tables
FULL = SIZE == "full"
PROBLEMS = {"E1": nbsupport.problem("e1_complete"), "E12": nbsupport.problem("e12_line")}
STEP = {"E1": 5e-3, "E12": 1e-3}  # each problem file's own step: the plots and the conclusions
STEPS = {"E1": [5e-3, 2e-3, 1e-3], "E12": [2e-3, 1e-3, 5e-4]} if FULL else {name: [h] for name, h in STEP.items()}
METHODS = {"BDF-6": {"method": "bdf", "order": 6}, "NLP": {"method": "nlp"}}
CASES = ["feedforward_open_loop", "feedforward_pd", "rigid_feedforward_pd", "pd_only"]
print(f"size {SIZE}: steps {({k: [h * 1e3 for h in v] for k, v in STEPS.items()})} ms; ffopt {ffopt.__version__}")

# %% [markdown]
# ## Plans
#
# Every plan is verified with every case (the rigid-model and PD-only baselines come from the same
# verification). The first plan of each kind compiles or builds what it needs; it is run once more
# and the second run's times are reported.

# %%
rows, results = [], {}
for name, problem in PROBLEMS.items():
    problem = nbsupport.every_case(problem)
    for h in STEPS[name]:
        for label, settings in METHODS.items():
            ffopt.plan(problem, step=h, verify=False, **settings)  # warm-up: compiles BDF's C code once
            res = ffopt.plan(problem, step=h, **settings)
            table = res.verification_dataframe()
            nbsupport.require_cases(table, CASES)
            results[(name, h, label)] = res
            base = {"problem": name, "h [ms]": h * 1e3}
            rows.append({**base, "method": label, "inverse dynamics [s]": res.timings["inverse_dynamics"],
                         "open loop [mm]": table.loc["feedforward_open_loop", "max_mm"],
                         "with PD [mm]": table.loc["feedforward_pd", "max_mm"],
                         "peak |u| [N m]": float(np.abs(res.trajectory.u).max())})
            if label == "BDF-6":  # the baselines do not depend on the plan: once per grid
                for case, text in (("rigid_feedforward_pd", "rigid + PD"), ("pd_only", "PD only")):
                    rows.append({**base, "method": text, "with PD [mm]": table.loc[case, "max_mm"],
                                 "peak |u| [N m]": float(table.filter(like="peak_u_").loc[case].max())})
compare = pd.DataFrame(rows)
compare.round(4)

# %% [markdown]
# ## Tool error over time
#
# The simulated tool error of each plan open loop and with the PD loop, against the baselines (log scale).
# E12 is very flexible (lowest mode about 1.3-1.5 Hz with the motors clamped) and moves 2.2 m in 0.3 s:
# a rigid-model feedforward misses by most of a metre.

# %%
fig, axs = plt.subplots(1, 2, figsize=(14, 4.5))
for ax, name in zip(axs, PROBLEMS):
    h = STEP[name]
    for label in METHODS:
        res = results[(name, h, label)]
        for case, style in (("feedforward_open_loop", ":"), ("feedforward_pd", "-")):
            sim = res.simulation_dataframe(case)
            ax.semilogy(sim["t"], np.maximum(sim["error_mm"], 1e-6), style, lw=1.2,
                        label=f"{label}, {'open loop' if style == ':' else 'with PD'}")
    bdf = results[(name, h, "BDF-6")]
    for case, text in (("rigid_feedforward_pd", "rigid + PD"), ("pd_only", "PD only")):
        sim = bdf.simulation_dataframe(case)
        ax.semilogy(sim["t"], np.maximum(sim["error_mm"], 1e-6), lw=1.5, label=text)
    ax.set(xlabel="t [s]", ylabel="tool error [mm]", title=f"{name}, h = {h * 1e3:g} ms", ylim=(1e-5, None))
    ax.legend(fontsize=7, ncol=2)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Torques
#
# The feedforward torques of BDF and the NLP, and the torque the motors apply with the rigid-model
# feedforward (its feedforward plus the PD correction).

# %%
panels = [(name, joint) for name in PROBLEMS for joint in results[(name, STEP[name], "BDF-6")].trajectory.actuated_joints]
fig, axs = plt.subplots(1, len(panels), figsize=(5.3 * len(panels), 4))
for ax, (name, joint) in zip(axs, panels):
    h = STEP[name]
    bdf = results[(name, h, "BDF-6")]
    for label in METHODS:
        df = results[(name, h, label)].to_dataframe()
        ax.plot(df["t"], df[f"u_{joint}"] / 1e3, lw=1.5 if label == "NLP" else 2.5, label=f"{label} feedforward",
                ls="--" if label == "NLP" else "-")
    rigid = bdf.simulation_dataframe("rigid_feedforward_pd")
    ax.plot(rigid["t"], rigid[f"u_{joint}"] / 1e3, lw=1, label="rigid + PD (applied)")
    ax.set(xlabel="t [s]", ylabel="torque [kN m]", title=f"{name}, motor of joint {joint}")
    ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Error and time against the step
#
# (With one step per problem at the ci size, one point per method.)

# %%
fig, axs = plt.subplots(1, 2, figsize=(13, 4))
for i, (name, label) in enumerate((n, m) for n in PROBLEMS for m in METHODS):
    sub = compare[(compare.problem == name) & (compare.method == label)].sort_values("h [ms]")
    style = dict(color=f"C{i}", marker="os"[list(PROBLEMS).index(name)])
    axs[0].loglog(sub["h [ms]"], sub["with PD [mm]"], **style, label=f"{name} {label}, with PD")
    axs[0].loglog(sub["h [ms]"], sub["open loop [mm]"], **style, ls=":", mfc="none", label=f"{name} {label}, open loop")
    axs[1].loglog(sub["inverse dynamics [s]"], sub["with PD [mm]"], **style, ls="", label=f"{name} {label}")
steps = sorted({h * 1e3 for v in STEPS.values() for h in v})
axs[0].set_xticks(steps, [f"{h:g}" for h in steps], minor=False)
axs[0].minorticks_off()
axs[0].set(xlabel="h [ms]", ylabel="max tool error [mm]", title="verified tool error vs step")
axs[1].set(xlabel="inverse dynamics [s]", ylabel="max tool error with PD [mm]", title="error vs planning time")
axs[1].tick_params(which="minor", labelbottom=False)
for ax in axs:
    ax.legend(fontsize=7)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## Conclusions

# %%
c = nbsupport.Conclusions()
at = compare.set_index(["problem", "h [ms]", "method"])
for name in PROBLEMS:
    h = STEP[name] * 1e3
    bdf, nlp = at.loc[(name, h, "BDF-6")], at.loc[(name, h, "NLP")]
    rigid, none = at.loc[(name, h, "rigid + PD")], at.loc[(name, h, "PD only")]
    best = min(bdf["with PD [mm]"], nlp["with PD [mm]"])
    c.add(f"{name}, h = {h:g} ms: flexible-model feedforward + PD vs rigid-model feedforward + PD",
          f"BDF {bdf['with PD [mm]']:.3g} mm, NLP {nlp['with PD [mm]']:.3g} mm, rigid {rigid['with PD [mm]']:.3g} mm, "
          f"PD only {none['with PD [mm]']:.3g} mm: {rigid['with PD [mm]'] / best:.0f}x smaller error",
          rigid["with PD [mm]"] > 100 * best)
    c.add(f"{name}, h = {h:g} ms: the PD loop does not spoil an exact feedforward (with PD <= open loop)",
          f"BDF {bdf['open loop [mm]']:.3g} -> {bdf['with PD [mm]']:.3g} mm, NLP {nlp['open loop [mm]']:.3g} -> "
          f"{nlp['with PD [mm]']:.3g} mm",
          all(m["with PD [mm]"] <= 1.01 * m["open loop [mm]"] for m in (bdf, nlp)))
    # at BDF's grid points, which are the NLP's interval ends (its trajectory has the collocation points too)
    gap = nbsupport.torque_difference(results[(name, h / 1e3, "BDF-6")], results[(name, h / 1e3, "NLP")])
    c.add(f"{name}, h = {h:g} ms: BDF and NLP plan almost the same torques (both track the path exactly)",
          f"largest difference at the BDF grid points {gap:.2%} of the peak (peak |u| BDF "
          f"{bdf['peak |u| [N m]']:.4g}, NLP, collocation points included, {nlp['peak |u| [N m]']:.4g} N m)",
          gap < 0.05)
    c.add(f"{name}, h = {h:g} ms: the NLP's verified open-loop error is no larger than BDF's",
          f"NLP {nlp['open loop [mm]']:.3g} mm, BDF {bdf['open loop [mm]']:.3g} mm "
          f"({bdf['open loop [mm]'] / nlp['open loop [mm]']:.1f}x)", nlp["open loop [mm]"] <= bdf["open loop [mm]"])
    c.add(f"{name}, h = {h:g} ms: time of the inverse dynamics",
          f"BDF {bdf['inverse dynamics [s]'] * 1e3:.0f} ms, NLP {nlp['inverse dynamics [s]'] * 1e3:.0f} ms "
          f"({nlp['inverse dynamics [s]'] / bdf['inverse dynamics [s]']:.0f}x; the NLP includes its BDF warm start)",
          nlp["inverse dynamics [s]"] > bdf["inverse dynamics [s]"])
e12_pd = at.loc[("E12", STEP["E12"] * 1e3, "BDF-6"), "with PD [mm]"]
c.add("E12: the 0.1 mm target with BDF-6 + PD", f"{e12_pd:.3f} mm at h = {STEP['E12'] * 1e3:g} ms", e12_pd < 0.1)
if FULL:
    for name in PROBLEMS:
        for label in METHODS:
            sub = compare[(compare.problem == name) & (compare.method == label)].sort_values("h [ms]")
            c.add(f"{name}, {label}: open-loop error against the step",
                  ", ".join(f"{r['h [ms]']:g} ms: {r['open loop [mm]']:.3g} mm" for _, r in sub.iterrows()))
conclusions = c.table()
conclusions

# %%
c.check()
