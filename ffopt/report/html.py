"""``ffopt report DIR``: one self-contained HTML page for a saved plan.

The page holds the problem (and the exact problem file planned, problem.toml), the settings, the
solver statistics, the wall time per stage, the peak torques, the verification table and every plot
of the folder embedded as a data URI (no file beside it is needed to view it). A plan saved without
plots (``--no-plots``, sweep runs) gets its torque plot drawn from trajectory.csv.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from types import SimpleNamespace

import jinja2
import markupsafe
import numpy as np

from ffopt._version import __version__
from ffopt.io.saved import SavedPlan, load_plan

REPORT = "report.html"

TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="ffopt report {{ version }}">
<title>{{ p.problem.name }}: feedforward plan</title>
<style>
body { font-family: system-ui, sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.92em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f4f4f4; } pre { background: #f8f8f8; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
img { max-width: 100%; display: block; margin: 0.8em 0; } .note { color: #666; font-size: 0.9em; }
</style></head><body>
<h1>{{ p.problem.name }}</h1>
<p>{{ p.problem.description }}</p>
<p class="note">Plan folder {{ folder }}; method <b>{{ p.method }}</b>; outputs {{ p.problem.outputs | join(", ") }};
{{ "%.4g" | format(p.problem.t_end_s) }} s planned. Problem file: {{ p.problem.source }}.</p>

<h2>Verdict</h2>
<p><b>{{ verdict.status }}</b>{% if verdict.line %}: {{ verdict.line }}{% endif %}</p>
{% if verdict.after %}<p class="note">{{ verdict.after }}</p>{% endif %}
{% if verdict.rest %}<p class="note">{{ verdict.rest }}</p>{% endif %}

<h2>Method: why this one</h2>
<p>{{ choice.text }}</p>
{% if choice.zeros %}<p class="note">Zero dynamics along the path: {{ choice.zeros }}</p>{% endif %}
{% if choice.rest %}<p class="note">{{ choice.rest }}</p>{% endif %}

<h2>Verification: tool-path error by forward simulation</h2>
{% if verification is none %}<p>Not verified (planned with --no-verify).</p>{% else %}
<table><tr><th>case</th>{% for c in verification.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for case, row in verification.rows %}<tr><td>{{ case }}</td>{% for cell, num in row %}<td{% if num %} class="num"{% endif %}>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% for name, why in verification.skipped.items() %}<p class="note">{{ name }} skipped: {{ why }}</p>{% endfor %}
<p class="note">Errors in mm during the move (angle outputs in mrad); residual_mm: the largest tool error in the
settle window after the table, with the controller holding the final pose; settling_time_s: until the tool stays within
the tolerance (empty: not within the window); settled_cycle_s: from the motion's start until the tool stays within the
tolerance of the end pose for good (the move itself for a plan that lands at rest); integrator CVODES, rtol {{ p.verification.rtol }};
motor PD gains: {{ pd_gains }}.</p>{% endif %}

<h2>Plots</h2>
{% for name, uri in plots %}<figure><img alt="{{ name }}" src="{{ uri }}"><figcaption class="note">{{ name }}</figcaption></figure>
{% endfor %}{% if drawn %}<p class="note">This plan was saved without plots; the torques are drawn from trajectory.csv
(the verification plots need the simulations: plan without --no-plots).</p>{% endif %}

<h2>Peak torques</h2>
<table><tr>{% for j, x in peaks %}<th>u_{{ j }} [N m]</th>{% endfor %}</tr>
<tr>{% for j, x in peaks %}<td class="num">{{ x }}</td>{% endfor %}</tr></table>

<h2>Settings</h2>{{ table(settings) }}
<h2>Solver statistics</h2>{{ table(solver) }}
<h2>Wall time per stage [s]</h2>{{ table(timings) }}
<h2>Problem file as planned</h2>
{% if problem_text %}<pre>{{ problem_text }}</pre>{% else %}<p>No problem.toml in the folder.</p>{% endif %}
<details><summary>trajectory.csv columns</summary>
<table><tr><th>column</th><th>unit</th><th>meaning</th></tr>
{% for c in p.columns %}<tr><td>{{ c.name }}</td><td>{{ c.unit }}</td><td>{{ c.meaning }}</td></tr>{% endfor %}</table>
</details>
<h2>Versions</h2>{{ table(p.versions) }}
</body></html>
"""


def write_report(folder: str | Path) -> Path:
    """Write report.html into the plan folder (added to the files ffopt wrote there); returns its path."""
    from ffopt.io.results import write_result_folder

    plan = load_plan(folder)
    page = render(plan)
    write_result_folder(plan.folder, lambda tmp: (tmp / REPORT).write_text(page, encoding="utf-8"), add=True,
                        command="report")
    return Path(folder).absolute() / REPORT


def render(plan: SavedPlan) -> str:
    s = plan.summary
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.globals["table"] = lambda d: markupsafe.Markup(_table(d))  # _table escapes every cell
    plots, drawn = _plots(plan)
    return env.from_string(TEMPLATE).render(
        p=s, version=__version__, folder=str(plan.folder.absolute()), plots=plots, drawn=drawn,
        verification=_verification(plan), verdict=_verdict(s), choice=_choice(s), settings=_flat(s.get("settings", {})), solver=_flat(s.get("solver", {})),
        timings=s.get("wall_time_s", {}), peaks=[(j, _fmt(x)) for j, x in zip(plan.actuated_joints,
                                                                              s.get("peak_torque_Nm", []))],
        pd_gains=", ".join(f"{k} {_fmt(v)}" for k, v in ((s.get("verification") or {}).get("pd_gains") or {}).items()),
        problem_text=(plan.folder / "problem.toml").read_text() if (plan.folder / "problem.toml").is_file() else "")


def _verdict(s: dict) -> SimpleNamespace:
    """The plan's status, the first miss, the settle window and the plan's end state, as sentences."""
    from ffopt.models.equilibrium import not_at_rest_text

    ver = s.get("verification") or {}
    verdict = ver.get("verdict") or {}
    misses = verdict.get("misses") or []
    line = ""
    if misses:
        m = misses[0]
        line = (f"{m['case']} {m['phase']}: {_fmt(m['error'])} {m['unit']} at t = {_fmt(m['t_s'])} s > "
                f"{_fmt(m['tolerance'])} {m['unit']}; likely cause: {m['cause']}")
    elif verdict:
        line = f"{verdict['judged_case']} within {_fmt(verdict['tolerance_mm'])} mm during the move and after the table"
    settle = ver.get("settle") or {}
    after = (f"After the table: {_fmt(settle['window_s'])} s with the controller holding the final pose "
             f"({settle.get('settle_s_source', '')}).") if settle else ""
    end = ver.get("plan_end_state")
    rest = "" if not end else ("The plan ends at rest." if end.get("at_rest") else _capitalised(not_at_rest_text(end)))
    return SimpleNamespace(status=s.get("status", "not_verified"), line=line, after=after, rest=rest)


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def _choice(s: dict) -> SimpleNamespace:
    """Why the method ran (method auto's reason and the zeros) and what the rest-to-rest step did."""
    c = s.get("method_choice") or {}
    text = f"{c.get('chosen', s.get('method'))}: {c.get('reason', 'set by the user')}"
    zd = c.get("zero_dynamics") or {}
    zeros = ", ".join(f"{k} {_fmt(v)}" for k, v in zd.items() if not isinstance(v, (dict, list))) if zd else ""
    r = c.get("rest_to_rest") or {}
    rest = ""
    if r:
        rest = ("Rest to rest: the exact plan ended moving; the time law was shaped "
                f"({_fmt(r.get('time_law_shape', []))}), peak input {_fmt(r['trade_off']['peak_input_exact'])} -> "
                f"{_fmt(r['trade_off']['peak_input_rest_to_rest'])}." if r.get("shaped") else
                f"Rest to rest: not shaped: {r.get('reason', '')}")
    return SimpleNamespace(text=text, zeros=zeros, rest=rest)


def _verification(plan: SavedPlan):
    df = plan.verification_dataframe()
    if df is None:
        return None
    columns = [c for c in df.columns]
    rows = [(case, [(_fmt(v), isinstance(v, (int, float))) for v in row]) for case, row in
            zip(df.index, df.itertuples(index=False))]
    return SimpleNamespace(columns=columns, rows=rows, skipped=df.attrs.get("skipped", {}))


def _plots(plan: SavedPlan) -> tuple[list[tuple[str, str]], bool]:
    pngs = [name for name in plan.files if name.endswith(".png") and (plan.folder / name).is_file()]
    monte = _monte_carlo_png(plan.summary.get("monte_carlo"))
    if pngs:
        return [(name, _data_uri((plan.folder / name).read_bytes())) for name in pngs] + monte, False
    return [("torques (from trajectory.csv)", _data_uri(_torque_png(plan)))] + monte, True


def _monte_carlo_png(summary: dict | None) -> list[tuple[str, str]]:
    """A histogram of the residual after the table over the plants of the [uncertainty] ranges, the tolerance
    marked (none without a Monte Carlo)."""
    if not summary or not summary.get("per_plant"):
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    residual = [r["residual_mm"] for r in summary["per_plant"]]
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    ax.hist(residual, bins=min(30, max(5, len(residual) // 3)), color="tab:blue")
    ax.axvline(summary["tolerance_mm"], color="tab:red", linestyle="--", label=f"tolerance {summary['tolerance_mm']:.3g} mm")
    ax.set_xlabel("residual after the table [mm]")
    ax.set_ylabel("plants")
    ax.set_title(f"{len(residual)} plants of the uncertainty ranges")
    ax.legend()
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return [("Monte Carlo: residual after the table over the uncertainty ranges", _data_uri(buf.getvalue()))]


def _torque_png(plan: SavedPlan) -> bytes:
    from ffopt.io.plots import torque_figure

    data = plan.data
    joints = plan.actuated_joints
    traj = SimpleNamespace(t=data["t"], u=np.column_stack([data[f"u_{j}"] for j in joints]), actuated_joints=joints,
                           method=plan.summary.get("method", ""))
    fig = torque_figure(traj, plan.summary.get("solver", {}).get("torque_max_Nm"))
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buf.getvalue()


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return str(v)


def _table(d: dict) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_fmt(v))}</td></tr>" for k, v in d.items())
    return f"<table>{rows}</table>"
