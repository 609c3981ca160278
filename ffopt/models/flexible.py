"""Extended flexible joint model as symbolic CasADi functions (Moberg & Hanssen, inverse
dynamics of flexible manipulators, eq. 1), with optional rotor gyroscopic coupling (Hoepler &
Thuemmel, symbolic inverse dynamics of elastic joint robots).

Generalised coordinates q = [qa; qm]: link-side joint angles qa (N+M, chain order) and motor
angles qm (one per elastic-gear joint, arm-side units). State x = [q; v], v = dq/dt.

Equations of motion (Moberg & Hanssen eq. 1a-1f), with a = dv/dt:
    M(qa) a_a + c(qa, va) + g(qa) + f_L(va) = tau_a + S_d (u_d - Jm_d a_a - f(va_d))   (link rows)
    tau_g = k(qm - qg) + D_g (vm - vg)      (k: the spring law, ``spring_torque``)  (1d)
    tau_e = -K_e qe - k_nl(qe) - D_e ve     (K_e, D_e block diagonal: coupled multi-axis bearings)  (1e)
    Jm a_m + f(vm) + tau_g = u_g                                                 (1f)
where S_d selects the rigidly actuated ("direct") joints: for them the motor torque acts on
the link row itself (E1's joint 1). With ``chain.rotor_coupling == "full"`` the rotor of each
actuated joint is a body spinning on the preceding link; its kinetic energy adds, besides the
rotor inertia on the carrier (inside M), the coupling
    T_x = sum_j h_j s_j' n_j . w_c(j)(qa, qa'),   h_j = J_m,j / ratio_j (= axial inertia x ratio)
(s_j the arm-side motor angle qm_j or, for a direct joint, qa_j; n_j the rotor axis and w_c(j) the
angular velocity of its carrier in the carrier's frame), whose Lagrange terms
d/dt dT_x/dq' - dT_x/dq are Hoepler & Thuemmel's S(q) q'' / S(q)^T theta'' and C_rotor / C_carrier
(their eq. 2-5). Every solver, the NLP and the simulator evaluate the same functions built here,
so a model is written once.

Drive states: with DC-motor electrics on the actuated joints (``ffopt.models.drives``) the plant
has extra first-order states z (the armature currents) and its input u is the armature voltage;
the equations above then take the torques tau = drives.torque(z) in place of u. ``n_z`` is 0
without electrics (u is the torque itself); ``plant_rhs`` is the whole plant x' = f(x, u) with
x = [q; v; z] either way.

This module builds expressions only: it imports no solver.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import casadi as ca
import numpy as np

from ffopt.models import rigid_body
from ffopt.models.chain import Chain

AXES = {"x": 0, "y": 1, "z": 2}  # tool-point coordinates (world frame, m)
# Tool-frame orientation (the frame of the last body) as Z-Y-X Tait-Bryan angles, R = Rz(yaw) Ry(pitch)
# Rx(roll), the yaw/pitch/roll (A/B/C) convention of industrial robot controllers. pitch lies in
# (-pi/2, pi/2); at +-pi/2 (gimbal lock) yaw and roll are undefined. yaw and roll are measured on
# the branch (centre - pi, centre + pi] with a centre per angle (default 0), so a path through
# roll = 180 deg stays continuous when its centre is 180 deg.
ORIENTATION = ("yaw", "pitch", "roll")
PITCH_RANGE = (-np.pi / 2, np.pi / 2)
COULOMB_SMOOTHING = 1e-3  # rad/s, default width of tanh() in the Coulomb friction model
# Up to this many coordinates the plant's accelerations are one SX expression (the mass matrix solved
# symbolically): compact and compiled to C. Its size and its Jacobian's grow like nq^3: a 3-link arm whose links
# are chains of 12 rigid segments (nq = 39) has a 10-million-instruction Jacobian, the Canadarm with 4 modes per
# link (nq = 15) 16 MB of C. Above it, the mass matrix and the bias forces stay SX and are factorised at run time
# (sparse QR in an MX expression, not compiled). The largest shipped arm, the Panda with seven elastic gears, has 14.
SYMBOLIC_SOLVE_MAX_NQ = 14


# --------------------------------------------------------------------------- spring and friction laws
# Smooth laws, since the inverse model differentiates them (the torque through an elastic gear needs
# the spring law's 2nd derivative along the path): every one is C-infinity.


def smooth_ramp(x, width: float):
    """width log(1 + exp(x / width)): max(x, 0) rounded over ``width``; above it by width log 2 at
    x = 0 and by less than width exp(-|x| / width) elsewhere; C-infinity (no overflow: exp of at most 35)."""
    z = x / width
    return width * ca.if_else(z > 35, z, ca.log1p(ca.exp(ca.fmin(z, 35))))


def spring_torque(joint, d):
    """Spring law tau(d) of a joint (deflection d, arm side; SX or DM), without damping:

        tau = k d + sum_i (k_i+1 - k_i) [r(d - delta_i) - r(-d - delta_i)] + k3 d^3 + k5 d^5 + ...

    k = ``stiffness``; the knees delta_i (``stiffness_knees``) with the slopes k_i+1 beyond them
    (``stiffness_slopes``; k_1 = k) give a backlash-free piecewise-linear law, odd in d, whose corners
    r = ``smooth_ramp`` rounds over ``knee_width`` w: it differs from the sharp law by at most
    |k_i+1 - k_i| w log 2 (at d = +-delta_i), by |k_i+1 - k_i| w exp(-|d -+ delta_i| / w) away from the
    knees. k3 = ``stiffness_cubic`` plus the odd polynomial ``stiffness_polynomial`` (d^3, d^5, ...).
    """
    tau = joint.stiffness * d
    slopes = (joint.stiffness, *joint.stiffness_slopes)
    for knee, before, after in zip(joint.stiffness_knees, slopes[:-1], slopes[1:]):
        tau += (after - before) * (smooth_ramp(d - knee, joint.knee_width) - smooth_ramp(-d - knee, joint.knee_width))
    if joint.stiffness_cubic:
        tau += joint.stiffness_cubic * d**3
    for i, c in enumerate(joint.stiffness_polynomial):
        if c:
            tau += c * d ** (2 * i + 3)
    return tau


def friction_torque(v, viscous: float, coulomb: float, smoothing: float = COULOMB_SMOOTHING,
                    stribeck: float = 0.0, stribeck_velocity: float = 0.0):
    """Smooth viscous + Coulomb (+ Stribeck) friction of a bearing turning at v:

        f = viscous v + (coulomb + stribeck exp(-(v / stribeck_velocity)^2)) tanh(v / smoothing).

    tanh reaches 0.76 of the Coulomb level at v = smoothing and 1 - 1e-8 at 10 x smoothing; at
    standstill the friction is 0 (no stiction: the inverse needs derivatives); just above
    ``smoothing`` it peaks near coulomb + stribeck (the breakaway torque) and falls to coulomb over
    ``stribeck_velocity``.
    """
    f = 0
    if viscous:
        f += viscous * v
    if coulomb or stribeck:
        level = coulomb + (stribeck * ca.exp(-(v / stribeck_velocity) ** 2) if stribeck else 0)
        f += level * ca.tanh(v / smoothing)
    return f


@dataclass(frozen=True)
class Layout:
    """Where each kind of coordinate sits in q = [qa; qm] and in u."""

    n_link: int
    gear: tuple[int, ...]  # link indices of elastic-gear joints (= motor order)
    direct: tuple[int, ...]  # link indices of rigidly actuated joints
    passive: tuple[int, ...]  # link indices of non-actuated elastic joints
    actuated: tuple[int, ...]  # link indices of all actuated joints, chain order (= u order)

    @property
    def n_motor(self) -> int:
        return len(self.gear)

    @property
    def nq(self) -> int:
        return self.n_link + self.n_motor

    @property
    def n_u(self) -> int:
        return len(self.actuated)

    @property
    def motor_of_input(self) -> list[int | None]:
        """For input j: index into q of the coordinate the motor turns (qm or the direct joint)."""
        out = []
        for link in self.actuated:
            out.append(self.n_link + self.gear.index(link) if link in self.gear else link)
        return out

    @property
    def unactuated_link_rows(self) -> list[int]:
        """Link equations that do not contain u: they stay in the inverse-dynamics DAE."""
        return [i for i in range(self.n_link) if i not in self.direct]


class FlexibleModel:
    """Symbolic model of one flexible robot: functions of (q, v, a, u) and tool outputs."""

    def __init__(self, chain: Chain, outputs: tuple[str, ...] = ("x", "y", "z"), name: str = "robot",
                 angle_centres: dict[str, float] | None = None):
        """``outputs``: tool coordinates "x", "y", "z", tool-frame angles "yaw", "pitch", "roll" (see
        ORIENTATION) and link-side joint angles by joint name, in any order. ``angle_centres``: branch
        centre (rad) of "yaw" and "roll" (default 0: the range (-pi, pi])."""
        self.chain = chain
        self.name = name
        self.outputs = tuple(outputs)
        self.angle_centres = {k: float(v) for k, v in (angle_centres or {}).items()}
        joint_names = [j.name for j in chain.joints]
        for o in self.outputs:
            if o not in AXES and o not in ORIENTATION and o not in joint_names:
                raise ValueError(f"output {o!r} is neither a tool axis {list(AXES)}, an orientation angle "
                                 f"{list(ORIENTATION)} nor a joint name {joint_names}")
        self.layout = Layout(
            n_link=chain.n_joints,
            gear=tuple(chain.indices("elastic_gear")),
            direct=tuple(chain.indices("direct")),
            passive=tuple(chain.indices("passive")),
            actuated=tuple(chain.actuated),
        )
        if len(self.outputs) != self.layout.n_u:
            raise ValueError(
                f"{len(self.outputs)} controlled outputs {self.outputs} but {self.layout.n_u} "
                "actuated joints: the inverse model needs as many outputs as inputs"
            )
        L = self.layout
        self.q = ca.SX.sym("q", L.nq)
        self.v = ca.SX.sym("v", L.nq)
        self.a = ca.SX.sym("a", L.nq)
        self.u = ca.SX.sym("u", L.n_u)
        self.drives = self._electric_drives()
        self.z = ca.SX.sym("z", self.n_z)

    # ----------------------------------------------------------------- symbolic pieces
    def _split(self, vec):
        n = self.layout.n_link
        return vec[:n], vec[n:]

    def _param(self, name: str, joints) -> np.ndarray:
        return np.array([getattr(self.chain.joints[i], name) for i in joints], dtype=float)

    def _spring_law(self, i: int):
        """The joint whose spring law (stiffness, knees, polynomial, damping) acts on link coordinate i
        (a subclass with extra elastic coordinates, e.g. beam modes, supplies theirs)."""
        return self.chain.joints[i]

    def _spring(self, defl, rate, joints):
        """spring_torque(d) + c d_dot for the given joints (elementwise)."""
        return ca.vertcat(*[spring_torque(self._spring_law(i), defl[r]) + self._spring_law(i).damping * rate[r]
                            for r, i in enumerate(joints)])

    def _nonlinear_spring(self, defl, joints):
        """spring_torque(d) - k d for the given joints: what the linear stiffness (matrix) leaves out."""
        return ca.vertcat(*[spring_torque(self._spring_law(i), defl[r]) - self._spring_law(i).stiffness * defl[r]
                            for r, i in enumerate(joints)])

    def _friction(self, rate, joints):
        """Motor-bearing friction (friction_torque) of the given joints."""
        out = []
        for r, i in enumerate(joints):
            j = self.chain.joints[i]
            out.append(friction_torque(rate[r], j.viscous_friction, j.coulomb_friction, j.coulomb_smoothing,
                                       j.stribeck_friction, j.stribeck_velocity))
        return ca.vertcat(*out)

    def _link_friction(self, va):
        """Link-bearing friction f_L(va) of every joint (zero where none is given, and on extra link
        coordinates such as beam modes)."""
        f = [friction_torque(va[i], j.link_viscous_friction, j.link_coulomb_friction, j.coulomb_smoothing)
             for i, j in enumerate(self.chain.joints)]
        return ca.vertcat(*f, ca.SX.zeros(self.layout.n_link - len(f)))

    def _elastic_link_torques(self, q, v):
        """tau_a of eq. (1b): gear torque on elastic-gear rows, -spring on passive rows."""
        L = self.layout
        qa, qm = self._split(q)
        va, vm = self._split(v)
        tau = ca.SX.zeros(L.n_link)
        if L.gear:
            g = list(L.gear)
            tau[g] = self._gear_torque_expr(q, v)
        if L.passive:
            p = list(L.passive)
            K, D = self._passive_matrices()
            tau[p] = -(ca.DM(K) @ qa[p] + self._nonlinear_spring(qa[p], p) + ca.DM(D) @ va[p])
        return tau

    def _passive_matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Stiffness and damping matrices over the passive joints (chain order): the joints' own
        values on the diagonal, each spring group's matrices in its block."""
        p = list(self.layout.passive)
        K, D = np.diag(self._param("stiffness", p)), np.diag(self._param("damping", p))
        for grp in self.chain.spring_groups:
            idx = [p.index(i) for i in grp.joints]
            K[np.ix_(idx, idx)], D[np.ix_(idx, idx)] = grp.stiffness, grp.damping
        return K, D

    def _rotor_coupling_forces(self, q, v, a):
        """Lagrange terms d/dt dT_x/dv - dT_x/dq (nq) of the rotors' spin-carrier coupling T_x (see
        the module docstring); zero for the reduced (Spong) model."""
        if self.chain.rotor_coupling != "full":
            return ca.SX.zeros(self.layout.nq)
        n = self.layout.n_link
        w = rigid_body.body_angular_velocities(self.chain, q[:n], v[:n])
        s_dot = v[self.layout.motor_of_input]
        T = 0
        for j, link in enumerate(self.layout.actuated):
            if link == 0:
                continue  # the base carries the first motor: it does not rotate
            jt = self.chain.joints[link]
            h = jt.motor_inertia / jt.gear_ratio
            T += h * s_dot[j] * ca.dot(ca.DM(jt.rotor_axis_in_parent), w[link - 1])
        if isinstance(T, int):
            return ca.SX.zeros(self.layout.nq)
        dT_dv = ca.gradient(T, v)
        return ca.jtimes(dT_dv, q, v) + ca.jtimes(dT_dv, v, a) - ca.gradient(T, q)

    def _gear_torque_expr(self, q, v):
        qa, qm = self._split(q)
        va, vm = self._split(v)
        g = list(self.layout.gear)
        if not g:
            return ca.SX(0, 1)
        return self._spring(qm - qa[g], vm - va[g], g)

    def _mass_matrix_expr(self, qa):
        if self.chain.constant_inertia is not None:
            return ca.SX(ca.DM(self.chain.constant_inertia))
        return rigid_body.mass_matrix(self.chain, qa)

    def _bias_expr(self, qa, va):
        if self.chain.constant_inertia is not None:
            return ca.SX.zeros(self.layout.n_link)
        return rigid_body.bias_torques(self.chain, qa, va)

    def _link_rows_expr(self, q, v, a, u):
        """Link equations (1a)-(1b) as residuals, u acting on direct rows (with motor inertia)."""
        L = self.layout
        qa, _ = self._split(q)
        va, _ = self._split(v)
        aa, _ = self._split(a)
        res = (self._mass_matrix_expr(qa) @ aa + self._bias_expr(qa, va) - self._elastic_link_torques(q, v)
               + self._link_friction(va))
        res += self._rotor_coupling_forces(q, v, a)[: L.n_link]
        if L.direct:
            d = list(L.direct)
            u_d = u[[L.actuated.index(i) for i in d]]
            res[d] = res[d] + self._param("motor_inertia", d) * aa[d] + self._friction(va[d], d) - u_d
        return res

    def _motor_rows_expr(self, q, v, a, u):
        """Motor torque balance (1f) for elastic-gear joints."""
        L = self.layout
        g = list(L.gear)
        if not g:
            return ca.SX(0, 1)
        _, vm = self._split(v)
        _, am = self._split(a)
        u_g = u[[L.actuated.index(i) for i in g]]
        coupling = self._rotor_coupling_forces(q, v, a)[L.n_link:]
        return (self._param("motor_inertia", g) * am + self._friction(vm, g) + self._gear_torque_expr(q, v) - u_g
                + coupling)

    # ----------------------------------------------------------------- public functions
    @cached_property
    def equations_of_motion(self) -> ca.Function:
        """(q, v, a, u) -> residual (nq): link rows then motor rows; zero on a solution."""
        res = ca.vertcat(self._link_rows_expr(self.q, self.v, self.a, self.u),
                         self._motor_rows_expr(self.q, self.v, self.a, self.u))
        return ca.Function("eom", [self.q, self.v, self.a, self.u], [res], ["q", "v", "a", "u"], ["res"])

    @cached_property
    def unactuated_link_rows(self) -> ca.Function:
        """(q, v, a) -> the link equations that contain no u (the inverse DAE's dynamics)."""
        rows = self.layout.unactuated_link_rows
        zero_u = ca.SX.zeros(self.layout.n_u)
        res = self._link_rows_expr(self.q, self.v, self.a, zero_u)[rows] if rows else ca.SX(0, 1)  # [] gives 1x0
        return ca.Function("link_rows", [self.q, self.v, self.a], [res], ["q", "v", "a"], ["res"])

    @cached_property
    def input_torque(self) -> ca.Function:
        """(q, v, a) -> u: the motor torques that produce acceleration a (inverse dynamics)."""
        res = self.equations_of_motion(self.q, self.v, self.a, ca.SX.zeros(self.layout.n_u))
        u = ca.SX.zeros(self.layout.n_u)
        for j, row in enumerate(self._input_rows()):
            u[j] = res[row]
        return ca.Function("input_torque", [self.q, self.v, self.a], [u], ["q", "v", "a"], ["u"])

    def _input_rows(self) -> list[int]:
        """Row of equations_of_motion in which input j appears (with coefficient -1)."""
        L = self.layout
        return [i if i in L.direct else L.n_link + L.gear.index(i) for i in L.actuated]

    @property
    def symbolic_solve(self) -> bool:
        """Whether the plant's accelerations are solved symbolically (an SX expression; nq <= SYMBOLIC_SOLVE_MAX_NQ)
        or, for a larger model, by a sparse QR factorisation at run time (an MX expression)."""
        return self.layout.nq <= SYMBOLIC_SOLVE_MAX_NQ

    def sym(self, name: str, n: int):
        """A symbol of the type the plant's functions take: SX, or MX for a large model (``symbolic_solve``)."""
        return ca.SX.sym(name, n) if self.symbolic_solve else ca.MX.sym(name, n)

    @cached_property
    def forward_dynamics(self) -> ca.Function:
        """(q, v, u) -> a: accelerations of the plant driven by motor torques u."""
        res = self.equations_of_motion(self.q, self.v, self.a, self.u)
        A = ca.jacobian(res, self.a)  # generalised mass matrix incl. motor inertias
        b = ca.substitute(res, self.a, ca.SX.zeros(self.layout.nq))
        if self.symbolic_solve:
            acc = -ca.solve(A, b)
            return ca.Function("forward_dynamics", [self.q, self.v, self.u], [acc], ["q", "v", "u"], ["a"])
        mass_and_bias = ca.Function("mass_and_bias", [self.q, self.v, self.u], [A, b])
        q, v, u = self.sym("q", self.layout.nq), self.sym("v", self.layout.nq), self.sym("u", self.layout.n_u)
        A, b = mass_and_bias(q, v, u)
        return ca.Function("forward_dynamics", [q, v, u], [-ca.solve(A, b, "qr")], ["q", "v", "u"], ["a"])

    @cached_property
    def tool_position(self) -> ca.Function:
        """qa -> world position of the tool point (3)."""
        qa = self.q[: self.layout.n_link]
        p = rigid_body.tool_position(self.chain, qa)
        return ca.Function("tool_position", [qa], [p], ["qa"], ["p"])

    @cached_property
    def output(self) -> ca.Function:
        """qa -> controlled outputs Gamma(qa) (Moberg & Hanssen eq. 2), e.g. [x, z] or [x, y, z, yaw, pitch, roll]."""
        qa = self.q[: self.layout.n_link]
        p = rigid_body.tool_position(self.chain, qa)
        R = rigid_body.tool_rotation(self.chain, qa)
        names = [j.name for j in self.chain.joints]
        y = []
        for o in self.outputs:
            if o in AXES:
                y.append(p[AXES[o]])
            elif o in ORIENTATION:
                y.append(self._euler_angle(R, o))
            else:
                y.append(qa[names.index(o)])
        return ca.Function("output", [qa], [ca.vertcat(*y)], ["qa"], ["y"])

    def _euler_angle(self, R, which: str):
        """yaw, pitch or roll of R = Rz(yaw) Ry(pitch) Rx(roll), yaw/roll on their branch around the centre.

        With c = cos(pitch) > 0: (R10, R00) = c (sin yaw, cos yaw), (R21, R22) = c (sin roll, cos roll);
        rotating that vector by -centre before atan2 moves the branch cut to centre + pi.
        """
        if which == "pitch":
            return ca.atan2(-R[2, 0], ca.sqrt(R[2, 1] ** 2 + R[2, 2] ** 2))
        sn, cs = (R[1, 0], R[0, 0]) if which == "yaw" else (R[2, 1], R[2, 2])
        c = self.angle_centres.get(which, 0.0)
        return c + ca.atan2(sn * np.cos(c) - cs * np.sin(c), cs * np.cos(c) + sn * np.sin(c))

    @property
    def output_units(self) -> tuple[str, ...]:
        """"m" for tool coordinates, "rad" for orientation and joint angles."""
        return tuple("m" if o in AXES else "rad" for o in self.outputs)

    def output_range(self, name: str) -> tuple[float, float] | None:
        """Open interval an output can take (orientation angles), None if unbounded."""
        if name == "pitch":
            return PITCH_RANGE
        if name in ("yaw", "roll"):
            c = self.angle_centres.get(name, 0.0)
            return (c - np.pi, c + np.pi)
        return None

    @cached_property
    def gear_torque(self) -> ca.Function:
        """(q, v) -> tau_g, torque transmitted by each elastic gear (1d)."""
        return ca.Function("gear_torque", [self.q, self.v], [self._gear_torque_expr(self.q, self.v)])

    # ----------------------------------------------------------------- drive states (DC-motor electrics)
    def _electric_drives(self):
        joints = [self.chain.joints[i] for i in self.layout.actuated]
        if not any(j.electrics is not None for j in joints):
            return None
        missing = [j.name for j in joints if j.electrics is None]
        if missing:
            raise ValueError(f"DC-motor electrics on some actuated joints but not on {missing}: the input is either "
                             "every motor's voltage or every motor's torque")
        from ffopt.models.drives import ElectricDrives

        return ElectricDrives.from_joints(joints)

    @property
    def n_z(self) -> int:
        """Number of drive states (armature currents); 0 without electrics."""
        return 0 if self.drives is None else self.drives.n_states

    @property
    def input_unit(self) -> str:
        return "N m" if self.drives is None else "V"

    @property
    def input_kind(self) -> str:
        return "motor torque" if self.drives is None else "armature voltage"

    def drive_state_names(self) -> list[str]:
        return [] if self.drives is None else [f"i_{n}" for n in self.drives.names]

    def _motor_speeds(self, v):
        return v[self.layout.motor_of_input]

    def drive_torque_expr(self, z, u):
        """Torques at the gear outputs (the mechanical input of the equations of motion)."""
        return u if self.drives is None else self.drives.torque(z)

    @cached_property
    def forward_dynamics_jacobian(self) -> ca.Function:
        """(q, v, u) -> (d a/d q, d a/d v, d a/d u) of ``forward_dynamics`` (MX, for a large model): from the
        equations of motion E(q, v, a, u) = 0 at a = forward_dynamics(q, v, u), d a/d y = -M^-1 dE/dy. Each
        dE/dy is an SX Jacobian of the recursive dynamics, O(nq^2) to evaluate; differentiating the run-time
        factorisation of M instead (what CasADi's AD does) costs O(nq^3): 3x more at nq = 75."""
        L = self.layout
        res = self.equations_of_motion(self.q, self.v, self.a, self.u)
        partials = ca.Function("eom_partials", [self.q, self.v, self.a, self.u],
                               [ca.jacobian(res, self.a), ca.jacobian(res, self.q), ca.jacobian(res, self.v),
                                ca.jacobian(res, self.u)])
        q, v, u = self.sym("q", L.nq), self.sym("v", L.nq), self.sym("u", L.n_u)
        a = self.forward_dynamics(q, v, u)
        M, E_q, E_v, E_u = partials(q, v, a, u)
        d = -ca.solve(M, ca.horzcat(E_q, E_v, E_u), "qr")
        return ca.Function("forward_dynamics_jacobian", [q, v, u],
                           [d[:, :L.nq], d[:, L.nq:2 * L.nq], d[:, 2 * L.nq:]], ["q", "v", "u"], ["a_q", "a_v", "a_u"])

    @cached_property
    def plant_rhs(self) -> ca.Function:
        """(x, u) -> x' of the whole plant, x = [q; v; z] (z: drive states), u the input."""
        L = self.layout
        x, u = self.sym("x", 2 * L.nq + self.n_z), self.sym("u", L.n_u)
        q, v, z = x[:L.nq], x[L.nq:2 * L.nq], x[2 * L.nq:]
        a = self.forward_dynamics(q, v, self.drive_torque_expr(z, u))
        rates = [] if self.drives is None else [self.drives.current_rate(self._motor_speeds(v), z, u)]
        return ca.Function("plant_rhs", [x, u], [ca.vertcat(v, a, *rates)], ["x", "u"], ["xdot"])

    @cached_property
    def steady_torque(self) -> ca.Function:
        """(q, v, u) -> the torques the drives deliver in steady state (dz/dt = 0) under input u."""
        if self.drives is None:
            tau = self.u
        else:
            tau = self.drives.torque(self.drives.steady_current(self._motor_speeds(self.v), self.u))
        return ca.Function("steady_torque", [self.q, self.v, self.u], [tau], ["q", "v", "u"], ["tau"])

    @cached_property
    def input_from_torque(self) -> ca.Function:
        """(q, v, tau, tau') -> (u, z): the input and drive states that deliver torques tau with rate tau'."""
        tau, tau_rate = ca.SX.sym("tau", self.layout.n_u), ca.SX.sym("tau_rate", self.layout.n_u)
        if self.drives is None:
            u, z = tau, ca.SX(0, 1)
        else:
            d = self.drives
            z = d.current_for_torque(tau)
            u = d.voltage(self._motor_speeds(self.v), z, d.current_for_torque(tau_rate))
        return ca.Function("input_from_torque", [self.q, self.v, tau, tau_rate], [u, z],
                           ["q", "v", "tau", "tau_rate"], ["u", "z"])

    def rest_input(self, q) -> tuple[np.ndarray, np.ndarray]:
        """(u, z) that hold the robot at rest in configuration q (holding torques, their currents)."""
        zero = np.zeros(self.layout.nq)
        tau = self.input_torque(q, zero, zero)
        u, z = self.input_from_torque(q, zero, tau, np.zeros(self.layout.n_u))
        return np.array(u, float).ravel(), np.array(z, float).ravel()

    # ----------------------------------------------------------------- names for output files
    def coordinate_names(self) -> list[str]:
        L = self.layout
        link = [self.chain.joints[i].name for i in range(L.n_link)]
        motor = [f"qm_{self.chain.joints[i].name}" for i in L.gear]
        return link + motor

    def variant(self, chain: Chain) -> "FlexibleModel":
        """The same kind of model on a modified chain (payload mismatch etc.)."""
        return FlexibleModel(chain, self.outputs, self.name, self.angle_centres)
