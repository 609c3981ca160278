"""The inverse-dynamics DAE F(t, x, xdot) = 0 in the three forms of Moberg & Hanssen, inverse
dynamics of flexible manipulators (DAE methods), sec. 7.4.

Unknowns x = [q; v] with q = [qa; qm] (plus, for I1, dummy accelerations w). The motor torque
balance (1f) and the rows of rigidly actuated joints are removed: they contain u, which is
recovered afterwards from the solution (Moberg & Hanssen, sec. 5).

- I3: the original DAE (eq. 32): kinematic rows dq - v, the link rows without u, and the path
  constraint Gamma(qa) - theta(t) = 0. Differential index 3 for E12, 2 for E1.
- I2: once-differentiated (eq. 33): the kinematic rows of the dummy set S (actuated link
  joints by default) are removed, q_S becomes algebraic, and the velocity constraint
  J(qa) va - theta_dot = 0 is added.
- I1: twice-differentiated (eq. 34): also the accelerations of S are replaced by dummy
  variables w (X^_4 in the paper) and the acceleration constraint is added.

The constraint rows are scaled by (1/h)^p (Moberg & Hanssen, sec. 7.4) in the BDF solver; the form
records which rows are constraints so the solver can do that.

DC-motor electrics (``model.drives``, Jankowski & Van Brussel eq. 3): the armature currents z are
further unknowns, last in x, with one drive row per actuated joint, tau(q, v, a) = i_j C_t z_j (the
motor rows, or a direct drive's link row, solved for the input torque). The voltage is then
recovered from the circuit, V = L dz/dt + R z + C_v i_j vm, with the BDF derivative of z: it
needs one more derivative of the path than the torque (the index of every form rises by one).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import casadi as ca
import numpy as np

from ffopt.cache import per_model
from ffopt.errors import ProblemError
from ffopt.models.flexible import FlexibleModel

FORMS = ("I3", "I2", "I1")
# Default scaling power p of the constraint rows, tuned on E1/E12 (see results/).
DEFAULT_SCALING_POWER = {"I3": 2.0, "I2": 1.0, "I1": 0.0}


@dataclass
class InverseDae:
    form: str
    F: ca.Function | None  # (t, x, xdot) -> residual, len(x) rows (the reference built in)
    n_x: int
    nq: int
    dummy: tuple[int, ...]  # link indices S whose derivatives became dummies
    constraint_rows: np.ndarray  # bool mask of the algebraic (path-constraint) rows
    accel: ca.Function  # (x, xdot) -> a (nq): accelerations for recovering u
    variable_names: list[str]
    # The same residual with the path as data: (t, x, xdot, r) -> residual, r = [theta; theta'; ...]
    # (derivatives 0..n_path_derivs-1 of the reference at t). It does not depend on the reference,
    # so compiled code built from it serves every path of the model.
    F_path: ca.Function | None = None
    n_path_derivs: int = 0
    # (x, xdot) -> (u, tau): the input (torque, or with electrics the armature voltage) and the torques
    # at the gear outputs, recovered from the solution
    inputs: ca.Function | None = None
    n_z: int = 0  # drive states (armature currents), the last n_z entries of x
    rest_drive_states: ca.Function | None = None  # q -> z at rest (the holding currents)

    def path_data(self, reference, t) -> np.ndarray:
        """Rows r(t_i) = [theta; theta'; ...](t_i) (len(t), n_out * n_path_derivs), the input r of F_path.

        One Function for all the derivatives (they share subexpressions), mapped over the grid; the
        values are those of ``reference.evaluate(t, k)``, and are kept per reference and grid (a
        sweep over model parameters on one path evaluates the path once)."""
        t = np.ascontiguousarray(t, dtype=float).ravel()
        if hasattr(reference, "path_rows"):  # a path retimed numerically (``ffopt.reference.retimed``)
            return reference.path_rows(t, self.n_path_derivs)
        grid = hashlib.sha256(t.tobytes()).hexdigest()

        def evaluate():
            values = np.array(_path_function(reference, self.n_path_derivs).map(t.size)(t[None, :])).T
            values.flags.writeable = False  # shared between calls
            return values

        return per_model(reference, ("path_data", self.n_path_derivs, grid), evaluate)

    def row_scale(self, h: float, p: float | None = None) -> np.ndarray:
        p = DEFAULT_SCALING_POWER[self.form] if p is None else p
        return np.where(self.constraint_rows, (1.0 / h) ** p, 1.0)

    def initial_state(self, q0: np.ndarray) -> np.ndarray:
        """Consistent initial x for a robot at rest in configuration q0 (drive currents holding it)."""
        x0 = np.concatenate([q0, np.zeros(self.n_x - self.nq)])
        if self.n_z:
            x0[-self.n_z:] = np.array(self.rest_drive_states(q0)).ravel()
        return x0


def choose_dummy_set(model: FlexibleModel, qa0: np.ndarray) -> tuple[int, ...]:
    """Link coordinates whose derivatives become dummy derivatives (Mattsson-Soderlind).

    The actuated link joints by default (Moberg & Hanssen's choice, sec. 5.2.3); if the output
    Jacobian restricted to them is singular at the start, pick the best-conditioned columns
    by QR with column pivoting instead.
    """
    J = np.array(per_model(model, "output_jacobian", lambda: _output_jacobian(model))(qa0))
    S = list(model.layout.actuated)
    if np.linalg.svd(J[:, S], compute_uv=False).min() > 1e-6 * max(1.0, np.abs(J).max()):
        return tuple(S)
    import scipy.linalg

    _, _, piv = scipy.linalg.qr(J, pivoting=True)
    return tuple(sorted(int(i) for i in piv[: model.layout.n_u]))


def _path_function(reference, n_derivs: int) -> ca.Function:
    """t -> [theta; theta'; ...] (derivatives 0..n_derivs-1 of the reference) in one Function."""
    return ca.Function("path_data", [reference.t], [ca.vertcat(*(reference.symbolic(k) for k in range(n_derivs)))])


def _output_jacobian(model: FlexibleModel) -> ca.Function:
    qa = model.q[: model.layout.n_link]
    return ca.Function("J", [qa], [ca.jacobian(model.output(qa), qa)])


def build_inverse_dae(model: FlexibleModel, reference, form: str = "I3",
                      dummy: tuple[int, ...] | None = None) -> InverseDae:
    """The DAE of ``form``: F (t, x, xdot) with the reference's path built in (None if reference is
    None) and F_path (t, x, xdot, r) with the path and its derivatives as the input r."""
    if form not in FORMS:
        raise ProblemError(f"solver.form: must be one of {', '.join(FORMS)}; got {form!r}")
    L = model.layout
    nq, n_link, N = L.nq, L.n_link, L.n_u
    S = list(dummy if dummy is not None else L.actuated)
    n_w = N if form == "I1" else 0
    n_z = model.n_z
    t = ca.SX.sym("t")
    x = ca.SX.sym("x", 2 * nq + n_w + n_z)
    xd = ca.SX.sym("xdot", 2 * nq + n_w + n_z)
    q, v, w, z = x[:nq], x[nq:2 * nq], x[2 * nq:2 * nq + n_w], x[2 * nq + n_w:]
    qa, va = q[:n_link], v[:n_link]
    a = _accelerations(xd[nq:2 * nq], w, S, form)

    kin_keep = [i for i in range(nq) if form == "I3" or i not in S]
    rows = [xd[kin_keep] - v[kin_keep] if kin_keep else ca.SX(0, 1), model.unactuated_link_rows(q, v, a)]
    tau = model.input_torque(q, v, a)
    if n_z:  # drive rows: the currents deliver the torques of the motor equations
        rows.append(tau - model.drives.torque(z))
    n_diff = len(kin_keep) + len(L.unactuated_link_rows) + n_z
    y = model.output(qa)
    outputs = [y]  # the output and, for I2/I1, its first and second time derivatives
    if form in ("I2", "I1"):
        Jy = ca.jacobian(y, qa)
        outputs.append(Jy @ va)
    if form == "I1":
        outputs.append(ca.jacobian(outputs[1], qa) @ va + Jy @ a[:n_link])
    n_out = y.numel()
    r = ca.SX.sym("r", n_out * len(outputs))
    res_path = ca.vertcat(*rows, *(yk - r[k * n_out:(k + 1) * n_out] for k, yk in enumerate(outputs)))
    assert res_path.shape[0] == x.shape[0], (res_path.shape, x.shape)
    constraint = np.arange(res_path.shape[0]) >= n_diff
    F_path = ca.Function(f"inverse_dae_{form}_path", [t, x, xd, r], [res_path], ["t", "x", "xdot", "r"], ["res"])
    F = None
    if reference is not None:
        res = ca.vertcat(*rows, *(yk - reference.expression(t, k) for k, yk in enumerate(outputs)))
        F = ca.Function(f"inverse_dae_{form}", [t, x, xd], [res], ["t", "x", "xdot"], ["res"])
    accel = ca.Function("accel", [x, xd], [a], ["x", "xdot"], ["a"])
    names = model.coordinate_names()
    var_names = names + [f"d{n}" for n in names] + [f"dd{names[i]}_dummy" for i in S[:n_w]] + \
        model.drive_state_names()
    inputs, rest = _input_recovery(model, x, xd, q, v, z, tau)
    return InverseDae(form, F, x.shape[0], nq, tuple(S), constraint, accel, var_names, F_path, len(outputs),
                      inputs, n_z, rest)


def _input_recovery(model: FlexibleModel, x, xd, q, v, z, tau):
    """(x, xdot) -> (u, tau) and, with electrics, q -> z at rest."""
    if not model.n_z:
        return ca.Function("inputs", [x, xd], [tau, tau], ["x", "xdot"], ["u", "tau"]), None
    d, n_z = model.drives, model.n_z
    vm = v[model.layout.motor_of_input]
    voltage = d.voltage(vm, z, xd[x.numel() - n_z:])
    inputs = ca.Function("inputs", [x, xd], [voltage, d.torque(z)], ["x", "xdot"], ["u", "tau"])
    zero = ca.SX.zeros(model.layout.nq)
    rest = ca.Function("rest_currents", [model.q], [d.current_for_torque(model.input_torque(model.q, zero, zero))])
    return inputs, rest


def _accelerations(vdot, w, S, form):
    """a = dv/dt, with the dummy accelerations w in place of dv_S/dt in the I1 form."""
    if form != "I1":
        return vdot
    a = ca.SX(vdot)
    for j, i in enumerate(S):
        a[i] = w[j]
    return a
