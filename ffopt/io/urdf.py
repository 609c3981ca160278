"""URDF robot descriptions -> the geometry and rigid bodies of a ``Chain`` (``[model] urdf = ...``).

The URDF is read by Pinocchio's URDF reader (``pin.buildModelFromUrdf``, urdfdom inside), which
already merges every link hanging on a ``fixed`` joint into the body of its moving parent (mass,
centre of mass and inertia combined, an inertial ``origin`` rpy turned into the link frame) and
composes the joint origins across fixed joints. Joints of kind ``locked`` are fixed at their angle
the same way (``pin.buildReducedModel``). From that model this module takes the serial chain between
``base_link`` and ``tip_link``: per moving joint its origin and fixed rotation in the preceding
body's frame (the URDF ``<origin xyz rpy>``), its axis (the URDF ``<axis>``, in the joint frame), the
body it moves (about its centre of mass, in the child link's frame, which is the joint frame) and
its ``<limit>`` (lower/upper become ``q_min``/``q_max``, effort and velocity are recorded).

What Pinocchio's model does not say is read from the XML itself (``xml.etree``): the joint types as
written (to refuse prismatic, floating and planar joints by name) and which links have an
``<inertial>`` (a link moved by the chain without one is refused: Pinocchio would give it zero
mass silently).

Conventions: ``continuous`` joints are revolute joints without position limits; everything above
or beside ``base_link`` is the fixed world; links beyond ``tip_link`` on fixed joints are part of the
last body; a moving joint that branches off the chain (a gripper finger, a second arm on a link) is
refused: lock it (kind ``locked``) or cut the URDF.
"""

from __future__ import annotations

import contextlib
import difflib
import faulthandler
import os
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError
from ffopt.io.urdf_checks import check_urdf_xml
from ffopt.models.chain import Body

ROTATIONAL = ("revolute", "continuous")
PACKAGE = "package://"


@dataclass(frozen=True)
class UrdfJoint:
    """One moving joint of the chain as the URDF gives it (frames as in ``ffopt.models.chain``)."""

    name: str
    urdf_type: str  # revolute | continuous
    axis: np.ndarray  # (3,) unit, joint frame
    origin: np.ndarray  # (3,) in the preceding body's frame (the base_link frame for the first)
    rotation: np.ndarray  # (3, 3) joint frame in the preceding body's frame
    body: Body  # the link it moves with everything fixed (or locked) to it, in the joint frame
    q_min: float = -np.inf  # rad; continuous: no limit
    q_max: float = np.inf
    effort: float = np.inf  # N m, URDF <limit effort>; inf where not given
    velocity: float = np.inf  # rad/s, URDF <limit velocity>


@dataclass(frozen=True)
class UrdfChain:
    """The serial chain between base_link and tip_link of a URDF."""

    path: Path
    robot: str  # <robot name>
    base_link: str
    tip_link: str
    joints: tuple[UrdfJoint, ...]
    tip_rotation: np.ndarray  # (3, 3) tip_link frame in the last body's frame
    tip_origin: np.ndarray  # (3,) tip_link origin in the last body's frame
    locked: dict = field(default_factory=dict)  # joint name -> angle (rad) / position (m) it is fixed at
    locked_types: dict = field(default_factory=dict)  # joint name -> its URDF type (revolute, prismatic, ...)

    def to_last_body(self, point: np.ndarray) -> np.ndarray:
        """A point given in tip_link's frame, in the last body's frame."""
        return self.tip_rotation @ np.asarray(point, float) + self.tip_origin

    def body_to_last(self, body: Body) -> Body:
        """A body given in tip_link's frame, in the last body's frame."""
        R = self.tip_rotation
        return Body(body.mass, self.to_last_body(body.com), R @ np.asarray(body.inertia, float) @ R.T)


def looks_like_urdf(text: str, path: Path) -> bool:
    """A URDF robot description given where a problem file was expected."""
    if path.suffix.lower() in (".urdf", ".xacro"):
        return True
    head = text.lstrip("\ufeff \t\r\n")[:4000]
    return head.startswith("<") and "<robot" in head


def resolve(spec: str, problem_dir: Path, where: str) -> Path:
    """The URDF file named in a problem file: a path relative to the problem file (or absolute), or
    ``package://<package>/<path>`` found in a directory of $ROS_PACKAGE_PATH or beside the problem
    file (``<problem dir>/<package>/<path>``)."""
    if not spec.startswith(PACKAGE):
        p = Path(os.path.expanduser(spec))
        p = p if p.is_absolute() else problem_dir / p
        if not p.is_file():
            raise ProblemError(f"{where}: no such URDF file: {p}" + (" (a directory)" if p.is_dir() else ""))
        return p.resolve()
    package, _, rest = spec[len(PACKAGE):].partition("/")
    roots = [Path(r) for r in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if r] + [problem_dir]
    tried = []
    for root in roots:
        for candidate in (root / package / rest, root / rest) if root.name == package else (root / package / rest,):
            tried.append(str(candidate))
            if candidate.is_file():
                return candidate.resolve()
    raise ProblemError(f"{where}: {spec!r}: package {package!r} not found (looked for {', '.join(tried)}); set "
                       "ROS_PACKAGE_PATH to the folder that holds it, or give the URDF's path relative to the "
                       "problem file")


def _xml(path: Path, where: str) -> ET.Element:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise ProblemError(f"{where}: {path}: not valid XML: {err}") from None
    except OSError as err:
        raise ProblemError(f"{where}: cannot read {path}: {err.strerror or err}") from None
    if root.tag != "robot":
        raise ProblemError(f"{where}: {path}: not a URDF robot description (the root element is <{root.tag}>, "
                           "expected <robot>)")
    return root


def _did_you_mean(name: str, names, what: str) -> str:
    close = difflib.get_close_matches(name, list(names), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" ({what}: {', '.join(sorted(names))})"


def read_chain(path: Path, base_link: str, tip_link: str, locked: dict[str, float], source: str,
               given: dict[str, str] | None = None) -> UrdfChain:
    """The chain between ``base_link`` and ``tip_link`` of the URDF at ``path``, joints of ``locked``
    (name -> angle in rad, or position in m for a prismatic joint) fixed. Errors name ``source`` (the
    problem file) and the field; ``given`` maps each joint name of the problem file to its field
    (``model.joints[2].name``), each must be a joint of the URDF."""
    import pinocchio as pin

    where, model_where = f"{source}: model.urdf", f"{source}: model"

    xml = _xml(path, where)
    check_urdf_xml(xml, path, where, base_link)  # numbers, bodies and the tree, before the URDF library reads them
    types = {j.get("name"): j.get("type") for j in xml.iter("joint") if j.get("type") is not None}
    child_of = {j.get("name"): (j.find("child").get("link") if j.find("child") is not None else None)
                for j in xml.iter("joint") if j.get("type") is not None}
    inertial = {ln.get("name"): ln.find("inertial") is not None for ln in xml.findall("link")}
    with _c_stderr() as said:
        try:
            model = pin.buildModelFromUrdf(str(path))
        except (ValueError, RuntimeError) as err:
            model, failure = None, str(err)
    if model is None:  # urdfdom writes its reasons to the C stderr: "Error: ... at line N in <source>"
        reasons = [ln.strip().removeprefix("Error:").strip() for ln in said[0].splitlines()
                   if ln.strip() and not ln.strip().startswith("at line")]
        text = "; ".join(reasons) or " ".join(failure.split())
        raise ProblemError(f"{where}: {path}: the URDF reader refused it: {text}")
    given = given or {name: f"model.joints.{name}" for name in locked}
    for name, field_ in given.items():
        if name not in types:
            raise ProblemError(f"{source}: {field_}: {name!r} is not a joint of {path.name}"
                               + _did_you_mean(name, types, "its joints"))
    for name in locked:
        if types[name] not in (*ROTATIONAL, "prismatic"):
            raise ProblemError(f"{source}: {given.get(name, name)}: the {types[name]} joint {name!r} cannot be "
                               "locked (only revolute, continuous and prismatic joints)")
    if locked:
        q_ref = pin.neutral(model)
        ids = []
        for name, value in locked.items():
            jid = model.getJointId(name)
            i, nq = model.idx_qs[jid], model.nqs[jid]
            q_ref[i:i + nq] = [np.cos(value), np.sin(value)] if nq == 2 else [value]
            ids.append(jid)
        model = pin.buildReducedModel(model, ids, q_ref)
    links = {f.name: f for f in model.frames if f.type == pin.FrameType.BODY}
    for key, link in (("base_link", base_link), ("tip_link", tip_link)):
        if link not in links:
            raise ProblemError(f"{model_where}.{key}: {link!r} is not a link of {path.name}"
                               + _did_you_mean(link, links, "its links"))
    base, tip = links[base_link], links[tip_link]
    path_ids, j = [], tip.parentJoint
    while j != base.parentJoint:
        if j == 0:
            raise ProblemError(f"{model_where}.tip_link: {tip_link!r} is not below base_link "
                               f"{base_link!r} in {path.name} (no chain of joints leads from the base to the tip)")
        path_ids.append(j)
        j = model.parents[j]
    path_ids.reverse()
    if not path_ids:
        raise ProblemError(f"{model_where}.tip_link: no moving joint between {base_link!r} and "
                           f"{tip_link!r} in {path.name}" + (" (every joint between them is locked)" if locked else ""))
    on_path = set(path_ids)
    for jid in range(1, model.njoints):
        if jid not in on_path and model.parents[jid] in on_path:
            name = model.names[jid]
            raise ProblemError(f"{where}: {path.name} is not a serial chain between {base_link!r} and {tip_link!r}: "
                               f"the {types.get(name, 'moving')} joint {name!r} branches off link "
                               f"{_link_of(model, links, model.parents[jid])!r}; lock it with a [[model.joints]] entry "
                               f"name = \"{name}\", kind = \"locked\" (its mass then moves with that link), or remove "
                               "it from the URDF")
    joints = []
    for k, jid in enumerate(path_ids):
        name = model.names[jid]
        kind = types.get(name, "?")
        if kind not in ROTATIONAL:
            supported = ("ffopt reads revolute and continuous joints (continuous: revolute without limits); fixed "
                         "joints are merged into their parent link")
            if kind == "prismatic":
                raise ProblemError(f"{where}: joint {name!r} of {path.name} is prismatic: {supported}; lock it "
                                   f"(kind = \"locked\", at position 0) or give a chain without it")
            raise ProblemError(f"{where}: joint {name!r} of {path.name} is of type {kind!r}: {supported}")
        child = child_of.get(name)
        if child is not None and not inertial.get(child, False):
            raise ProblemError(f"{where}: link {child!r} of {path.name} (moved by joint {name!r}) has no <inertial>: "
                               "ffopt needs every moving link's mass, centre of mass and inertia (a mesh alone is not "
                               "enough); add an <inertial> to the URDF (mass 0 for a massless link)")
        placement = model.jointPlacements[jid]
        if k == 0:
            placement = base.placement.inverse() * placement
        jm = model.joints[jid]
        jd = jm.createData()
        i, nq, iv = model.idx_qs[jid], model.nqs[jid], model.idx_vs[jid]
        jm.calc(jd, pin.neutral(model)[i:i + nq])
        S = np.array(jd.S).ravel()
        axis = S[3:] / np.linalg.norm(S[3:])
        Y = model.inertias[jid]
        body = Body(float(Y.mass), np.array(Y.lever, float), np.array(Y.inertia, float))
        lo, hi = (model.lowerPositionLimit[i], model.upperPositionLimit[i]) if kind == "revolute" else (-np.inf, np.inf)
        effort, velocity = float(model.effortLimit[iv]), float(model.velocityLimit[iv])
        joints.append(UrdfJoint(name, kind, axis, np.array(placement.translation, float),
                                np.array(placement.rotation, float), body, float(lo), float(hi),
                                effort if effort > 0 else np.inf, velocity if velocity > 0 else np.inf))
    return UrdfChain(path, xml.get("name", ""), base_link, tip_link, tuple(joints), np.array(tip.placement.rotation),
                     np.array(tip.placement.translation), dict(locked), {name: types[name] for name in locked})


@contextlib.contextmanager
def _c_stderr():
    """What C code writes to file descriptor 2 inside the block, as ``said[0]`` after it (and not shown)."""
    said = [""]
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (e.g. captured): read without capturing
        yield said
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp, _faults_to(saved):
        os.dup2(tmp.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            said[0] = tmp.read().decode("utf-8", "replace")


@contextlib.contextmanager
def _faults_to(fd: int):
    """A crash of native code inside the block (while file descriptor 2 is captured) still reports on the
    real stderr, ``fd``: Python's fault handler, enabled or not before, writes there for the block."""
    was_enabled = faulthandler.is_enabled()
    faulthandler.enable(file=fd)
    try:
        yield
    finally:
        if was_enabled:
            faulthandler.enable(file=2)  # the real stderr again
        else:
            faulthandler.disable()


def _link_of(model, links: dict, jid: int) -> str:
    """The link a joint moves (its first BODY frame)."""
    for name, f in links.items():
        if f.parentJoint == jid:
            return name
    return model.names[jid]


# Keys of a [[model.joints]] entry that the URDF gives (geometry and bodies), and what a locked joint takes.
FROM_URDF = ("axis", "axes", "origin", "rpy_deg", "rotation", "mass", "com", "inertia", "inertia_diag", "flexible")
LOCKED_KEYS = ("name", "kind", "angle_deg")


def build_urdf_chain(v, m: dict, raw_model: dict, source: str):
    """(Chain, UrdfChain, resolved URDF path as text) of a validated [model] table with ``urdf``:
    geometry and bodies from the URDF, drives from the [[model.joints]] entries (checked like a chain
    written in the problem file). ``raw_model`` is the table as written (which keys were given)."""
    from ffopt.io.electrics import check_electric_chain, parse_electrics
    from ffopt.io.joints import JOINT_NAME, JOINT_SCHEMA, check_joint_physics, parse_arm_side, parse_inertia
    from ffopt.models.chain import Chain, Joint, rotation_rpy

    for key in ("base_link", "tip_link"):
        if m[key] is None:
            v.fail(f"model.{key}", "missing required key: a URDF model is the chain of joints from base_link to "
                   "tip_link (link names of the URDF)")
    if m["constant_inertia"] is not None:
        v.fail("model.constant_inertia", "not with a URDF model (its bodies give the rigid-body dynamics)")
    src = Path(source)
    problem_dir = src.parent if src.is_file() else Path.cwd()
    path = resolve(m["urdf"], problem_dir, f"{source}: model.urdf")
    entries, given, locked = {}, {}, {}
    for i, (j, raw) in enumerate(zip(m["joints"] or [], raw_model.get("joints") or [])):
        where = f"model.joints[{i + 1}]"
        if j["name"] in entries:
            v.fail(f"{where}.name", f"duplicate joint name {j['name']!r}")
        for key in FROM_URDF:
            if key in raw:
                v.fail(f"{where}.{key}", f"comes from the URDF ({path.name}); an entry of a URDF model gives the "
                       "joint's drive only (kind, stiffness, damping, motor_inertia, gear_ratio, friction, ...)")
        if j["kind"] == "locked":
            extra = [k for k in raw if k not in LOCKED_KEYS]
            if extra:
                v.fail(f"{where}.{extra[0]}", "a locked joint has no drive: it takes only name, kind and angle_deg")
            locked[j["name"]] = np.radians(j["angle_deg"] or 0.0)
        elif j["angle_deg"] is not None:
            v.fail(f"{where}.angle_deg", "only a locked joint has a fixed angle (kind = \"locked\")")
        entries[j["name"]] = (i, j)
        given[j["name"]] = f"{where}.name"
    urdf = read_chain(path, m["base_link"], m["tip_link"], locked, source, given)
    chain_names = [uj.name for uj in urdf.joints]
    for name, (i, _) in entries.items():
        if name not in chain_names and name not in locked:
            v.fail(f"model.joints[{i + 1}].name", f"{name!r} is a joint of {path.name} but not of the chain from "
                   f"{m['base_link']!r} to {m['tip_link']!r} ({', '.join(chain_names)})")
    joints = []
    for k, uj in enumerate(urdf.joints):
        if uj.name in entries:
            i, j = entries[uj.name]
            where = f"model.joints[{i + 1}]"
        else:  # no entry: a direct drive without drive data
            where = f"model.joints.{uj.name}"
            j = v.table({"name": uj.name, "kind": "direct"}, JOINT_SCHEMA, where)
        if not JOINT_NAME.fullmatch(uj.name):
            v.fail(f"{where}.name", f"URDF joint {uj.name!r}: ffopt's joint names use letters, digits, '_', '-' and "
                   "'.' only (they label CSV columns such as u_<name>); rename the joint in the URDF")
        data = parse_arm_side(v, j, where, m["rotor_coupling"])
        joint = Joint(name=uj.name, kind=j["kind"], axis=uj.axis, origin=uj.origin, body=uj.body,
                      rotation=uj.rotation, q_min=uj.q_min, q_max=uj.q_max, electrics=parse_electrics(v, j, where),
                      **data)
        check_joint_physics(v, joint, where)
        joints.append(joint)
    payload = None
    if m["payload"] is not None:
        pl = m["payload"]
        payload = urdf.body_to_last(Body(pl["mass"], np.array(pl["com"]), parse_inertia(v, pl, "model.payload")))
    tool_rpy = np.eye(3) if m["tool_rpy_deg"] is None else rotation_rpy(*np.radians(m["tool_rpy_deg"]))
    chain = Chain(tuple(joints), urdf.to_last_body(m["tool_origin"]), np.array(m["gravity"]), None, (), payload,
                  urdf.tip_rotation @ tool_rpy, m["rotor_coupling"])
    check_electric_chain(v, chain)
    return chain, urdf, str(path)
