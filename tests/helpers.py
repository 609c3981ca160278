"""Test helpers: problem dicts back to TOML text, and snapshots of a folder (to show nothing was touched)."""

import hashlib
import json
from pathlib import Path


def snapshot(folder: Path) -> dict:
    """Every entry below ``folder``: kind, content hash and modification time."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = ("dir", None) if p.is_dir() else ("file", hashlib.sha256(p.read_bytes()).hexdigest(),
                                                      p.stat().st_mtime_ns)
    return out


def toml_text(data: dict) -> str:
    """Minimal TOML writer for the problem dicts used here (tables, arrays of tables, scalars, lists)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)

    lines = []

    def table(prefix, d):
        scalars = {k: v for k, v in d.items() if not isinstance(v, dict) and not is_table_list(v)}
        if prefix:
            lines.append(f"[{prefix}]")
        lines.extend(f"{k} = {value(v)}" for k, v in scalars.items())
        for k, v in d.items():
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                table(name, v)
            elif is_table_list(v):
                for item in v:
                    lines.append(f"[[{name}]]")
                    lines.extend(f"{kk} = {value(vv)}" for kk, vv in item.items())

    table("", data)
    return "\n".join(lines) + "\n"


def is_table_list(v):
    return isinstance(v, list) and v and all(isinstance(x, dict) for x in v)


def assert_structured_derivatives_match_ad(nlp, seed: int) -> None:
    """The interval-wise Jacobian and lower-triangle Lagrangian Hessian of ``nlp`` (cyipopt backend) equal
    CasADi's AD of the whole NLP at a random point and random multipliers."""
    import casadi as ca
    import numpy as np
    import pytest
    import scipy.sparse

    der = nlp.info["derivatives"]()
    rng = np.random.default_rng(seed)
    w = nlp.w0 + 0.1 * rng.standard_normal(nlp.w0.size)
    lam, sigma = rng.standard_normal(nlp.n_constraints), 0.7
    n = nlp.n_variables
    J = scipy.sparse.csc_matrix((der.jacobian_values(w), (der.jac.rows, der.jac.cols)), (nlp.n_constraints, n))
    J_ad = ca.Function("J", [nlp.w], [ca.jacobian(nlp.g, nlp.w)])(w).sparse()
    assert abs(J - J_ad).max() <= 1e-12 * abs(J_ad).max()
    H = scipy.sparse.csc_matrix((der.hessian_values(w, lam, sigma), (der.hess.rows, der.hess.cols)), (n, n))
    assert np.all(der.hess.rows >= der.hess.cols)  # lower triangle, as IPOPT expects
    lag = sigma * nlp.f + ca.dot(ca.DM(lam), nlp.g)
    H_ad = ca.Function("H", [nlp.w], [ca.tril(ca.hessian(lag, nlp.w)[0])])(w).sparse()
    assert abs(H - H_ad).max() <= 1e-10 * abs(H_ad).max()
    f, grad, g = (np.array(ca.Function("v", [nlp.w], [e])(w)).ravel() for e in (nlp.f, ca.gradient(nlp.f, nlp.w), nlp.g))
    assert der.objective(w) == pytest.approx(float(f[0]), rel=1e-12)
    assert np.abs(der.gradient(w) - grad).max() <= 1e-12 * np.abs(grad).max()
    assert np.abs(der.constraints(w) - g).max() <= 1e-12 * np.abs(g).max()


def c_compiler_or_skip() -> str:
    """Path of the C compiler that ffopt's compiled BDF uses ($CC, default gcc: ffopt.dae.bdf._compiler);
    the calling test is skipped only if that compiler is not on PATH. With a compiler there, a failed
    compile is a failure of the test (run the solve with RuntimeWarnings as errors: the fallback to
    CasADi's virtual machine warns)."""
    import shutil

    import pytest

    from ffopt.dae import bdf

    cc = shutil.which(bdf._compiler())
    if cc is None:
        pytest.skip(f"no C compiler {bdf._compiler()!r} on PATH ($CC)")
    return cc


def sample_at(ts, Q, times):
    """Rows of Q (one per time in ts, e.g. a second simulator's steps) at the given times, linear between
    them (O(dt^2) between steps; exact where the times fall on steps)."""
    import numpy as np

    return np.column_stack([np.interp(times, ts, c) for c in Q.T])


# Shipped problems whose file plans another move than the paper they come from, and the paper's move. The tests
# of the NLP's mechanics were measured on it. e1_complete.toml moves in 0.3 s so that it can end at rest (no
# monotone time law of Moberg & Hanssen's 0.1 s move does).
PAPER_MOVES = {"e1_complete.toml": {"reference.duration": 0.1}}


def paper_problem(path):
    """The shipped problem at ``path`` with its paper's move (``PAPER_MOVES``), else as the file has it."""
    from ffopt.io.problem import load_problem

    problem = load_problem(path)
    return problem.with_values(PAPER_MOVES[Path(path).name]) if Path(path).name in PAPER_MOVES else problem
