"""URDF models ([model] urdf): the chain ffopt builds from a URDF has the mass matrix, Coriolis/centrifugal
and gravity terms of Pinocchio's own model of the same file (pin.buildModelFromUrdf; locked joints:
pin.buildReducedModel) to 1e-9 at random states, on the UR5 and Franka Panda of example-robot-data and on
a small URDF with fixed joints, rotated inertials, rpy joint origins and a continuous joint; every error
names the file and the field."""

from __future__ import annotations

import os
import re
import textwrap
from importlib import metadata
from pathlib import Path

import casadi as ca
import numpy as np
import pinocchio as pin
import pytest

from ffopt.cli.main import main
from ffopt.errors import ProblemError
from ffopt.io.problem import load_problem, problem_from_dict
from ffopt.models.rigid_body import bias_torques, mass_matrix, tool_position, tool_rotation

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "problems" / "urdf"
RTOL = 1e-9  # against Pinocchio: roundoff (measured 4e-15 at most on 2026-11-27); far below any modelling error


def erd(relative: str) -> Path:
    """A file of the example-robot-data package (its URDFs and meshes under share/)."""
    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed (pip install '.[test]')")
    path = Path(dist.locate_file(f"cmeel.prefix/share/example-robot-data/robots/{relative}"))
    if not path.is_file():
        pytest.skip(f"example-robot-data has no {relative}")
    return path


SMALL = """\
<?xml version="1.0"?>
<robot name="small">
  <link name="world"/>
  <joint name="mount" type="fixed">
    <parent link="world"/><child link="base"/>
    <origin xyz="0.1 -0.2 0.05" rpy="0.1 0.2 0.3"/>
  </joint>
  <link name="base">
    <inertial><mass value="5"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.3" rpy="0.3 -0.2 0.7"/>
    <axis xyz="0 0 1"/>
    <limit lower="-2.5" upper="2.0" effort="120" velocity="2"/>
  </joint>
  <link name="l1">
    <inertial>
      <origin xyz="0.05 0.02 0.15" rpy="0.4 -0.3 1.1"/>
      <mass value="4.0"/>
      <inertia ixx="0.05" iyy="0.04" izz="0.02" ixy="0.004" ixz="-0.002" iyz="0.001"/>
    </inertial>
  </link>
  <joint name="l1_cover" type="fixed">
    <parent link="l1"/><child link="l1b"/>
    <origin xyz="0.1 0 0.2" rpy="0 1.0 0.5"/>
  </joint>
  <link name="l1b">
    <inertial>
      <origin xyz="0.02 0.01 -0.03" rpy="-0.6 0.2 0.1"/>
      <mass value="1.5"/>
      <inertia ixx="0.01" iyy="0.012" izz="0.008" ixy="0.001" ixz="0" iyz="-0.0005"/>
    </inertial>
  </link>
  <joint name="j2" type="continuous">
    <parent link="l1"/><child link="l2"/>
    <origin xyz="0 0.1 0.4" rpy="1.2 0 -0.4"/>
    <axis xyz="0 0.6 -0.8"/>
    <limit effort="80" velocity="3"/>
  </joint>
  <link name="l2">
    <inertial>
      <origin xyz="0.2 0 0" rpy="0 0.5 0"/>
      <mass value="3.0"/>
      <inertia ixx="0.01" iyy="0.08" izz="0.08" ixy="0" ixz="0.003" iyz="0"/>
    </inertial>
  </link>
  <joint name="j3" type="revolute">
    <parent link="l2"/><child link="l3"/>
    <origin xyz="0.4 0 0" rpy="0 -0.5 0.9"/>
    <axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="30" velocity="4"/>
  </joint>
  <link name="l3">
    <inertial>
      <origin xyz="0.1 0.01 0" rpy="0.2 0.2 0.2"/>
      <mass value="1.2"/>
      <inertia ixx="0.004" iyy="0.01" izz="0.009" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
  <joint name="j4" type="revolute">
    <parent link="l3"/><child link="l4"/>
    <origin xyz="0.15 0 0.02" rpy="0.3 0 0"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="30" velocity="4"/>
  </joint>
  <link name="l4">
    <inertial>
      <origin xyz="0.05 0 0" rpy="0 0 0.3"/>
      <mass value="0.8"/>
      <inertia ixx="0.002" iyy="0.003" izz="0.003" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
  <joint name="flange" type="fixed">
    <parent link="l4"/><child link="tool"/>
    <origin xyz="0.1 0.02 0" rpy="0 1.5707963267948966 0.2"/>
  </joint>
  <link name="tool">
    <inertial>
      <origin xyz="0 0 0.04" rpy="0.1 0 0"/>
      <mass value="0.5"/>
      <inertia ixx="0.001" iyy="0.001" izz="0.0005" ixy="0" ixz="0" iyz="0"/>
    </inertial>
  </link>
</robot>
"""


def problem_dict(urdf, base, tip, drives=(), outputs=None, **model) -> dict:
    return {"name": "urdf test",
            "model": {"urdf": str(urdf), "base_link": base, "tip_link": tip, "tool_origin": [0.01, 0.02, 0.1],
                      "tool_rpy_deg": [10.0, -20.0, 30.0], "gravity": [0.3, -1.0, -9.81],
                      **({"joints": list(drives)} if drives else {}), **({"outputs": outputs} if outputs else {}),
                      **model},
            "reference": {"kind": "joint_ptp", "q_start_rad": [0.0], "q_end_rad": [0.1], "duration": 0.5}}


def load(urdf, base, tip, drives=(), tmp_path=None, **model):
    """The Problem of a URDF model (its outputs: the actuated joints, so any arm is a valid problem)."""
    d = problem_dict(urdf, base, tip, drives, **model)
    chain_only = _chain_probe(d)
    acts = [j.name for j in chain_only.joints if j.kind != "passive"]
    d["model"]["outputs"] = acts
    d["reference"] = {"kind": "joint_ptp", "q_start_rad": [0.0] * len(acts), "q_end_rad": [0.1] * len(acts),
                      "duration": 0.5}
    return problem_from_dict(d, "urdf_test.toml")


def _chain_probe(d):
    """The chain of a problem dict whose outputs and reference do not fit yet (outputs checked later)."""
    from ffopt.io import problem as P
    from ffopt.io.urdf import build_urdf_chain
    from ffopt.io.values import plain

    v = P._ProblemValidator("urdf_test.toml")
    m = v.table(plain(d["model"]), P.MODEL_SCHEMA, "model")
    return build_urdf_chain(v, m, d["model"], "urdf_test.toml")[0]


def pinocchio_reference(path: Path, locked: dict[str, float] = ()):
    model = pin.buildModelFromUrdf(str(path))
    if locked:
        q_ref = pin.neutral(model)
        for name, value in dict(locked).items():
            jid = model.getJointId(name)
            i, nq = model.idx_qs[jid], model.nqs[jid]
            q_ref[i:i + nq] = [np.cos(value), np.sin(value)] if nq == 2 else [value]
        model = pin.buildReducedModel(model, [model.getJointId(n) for n in dict(locked)], q_ref)
    return model


def configuration(model, q):
    """Pinocchio's configuration of joint angles q (a continuous joint: cos, sin)."""
    out = []
    for jid in range(1, model.njoints):
        a = q[model.idx_vs[jid]]
        out += [np.cos(a), np.sin(a)] if model.nqs[jid] == 2 else [a]
    return np.array(out)


def compare_with_pinocchio(problem, model, base_to_world: pin.SE3, n_states=5, seed=0):
    """M, c, g and the tool pose of ffopt's chain against Pinocchio's model (gravity turned into the
    world frame), at random states."""
    chain = problem.chain
    n = chain.n_joints
    assert model.nv == n and [model.names[i] for i in range(1, model.njoints)] == [j.name for j in chain.joints]
    model.gravity = pin.Motion(base_to_world.rotation @ np.asarray(chain.gravity), np.zeros(3))
    data = model.createData()
    qs, dqs = ca.SX.sym("q", n), ca.SX.sym("dq", n)
    f_M = ca.Function("M", [qs], [mass_matrix(chain, qs)])
    f_b = ca.Function("b", [qs, dqs], [bias_torques(chain, qs, dqs)])
    f_tool = ca.Function("t", [qs], [tool_position(chain, qs), tool_rotation(chain, qs)])
    rng = np.random.default_rng(seed)
    lo = np.array([max(j.q_min, -np.pi) for j in chain.joints])
    hi = np.array([min(j.q_max, np.pi) for j in chain.joints])
    for _ in range(n_states):
        q, dq = rng.uniform(lo, hi), rng.normal(size=n) * 2.0
        qp = configuration(model, q)
        M_pin = pin.crba(model, data, qp).copy()
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        g_pin = pin.computeGeneralizedGravity(model, data, qp).copy()
        c_pin = pin.nonLinearEffects(model, data, qp, dq) - g_pin
        g = f_b(q, np.zeros(n)).full().ravel()
        c = f_b(q, dq).full().ravel() - g
        for mine, ref in ((f_M(q).full(), M_pin), (c, c_pin), (g, g_pin)):
            np.testing.assert_allclose(mine, ref, rtol=RTOL, atol=RTOL * max(1.0, np.abs(ref).max()))
        # the tool point and frame: tip_link's frame in Pinocchio, tool_origin/tool_rpy_deg in it
        pin.framesForwardKinematics(model, data, qp)
        tip = data.oMf[model.getFrameId(problem.urdf.tip_link, pin.FrameType.BODY)]
        p, R = f_tool(q)
        world = base_to_world.inverse() * tip
        np.testing.assert_allclose(p.full().ravel(), world.act(problem.raw_tool_point), atol=1e-12)
        np.testing.assert_allclose(R.full(), world.rotation @ problem.raw_tool_rotation, atol=1e-12)


def with_raw_tool(problem):
    from ffopt.models.chain import rotation_rpy

    m = problem.raw["model"]
    object.__setattr__(problem, "raw_tool_point", np.array(m["tool_origin"]))
    object.__setattr__(problem, "raw_tool_rotation", rotation_rpy(*np.radians(m.get("tool_rpy_deg", [0, 0, 0]))))
    return problem


ELASTIC = {"kind": "elastic_gear", "stiffness": 2.0e4, "damping": 10.0, "motor_inertia": 0.5}


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.urdf"
    path.write_text(SMALL)
    return path


def test_small_urdf_fixed_joints_rotated_inertials_rpy_origins(small):
    p = with_raw_tool(load(small, "world", "tool", [{"name": "j2", **ELASTIC}, {"name": "j3", "kind": "direct",
                                                                            "motor_inertia": 0.1}]))
    assert [j.name for j in p.chain.joints] == ["j1", "j2", "j3", "j4"]
    assert [j.kind for j in p.chain.joints] == ["direct", "elastic_gear", "direct", "direct"]
    j1, j2 = p.chain.joints[:2]
    assert j1.q_min == -2.5 and j1.q_max == 2.0 and j2.q_min == -np.inf and j2.q_max == np.inf  # continuous
    assert j1.body.mass == pytest.approx(5.5)  # l1 with l1b merged (fixed joint)
    assert p.chain.joints[-1].body.mass == pytest.approx(1.3)  # l4 with the tool link
    np.testing.assert_allclose(j2.axis, [0.0, 0.6, -0.8], atol=1e-15)
    assert [j.effort for j in p.urdf.joints] == [120.0, 80.0, 30.0, 30.0]
    compare_with_pinocchio(p, pinocchio_reference(small), pin.SE3.Identity())


def test_small_urdf_from_an_inner_base_link(small):
    """base_link below a fixed mount: the base frame is that link's, gravity given in it."""
    p = with_raw_tool(load(small, "base", "l4"))
    model = pinocchio_reference(small)
    base = model.frames[model.getFrameId("base", pin.FrameType.BODY)].placement  # base in the world (fixed)
    compare_with_pinocchio(p, model, base)


def test_locked_joint_is_merged_at_its_angle(small):
    p = with_raw_tool(load(small, "world", "tool", [{"name": "j3", "kind": "locked", "angle_deg": 25.0},
                                                    {"name": "j1", **ELASTIC}]))
    assert [j.name for j in p.chain.joints] == ["j1", "j2", "j4"] and p.urdf.locked == {"j3": np.radians(25.0)}
    compare_with_pinocchio(p, pinocchio_reference(small, {"j3": np.radians(25.0)}), pin.SE3.Identity())


def test_ur5_of_example_robot_data():
    path = erd("ur_description/urdf/ur5_robot.urdf")
    p = with_raw_tool(load(path, "base_link", "tool0", [{"name": "elbow_joint", **ELASTIC}]))
    assert p.chain.n_joints == 6 and p.urdf.joints[0].effort == 150.0
    compare_with_pinocchio(p, pinocchio_reference(path), pin.SE3.Identity(), seed=1)


def test_ur5_copy_shipped_with_ffopt_is_the_same_robot():
    mine = load(SHIPPED / "ur5.urdf", "base_link", "tool0").chain
    theirs = load(erd("ur_description/urdf/ur5_robot.urdf"), "base_link", "tool0").chain
    assert mine.n_joints == theirs.n_joints
    for a, b in zip(mine.joints, theirs.joints):
        assert a.body.mass == b.body.mass and np.array_equal(a.origin, b.origin) and np.array_equal(a.axis, b.axis)


FINGERS = [{"name": "panda_finger_joint1", "kind": "locked"}, {"name": "panda_finger_joint2", "kind": "locked"}]


def test_panda_of_example_robot_data_fingers_locked():
    path = erd("panda_description/urdf/panda.urdf")
    p = with_raw_tool(load(path, "panda_link0", "panda_hand", FINGERS + [{"name": "panda_joint2", **ELASTIC}]))
    assert p.chain.n_joints == 7
    assert p.chain.joints[3].q_max == -0.0698 and p.urdf.joints[6].effort == 12.0
    locked = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0}
    compare_with_pinocchio(p, pinocchio_reference(path, locked), pin.SE3.Identity(), seed=2)


def test_panda_with_a_locked_arm_joint():
    """The 7-axis arm as a 6-axis one: joint 3 locked at 10 deg (the shipped problems/panda_line.toml)."""
    path = erd("panda_description/urdf/panda.urdf")
    drives = FINGERS + [{"name": "panda_joint3", "kind": "locked", "angle_deg": 10.0}]
    p = with_raw_tool(load(path, "panda_link0", "panda_hand_tcp", drives))
    assert [j.name for j in p.chain.joints] == [f"panda_joint{i}" for i in (1, 2, 4, 5, 6, 7)]
    locked = {"panda_finger_joint1": 0.0, "panda_finger_joint2": 0.0, "panda_joint3": np.radians(10.0)}
    compare_with_pinocchio(p, pinocchio_reference(path, locked), pin.SE3.Identity(), seed=3)


def test_payload_is_given_in_the_tip_frame(small):
    """A payload in tip_link's frame equals a fixed link carrying it in the URDF."""
    payload = {"mass": 2.0, "com": [0.01, 0.03, 0.05], "inertia_diag": [0.01, 0.02, 0.025]}
    p = load(small, "world", "tool", payload=payload)
    with_link = SMALL.replace("</robot>", """<joint name="carry" type="fixed"><parent link="tool"/><child link="load"/>
      <origin xyz="0.01 0.03 0.05"/></joint>
      <link name="load"><inertial><mass value="2.0"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.025" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>""")
    path = small.with_name("loaded.urdf")
    path.write_text(with_link)
    q = ca.SX.sym("q", 4)
    M = ca.Function("M", [q], [mass_matrix(p.chain, q)])
    M2 = ca.Function("M", [q], [mass_matrix(load(path, "world", "tool").chain, q)])
    qv = [0.3, -0.4, 0.5, 0.2]
    np.testing.assert_allclose(M(qv).full(), M2(qv).full(), rtol=1e-12, atol=1e-14)


def test_torque_max_from_the_urdf_effort_limits(small):
    d = problem_dict(small, "world", "tool", outputs=["j1", "j2", "j3", "j4"])
    d["reference"] = {"kind": "joint_ptp", "q_start_rad": [0.0] * 4, "q_end_rad": [0.1] * 4, "duration": 0.5}
    d["nlp"] = {"torque_max": "urdf"}
    assert problem_from_dict(d, "x.toml").nlp.torque_max == (120.0, 80.0, 30.0, 30.0)
    d["model"] = {k: v for k, v in d["model"].items() if k not in ("urdf", "base_link", "tip_link")}
    d["model"]["joints"] = [{"name": f"j{i}", "kind": "direct", "axis": [0, 0, 1], "mass": 1.0} for i in range(1, 5)]
    with pytest.raises(ProblemError, match="nlp.torque_max"):
        problem_from_dict(d, "x.toml")


def test_relative_and_package_paths(small, tmp_path, monkeypatch):
    problem = tmp_path / "p.toml"
    ref = 'reference = { kind = "joint_ptp", q_start_rad = [0.0, 0.0, 0.0, 0.0], q_end_rad = [0.1, 0.1, 0.1, 0.1], ' \
          'duration = 0.5 }'
    text = textwrap.dedent(f"""\
        name = "relative"
        {ref}
        [model]
        urdf = "URDF"
        base_link = "world"
        tip_link = "tool"
        tool_origin = [0.0, 0.0, 0.1]
        outputs = ["j1", "j2", "j3", "j4"]
        """)
    problem.write_text(text.replace("URDF", "small.urdf"))
    p = load_problem(problem)
    assert p.to_dict()["model"]["urdf"] == str(small.resolve())  # the written problem.toml finds it anywhere
    pkg = tmp_path / "pkgs" / "my_robot" / "urdf"
    pkg.mkdir(parents=True)
    (pkg / "r.urdf").write_text(SMALL)
    problem.write_text(text.replace("URDF", "package://my_robot/urdf/r.urdf"))
    with pytest.raises(ProblemError, match=r"p.toml: model.urdf: .*package 'my_robot' not found.*ROS_PACKAGE_PATH"):
        load_problem(problem)
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "nothing") + os.pathsep + str(tmp_path / "pkgs"))
    assert load_problem(problem).chain.n_joints == 4
    monkeypatch.delenv("ROS_PACKAGE_PATH")
    (tmp_path / "my_robot").symlink_to(tmp_path / "pkgs" / "my_robot")  # beside the problem file
    assert load_problem(problem).chain.n_joints == 4


# ----------------------------------------------------------------------------------------------- errors
def bad(urdf_text: str, tmp_path, base="world", tip="tool", drives=(), **model) -> str:
    path = tmp_path / "bad.urdf"
    path.write_text(urdf_text)
    with pytest.raises(ProblemError) as err:
        load(path, base, tip, drives, **model)
    return str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(ProblemError, match=r"urdf_test.toml: model.urdf: no such URDF file: .*nowhere.urdf"):
        load(tmp_path / "nowhere.urdf", "a", "b")


def test_mesh_only_link_on_the_chain(tmp_path):
    text = SMALL.replace("""<inertial>
      <origin xyz="0.2 0 0" rpy="0 0.5 0"/>
      <mass value="3.0"/>
      <inertia ixx="0.01" iyy="0.08" izz="0.08" ixy="0" ixz="0.003" iyz="0"/>
    </inertial>""", '<visual><geometry><mesh filename="package://x/l2.stl"/></geometry></visual>')
    msg = bad(text, tmp_path)
    assert "model.urdf" in msg and "link 'l2'" in msg and "no <inertial>" in msg and "bad.urdf" in msg


def test_branch_off_the_chain_is_not_a_serial_chain(tmp_path):
    text = SMALL.replace("</robot>", """<joint name="side" type="revolute"><parent link="l2"/><child link="s"/>
      <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <link name="s"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
      </link></robot>""")
    msg = bad(text, tmp_path)
    assert "not a serial chain between 'world' and 'tool'" in msg and "'side' branches off link 'l2'" in msg
    assert 'kind = "locked"' in msg
    p = load(tmp_path / "bad.urdf", "world", "tool", [{"name": "side", "kind": "locked"}])  # locking it helps
    assert p.chain.n_joints == 4


def test_tip_not_below_base(small):
    with pytest.raises(ProblemError, match=r"model.tip_link: 'l1' is not below base_link 'l3'"):
        load(small, "l3", "l1")
    with pytest.raises(ProblemError, match=r"model.base_link: 'bse' is not a link of small.urdf \(did you mean 'base'"):
        load(small, "bse", "tool")


@pytest.mark.parametrize("kind, words", [("prismatic", "prismatic: ffopt reads revolute and continuous joints"),
                                         ("floating", "of type 'floating'"), ("planar", "of type 'planar'")])
def test_unsupported_joint_types(tmp_path, kind, words):
    msg = bad(SMALL.replace('<joint name="j3" type="revolute">', f'<joint name="j3" type="{kind}">'), tmp_path)
    assert "model.urdf" in msg and "joint 'j3'" in msg and words in msg


def test_prismatic_joint_can_be_locked(tmp_path):
    path = tmp_path / "p.urdf"
    path.write_text(SMALL.replace('<joint name="j3" type="revolute">', '<joint name="j3" type="prismatic">'))
    assert [j.name for j in load(path, "world", "tool", [{"name": "j3", "kind": "locked"}]).chain.joints] == \
        ["j1", "j2", "j4"]


def test_joint_name_not_in_the_urdf(small):
    with pytest.raises(ProblemError, match=r"urdf_test.toml: model.joints\[1\].name: 'j_2' is not a joint of "
                                           r"small.urdf \(did you mean 'j2'\?\)"):
        load(small, "world", "tool", [{"name": "j_2", **ELASTIC}])
    with pytest.raises(ProblemError, match=r"model.joints\[1\].name: 'mount' is a joint of small.urdf but not of "
                                           r"the chain"):
        load(small, "world", "tool", [{"name": "mount", **ELASTIC}])


@pytest.mark.parametrize("entry, field, words", [
    ({"name": "j2", "kind": "direct", "mass": 3.0}, "model.joints[1].mass", "comes from the URDF"),
    ({"name": "j2", "kind": "direct", "axis": [1, 0, 0]}, "model.joints[1].axis", "comes from the URDF"),
    ({"name": "j2", "kind": "locked", "stiffness": 1.0}, "model.joints[1].stiffness", "a locked joint has no drive"),
    ({"name": "j2", "kind": "direct", "angle_deg": 3.0}, "model.joints[1].angle_deg", "only a locked joint"),
    ({"name": "j2", "kind": "elastic_gear", "stiffness": 1e4}, "model.joints[1].motor_inertia", "motor_inertia > 0"),
])
def test_drive_entries_are_checked_like_a_written_chain(small, entry, field, words):
    with pytest.raises(ProblemError, match=re.escape(f"urdf_test.toml: {field}: ") + ".*" + re.escape(words)):
        load(small, "world", "tool", [entry])


def test_missing_base_link_and_locked_in_a_written_chain(small):
    d = problem_dict(small, "world", "tool")
    del d["model"]["base_link"]
    with pytest.raises(ProblemError, match="model.base_link: missing required key"):
        problem_from_dict(d, "x.toml")
    d = problem_dict(small, "world", "tool")
    del d["model"]["urdf"]
    with pytest.raises(ProblemError, match=r"model.joints: missing required key.*\[model\] urdf"):
        problem_from_dict(d, "x.toml")


def test_a_urdf_given_as_the_problem_file(small, capsys):
    with pytest.raises(ProblemError, match=r"small.urdf: this is a URDF robot description, not a problem file: write "
                                           r"a problem file with \[model\] urdf = \"small.urdf\""):
        load_problem(small)
    renamed = small.with_name("robot.toml")  # found by its content too
    renamed.write_text(SMALL)
    with pytest.raises(ProblemError, match="this is a URDF robot description"):
        load_problem(renamed)
    assert main(["plan", str(small), "--out", str(small.parent / "out")]) == 2
    assert "this is a URDF robot description, not a problem file" in capsys.readouterr().err


def test_invalid_urdf_is_refused_with_the_readers_reason(tmp_path):
    msg = bad(SMALL.replace('<limit lower="-1" upper="1" effort="30" velocity="4"/>', "", 1), tmp_path)
    assert "model.urdf" in msg and "the URDF reader refused it" in msg and "does not specify limits" in msg
    msg = bad("<robot name='x'><link name='a'>", tmp_path)
    assert "not valid XML" in msg


def test_a_path_outside_the_urdf_joint_limits_is_refused_before_the_solve(tmp_path, capsys):
    """The URDF's <limit lower upper> are the path check's limits: the UR5 line needs the elbow at 88-103 deg
    (rigid inverse kinematics, measured on 2026-11-27); with the elbow's upper limit at 95 deg it is refused
    (exit 2), naming the joint, the angle, the time and the limits, and nothing is written."""
    urdf = (SHIPPED / "ur5.urdf").read_text()
    start = urdf.index('<joint name="elbow_joint"')
    limit = urdf.index("<limit", start)
    end = urdf.index("/>", limit) + 2
    narrowed = urdf[:start] + urdf[start:limit] + re.sub(r'upper="[^"]*"', f'upper="{float(np.radians(95.0))!r}"',
                                                         urdf[limit:end]) + urdf[end:]
    (tmp_path / "ur5.urdf").write_text(narrowed)
    problem = (ROOT / "problems" / "ur5_line.toml").read_text()
    problem = re.sub(r'urdf = "[^"]*"', 'urdf = "ur5.urdf"', problem)
    (tmp_path / "ur5_line.toml").write_text(problem)
    out = tmp_path / "out"
    assert main(["plan", str(tmp_path / "ur5_line.toml"), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "joint elbow_joint" in err and "outside its limits" in err and "95.00] deg" in err
    assert not out.exists()
    # the shipped limits (-180..180 deg) let the same line through the path check
    assert main(["plan", str(ROOT / "problems" / "ur5_line.toml"), "--out", str(tmp_path / "ok"), "--quiet",
                 "--no-verify", "--no-plots"]) == 0


def ur5_line_with_limit(tmp_path: Path, joint: str, **limit) -> Path:
    """problems/ur5_line.toml on a copy of the shipped UR5 URDF whose ``joint`` has the <limit> attributes
    ``limit`` (e.g. velocity="2.0") instead of the published ones; returns the problem file."""
    urdf = (SHIPPED / "ur5.urdf").read_text()
    start = urdf.index(f'<joint name="{joint}"')
    begin = urdf.index("<limit", start)
    end = urdf.index("/>", begin) + 2
    tag = urdf[begin:end]
    for key, value in limit.items():
        tag = re.sub(rf'{key}="[^"]*"', f'{key}="{value}"', tag)
    (tmp_path / "ur5.urdf").write_text(urdf[:begin] + tag + urdf[end:])
    problem = re.sub(r'urdf = "[^"]*"', 'urdf = "ur5.urdf"', (ROOT / "problems" / "ur5_line.toml").read_text())
    (tmp_path / "ur5_line.toml").write_text(problem)
    return tmp_path / "ur5_line.toml"


def rigid_path_speeds(p) -> tuple[np.ndarray, np.ndarray]:
    """Link speeds of the rigid path by central differences of its inverse kinematics on the path check's grid
    (independent of ffopt's J^-1 dtheta/dt; the difference error is ~3e-4 rad/s on the UR5 line)."""
    from ffopt.sim.baselines import rigid_inverse_kinematics

    t = np.linspace(0.0, p.reference.t_end, 401)
    return t, np.gradient(rigid_inverse_kinematics(p.model, p.reference, t, p.reference_spec.joint_guess), t, axis=0)


def test_a_path_faster_than_a_urdf_velocity_limit_is_refused_before_the_solve(tmp_path, capsys):
    """The URDF's <limit velocity> bounds the link speed along the rigid path: the UR5 line turns the base at up
    to 2.415 rad/s (measured on 2026-11-27; published limit 3.15 rad/s). With the limit at 2.0 rad/s the plan is
    refused (exit 2) naming the joint, the peak speed, its time and the limit; nothing is written."""
    from ffopt.plan import check_joint_speeds

    problem = ur5_line_with_limit(tmp_path, "shoulder_pan_joint", velocity="2.0")
    out = tmp_path / "out"
    assert main(["plan", str(problem), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "joint shoulder_pan_joint" in err and "above its velocity limit 2 rad/s" in err and "<limit velocity>" in err
    assert not out.exists()
    found = re.search(r"needs ([\d.]+) rad/s at t = ([\d.]+) s", err)
    t, speeds = rigid_path_speeds(load_problem(problem))
    k = np.argmax(np.abs(speeds[:, 0]))
    assert float(found.group(1)) == pytest.approx(abs(speeds[k, 0]), abs=2e-3)  # 4 digits printed; 3e-4 difference
    assert abs(float(found.group(2)) - t[k]) <= t[1] - t[0]
    # a limit just above the peak lets the path through (the check alone: no solve)
    p = load_problem(ur5_line_with_limit(tmp_path, "shoulder_pan_joint", velocity=f"{abs(speeds[k, 0]) + 0.01}"))
    from ffopt.sim.baselines import rigid_inverse_kinematics

    check_joint_speeds(p, t, rigid_inverse_kinematics(p.model, p.reference, t, p.reference_spec.joint_guess))


def test_a_plan_above_a_urdf_effort_limit_is_written_with_a_warning(tmp_path, capsys):
    """The URDF's <limit effort> is checked on the plan: the UR5 line needs a peak of 23.3 N m on the shoulder
    lift (measured on 2026-11-27; published limit 150 N m). With the limit at 20 N m the plan is still written
    (exit 0: the tracking verdict is about the path; the limits bound the plan only where nlp.torque_max =
    "urdf" asks for it), a warning names the joint, the peak, its time and the limit, and summary.json records
    it, read back against trajectory.csv."""
    import json

    problem = ur5_line_with_limit(tmp_path, "shoulder_lift_joint", effort="20.0")
    out = tmp_path / "out"
    assert main(["plan", str(problem), "--out", str(out), "--no-verify", "--no-plots"]) == 0
    captured = capsys.readouterr()
    found = re.search(r"warning: joint shoulder_lift_joint: the plan's peak torque ([\d.]+) N m at t = ([\d.]+) s "
                      r"exceeds its effort limit 20 N m \(the URDF's <limit effort>\)", captured.err)
    assert found, captured.err
    assert "above the URDF effort limit: shoulder_lift_joint" in captured.out
    summary = json.loads((out / "summary.json").read_text())
    data = np.genfromtxt(out / "trajectory.csv", delimiter=",", names=True)
    u = np.abs(data["u_shoulder_lift_joint"])
    k = int(np.argmax(u))
    assert summary["urdf"]["effort_limits_exceeded"] == [
        {"joint": "shoulder_lift_joint", "peak_Nm": pytest.approx(u[k], rel=1e-9), "t_s": pytest.approx(data["t"][k]),
         "limit_Nm": 20.0}]
    assert 20.0 < u[k] < 2 * 23.3 and float(found.group(1)) == pytest.approx(u[k], rel=1e-3)
    assert float(found.group(2)) == pytest.approx(data["t"][k], abs=1e-3)
    assert any("shoulder_lift_joint" in w for w in summary["solver"]["warnings"])
    # the URDF source: file, chain ends, joints with their kinds and limits
    ur5 = summary["urdf"]
    assert Path(ur5["file"]) == (tmp_path / "ur5.urdf").resolve()
    assert (ur5["robot"], ur5["base_link"], ur5["tip_link"]) == ("ur5", "base_link", "tool0")
    assert [(j["name"], j["kind"]) for j in ur5["joints"]][:2] == [("shoulder_pan_joint", "elastic_gear"),
                                                                   ("shoulder_lift_joint", "elastic_gear")]
    assert ur5["joints"][1]["effort_Nm"] == 20.0 and ur5["joints"][1]["velocity_rad_s"] == 3.15


def test_summary_names_the_urdf_and_its_locked_joints():
    """problems/panda_line.toml: joint 3 and the fingers locked, the other six elastic; no effort or velocity
    limit exceeded by a plan at rest."""
    from types import SimpleNamespace

    from ffopt.plan import urdf_summary

    p = load_problem(ROOT / "problems" / "panda_line.toml")
    joints = [j.name for j in p.chain.joints]
    resting = SimpleNamespace(actuated_joints=joints, torques=np.zeros((3, 6)), t=np.arange(3.0),
                              v=np.zeros((3, p.model.layout.nq)))
    s = urdf_summary(p, resting)["urdf"]
    assert Path(s["file"]) == (SHIPPED / "panda.urdf").resolve()
    assert (s["base_link"], s["tip_link"]) == ("panda_link0", "panda_hand_tcp")
    kinds = {j["name"]: j["kind"] for j in s["joints"]}
    assert kinds == {**{f"panda_joint{i}": "elastic_gear" for i in (1, 2, 4, 5, 6, 7)}, "panda_joint3": "locked",
                     "panda_finger_joint1": "locked", "panda_finger_joint2": "locked"}
    by_name = {j["name"]: j for j in s["joints"]}
    assert by_name["panda_joint3"]["angle_rad"] == 0.0 and by_name["panda_finger_joint1"]["position_m"] == 0.0
    assert by_name["panda_joint4"]["upper_rad"] == -0.0698 and by_name["panda_joint7"]["effort_Nm"] == 12.0
    assert s["effort_limits_exceeded"] == [] and s["velocity_limits_exceeded"] == []


def test_the_plan_as_made_is_checked_against_the_urdf_velocity_limits():
    """After the solve the planned link speeds (the reshaped rest-to-rest timing, the deflection rates) are
    checked against <limit velocity>: a limit 1 % below the plan's peak speed of the UR5 line's base joint is
    reported with that joint, peak and time (read here from the plan's own speed table), 1 % above it is not."""
    from dataclasses import replace

    import ffopt
    from ffopt.plan import velocity_limits_exceeded

    result = ffopt.plan(ROOT / "problems" / "ur5_line.toml", verify=False, progress=False)
    p, tr = result.problem, result.trajectory
    k = [j.name for j in p.chain.joints].index("shoulder_pan_joint")
    peak, i = np.abs(tr.v[:, k]).max(), int(np.abs(tr.v[:, k]).argmax())

    def with_limit(factor):
        joints = [replace(j, velocity=peak * factor) if j.name == "shoulder_pan_joint" else j for j in p.urdf.joints]
        return replace(p, urdf=replace(p.urdf, joints=tuple(joints)))

    found = velocity_limits_exceeded(with_limit(0.99), tr)
    assert [e["joint"] for e in found] == ["shoulder_pan_joint"]
    assert found[0]["peak_rad_s"] == pytest.approx(peak) and found[0]["t_s"] == pytest.approx(tr.t[i])
    assert velocity_limits_exceeded(with_limit(1.01), tr) == []


def test_the_readmes_compact_urdf_problem_reads_as_the_shipped_ur5_line(tmp_path):
    """The README's example of a 6-axis elastic arm from its URDF (one inline table per joint) is under 30
    lines and gives the same model (every joint's drive data, the mass matrix at a random state) and the same
    path as problems/ur5_line.toml."""
    import shutil

    readme = (ROOT / "README.md").read_text()
    block = re.search(r"A 6-axis elastic arm from its URDF in (\d+) lines.*?```toml\n(.*?)```", readme, re.S)
    assert block, "the README's compact URDF example is gone"
    text = block.group(2)
    assert len(text.splitlines()) == int(block.group(1)) < 30
    (tmp_path / "urdf").mkdir()
    shutil.copy(SHIPPED / "ur5.urdf", tmp_path / "urdf" / "ur5.urdf")
    (tmp_path / "compact.toml").write_text(text)
    compact, shipped = load_problem(tmp_path / "compact.toml"), load_problem(ROOT / "problems" / "ur5_line.toml")
    assert compact.to_dict()["model"]["joints"] == shipped.to_dict()["model"]["joints"]
    q = np.random.default_rng(7).uniform(-1, 1, compact.chain.n_joints)
    M = [np.array(ca.evalf(mass_matrix(p.chain, ca.DM(q)))) for p in (compact, shipped)]
    assert np.array_equal(*M) and np.abs(M[0]).max() > 0
    t = np.linspace(0.0, shipped.reference.t_end, 7)
    for p in (compact, shipped):  # the path's geometry: the same end points in space
        assert np.allclose(p.reference.evaluate(t)[[0, -1]], shipped.reference.evaluate(t)[[0, -1]], atol=1e-12)


# ------------------------------------------------------------------------- the XML checked before Pinocchio
# urdfdom zeroed an inertia tensor written "nan" or "abc", took negative masses and moments, and a joint that
# closes a loop crashed the process (a segmentation fault with an empty stderr).
INERTIA_L2 = 'ixx="0.01" iyy="0.08" izz="0.08" ixy="0" ixz="0.003" iyz="0"'


@pytest.mark.parametrize("old, new, words", [
    (INERTIA_L2, INERTIA_L2.replace('ixx="0.01"', 'ixx="nan"'), "link 'l2' <inertial> <inertia> ixx: must be finite"),
    (INERTIA_L2, INERTIA_L2.replace('ixx="0.01"', 'ixx="abc"'), "link 'l2' <inertial> <inertia> ixx: expected 1 number"),
    (INERTIA_L2, INERTIA_L2.replace('iyy="0.08"', 'iyy="-0.08"'), "link 'l2' <inertial> <inertia>: must be positive "
                                                                  "semi-definite"),
    (INERTIA_L2, INERTIA_L2.replace('ixx="0.01"', 'ixx="0.5"'), "break the triangle inequality"),
    ('<mass value="3.0"/>', '<mass value="-3.0"/>', "link 'l2' <inertial> <mass> value: must be >= 0 kg, got -3"),
    ('<mass value="3.0"/>', '<mass value="1e400"/>', "<mass> value: must be finite"),
    ('<origin xyz="0.4 0 0" rpy="0 -0.5 0.9"/>', '<origin xyz="0.4 0 inf" rpy="0 -0.5 0.9"/>',
     "joint 'j3' <origin> xyz: must be finite"),
    ('<axis xyz="1 0 0"/>', '<axis xyz="0 0 0"/>', "joint 'j3' <axis> xyz: is zero"),
    ('<axis xyz="1 0 0"/>', '<axis xyz="1 0"/>', "joint 'j3' <axis> xyz: expected 3 numbers"),
    ('<limit lower="-1" upper="1" effort="30"', '<limit lower="1" upper="-1" effort="30"',
     "joint 'j3' <limit>: lower 1 is above upper -1"),
    ('<child link="l3"/>', '<child link="l9"/>', "joint 'j3' <child>: link 'l9' is not defined"),
    ('<link name="l4">', '<link name="l3">', "link 'l3': defined twice"),
    ('<joint name="j4" type="revolute">', '<joint name="j3" type="revolute">', "joint 'j3': defined twice"),
    ('<joint name="j4" type="revolute">', '<joint name="j4" type="hinge">', "joint 'j4': type 'hinge' is not a URDF"),
    ("</robot>", '<joint name="back" type="revolute"><parent link="l4"/><child link="l1"/><axis xyz="0 0 1"/>'
                 '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>',
     "joint 'back': link 'l1' already hangs on joint 'j1': a second parent closes a loop"),
    ("</robot>", '<joint name="self" type="fixed"><parent link="l4"/><child link="l4"/></joint></robot>',
     "joint 'self': connects link 'l4' to itself"),
    ("</robot>", '<link name="loose"/></robot>', "links 'world', 'loose': have no parent joint"),
    ("</robot>", '<link name="a"/><link name="b"/><joint name="ab" type="fixed"><parent link="a"/><child link="b"/>'
                 '</joint><joint name="ba" type="fixed"><parent link="b"/><child link="a"/></joint></robot>',
     "joints 'ba', 'ab': form a closed loop"),
])
def test_the_urdf_is_checked_before_the_urdf_library_reads_it(tmp_path, old, new, words):
    assert old in SMALL
    msg = bad(SMALL.replace(old, new, 1), tmp_path)
    assert msg.startswith("urdf_test.toml: model.urdf: ") and "bad.urdf: " in msg and words in msg, msg


def test_unphysical_bodies_beside_the_chain_are_the_world(tmp_path):
    """A link above base_link is the fixed world: its numbers must be finite, its body need not be physical
    (real URDFs hold such inertias on sensor mounts and mobile bases)."""
    text = SMALL.replace('<inertia ixx="0.1" iyy="0.1" izz="0.1"', '<inertia ixx="0.1" iyy="0.1" izz="0.5"')
    path = tmp_path / "ok.urdf"
    path.write_text(text)
    assert load(path, "base", "tool").chain.n_joints == 4
    assert "break the triangle inequality" in bad(text, tmp_path, base="world")


def test_a_loop_in_the_ur5_is_one_line_not_a_crash(tmp_path):
    """The UR5 with a joint from wrist_3_link back to shoulder_link: exit 2 naming the joint, in a real
    process (the URDF library crashed it with a segmentation fault before)."""
    import shutil
    import subprocess
    import sys

    text = (SHIPPED / "ur5.urdf").read_text().replace("</robot>", """<joint name="loop" type="revolute">
      <parent link="wrist_3_link"/><child link="shoulder_link"/><axis xyz="0 0 1"/>
      <limit effort="28.0" lower="-1" upper="1" velocity="3.2"/></joint></robot>""")
    (tmp_path / "urdf").mkdir()
    (tmp_path / "urdf" / "ur5.urdf").write_text(text)
    shutil.copy(ROOT / "problems" / "ur5_line.toml", tmp_path / "p.toml")
    proc = subprocess.run([sys.executable, "-m", "ffopt.cli.main", "plan", "p.toml", "--out", "out"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "joint 'loop': link 'shoulder_link' already hangs on joint 'shoulder_pan_joint'" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.toml", "urdf"]


def test_a_crash_while_the_urdf_readers_messages_are_captured_still_reports():
    """Native code that crashes while file descriptor 2 is captured (urdfdom's messages) leaves Python's fault
    handler's report on the real stderr, not in the capture file."""
    import subprocess
    import sys

    code = "import ctypes\nfrom ffopt.io.urdf import _c_stderr\nwith _c_stderr():\n    ctypes.string_at(0)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "Segmentation fault" in proc.stderr, proc.stderr
