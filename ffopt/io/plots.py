"""PNG plots of a plan: motor torques, tool path against the reference, tool error over time."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def plot_torques(traj, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for j in range(traj.n_inputs):
        ax.plot(traj.t, traj.u[:, j], label=f"u{j + 1}")
    ax.set(xlabel="t [s]", ylabel="motor torque [N m]", title=f"Feedforward torques ({traj.method})")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_tool_path(traj, verification, path: Path) -> None:
    """Reference vs. simulated tool outputs (first two outputs as a path, else against time)."""
    fig, ax = plt.subplots(figsize=(6, 5))
    ref = 1000 * traj.y_ref
    cases = _cases(verification)
    if ref.shape[1] >= 2:
        ax.plot(ref[:, 0], ref[:, 1], "k--", lw=2, label="reference")
        for name, sim in cases:
            ax.plot(1000 * sim.y[:, 0], 1000 * sim.y[:, 1], lw=1, label=name)
        ax.set(xlabel=f"{traj.output_names[0]} [mm]", ylabel=f"{traj.output_names[1]} [mm]")
        ax.axis("equal")
    else:
        ax.plot(traj.t, ref[:, 0], "k--", lw=2, label="reference")
        for name, sim in cases:
            ax.plot(sim.t, 1000 * sim.y[:, 0], lw=1, label=name)
        ax.set(xlabel="t [s]", ylabel=f"{traj.output_names[0]} [mm]")
    ax.set_title("Tool path")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_tool_error(traj, verification, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for name, sim in _cases(verification):
        err = 1000 * np.linalg.norm(sim.y - traj.y_ref, axis=1)
        ax.semilogy(sim.t, np.maximum(err, 1e-9), label=name)
    ax.set(xlabel="t [s]", ylabel="tool error [mm]", title="Tool-path error in verification")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _cases(verification):
    if verification is None:
        return []
    wanted = ("feedforward_pd", "feedforward_open_loop", "rigid_feedforward_pd", "pd_only")
    return [(n, verification.simulations[n]) for n in wanted if n in verification.simulations]


def write_plots(traj, verification, out: Path) -> list[str]:
    plot_torques(traj, out / "torques.png")
    names = ["torques.png"]
    if verification is not None:
        plot_tool_path(traj, verification, out / "tool_path.png")
        plot_tool_error(traj, verification, out / "tool_error.png")
        names += ["tool_path.png", "tool_error.png"]
    return names
