"""PNG plots of a plan: motor torques (with their bounds), tool path against the reference, tool error.

The reference is drawn last, thin and dashed in black, so it stays visible on top of results that
follow it closely; a tool that moves out of a plane is shown in three views (x-y, x-z, y-z).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

AXES = "xyz"
REFERENCE_STYLE = dict(color="black", ls="--", lw=1.2, zorder=10)
RESULT_STYLE = dict(lw=2.2, alpha=0.75)
CASES = ("feedforward_pd", "feedforward_open_loop", "rigid_feedforward_pd", "pd_only")


def _pyplot():
    """matplotlib.pyplot on the Agg backend, imported on first use (a plan without plots, and the
    output-folder check that lists the plot names, do not pay the ~0.3-1 s import)."""
    import matplotlib

    if "ipykernel" not in sys.modules:  # files only; in a notebook keep its inline backend (figures shown)
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_names(verification: bool) -> list[str]:
    """The files ``write_plots`` writes (known before the plan runs, for the output check)."""
    return ["torques.png"] + (["tool_path.png", "tool_error.png"] if verification else [])


def torque_figure(traj, bounds=None):
    """Motor torques; ``bounds`` (one per motor, N m) drawn as dashed lines at +-bound."""
    fig, ax = _pyplot().subplots(figsize=(7, 3.5))
    for j, name in enumerate(traj.actuated_joints):
        line, = ax.plot(traj.t, traj.u[:, j], label=f"u_{name}")
        if bounds is not None:
            for sign in (1, -1):
                ax.axhline(sign * bounds[j], color=line.get_color(), ls="--", lw=1,
                           label=f"bound |u_{name}| = {bounds[j]:.4g}" if sign > 0 else None)
    ax.set(xlabel="t [s]", ylabel="motor torque [N m]", title=f"Feedforward torques ({traj.method})")
    _finish(ax)
    return fig


def path_views(traj, simulations=()) -> list[tuple[int, int]]:
    """Axis pairs to draw: the plane of motion, or x-y, x-z, y-z if the tool leaves every coordinate plane."""
    paths = [traj.tool] + [sim.tool for sim in simulations]
    span = np.max([p.max(axis=0) - p.min(axis=0) for p in paths], axis=0)
    moving = [i for i in range(3) if span[i] > max(1e-3 * span.max(), 1e-9)]
    if len(moving) == 3:
        return [(0, 1), (0, 2), (1, 2)]
    controlled = [AXES.index(c) for c in traj.output_names if c in AXES]
    a, b = sorted(list(dict.fromkeys(moving + controlled + [0, 1, 2]))[:2])
    return [(a, b)]


def _reference_coordinate(traj, axis: int) -> np.ndarray:
    """The reference of a controlled tool coordinate, else the planned tool path (mm)."""
    name = AXES[axis]
    if name in traj.output_names:
        return 1000 * traj.y_ref[:, traj.output_names.index(name)]
    return 1000 * traj.tool[:, axis]


def tool_path_figure(traj, verification):
    """Reference and simulated tool paths (in the plane of motion, three views in 3D, or against time)."""
    cases = _cases(verification)
    if len(traj.output_names) == 1:
        fig, ax = _pyplot().subplots(figsize=(6, 5))
        name = traj.output_names[0]
        scale, unit = (1000, "mm") if name in AXES else (1, "rad")
        for case, sim in cases:
            ax.plot(sim.t, scale * sim.y[:, 0], label=case, **RESULT_STYLE)
        ax.plot(traj.t, scale * traj.y_ref[:, 0], label="reference", **REFERENCE_STYLE)
        ax.set(xlabel="t [s]", ylabel=f"tool {name} [{unit}]" if unit == "mm" else f"{name} [{unit}]", title="Tool path")
        _finish(ax)
    else:
        views = path_views(traj, [sim for _, sim in cases])
        fig, axs = _pyplot().subplots(1, len(views), figsize=(6 * len(views), 5), squeeze=False)
        for ax, (a, b) in zip(axs[0], views):
            for case, sim in cases:
                ax.plot(1000 * sim.tool[:, a], 1000 * sim.tool[:, b], label=case, **RESULT_STYLE)
            both = AXES[a] in traj.output_names and AXES[b] in traj.output_names
            ax.plot(_reference_coordinate(traj, a), _reference_coordinate(traj, b),
                    label="reference" if both else "reference (planned path on uncontrolled axes)",
                    **REFERENCE_STYLE)
            ax.set(xlabel=f"tool {AXES[a]} [mm]", ylabel=f"tool {AXES[b]} [mm]",
                   title=f"Tool path, {AXES[a]}-{AXES[b]} view")
            ax.axis("equal")
            _finish(ax)
    return fig


def _finish(ax) -> None:
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)


def tool_error_figure(traj, verification, title: str = "Tool-path error in verification"):
    fig, ax = _pyplot().subplots(figsize=(7, 3.5))
    after = getattr(verification, "settle_simulations", None) or {}
    for name, sim in _cases(verification):
        err = 1000 * np.linalg.norm(sim.y - traj.y_ref, axis=1)
        line, = ax.semilogy(sim.t, np.maximum(err, 1e-9), label=name)
        if name in after:  # the settle window: the controller holds the final pose, error against the end point
            s = after[name]
            ax.semilogy(s.t, np.maximum(1000 * np.linalg.norm(s.y - traj.y_ref[-1], axis=1), 1e-9),
                        color=line.get_color(), lw=1)
    if after:
        ax.axvline(traj.t[-1], color="k", lw=0.8, ls=":")
        ax.annotate("table ends: hold", (traj.t[-1], 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                    ha="left", va="top")
    ax.set(xlabel="t [s]", ylabel="tool error [mm]", title=title if len(title) <= 70 else title[:67] + "...")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _cases(verification):
    if verification is None:
        return []
    names = getattr(verification, "plot_cases", CASES)  # ffopt simulate names its own cases
    return [(n, verification.simulations[n]) for n in names if n in verification.simulations]


def applied_torque_figure(t, u_ff, u_applied, joints, title: str):
    """Applied motor torques (feedforward + feedback, solid) over the feedforward (dashed): ffopt simulate."""
    fig, ax = _pyplot().subplots(figsize=(7, 3.5))
    for j, name in enumerate(joints):
        line, = ax.plot(t, u_applied[:, j], label=f"u_{name} applied")
        ax.plot(t, u_ff[:, j], color=line.get_color(), ls="--", lw=1, label=f"u_{name} feedforward")
    ax.set(xlabel="t [s]", ylabel="motor torque [N m]", title=f"Motor torques: {title}")
    _finish(ax)
    return fig


def save_figure(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)


def write_plots(traj, verification, out: Path) -> list[str]:
    """Write the plots into folder ``out``; the torque bounds are those the plan enforced (NLP)."""
    save_figure(torque_figure(traj, traj.stats.get("torque_max_Nm")), out / "torques.png")
    if verification is not None:
        save_figure(tool_path_figure(traj, verification), out / "tool_path.png")
        save_figure(tool_error_figure(traj, verification), out / "tool_error.png")
    return plot_names(verification is not None)
