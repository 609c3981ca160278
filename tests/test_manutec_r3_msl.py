"""Every parameter of the shipped Manutec r3 problems against the Modelica Standard Library's RobotR3.

The tables below are copied from MSL's source text (MSL 4.1.0; unchanged on its master of 2026-04),
not from ffopt's files, so a change of a shipped value fails here:
    Modelica.Mechanics.MultiBody.Examples.Systems.RobotR3.FullRobot              (load, axis modifiers, limits)
    Modelica.Mechanics.MultiBody.Examples.Systems.RobotR3.Utilities.MechanicalStructure (world, r1..r6, b0..b6, load)
    Modelica.Mechanics.MultiBody.Examples.Systems.RobotR3.Utilities.AxisType1 / AxisType2 (defaults of J, peak)
    Modelica.Mechanics.MultiBody.Examples.Systems.RobotR3.Utilities.GearType1 / GearType2 (where c, d, friction act)
    Modelica.Mechanics.MultiBody.Parts.BodyShape                                  (I_11 = I_22 = I_33 = 0.001 default)

Conventions of the problem files (their header comments, docs/models.md "Gear ratios"): MSL body b_k
belongs to joint q_k, joint q_k sits at b_(k-1).r, its axis is revolute r_k's n. GearType1 (axes 1-3:
rotor J -> bearing friction -> spring-damper c, d -> ideal gear i, all on the motor side) is entered
with its motor-side numbers (rotor_inertia, stiffness_motor_side, damping_motor_side,
*_friction_motor_side) and gear_ratio; ffopt moves them to the arm side. GearType2 (axes 4-6: gear,
then bearing friction on the joint side) has its friction entered as it is (coulomb_friction,
viscous_friction) and its rotor J on the motor side.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from ffopt.io.problem import load_problem

ROOT = Path(__file__).resolve().parents[1]
SAME_ROBOT = ["manutec_r3_benchmark.toml", "manutec_r3_ptp.toml", "manutec_r3_step.toml", "manutec_r3_min_time.toml"]
MIN_TIME = "manutec_r3_min_time.toml"  # the same robot with the motors' limits (joints' speed_max_rad_s)
NONLINEAR = "manutec_r3_nonlinear.toml"

# ---- MSL's numbers, as its source writes them ---------------------------------------------------
# Modelica.Mechanics.MultiBody.Parts.BodyShape: parameter SI.Inertia I_11 = 0.001, I_22 = 0.001,
# I_33 = 0.001, I_21 = 0, I_31 = 0, I_32 = 0 (used where a body gives none).
BODYSHAPE_DEFAULT = {"I_11": 0.001, "I_22": 0.001, "I_33": 0.001, "I_21": 0.0, "I_31": 0.0, "I_32": 0.0}


def _body(**given):
    return {**BODYSHAPE_DEFAULT, **given}


MSL_BODIES = {
    # MechanicalStructure.b0: BodyShape(r={0,0.351,0}, r_CM={0,0,0}, m=1) -- fixed to the world
    "b0": _body(r=[0, 0.351, 0], r_CM=[0, 0, 0], m=1),
    # MechanicalStructure.b1: BodyShape(r={0,0.324,0.3}, I_22=1.16, r_CM={0,0,0}, m=1)
    "b1": _body(r=[0, 0.324, 0.3], I_22=1.16, r_CM=[0, 0, 0], m=1),
    # MechanicalStructure.b2: BodyShape(r={0,0.65,0}, r_CM={0.172,0.205,0}, m=56.5, I_11=2.58, I_22=0.64,
    # I_33=2.73, I_21=-0.46)
    "b2": _body(r=[0, 0.65, 0], r_CM=[0.172, 0.205, 0], m=56.5, I_11=2.58, I_22=0.64, I_33=2.73, I_21=-0.46),
    # MechanicalStructure.b3: BodyShape(r={0,0.414,-0.155}, r_CM={0.064,-0.034,0}, m=26.4, I_11=0.279,
    # I_22=0.245, I_33=0.413, I_21=-0.070)
    "b3": _body(r=[0, 0.414, -0.155], r_CM=[0.064, -0.034, 0], m=26.4, I_11=0.279, I_22=0.245, I_33=0.413,
                I_21=-0.070),
    # MechanicalStructure.b4: BodyShape(r={0,0.186,0}, r_CM={0,0,0}, m=28.7, I_11=1.67, I_22=0.081, I_33=1.67)
    "b4": _body(r=[0, 0.186, 0], r_CM=[0, 0, 0], m=28.7, I_11=1.67, I_22=0.081, I_33=1.67),
    # MechanicalStructure.b5: BodyShape(r={0,0.125,0}, r_CM={0,0,0}, m=5.2, I_11=1.25, I_22=0.81, I_33=1.53)
    "b5": _body(r=[0, 0.125, 0], r_CM=[0, 0, 0], m=5.2, I_11=1.25, I_22=0.81, I_33=1.53),
    # MechanicalStructure.b6: BodyShape(r={0,0,0}, r_CM={0.05,0.05,0.05}, m=0.5)
    "b6": _body(r=[0, 0, 0], r_CM=[0.05, 0.05, 0.05], m=0.5),
}
# FullRobot: mLoad = 15, rLoad = {0.1,0.25,0.1}; MechanicalStructure.load: BodyShape(r={0,0,0},
# r_CM=rLoad, m=mLoad), connected to b6.frame_b
M_LOAD, R_LOAD = 15.0, [0.1, 0.25, 0.1]
MSL_LOAD = _body(r=[0, 0, 0], r_CM=R_LOAD, m=M_LOAD)
# MechanicalStructure.world: g = 9.81, n = {0,-1,0} (gravity acts along n)
G, N_GRAVITY = 9.81, [0, -1, 0]
# MechanicalStructure.r1..r6: Revolute(n = ...)
MSL_N = [[0, 1, 0], [1, 0, 0], [1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0]]
# FullRobot.axis1..axis6 modifiers; J and peak not given there take AxisType2's defaults J = 0.0013,
# peak = 1 (GearType1's bearingFriction is not even passed peak: BearingFriction's default 1).
MSL_AXES = [
    # FullRobot.axis1: AxisType1(w=4590, ratio=-105, c=43, cd=0.005, Rv0=0.4, Rv1=(0.13/160))
    {"type": 1, "ratio": -105, "c": 43, "cd": 0.005, "Rv0": 0.4, "Rv1": 0.13 / 160, "J": 0.0013, "peak": 1},
    # FullRobot.axis2: AxisType1(w=5500, ratio=210, c=8, cd=0.01, Rv1=(0.1/130), Rv0=0.5)
    {"type": 1, "ratio": 210, "c": 8, "cd": 0.01, "Rv0": 0.5, "Rv1": 0.1 / 130, "J": 0.0013, "peak": 1},
    # FullRobot.axis3: AxisType1(w=5500, ratio=60, c=58, cd=0.04, Rv0=0.7, Rv1=(0.2/130))
    {"type": 1, "ratio": 60, "c": 58, "cd": 0.04, "Rv0": 0.7, "Rv1": 0.2 / 130, "J": 0.0013, "peak": 1},
    # FullRobot.axis4: AxisType2(k=0.2365, w=6250, D=0.55, J=1.6e-4, ratio=-99, Rv0=21.8, Rv1=9.8, peak=26.7/21.8)
    {"type": 2, "ratio": -99, "Rv0": 21.8, "Rv1": 9.8, "J": 1.6e-4, "peak": 26.7 / 21.8},
    # FullRobot.axis5: AxisType2(k=0.2608, w=6250, D=0.55, J=1.8e-4, ratio=79.2, Rv0=30.1, Rv1=0.03, peak=39.6/30.1)
    {"type": 2, "ratio": 79.2, "Rv0": 30.1, "Rv1": 0.03, "J": 1.8e-4, "peak": 39.6 / 30.1},
    # FullRobot.axis6: AxisType2(k=0.0842, w=7400, D=0.27, J=4.3e-5, ratio=-99, Rv0=10.9, Rv1=3.92, peak=16.8/10.9)
    {"type": 2, "ratio": -99, "Rv0": 10.9, "Rv1": 3.92, "J": 4.3e-5, "peak": 16.8 / 10.9},
]
# FullRobot: refSpeedMax = {3,1.5,5,3.1,3.1,4.1}, refAccMax = {15,15,15,60,60,60}
REF_SPEED_MAX = [3, 1.5, 5, 3.1, 3.1, 4.1]
REF_ACC_MAX = [15, 15, 15, 60, 60, 60]
# Utilities.Motor: parameter SI.Current i_max=9 "Maximum current of motor"; parameter SI.AngularVelocity
# w_max=315 "Maximum speed of motor"; parameter Real k=1.1616 "Gain of motor" (emf(k=k): torque = k x current).
# FullRobot passes neither i_max nor w_max; it sets k on axes 4-6 (axis4.k=0.2365, axis5.k=0.2608,
# axis6.k=0.0842); axes 1-3 keep AxisType2's default k=1.1616.
I_MAX, W_MAX = 9.0, 315.0
MOTOR_K = [1.1616, 1.1616, 1.1616, 0.2365, 0.2608, 0.0842]
# FullRobot: startAngle1..6 = -60, 20, 90, 0, -110, 0; endAngle1..6 = 60, -70, -35, 45, 110, 45 (deg)
START_DEG = [-60, 20, 90, 0, -110, 0]
END_DEG = [60, -70, -35, 45, 110, 45]


def _msl_inertia(b):
    """BodyShape's I = [I_11, I_21, I_31; I_21, I_22, I_32; I_31, I_32, I_33] (about r_CM)."""
    return np.array([[b["I_11"], b["I_21"], b["I_31"]],
                     [b["I_21"], b["I_22"], b["I_32"]],
                     [b["I_31"], b["I_32"], b["I_33"]]])


def _expected_inertia(k: int):
    """MSL's inertia of b_k in ffopt's convention. One deliberate difference: b1's default I_11 = I_33 =
    0.001 next to I_22 = 1.16 break a rigid body's triangle inequality (1.16 > 0.002), which ffopt's
    problem reader refuses; the file gives 0 for both. b1 turns only about its y axis (r1.n = y, b0 fixed),
    so its angular velocity and acceleration stay along y and I_11, I_33 enter no torque:
    tests/test_manutec_r3.py checks M(q) and g(q) against Pinocchio built with MSL's 0.001."""
    inertia = _msl_inertia(MSL_BODIES[f"b{k}"])
    if k == 1:
        inertia[0, 0] = inertia[2, 2] = 0.0
    return inertia


def _file_inertia(table):
    return np.array(table["inertia"]) if "inertia" in table else np.diag(table["inertia_diag"])


def _raw(name):
    with open(ROOT / "problems" / name, "rb") as f:
        return tomllib.load(f)


# keys of a joint table the MSL data account for (any other key, e.g. a link-side friction, fails)
KEYS_TYPE1 = {"name", "kind", "axis", "origin", "mass", "com", "inertia", "inertia_diag", "gear_ratio",
              "stiffness_motor_side", "damping_motor_side", "rotor_inertia", "coulomb_friction_motor_side",
              "viscous_friction_motor_side"}
KEYS_TYPE2 = {"name", "kind", "axis", "origin", "mass", "com", "inertia", "inertia_diag", "gear_ratio",
              "rotor_inertia", "coulomb_friction", "viscous_friction"}


@pytest.mark.parametrize("name", SAME_ROBOT + [NONLINEAR])
def test_r3_file_values_are_msl_robotr3(name):
    """The values as written in the file (its own convention: GearType1 data on the motor side)."""
    m = _raw(name)["model"]
    nonlinear = name == NONLINEAR
    np.testing.assert_array_equal(m["gravity"], G * np.array(N_GRAVITY))     # world.g * world.n
    assert m["outputs"] == [f"q{k}" for k in range(1, 7)]
    assert m["tool_origin"] == R_LOAD                                           # the load's centre of mass
    assert MSL_BODIES["b6"]["r"] == [0, 0, 0]      # so the flange frame (b6.frame_b) is joint 6's body frame
    # load: BodyShape(r_CM=rLoad, m=mLoad) with BodyShape's default inertia
    pl = m["payload"]
    assert set(pl) == {"mass", "com", "inertia_diag"}
    assert pl["mass"] == MSL_LOAD["m"] and pl["com"] == MSL_LOAD["r_CM"]
    np.testing.assert_array_equal(np.diag(pl["inertia_diag"]), _msl_inertia(MSL_LOAD))

    joints = m["joints"]
    assert len(joints) == 6
    for k, (j, ax) in enumerate(zip(joints, MSL_AXES), start=1):
        body = MSL_BODIES[f"b{k}"]
        where = f"{name} q{k}"
        assert j["name"] == f"q{k}", where
        assert j["axis"] == MSL_N[k - 1], where                             # r_k.n
        assert j["origin"] == MSL_BODIES[f"b{k - 1}"]["r"], where           # b_(k-1).r
        assert j["mass"] == body["m"], where                                # b_k.m
        assert j["com"] == body["r_CM"], where                              # b_k.r_CM
        np.testing.assert_array_equal(_file_inertia(j), _expected_inertia(k), err_msg=where)
        other_inertia = "inertia_diag" if "inertia" in j else "inertia"    # the key the joint does not use
        assert j["gear_ratio"] == ax["ratio"], where                        # axis_k.ratio = gear.i
        assert j["rotor_inertia"] == ax["J"], where                         # axis_k.J (Motor.Jmotor), motor side
        if ax["type"] == 1:
            # GearType1: spring-damper and bearing friction on the motor side, entered as MSL gives them
            assert j["kind"] == "elastic_gear", where
            if nonlinear:   # two-slope spring: 40 % of c below the knee, MSL's c (arm side c i^2) beyond
                assert j["stiffness_motor_side"] == pytest.approx(0.4 * ax["c"], rel=1e-15), where
                assert j["stiffness_slopes"] == [ax["c"] * ax["ratio"] ** 2], where
                extra = {"stiffness_knees", "stiffness_slopes", "knee_width"}
            else:
                assert j["stiffness_motor_side"] == ax["c"], where          # axis_k.c
                extra = set()
            extra |= {"speed_max_rad_s"} if name == MIN_TIME else set()
            assert set(j) == KEYS_TYPE1 - {other_inertia} | extra, where
            assert j["damping_motor_side"] == ax["cd"], where               # axis_k.cd = gear.d
            assert j["coulomb_friction_motor_side"] == ax["Rv0"], where     # bearingFriction tau_pos(0)
            assert j["viscous_friction_motor_side"] == pytest.approx(ax["Rv1"], rel=1e-15), where
            assert ax["peak"] == 1, where                                   # no breakaway peak in MSL either
        else:
            # GearType2: rigid gear, bearing friction after the gear (joint side)
            assert j["kind"] == "direct", where
            assert j["coulomb_friction"] == ax["Rv0"], where
            assert j["viscous_friction"] == ax["Rv1"], where
            extra = {"stribeck_friction", "stribeck_velocity"} if nonlinear else set()
            extra |= {"speed_max_rad_s"} if name == MIN_TIME else set()
            assert set(j) == KEYS_TYPE2 - {other_inertia} | extra, where
            if nonlinear:   # MSL's breakaway torque peak x Rv0 as a Stribeck term of (peak - 1) x Rv0
                assert j["stribeck_friction"] == pytest.approx((ax["peak"] - 1) * ax["Rv0"], rel=1e-12), where


@pytest.mark.parametrize("name", SAME_ROBOT + [NONLINEAR])
def test_r3_loaded_arm_side_values_are_msl_converted(name):
    """What ffopt makes of the file (arm side), from MSL's numbers by the formulas of GearType1 /
    GearType2 (i = ratio; motor angle phi_m = i qm; spring torque c (phi_m - i q) at the gear input,
    i times it at the output):
        stiffness K = c i^2, damping D = d i^2, reflected rotor inertia B = J i^2,
        GearType1 friction (motor speed w = i qm'): Coulomb Rv0 |i|, viscous Rv1 i^2,
        GearType2 friction (joint speed): Coulomb Rv0, viscous Rv1."""
    chain = load_problem(ROOT / "problems" / name).chain
    np.testing.assert_array_equal(chain.payload.com, R_LOAD)
    assert chain.payload.mass == M_LOAD
    np.testing.assert_array_equal(chain.payload.inertia, _msl_inertia(MSL_LOAD))
    for k, (j, ax) in enumerate(zip(chain.joints, MSL_AXES), start=1):
        i = ax["ratio"]
        body = MSL_BODIES[f"b{k}"]
        assert j.body.mass == body["m"]
        np.testing.assert_array_equal(j.body.com, body["r_CM"])
        np.testing.assert_array_equal(j.body.inertia, _expected_inertia(k))
        assert j.gear_ratio == i
        assert j.motor_inertia == pytest.approx(ax["J"] * i**2, rel=1e-14)
        if ax["type"] == 1:
            if name != NONLINEAR:
                assert j.stiffness == pytest.approx(ax["c"] * i**2, rel=1e-14)
            assert j.damping == pytest.approx(ax["cd"] * i**2, rel=1e-14)
            assert j.coulomb_friction == pytest.approx(ax["Rv0"] * abs(i), rel=1e-14)
            assert j.viscous_friction == pytest.approx(ax["Rv1"] * i**2, rel=1e-14)
        else:
            assert (j.coulomb_friction, j.viscous_friction) == (ax["Rv0"], ax["Rv1"])


def test_r3_ptp_motion_is_fullrobots():
    """manutec_r3_ptp.toml's raw move is FullRobot's pathPlanning (start/end angles in degrees, the
    reference limits); the benchmark's limits are the same."""
    ref = _raw("manutec_r3_ptp.toml")["reference"]
    assert ref["q_start_deg"] == START_DEG and ref["q_end_deg"] == END_DEG
    for name in ("manutec_r3_ptp.toml", "manutec_r3_benchmark.toml", NONLINEAR):
        ref = _raw(name)["reference"]
        assert ref["speed_max_rad_s"] == REF_SPEED_MAX and ref["acceleration_max_rad_s2"] == REF_ACC_MAX


def test_r3_min_time_limits_are_msls_motor_limits():
    """manutec_r3_min_time.toml: the torque bound is the arm-side torque at the motor's maximum current,
    |ratio| x k x i_max, and the joint speed limit the motor's maximum speed on the link side, w_max / |ratio|;
    the move is FullRobot's start and end angles."""
    raw = _raw(MIN_TIME)
    ratios = np.array([ax["ratio"] for ax in MSL_AXES], float)
    np.testing.assert_allclose(raw["nlp"]["torque_max"], np.abs(ratios) * np.array(MOTOR_K) * I_MAX, rtol=1e-12)
    np.testing.assert_allclose([j["speed_max_rad_s"] for j in raw["model"]["joints"]], W_MAX / np.abs(ratios),
                               rtol=1e-12)
    ref = raw["reference"]
    assert ref["q_start_deg"] == START_DEG and ref["q_end_deg"] == END_DEG and ref["duration"] == "min"
