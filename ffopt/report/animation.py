"""``ffopt animate DIR``: an animated GIF of the arm moving along the path, the reference drawn.

The arm is drawn from the saved link-side joint angles (trajectory.csv, ``q_<joint>``: the elastic
deflections included) through the rigid kinematics of the problem's chain: the base, every joint
and the tool point. The robot comes from the plan folder's problem.toml (the exact problem
planned, written by ``ffopt plan``), else from the problem file summary.json names, else from
``--problem FILE``. The reference is the dashed black path (for tool coordinates the path does not
control: the planned tool path), the planned tool path so far a thin line. A planar arm is shown in
its plane; an arm that leaves every coordinate plane in three views (x-y, x-z, y-z). Frames are
written with matplotlib's animation writer for Pillow (PillowWriter).
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.saved import SavedPlan, load_plan

ANIMATION = "animation.gif"
AXES = "xyz"
GIF_SECONDS = 5.0  # default playback length: the whole plan slowed down (never sped up) to last about this


def write_animation(folder: str | Path, problem: str | Path | None = None, fps: int = 20, speed: float | None = None,
                    dpi: int = 80, progress=None) -> Path:
    """Write animation.gif into the plan folder (added to the files ffopt wrote there); returns its path.
    progress: called with a line at most every second while frames are drawn."""
    from ffopt.io.results import write_result_folder

    plan = load_plan(folder)
    chain = plan.problem(problem).chain
    write_result_folder(plan.folder, lambda tmp: render_gif(plan, chain, tmp / ANIMATION, fps, speed, dpi, progress),
                        add=True, command="animate")
    return Path(folder).absolute() / ANIMATION


def arm_points(chain, q: np.ndarray) -> np.ndarray:
    """(n_frames, n_joints + 2, 3): base, every joint origin, tool point, for joint angles q (n_frames, n)."""
    import casadi as ca

    from ffopt.models.rigid_body import body_poses

    qs = ca.SX.sym("q", chain.n_joints)
    poses = body_poses(chain, qs)
    R, p = poses[-1]
    points = [ca.SX.zeros(3, 1), *(pi for _, pi in poses), p + R @ ca.DM(chain.tool_origin)]
    f = ca.Function("arm_points", [qs], [ca.horzcat(*points)])
    n = len(points)
    out = np.array(f.map(q.shape[0])(q.T))  # 3 x (n_frames * n), frame-major
    return out.reshape(3, q.shape[0], n).transpose(1, 2, 0)


def joint_angles(plan: SavedPlan, chain) -> np.ndarray:
    """The saved link-side angle of every joint of the chain, (n_samples, n_joints)."""
    names = [j.name for j in chain.joints]
    if plan.link_joints != names:
        raise ProblemError(f"{plan.folder}: the plan's joints ({', '.join(plan.link_joints)}, the q_<joint> columns "
                           f"of trajectory.csv) are not the robot's ({', '.join(names)}): is it the problem this plan "
                           "was computed for? (--problem FILE)")
    return np.column_stack([plan.data[f"q_{n}"] for n in names])


def views(points: np.ndarray) -> list[tuple[int, int]]:
    """The plane the arm moves in, or x-y, x-z and y-z if it leaves every coordinate plane."""
    span = points.reshape(-1, 3).max(axis=0) - points.reshape(-1, 3).min(axis=0)
    flat = [i for i in range(3) if span[i] <= max(1e-6 * span.max(), 1e-12)]
    if not flat:
        return [(0, 1), (0, 2), (1, 2)]
    a, b = [i for i in range(3) if i != flat[0]]
    return [(a, b)]


def render_gif(plan: SavedPlan, chain, path: Path, fps: int = 20, speed: float | None = None, dpi: int = 80,
               progress=None) -> None:
    from matplotlib.animation import PillowWriter
    from matplotlib.figure import Figure  # not pyplot: no backend or window, whatever a notebook uses

    from ffopt.io.plots import REFERENCE_STYLE

    data = plan.data
    t = data["t"]
    span = float(t[-1] - t[0])
    speed = speed or min(1.0, span / GIF_SECONDS)
    n_frames = max(2, int(math.ceil(span / speed * fps)) + 1)
    t_frames = np.linspace(t[0], t[-1], n_frames)
    q = joint_angles(plan, chain)
    q_frames = np.column_stack([np.interp(t_frames, t, q[:, j]) for j in range(q.shape[1])])
    pts = 1000.0 * arm_points(chain, q_frames)  # mm
    tool = np.column_stack([data[f"tool_{c}_mm"] for c in AXES])
    ref = np.column_stack([data.get(f"ref_{c}_mm", tool[:, i]) for i, c in enumerate(AXES)])
    ends = np.searchsorted(t, t_frames, side="right")  # the planned tool path so far, at full resolution
    pairs = views(pts)

    fig = Figure(figsize=(5.5 * len(pairs), 5))
    axs = fig.subplots(1, len(pairs), squeeze=False)
    arms, traces = [], []
    everything = np.vstack([pts.reshape(-1, 3), ref])
    for ax, (a, b) in zip(axs[0], pairs):
        ax.plot(ref[:, a], ref[:, b], label="reference", **REFERENCE_STYLE)
        traces.append(ax.plot([], [], color="tab:orange", lw=1.5, label="planned tool path")[0])
        arms.append(ax.plot([], [], "o-", color="tab:blue", lw=4, ms=7, mfc="white", label="arm")[0])
        ax.plot([0], [0], "ks", ms=9)
        lo, hi = everything[:, [a, b]].min(axis=0), everything[:, [a, b]].max(axis=0)
        pad = 0.08 * max(hi - lo)
        ax.set(xlim=(lo[0] - pad, hi[0] + pad), ylim=(lo[1] - pad, hi[1] + pad),
               xlabel=f"{AXES[a]} [mm]", ylabel=f"{AXES[b]} [mm]")
        ax.set_aspect("equal")
        ax.grid(True, alpha=0.3)
    axs[0][0].legend(fontsize=8, loc="best")
    title = fig.suptitle("")
    name = plan.summary["problem"].get("name", "")

    fig.tight_layout()
    writer = PillowWriter(fps=fps)  # one draw per frame (FuncAnimation would draw each frame twice more)
    last = time.perf_counter()
    with writer.saving(fig, str(path), dpi):
        for k in range(n_frames):
            if progress is not None and time.perf_counter() - last >= 1.0:
                last = time.perf_counter()
                progress(f"animation: frame {k + 1} of {n_frames}")
            for line, trace, (a, b) in zip(arms, traces, pairs):
                line.set_data(pts[k, :, a], pts[k, :, b])
                trace.set_data(tool[: ends[k], a], tool[: ends[k], b])
            title.set_text(f"{name}: t = {t_frames[k]:.3f} s (playback x{speed:.3g})")
            writer.grab_frame()
