"""Serial chains with flexible links by assumed modes (Mohan & Saha, simulation of serial robots
with flexible links), as a ``FlexibleModel`` with extra elastic coordinates.

A flexible link is the body of one joint, modelled as a uniform Euler-Bernoulli beam clamped at
its joint: length L, mass m (rho = m / L), bending stiffness EI, bending in the plane normal to the
joint axis (planar chains: the plane of motion). Its deflection is w(x, t) = sum_j phi_j(x / L)
delta_j(t) with the clamped-free modes of ``ffopt.models.beam`` normalised to phi_j(1) = 1, so the
modal coordinate delta_j (m) is mode j's share of the tip deflection. As in the paper, shear, rotary
inertia of the cross-sections, torsion and out-of-plane bending are neglected.

Kinematics (``FlexibleLink.kinematics``): "linear" is the paper's, points move linearly in the modal
coordinates and a bent link keeps its chord length. "second_order" (the problem files' default) keeps the
beam inextensible to second order: the point at xi moves back along the beam by
u(xi) = -(1 / 2L) delta^T H(xi) delta (H_ij(xi) = int_0^xi phi_i' phi_j', ``SecondOrderIntegrals``), the tip
cross-section turns by asin(w'(L)) to third order, and the bending energy gains (EI / 2) int w''^2 w'^2; the
centrifugal and inertial loads along the bent beam then stiffen it (Kane, Ryan & Banerjee, dynamics of a
cantilever beam attached to a moving base). ``ffopt.models.beam_chain`` is the geometrically exact reference.

Coordinates: q = [theta; delta; qm] -- the joint angles (chain order), then the modal coordinates
(link by link, mode by mode), then the motor angles. ``layout.n_link`` counts theta and delta,
``layout.passive`` lists the passive joints and every modal coordinate (non-actuated elastic
coordinates with modal stiffness and optional modal damping), so every solver, the analysis and
the simulator use this model unchanged.

Geometry of a flexible link i (all in the body frame of joint i, which turns about ``axis``): the
beam runs from the joint along ``direction`` e (perpendicular to the axis); it bends towards
b = axis x e. Everything else given in that body frame -- the link's rigid mass, centre of mass and
inertia (a payload or the next joint's housing), the next joint's origin and the tool point -- is
carried by the beam's tip cross-section: it translates with the tip deflection w(L) b and turns
with the tip slope w'(L) about the axis. The frame of that cross-section is the "carrier" frame.

Dynamics (CasADi SX): M(q) a + c(q, v) + g(q) by a recursive Newton-Euler algorithm extended to
assumed-mode beams (``_inverse_dynamics``; the recursive structure of Mohan & Saha's formulation,
not their DeNOC matrices; second-order links add the foreshortening terms, ``_beam_forward``). The beam's distributed inertia is exact through the Gram matrix G of the
basis f = [1, xi, phi_1..phi_m] on xi in [0, 1]: the acceleration of the beam point at xi is
sum_a f_a(xi) A_a, so every integral over the beam is a G-weighted sum. Modal stiffness
K = EI / L^3 int phi_i'' phi_j'' dxi; modal damping D = 2 zeta_j omega_j m_j (clamped-base modal
frequency omega_j and modal mass m_j = m / 4). ``energy`` gives the kinetic energy (through the
same Gram matrix) and the potential energy; the tests derive the Euler-Lagrange equations
d/dt dT/dv - dT/dq + dV/dq from them and compare with the recursive algorithm (an independent
formulation), and check the power balance in simulation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from types import SimpleNamespace

import casadi as ca
import numpy as np

from ffopt.models.beam import ClampedFreeModes, ModeIntegrals
from ffopt.models.chain import Body, Chain
from ffopt.models.flexible import AXES, ORIENTATION, FlexibleModel, Layout
from ffopt.models.rigid_body import axis_rotation

KINEMATICS = ("linear", "second_order")
MAX_MODES = 20  # per link; beyond ~20 modes the Euler-Bernoulli model itself is meaningless for a robot link


class StaticCorrectedModes(ModeIntegrals):
    """Ritz modes of a clamped beam on the span of the first n - 2 clamped-free modes and the static shapes
    xi^2, xi^3 (the exact static deflection under a tip moment and a tip force): n shapes on xi in [0, 1],
    orthogonal in mass and stiffness, normalised to tip value 1; the interface of ``ClampedFreeModes``.

    Why: every clamped-free mode has zero curvature at the free end, so a moment at the link's tip (the
    next joint's drive torque reacts on it) is represented only in the limit of many modes: with n
    clamped-free modes the tip slope under a tip moment is 61, 80, 87, 90, 92 % of the exact L / EI for
    n = 1..5 and converges like 1 - 0.4 / n. Adding xi^2 and xi^3 makes the statics under tip loads exact
    with any number of clamped-free modes (the modes then only carry the distributed inertia).
    """

    def __init__(self, n: int):
        if n < 2:
            raise ValueError(f"static-corrected modes need n >= 2 (the two static shapes), got {n}")
        self.n = n
        self._cf = ClampedFreeModes(max(n - 2, 1))
        xi, w = self.quadrature
        raw = self._raw(xi, 0)
        d2 = self._raw(xi, 2)
        M, K = (raw * w) @ raw.T, (d2 * w) @ d2.T
        from scipy.linalg import eigh

        lam, C = eigh(K, M)  # Ritz: K c = omega^2 M c, ascending
        tip = C.T @ self._raw(np.array([1.0]), 0)[:, 0]
        self._C = (C / tip).T  # (n, n): shape_j = sum_k C[j, k] raw_k, tip value 1

    def _raw(self, xi, derivative: int) -> np.ndarray:
        xi = np.atleast_1d(np.asarray(xi, float))
        poly = {0: (xi**2, xi**3), 1: (2 * xi, 3 * xi**2), 2: (2 + 0 * xi, 6 * xi), 3: (0 * xi, 6 + 0 * xi)}
        rows = list(self._cf.shape(xi, derivative)[: self.n - 2]) + list(poly.get(derivative, (0 * xi, 0 * xi)))
        return np.array(rows)

    def shape(self, xi, derivative: int = 0) -> np.ndarray:
        return self._C @ self._raw(xi, derivative)


@dataclass(frozen=True)
class FlexibleLink:
    """The body of joint ``joint`` (index in the chain) as a uniform clamped-free beam."""

    joint: int
    modes: int  # assumed modes m >= 1
    EI: float  # bending stiffness, N m^2
    length: float  # m
    mass: float  # beam mass, kg (uniform)
    direction: np.ndarray = None  # (3,) beam axis in the body frame (default x), perpendicular to the joint axis
    damping_ratio: tuple[float, ...] = ()  # per mode (empty: undamped)
    # False: the paper's clamped-free modes; True: ``StaticCorrectedModes`` (modes - 2 clamped-free modes and
    # the two static tip shapes, as Ritz modes): exact statics under tip loads (modes >= 2)
    static_correction: bool = False
    # "linear": beam points move linearly in the modal coordinates (Mohan & Saha; a bent link keeps its chord
    # length); "second_order": the foreshortening of the bent beam and its tip rotation to third order (see
    # ``FlexibleLinkModel``)
    kinematics: str = "linear"

    def __post_init__(self):
        if self.modes < 1:
            raise ValueError(f"flexible link of joint {self.joint}: needs at least one mode, got {self.modes}")
        if self.modes > MAX_MODES:
            raise ValueError(f"flexible link of joint {self.joint}: at most {MAX_MODES} modes, got {self.modes}")
        if not (self.EI > 0 and self.length > 0 and self.mass > 0):
            raise ValueError(f"flexible link of joint {self.joint}: EI, length and mass must be > 0")
        e = np.array([1.0, 0.0, 0.0] if self.direction is None else self.direction, float)
        object.__setattr__(self, "direction", e / np.linalg.norm(e))
        zeta = tuple(float(z) for z in self.damping_ratio) or (0.0,) * self.modes
        if len(zeta) != self.modes or min(zeta) < 0:
            raise ValueError(f"flexible link of joint {self.joint}: damping_ratio needs {self.modes} values >= 0")
        object.__setattr__(self, "damping_ratio", zeta)
        if self.kinematics not in KINEMATICS:
            raise ValueError(f"flexible link of joint {self.joint}: kinematics must be one of {KINEMATICS}, "
                             f"got {self.kinematics!r}")

    @cached_property
    def shapes(self) -> ClampedFreeModes:
        return StaticCorrectedModes(self.modes) if self.static_correction else ClampedFreeModes(self.modes)

    @property
    def modal_mass(self) -> np.ndarray:
        """(m, m) m int phi_i phi_j dxi (diagonal m / 4 for exact modes)."""
        return self.mass * self.shapes.gram[2:, 2:]

    @property
    def modal_stiffness(self) -> np.ndarray:
        """(m, m) EI / L^3 int phi_i'' phi_j'' dxi (diagonal EI beta^4 / (4 L^3))."""
        return self.EI / self.length**3 * self.shapes.curvature_gram

    @property
    def frequencies(self) -> np.ndarray:
        """Clamped-base natural frequencies omega_j = beta_j^2 sqrt(EI / (rho L^4)), rad/s."""
        return np.sqrt(np.diag(self.modal_stiffness) / np.diag(self.modal_mass))

    @property
    def modal_damping(self) -> np.ndarray:
        return np.diag(2.0 * np.array(self.damping_ratio) * self.frequencies * np.diag(self.modal_mass))

    def rigid_body(self) -> Body:
        """The beam as a rigid body (mass m at L/2 e, inertia m L^2 / 12 about axes normal to e)."""
        e = self.direction
        return Body(self.mass, self.length / 2 * e, self.mass * self.length**2 / 12 * (np.eye(3) - np.outer(e, e)))


def combine_bodies(a: Body, b: Body) -> Body:
    """One rigid body equal to a and b together (centre of mass, parallel-axis theorem)."""
    m = a.mass + b.mass
    if m == 0:
        return a
    c = (a.mass * a.com + b.mass * b.com) / m
    inertia = np.zeros((3, 3))
    for body in (a, b):
        d = body.com - c
        inertia += body.inertia + body.mass * (d @ d * np.eye(3) - np.outer(d, d))
    return Body(m, c, inertia)


def rigid_equivalent_chain(chain: Chain, links) -> Chain:
    """The chain with every flexible link rigid: the beam's mass joined to the link's rigid body."""
    joints = list(chain.joints)
    for link in links:
        jt = joints[link.joint]
        joints[link.joint] = replace(jt, body=combine_bodies(link.rigid_body(), jt.body))
    return replace(chain, joints=tuple(joints))


def modal_coordinate_names(chain: Chain, links) -> list[str]:
    return [f"{chain.joints[link.joint].name}.mode{j + 1}" for link in sorted(links, key=lambda k: k.joint)
            for j in range(link.modes)]


class FlexibleLinkModel(FlexibleModel):
    """``FlexibleModel`` whose listed link bodies are flexible beams (assumed modes)."""

    def __init__(self, chain: Chain, links, outputs: tuple[str, ...] = ("x", "y", "z"), name: str = "robot",
                 angle_centres: dict[str, float] | None = None):
        super().__init__(chain, outputs, name, angle_centres)
        self.links = tuple(sorted(links, key=lambda k: k.joint))
        self._check_links()
        rigid = self.layout
        self.n_joints = rigid.n_link
        n_modes = sum(k.modes for k in self.links)
        modal = tuple(range(self.n_joints, self.n_joints + n_modes))
        self.layout = Layout(n_link=self.n_joints + n_modes, gear=rigid.gear, direct=rigid.direct,
                             passive=rigid.passive + modal, actuated=rigid.actuated)
        L = self.layout
        self.q = ca.SX.sym("q", L.nq)
        self.v = ca.SX.sym("v", L.nq)
        self.a = ca.SX.sym("a", L.nq)
        self.u = ca.SX.sym("u", L.n_u)
        starts = np.cumsum([self.n_joints] + [k.modes for k in self.links])
        self._modal_slice = {k.joint: slice(int(s), int(s) + k.modes) for k, s in zip(self.links, starts)}
        self._modal_stiffness = np.concatenate([np.diag(k.modal_stiffness) for k in self.links])
        self._modal_damping = np.concatenate([np.diag(k.modal_damping) for k in self.links])

    def _check_links(self):
        seen = set()
        for link in self.links:
            if not 0 <= link.joint < self.chain.n_joints or link.joint in seen:
                raise ValueError(f"flexible link: joint index {link.joint} out of range or repeated")
            seen.add(link.joint)
            if abs(link.direction @ self.chain.joints[link.joint].axis) > 1e-9:
                raise ValueError(f"flexible link of joint {self.chain.joints[link.joint].name!r}: the beam direction "
                                 "must be perpendicular to the joint axis (it bends in the plane of rotation)")
        if self.chain.constant_inertia is not None:
            raise ValueError("flexible links need the rigid-body model, not a constant inertia matrix")
        clash = set(modal_coordinate_names(self.chain, self.links)) & {j.name for j in self.chain.joints}
        if clash:
            raise ValueError(f"joint names {sorted(clash)} clash with modal coordinate names; rename the joints")

    # ----------------------------------------------------------------- kinematics
    def _deflections(self, qa, link: FlexibleLink):
        """(modal coordinates, tip deflection w(L), tip slope w'(L)) of one link."""
        d = qa[self._modal_slice[link.joint]]
        return d, ca.sum1(d), ca.dot(ca.DM(link.shapes.tip_slope), d) / link.length

    def modal_slice(self, joint: int) -> slice:
        """Where the modal coordinates of the flexible link of chain joint ``joint`` sit in qa."""
        return self._modal_slice[joint]

    @staticmethod
    def _tip_motion(link: FlexibleLink, d, dd):
        """(tip deflection w(L), chord shortening, tip rotation theta, its rate) of a link with modal
        coordinates d and rates dd. Linear kinematics: theta = w'(L), no shortening. Second order (an
        inextensible beam): the tip moves back along the beam by (1 / 2L) d^T H(1) d and the tip cross-section
        turns by asin(w'(L)) = w' + w'^3 / 6 (to third order: a 0.07 rad tip slope of a 6 m link then carries
        the 9 m of arm beyond it to 0.5 mm instead of missing by that)."""
        slope = ca.dot(ca.DM(link.shapes.tip_slope), d) / link.length
        rate = ca.dot(ca.DM(link.shapes.tip_slope), dd) / link.length
        if link.kinematics == "linear":
            return ca.sum1(d), 0, slope, rate
        shortening = ca.dot(d, ca.DM(link.shapes.second_order.tip) @ d) / (2 * link.length)
        return ca.sum1(d), shortening, slope + slope**3 / 6, (1 + slope**2 / 2) * rate

    def _frames(self, qa, va):
        """Per joint i: dict with the body frame (R, p, w: world rotation, origin, angular velocity)
        after the joint rotation and the carrier frame (RT, pT, wT) of the tip cross-section, which maps
        a point x given in the body frame (an attachment) to pT + RT x; for a rigid link it is (R, p, w)."""
        links = {k.joint: k for k in self.links}
        R, p, w = ca.SX.eye(3), ca.SX.zeros(3, 1), ca.SX.zeros(3, 1)
        frames = []
        for i, jt in enumerate(self.chain.joints):
            p = p + R @ ca.DM(jt.origin)
            R = R @ ca.DM(np.asarray(jt.rotation, float))  # the joint frame
            axis = ca.DM(jt.axis)
            w = w + R @ axis * va[i]
            R = R @ axis_rotation(jt.axis, qa[i])
            f = {"R": R, "p": p, "w": w}
            if i in links:
                k = links[i]
                d, dd = qa[self._modal_slice[i]], va[self._modal_slice[i]]
                tip, shortening, slope, dslope = self._tip_motion(k, d, dd)
                e, b = ca.DM(k.direction), ca.DM(np.cross(jt.axis, k.direction))
                RT = R @ axis_rotation(jt.axis, slope)
                f.update(link=k, e=e, b=b, d=d, dd=dd)
                p = p + R @ ((k.length - shortening) * e + tip * b) - RT @ (k.length * e)
                w = w + R @ axis * dslope
                R = RT
            f.update(RT=R, pT=p, wT=w)
            frames.append(f)
        return frames

    def _tool_pose(self, qa):
        f = self._frames(qa, ca.SX.zeros(qa.shape[0]))[-1]
        R_tool = f["RT"] @ ca.DM(np.asarray(self.chain.tool_rotation, float))
        return f["pT"] + f["RT"] @ ca.DM(self.chain.tool_origin), R_tool

    # ----------------------------------------------------------------- energies
    def _energies(self, qa, va):
        """Kinetic energy T(qa, va) and gravity potential V(qa) of the links (world frame)."""
        g = ca.DM(self.chain.gravity)
        T, V = 0, 0
        for f, body in zip(self._frames(qa, va), self.chain.bodies()):  # payload merged into the last body
            if body.mass > 0 or np.any(body.inertia):
                c = f["pT"] + f["RT"] @ ca.DM(body.com)
                dc = ca.jtimes(c, qa, va)
                Iw = f["RT"] @ ca.DM(body.inertia) @ f["RT"].T
                T += 0.5 * body.mass * ca.dot(dc, dc) + 0.5 * ca.dot(f["wT"], Iw @ f["wT"])
                V -= body.mass * ca.dot(g, c)
            if "link" in f:
                T_b, V_b = self._beam_energies(f, qa, va, g)
                T, V = T + T_b, V + V_b
        return T, V

    def _beam_energies(self, f, qa, va, g):
        """Kinetic energy and gravity potential of one beam: its points are sum_a f_a(xi) P_a over the basis f
        ([1, xi, phi_j], and with second-order kinematics the foreshortening terms H_ij), so with the Gram
        matrix G = int f_a f_b dxi, T = m / 2 sum_ab G_ab P_a' . P_b' and the centroid is sum_a G_0a P_a."""
        k = f["link"]
        d, dd = f["d"], f["dd"]
        e_w, b_w = f["R"] @ f["e"], f["R"] @ f["b"]
        wxe, wxb = ca.cross(f["w"], e_w), ca.cross(f["w"], b_w)
        P = [f["p"], k.length * e_w] + [d[j] * b_w for j in range(k.modes)]
        dP = [ca.jtimes(f["p"], qa, va), k.length * wxe] + [d[j] * wxb + dd[j] * b_w for j in range(k.modes)]
        G = k.shapes.gram
        if k.kinematics == "second_order":
            so = k.shapes.second_order
            G = so.gram
            for i, j, c in so.pairs:
                s = -c / (2 * k.length)
                P.append(s * d[i] * d[j] * e_w)
                dP.append(s * ((dd[i] * d[j] + d[i] * dd[j]) * e_w + d[i] * d[j] * wxe))
        T = 0
        for a in range(len(dP)):
            T += 0.5 * k.mass * G[a, a] * ca.dot(dP[a], dP[a])
            for bb in range(a + 1, len(dP)):
                T += k.mass * G[a, bb] * ca.dot(dP[a], dP[bb])
        centroid = sum(G[0, a] * P[a] for a in range(len(P)))  # int_0^1 r dxi
        V = -k.mass * ca.dot(g, centroid)
        if k.kinematics == "second_order":
            V += self._curvature_energy(k, d)
        return T, V

    @staticmethod
    def _curvature_energy(k: FlexibleLink, d):
        """What the bending energy of an inextensible beam adds to the linear (modal) one at fourth order:
        (EI / 2) int kappa^2 dx with kappa = theta' = w'' / sqrt(1 - w'^2), so (EI / 2) int w''^2 w'^2 dx. It is
        of the order of the foreshortening's inertia terms (both O(w'^2) against the linear terms): leaving it
        out shifts the frequency of a large free vibration (a 6 m link ringing at 0.7 m: its phase 14 % of the
        amplitude off an exact beam's within 2 s)."""
        xi, w = k.shapes.curvature_quadrature
        d1 = ca.DM(k.shapes.shape(xi, 1).T) @ d / k.length  # w'(x_q)
        d2 = ca.DM(k.shapes.shape(xi, 2).T) @ d / k.length**2  # w''(x_q)
        return 0.5 * k.EI * k.length * ca.dot(ca.DM(w), (d1 * d2) ** 2)

    def _inverse_dynamics(self, qa, va, aa):
        """M(qa) aa + c(qa, va) + g(qa): joint torques, then modal forces, by the recursive algorithm
        (``_recursive_dynamics``; Lagrange's equations from ``energy`` give the same with 5x larger expressions for
        second-order links: the tests' reference)."""
        return self._recursive_dynamics(qa, va, aa)

    def _recursive_dynamics(self, qa, va, aa):
        """M(qa) aa + c(qa, va) + g(qa) by recursive Newton-Euler (second-order links: ``_beam_forward``).

        Forward pass (world frame; the base accelerates at -gravity, so gravity needs no extra
        term): angular velocity w and acceleration alpha of each body frame and carrier frame, and
        the acceleration of their origins. A beam's point acceleration is sum_a f_a(xi) A_a
        (basis f = [1, xi, phi_j]) with A_0 = a_joint, A_1 = L (alpha x e + w x (w x e)) and
        A_(1+j) = delta_j (alpha x b + w x (w x b)) + 2 ddelta_j w x b + dddelta_j b; at the tip
        (xi = 1, phi_j(1) = 1) it is sum_a A_a. Backward pass: the wrench of everything a carrier
        frame carries, about its origin; for a beam the coefficient forces F_a = m sum_b G_ab A_b
        give the resultant F_0, the moment sum_a S_a x F_a about the joint (S_1 = L e,
        S_(1+j) = delta_j b) and mode j's inertial force b . F_(1+j); the carried tip wrench (F, N)
        adds b . F + (phi_j'(1) / L) z . N; the joint torque is z . (moment about the joint).
        """
        links = {k.joint: k for k in self.links}
        frame = {"R": ca.SX.eye(3), "w": ca.SX.zeros(3, 1), "alpha": ca.SX.zeros(3, 1),
                 "acc": -ca.DM(self.chain.gravity), "origin": ca.SX.zeros(3, 1), "offset": np.zeros(3)}
        bodies = []
        for i, jt in enumerate(self.chain.joints):
            R, w, alpha = frame["R"], frame["w"], frame["alpha"]
            r = R @ ca.DM(jt.origin - frame["offset"])  # carrier origin of the parent -> joint point
            Rj = R @ ca.DM(np.asarray(jt.rotation, float))  # the joint frame
            body = {"z": Rj @ ca.DM(jt.axis), "joint": frame["origin"] + r,
                    "acc": frame["acc"] + ca.cross(alpha, r) + ca.cross(w, ca.cross(w, r))}
            z = body["z"]
            body["alpha"] = alpha + z * aa[i] + ca.cross(w, z) * va[i]
            body["w"] = w + z * va[i]
            body["R"] = Rj @ axis_rotation(jt.axis, qa[i])
            if i in links:
                frame = self._beam_forward(body, links[i], qa, va, aa)
            else:
                frame = {"R": body["R"], "w": body["w"], "alpha": body["alpha"], "acc": body["acc"],
                         "origin": body["joint"], "offset": np.zeros(3)}
            body["carrier"] = frame
            bodies.append(body)
        return self._backward_pass(bodies, links)

    def _beam_forward(self, body, k: FlexibleLink, qa, va, aa) -> dict:
        """Beam coefficient forces into ``body``; returns the carrier frame of the tip cross-section.

        Second-order kinematics add the basis functions H_p(xi) (pairs p = (i, j), ``SecondOrderIntegrals``) with
        the axial coefficients s_p e, s_p = -(c_p / 2L) delta_i delta_j, whose accelerations are
        s_p (alpha x e + w x (w x e)) + 2 s_p' w x e + s_p'' e; the tip sits at (L + s_tip) e + w(L) b with
        s_tip = sum_p H_p(1) s_p and turns by theta = sigma + sigma^3 / 6, sigma = w'(L)."""
        s = self._modal_slice[k.joint]
        d, dd, ddd = qa[s], va[s], aa[s]
        R, w, alpha, z = body["R"], body["w"], body["alpha"], body["z"]
        e_w, b_w = R @ ca.DM(k.direction), R @ ca.DM(np.cross(self.chain.joints[k.joint].axis, k.direction))
        wxb, wxe = ca.cross(w, b_w), ca.cross(w, e_w)
        A = [body["acc"], k.length * (ca.cross(alpha, e_w) + ca.cross(w, wxe))]
        A += [d[j] * (ca.cross(alpha, b_w) + ca.cross(w, wxb)) + 2 * dd[j] * wxb + ddd[j] * b_w for j in range(k.modes)]
        S = [k.length * e_w] + [d[j] * b_w for j in range(k.modes)]
        tip = ca.DM(k.shapes.tip_slope) / k.length  # d(tip slope)/d(delta)
        sigma, dsigma, ddsigma = ca.dot(tip, d), ca.dot(tip, dd), ca.dot(tip, ddd)
        G, acc_tip, s_tip, frame = k.shapes.gram, sum(A), 0, {}
        if k.kinematics == "second_order":
            so = k.shapes.second_order
            G = so.gram
            turn = ca.cross(alpha, e_w) + ca.cross(w, wxe)
            for (i, j, c), h_tip in zip(so.pairs, [so.tip[i, j] for i, j, _ in so.pairs]):
                f = -c / (2 * k.length)
                sp, dsp = f * d[i] * d[j], f * (dd[i] * d[j] + d[i] * dd[j])
                ddsp = f * (ddd[i] * d[j] + 2 * dd[i] * dd[j] + d[i] * ddd[j])
                A.append(sp * turn + 2 * dsp * wxe + ddsp * e_w)
                S.append(sp * e_w)
                acc_tip, s_tip = acc_tip + h_tip * A[-1], s_tip + h_tip * sp
            slope = sigma + sigma**3 / 6
            rate, rate_of = (1 + sigma**2 / 2) * dsigma, (1 + sigma**2 / 2) * ddsigma + sigma * dsigma**2
            frame.update(tip_turn=(1 + sigma**2 / 2) * tip, tip_shortening=-ca.DM(so.tip) @ d / k.length,
                         pair_rows=self._pair_rows(k, d), curvature=self._curvature_force(k, d))
        else:
            slope, rate, rate_of = sigma, dsigma, ddsigma
            frame.update(tip_turn=tip)
        F = [k.mass * sum(G[a, c] * A[c] for c in range(len(A))) for a in range(len(A))]
        s_L = (k.length + s_tip) * e_w + ca.sum1(d) * b_w  # joint point -> tip
        body.update(b=b_w, e=e_w, F=F, s_L=s_L, moment=sum(ca.cross(Sa, Fa) for Sa, Fa in zip(S, F[1:])), **frame)
        return {"R": R @ axis_rotation(self.chain.joints[k.joint].axis, slope), "w": w + z * rate,
                "alpha": alpha + z * rate_of + ca.cross(w, z) * rate,
                "acc": acc_tip, "origin": body["joint"] + s_L, "offset": k.length * k.direction}

    @staticmethod
    def _pair_rows(k: FlexibleLink, d) -> ca.SX:
        """(pairs, modes): d s_p / d delta_j of the foreshortening coefficients s_p = -(c_p / 2L) delta_i delta_i'."""
        pairs = k.shapes.second_order.pairs
        rows = ca.SX.zeros(len(pairs), k.modes)
        for p, (i, j, c) in enumerate(pairs):
            f = -c / (2 * k.length)
            rows[p, i] += f * d[j]
            rows[p, j] += f * d[i]
        return rows

    @staticmethod
    def _curvature_force(k: FlexibleLink, d):
        """d/d delta of ``_curvature_energy``, (EI / L^5) sum_jkl C_ijkl delta_j delta_k delta_l with the symmetrised
        tensor C of int phi_i' phi_j' phi_k'' phi_l'' (exact, and a smaller expression than a quadrature for the
        few modes a link has); a link of many modes: the quadrature's form."""
        if k.modes > 6:
            xi, wq = k.shapes.curvature_quadrature
            D1, D2 = ca.DM(k.shapes.shape(xi, 1).T) / k.length, ca.DM(k.shapes.shape(xi, 2).T) / k.length**2
            d1, d2 = D1 @ d, D2 @ d
            weights = ca.DM(wq) * d1 * d2
            return k.EI * k.length * (D1.T @ (weights * d2) + D2.T @ (weights * d1))
        C = k.shapes.curvature_tensor
        dd = ca.vertcat(*[d[j] * d[l] for j in range(k.modes) for l in range(k.modes)])
        rows = [ca.dot(d, ca.DM(C[i].reshape(k.modes, k.modes * k.modes)) @ dd) for i in range(k.modes)]
        return k.EI / k.length**5 * ca.vertcat(*rows)

    def _backward_pass(self, bodies, links) -> ca.SX:
        n = self.layout.n_link
        res = ca.SX.zeros(n)
        bodies_rigid = self.chain.bodies()  # payload merged into the last body
        F_child, N_child, at_child = ca.SX.zeros(3, 1), ca.SX.zeros(3, 1), None  # wrench about the child's joint
        for i in reversed(range(self.n_joints)):
            body, c = bodies[i], bodies[i]["carrier"]
            F, N = F_child, N_child
            if at_child is not None:
                N = N + ca.cross(at_child - c["origin"], F_child)
            rigid = bodies_rigid[i]
            if rigid.mass > 0 or np.any(rigid.inertia):
                dc = c["R"] @ ca.DM(rigid.com - c["offset"])
                F_r = rigid.mass * (c["acc"] + ca.cross(c["alpha"], dc) + ca.cross(c["w"], ca.cross(c["w"], dc)))
                I_w = c["R"] @ ca.DM(rigid.inertia) @ c["R"].T
                F = F + F_r
                N = N + ca.cross(dc, F_r) + I_w @ c["alpha"] + ca.cross(c["w"], I_w @ c["w"])
            if i in links:  # N is about the tip; move everything to the joint, add the beam
                s, k = self._modal_slice[i], links[i]
                b, Fb = body["b"], body["F"]
                rows = ca.vertcat(*[ca.dot(b, Fj) for Fj in Fb[2:2 + k.modes]]) + ca.dot(b, F) \
                    + body["tip_turn"] * ca.dot(body["z"], N)
                if k.kinematics == "second_order":  # the axial share of the modes' virtual displacements
                    axial = ca.vertcat(*[ca.dot(body["e"], Fp) for Fp in Fb[2 + k.modes:]])
                    rows += body["pair_rows"].T @ axial + body["tip_shortening"] * ca.dot(body["e"], F) \
                        + body["curvature"]
                res[s] = rows
                N = N + ca.cross(body["s_L"], F) + body["moment"]
                F = F + Fb[0]
            res[i] = ca.dot(body["z"], N)
            F_child, N_child, at_child = F, N, body["joint"]
        return res

    # FlexibleModel's link rows are M(qa) aa + bias(qa, va) - tau_elastic (+ the direct-drive motor terms).
    # Here the inertial part comes from the recursive algorithm in one expression (a third of the
    # size of an explicit M(qa) aa, which matters for the NLP's Hessians), so the two hooks that
    # supply it are structural zeros and _link_rows_expr adds _inverse_dynamics instead.
    def _mass_matrix_expr(self, qa):
        n = self.layout.n_link
        return ca.SX(n, n)

    def _bias_expr(self, qa, va):
        return ca.SX(self.layout.n_link, 1)

    def _link_rows_expr(self, q, v, a, u):
        qa, _ = self._split(q)
        va, _ = self._split(v)
        aa, _ = self._split(a)
        return super()._link_rows_expr(q, v, a, u) + self._inverse_dynamics(qa, va, aa)

    @cached_property
    def mass_matrix(self) -> ca.Function:
        """qa -> M(qa) of the link-side coordinates (joint angles and modal coordinates)."""
        n = self.layout.n_link
        qa, aa = self.q[:n], self.a[:n]
        M = ca.jacobian(self._inverse_dynamics(qa, ca.SX.zeros(n), aa), aa)
        return ca.Function("mass_matrix", [qa], [M], ["qa"], ["M"])

    def _spring_law(self, i: int):
        """A modal coordinate's spring is linear: its modal stiffness and damping (orthogonal modes)."""
        if i < self.n_joints:
            return super()._spring_law(i)
        k = i - self.n_joints
        return SimpleNamespace(stiffness=float(self._modal_stiffness[k]), damping=float(self._modal_damping[k]),
                               stiffness_knees=(), stiffness_slopes=(), knee_width=0.0, stiffness_cubic=0.0,
                               stiffness_polynomial=())

    def _param(self, name: str, joints) -> np.ndarray:
        """Joint parameters; a modal coordinate is a passive spring-damper with the (diagonal: the modes
        are orthogonal) modal stiffness and damping of its mode and no other parameter."""
        joints = list(joints)
        values = np.zeros(len(joints))
        rigid = [n for n, i in enumerate(joints) if i < self.n_joints]
        if rigid:
            values[rigid] = super()._param(name, [joints[n] for n in rigid])
        modal = {"stiffness": self._modal_stiffness, "damping": self._modal_damping}.get(name)
        for n, i in enumerate(joints):
            if i >= self.n_joints and modal is not None:
                values[n] = modal[i - self.n_joints]
        return values

    # ----------------------------------------------------------------- public functions
    @cached_property
    def tool_position(self) -> ca.Function:
        """qa -> world position of the tool point (3), including the links' deflection."""
        qa = self.q[: self.layout.n_link]
        return ca.Function("tool_position", [qa], [self._tool_pose(qa)[0]], ["qa"], ["p"])

    @cached_property
    def output(self) -> ca.Function:
        """qa -> controlled outputs (tool point and angles of the deflected tip frame, joint angles)."""
        qa = self.q[: self.layout.n_link]
        p, R = self._tool_pose(qa)
        names = [j.name for j in self.chain.joints]
        y = [p[AXES[o]] if o in AXES else self._euler_angle(R, o) if o in ORIENTATION else qa[names.index(o)]
             for o in self.outputs]
        return ca.Function("output", [qa], [ca.vertcat(*y)], ["qa"], ["y"])

    @cached_property
    def tip_deflection(self) -> ca.Function:
        """qa -> w_i(L_i), the tip deflection (m) of each flexible link (in ``links`` order)."""
        qa = self.q[: self.layout.n_link]
        return ca.Function("tip_deflection", [qa], [ca.vertcat(*[self._deflections(qa, k)[1] for k in self.links])],
                           ["qa"], ["w_tip"])

    @cached_property
    def link_bending(self) -> ca.Function:
        """qa -> [w(L), chord shortening] per flexible link (m, ``links`` order): the tip deflection and how much
        shorter the bent link is along its chord, (1 / 2L) delta^T H(1) delta (``SecondOrderIntegrals``). Linear
        kinematics ignore the shortening; this is what they ignore (the criterion for using them: it must be
        small against the tool tolerance)."""
        qa = self.q[: self.layout.n_link]
        out = []
        for k in self.links:
            d = qa[self._modal_slice[k.joint]]
            out += [ca.sum1(d), ca.dot(d, ca.DM(k.shapes.second_order.tip) @ d) / (2 * k.length)]
        return ca.Function("link_bending", [qa], [ca.vertcat(*out)], ["qa"], ["w_tip_and_shortening"])

    @cached_property
    def energy(self) -> ca.Function:
        """(q, v) -> (kinetic, potential): links and motors; gravity, modal strain and joint/gear springs.

        With damping and friction off, d(kinetic + potential)/dt = u . (motor speeds): the power balance.
        """
        L = self.layout
        qa, qm = self._split(self.q)
        va, vm = self._split(self.v)
        T, V = self._energies(qa, va)
        springs = [(list(L.gear), qm - qa[list(L.gear)])] if L.gear else []
        if L.passive:
            springs.append((list(L.passive), qa[list(L.passive)]))  # passive joints and modal coordinates
        for idx, d in springs:
            V += ca.sum1(0.5 * self._param("stiffness", idx) * d**2 + 0.25 * self._param("stiffness_cubic", idx) * d**4)
        if L.gear:
            T += 0.5 * ca.dot(self._param("motor_inertia", L.gear) * vm, vm)
        if L.direct:
            T += 0.5 * ca.dot(self._param("motor_inertia", L.direct) * va[list(L.direct)], va[list(L.direct)])
        return ca.Function("energy", [self.q, self.v], [T, V], ["q", "v"], ["kinetic", "potential"])

    def rigid_chain(self) -> Chain:
        """The same robot with rigid links (``rigid_equivalent_chain``), e.g. for rigid inverse dynamics."""
        return rigid_equivalent_chain(self.chain, self.links)

    def coordinate_names(self) -> list[str]:
        L = self.layout
        joints = [j.name for j in self.chain.joints]
        motor = [f"qm_{self.chain.joints[i].name}" for i in L.gear]
        return joints + modal_coordinate_names(self.chain, self.links) + motor

    @property
    def link_units(self) -> list[str]:
        """Unit of each link-side coordinate: rad for joint angles, m for modal coordinates."""
        return ["rad"] * self.n_joints + ["m"] * (self.layout.n_link - self.n_joints)

    def variant(self, chain: Chain) -> "FlexibleLinkModel":
        return FlexibleLinkModel(chain, self.links, self.outputs, self.name, self.angle_centres)

    @property
    def mode_counts(self) -> list[int]:
        """Assumed modes per flexible link (``links`` order)."""
        return [k.modes for k in self.links]

    def refined(self, extra: int, static_correction: bool = True) -> "FlexibleLinkModel":
        """The same arm with a richer beam model on every flexible link: the same chain, joints, motors and
        outputs, only more modal coordinates (at most MAX_MODES per link). ``static_correction`` (default):
        the link's clamped-free modes plus ``extra`` - 1 more, and the static tip shapes xi^2, xi^3
        (``StaticCorrectedModes``; a link that has them already gets ``extra`` more clamped-free modes): the
        span contains the planning model's and converges fast (exact statics under tip loads). Otherwise
        ``extra`` more clamped-free modes (the tip slope under a tip moment converges only like 1 / n). A
        refined mode takes the damping ratio of the link's last modelled mode. Used by the verification to
        see what a plan made on a truncated model does on the beam (``ffopt.sim.refined``)."""
        links = []
        for k in self.links:
            corrected = k.static_correction or static_correction
            n = k.modes + int(extra) + (1 if corrected and not k.static_correction else 0)
            n = min(n, MAX_MODES)
            zeta = tuple(k.damping_ratio) + (k.damping_ratio[-1],) * max(n - k.modes, 0)
            links.append(replace(k, modes=n, damping_ratio=zeta[:n], static_correction=corrected))
        return FlexibleLinkModel(self.chain, links, self.outputs, self.name, self.angle_centres)

    @property
    def basis(self) -> str:
        """The beam model in words, e.g. "2 clamped-free modes" or "3 clamped-free modes + 2 static shapes"."""
        parts = []
        for k in self.links:
            cf = k.modes - 2 if k.static_correction else k.modes
            parts.append(f"{cf} clamped-free mode{'s' if cf != 1 else ''}" + (" + 2 static shapes" if k.static_correction else ""))
        return parts[0] if len(set(parts)) == 1 else " / ".join(parts)
