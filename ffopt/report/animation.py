"""``ffopt animate DIR``: an animated GIF of the arm moving along the path, the reference drawn.

The arm is drawn from the saved link-side joint angles (trajectory.csv, ``q_<joint>``: the elastic
deflections included) through the rigid kinematics of the problem's chain: the base, the origin of
every joint frame (for a URDF arm: every moving link's frame, fixed joints merged into their parent)
and the tool point. ``exaggerate`` (``--exaggerate F``) draws the elastic deflection F times larger:
the drawn angle of an elastic gear is qm + F (q - qm) (motor angle plus F times the gear's
deflection), of a passive joint F q (its deflection from its rest angle 0); direct drives and locked
joints are drawn as planned. The robot comes from the plan folder's problem.toml (the exact problem
planned, written by ``ffopt plan``), else from the problem file summary.json names, else from
``--problem FILE``. The reference is the dashed black path (for tool coordinates the path does not
control: the planned tool path), the planned tool path so far a thin line. A planar arm is shown in
its plane; an arm that leaves every coordinate plane in three views (x-y, x-z, y-z). The static
parts are drawn once and each frame only redraws the arm, the trace and the title (Agg blitting);
each frame is reduced to the first frame's palette as it is drawn, so writing the GIF (Pillow) at
the end is quick. Progress: a line per stage and at most every second while frames are drawn.
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
PROGRESS_EVERY_S = 1.0


def write_animation(folder: str | Path, problem: str | Path | None = None, fps: int = 20, speed: float | None = None,
                    dpi: int = 80, progress=None, exaggerate: float = 1.0) -> Path:
    """Write animation.gif into the plan folder (added to the files ffopt wrote there); returns its path.
    exaggerate: the factor the elastic deflections are drawn with (1: as planned).
    progress: called with a line per stage and at most every second while frames are drawn."""
    from ffopt.io.results import write_result_folder

    say = progress or (lambda msg: None)
    plan = load_plan(folder)
    say("reading the robot of the plan")
    chain = plan.problem(problem).chain
    write_result_folder(plan.folder, lambda tmp: render_gif(plan, chain, tmp / ANIMATION, fps, speed, dpi, progress,
                                                            exaggerate),
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


def drawn_angles(plan: SavedPlan, chain, exaggerate: float = 1.0) -> np.ndarray:
    """The link angles to draw, (n_samples, n_joints): the elastic deflections ``exaggerate`` times the planned
    ones, qm + F (q - qm) for an elastic gear (qm: its arm-side motor angle, column qm_<joint>), F q for a
    passive joint (rest angle 0); other joints as planned."""
    q = joint_angles(plan, chain)
    if exaggerate == 1.0:
        return q
    drawn = q.copy()
    for i, joint in enumerate(chain.joints):
        if joint.kind == "elastic_gear":
            qm = plan.data[f"qm_{joint.name}"]
            drawn[:, i] = qm + exaggerate * (q[:, i] - qm)
        elif joint.kind == "passive":
            drawn[:, i] = exaggerate * q[:, i]
    return drawn


def views(points: np.ndarray) -> list[tuple[int, int]]:
    """The plane the arm moves in, or x-y, x-z and y-z if it leaves every coordinate plane."""
    span = points.reshape(-1, 3).max(axis=0) - points.reshape(-1, 3).min(axis=0)
    flat = [i for i in range(3) if span[i] <= max(1e-6 * span.max(), 1e-12)]
    if not flat:
        return [(0, 1), (0, 2), (1, 2)]
    a, b = [i for i in range(3) if i != flat[0]]
    return [(a, b)]


def render_gif(plan: SavedPlan, chain, path: Path, fps: int = 20, speed: float | None = None, dpi: int = 80,
               progress=None, exaggerate: float = 1.0) -> None:
    say = progress or (lambda msg: None)
    data = plan.data
    t = data["t"]
    span = float(t[-1] - t[0])
    speed = speed or min(1.0, span / GIF_SECONDS)
    n_frames = max(2, int(math.ceil(span / speed * fps)) + 1)
    t_frames = np.linspace(t[0], t[-1], n_frames)
    say(f"animation: the arm's kinematics at {n_frames} frames"
        + ("" if exaggerate == 1.0 else f", elastic deflection drawn x{exaggerate:g}"))
    q = drawn_angles(plan, chain, exaggerate)
    q_frames = np.column_stack([np.interp(t_frames, t, q[:, j]) for j in range(q.shape[1])])
    pts = 1000.0 * arm_points(chain, q_frames)  # mm
    tool = np.column_stack([data[f"tool_{c}_mm"] for c in AXES])
    ref = np.column_stack([data.get(f"ref_{c}_mm", tool[:, i]) for i, c in enumerate(AXES)])
    ends = np.searchsorted(t, t_frames, side="right")  # the planned tool path so far, at full resolution
    pairs = views(pts)
    name = plan.summary["problem"].get("name", "")
    if exaggerate != 1.0:
        name += f" (deflection x{exaggerate:g})"

    say("animation: drawing the axes")
    canvas, fig, arms, traces, title = _figure(pts, ref, pairs, dpi)
    frames = []
    last = time.perf_counter()
    for k in range(n_frames):
        if time.perf_counter() - last >= PROGRESS_EVERY_S:
            last = time.perf_counter()
            say(f"animation: frame {k + 1} of {n_frames}")
        canvas.restore_region(fig._ffopt_background)
        for line, trace, (a, b) in zip(arms, traces, pairs):
            line.set_data(pts[k, :, a], pts[k, :, b])
            trace.set_data(tool[: ends[k], a], tool[: ends[k], b])
            line.axes.draw_artist(trace)
            line.axes.draw_artist(line)
        title.set_text(f"{name}: t = {t_frames[k]:.3f} s (playback x{speed:.3g})")
        fig.draw_artist(title)
        frames.append(_palette_image(canvas, frames[0] if frames else None))
    say(f"animation: writing {path.name} ({n_frames} frames)")
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=int(round(1000 / fps)), loop=0)


def _figure(pts, ref, pairs, dpi):
    """The figure with its static parts drawn once (the background each frame starts from) and the artists
    each frame redraws: the arm and the tool trace per view, and the title."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure  # not pyplot: no backend or window, whatever a notebook uses

    from ffopt.io.plots import REFERENCE_STYLE

    fig = Figure(figsize=(5.5 * len(pairs), 5), dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    axs = fig.subplots(1, len(pairs), squeeze=False)
    arms, traces = [], []
    everything = np.vstack([pts.reshape(-1, 3), ref])
    for ax, (a, b) in zip(axs[0], pairs):
        ax.plot(ref[:, a], ref[:, b], label="reference", **REFERENCE_STYLE)
        traces.append(ax.plot([], [], color="tab:orange", lw=1.5, label="planned tool path", animated=True)[0])
        arms.append(ax.plot([], [], "o-", color="tab:blue", lw=4, ms=7, mfc="white", label="arm", animated=True)[0])
        ax.plot([0], [0], "ks", ms=9)
        lo, hi = everything[:, [a, b]].min(axis=0), everything[:, [a, b]].max(axis=0)
        pad = 0.08 * max(hi - lo)
        ax.set(xlim=(lo[0] - pad, hi[0] + pad), ylim=(lo[1] - pad, hi[1] + pad),
               xlabel=f"{AXES[a]} [mm]", ylabel=f"{AXES[b]} [mm]")
        ax.set_aspect("equal")
        ax.grid(True, alpha=0.3)
    axs[0][0].legend(fontsize=8, loc="best")
    title = fig.suptitle(" ", animated=True)  # a placeholder keeps room for it in the layout
    fig.tight_layout()
    canvas.draw()
    fig._ffopt_background = canvas.copy_from_bbox(fig.bbox)
    return canvas, fig, arms, traces, title


def _palette_image(canvas, first):
    """The canvas as a GIF frame: the first frame gets an adaptive palette, later ones reuse it (no dithering)."""
    from PIL import Image

    rgb = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3])
    if first is None:
        return rgb.quantize(colors=255, method=Image.Quantize.MEDIANCUT)
    return rgb.quantize(palette=first, dither=Image.Dither.NONE)
