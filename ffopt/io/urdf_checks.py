"""A URDF's XML checked before the URDF library (Pinocchio, urdfdom) sees it.

urdfdom reads what it is given: ``ixx="nan"`` or ``ixx="abc"`` became a zero inertia tensor, a negative
mass or moment a body that no rigid body can be, and a joint that closes a loop (a second parent for a
link) crashed the process. So every number ffopt takes from the file is checked as strictly as the same
number in a problem file (finite; masses >= 0; an inertia tensor positive semi-definite whose principal
moments satisfy the triangle inequality; axes not zero; limits ordered), and the joints must form one
tree: every link named once, every joint's parent and child links defined, one parent per link, one root,
no loop. Each error is one line naming the problem file's ``model.urdf``, the URDF, the element and what
to do.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from ffopt.errors import ProblemError

JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
INERTIA_KEYS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


class _Where:
    """Error lines of one URDF: ``<problem>: model.urdf: <urdf>: <element>: <what>``."""

    def __init__(self, where: str, path: Path):
        self.prefix = f"{where}: {path}"

    def fail(self, element: str, what: str):
        raise ProblemError(f"{self.prefix}: {element}: {what}")


def check_urdf_xml(root: ET.Element, path: Path, where: str, base_link: str | None = None) -> None:
    """Raise ProblemError if the URDF ``root`` (read from ``path``) is not a tree of links with finite
    numbers, or if a link below ``base_link`` (one the chain moves, merged or locked) has a body no rigid
    body can have (a negative mass, an inertia tensor not positive semi-definite or breaking the triangle
    inequality). Links above or beside ``base_link`` are the fixed world, and only their numbers are
    checked: real URDFs hold unphysical inertias on sensor mounts and mobile bases that the chain never
    moves. ``where`` names the problem file and field (``x.toml: model.urdf``)."""
    w = _Where(where, path)
    links = _named(root.findall("link"), "link", w)
    joints = _named(root.findall("joint"), "joint", w)
    parents = {}
    for name, joint in joints.items():
        parent, child = _joint_links(joint, name, links, w)
        if child in parents:
            w.fail(f"joint '{name}'", f"link '{child}' already hangs on joint '{parents[child][0]}': a second parent "
                   "closes a loop, and a URDF must be a tree (ffopt models serial chains); remove one of the two "
                   "joints or give it another child link")
        parents[child] = (name, parent)
        _check_joint_numbers(joint, name, w)
    children = _check_tree(links, parents, w)
    moved = _below(base_link, children) if base_link in links else set()
    for name, link in links.items():
        inertial = link.find("inertial")
        if inertial is not None:
            _check_inertial(inertial, f"link '{name}' <inertial>", w, physical=name in moved)


def _below(link: str, children: dict) -> set[str]:
    out, todo = set(), [link]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _named(elements, kind: str, w: _Where) -> dict[str, ET.Element]:
    out = {}
    for k, e in enumerate(elements):
        name = e.get("name")
        if not name:
            w.fail(f"<{kind}> number {k + 1}", "has no name attribute")
        if name in out:
            w.fail(f"{kind} '{name}'", f"defined twice; every {kind} needs its own name")
        out[name] = e
    return out


def _joint_links(joint: ET.Element, name: str, links: dict, w: _Where) -> tuple[str, str]:
    kind = joint.get("type")
    if kind not in JOINT_TYPES:
        w.fail(f"joint '{name}'", f"type {kind!r} is not a URDF joint type ({', '.join(JOINT_TYPES)})")
    ends = []
    for tag in ("parent", "child"):
        e = joint.find(tag)
        link = e.get("link") if e is not None else None
        if not link:
            w.fail(f"joint '{name}'", f"has no <{tag} link=\"...\"/>")
        if link not in links:
            w.fail(f"joint '{name}' <{tag}>", f"link '{link}' is not defined (no <link name=\"{link}\">)")
        ends.append(link)
    if ends[0] == ends[1]:
        w.fail(f"joint '{name}'", f"connects link '{ends[0]}' to itself: a loop; give it another child link")
    return ends[0], ends[1]


def _check_tree(links: dict, parents: dict, w: _Where) -> dict[str, list[str]]:
    """One root (a link without a parent joint) from which every link is reached: with one parent per
    link, a link not reached lies on a closed loop. Returns {link: its child links}."""
    roots = [name for name in links if name not in parents]
    if len(roots) > 1:
        w.fail(f"links {_names(roots)}", "have no parent joint: a URDF is one tree with one root link; connect them "
               "with joints or remove the loose ones")
    reached, todo = set(roots), list(roots)
    children = {}
    for child, (_, parent) in parents.items():
        children.setdefault(parent, []).append(child)
    while todo:
        for child in children.get(todo.pop(), []):
            reached.add(child)
            todo.append(child)
    loop = [name for name in links if name not in reached]
    if loop:
        joints = [parents[name][0] for name in loop]
        w.fail(f"joints {_names(joints)}", f"form a closed loop (links {_names(loop)} are not reached from a root "
               "link): a URDF must be a tree (ffopt models serial chains); cut the loop")
    return children


def _names(names) -> str:
    shown = ", ".join(f"'{n}'" for n in list(names)[:4])
    return shown + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _numbers(e: ET.Element | None, attribute: str, count: int, element: str, w: _Where,
             required: bool = False) -> np.ndarray | None:
    """The ``count`` finite numbers of an attribute (None if the element or attribute is absent and not required)."""
    text = None if e is None else e.get(attribute)
    if text is None:
        if required:
            w.fail(element, f"missing {attribute}=\"...\"")
        return None
    parts = text.split()
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = None
    if values is None or len(values) != count:
        w.fail(f"{element} {attribute}", f"expected {count} number{'s' if count > 1 else ''}, got {text!r}")
    if not all(math.isfinite(x) for x in values):
        w.fail(f"{element} {attribute}", f"must be finite, got {text!r}")
    return np.array(values)


def _check_origin(parent: ET.Element, element: str, w: _Where) -> None:
    origin = parent.find("origin")
    for attribute in ("xyz", "rpy"):
        _numbers(origin, attribute, 3, f"{element} <origin>", w)


def _check_joint_numbers(joint: ET.Element, name: str, w: _Where) -> None:
    element, kind = f"joint '{name}'", joint.get("type")
    _check_origin(joint, element, w)
    axis = _numbers(joint.find("axis"), "xyz", 3, f"{element} <axis>", w)
    if axis is not None and kind in ("revolute", "continuous", "prismatic") and np.linalg.norm(axis) < 1e-9:
        w.fail(f"{element} <axis> xyz", "is zero: a moving joint needs a direction, e.g. \"0 0 1\"")
    limit = joint.find("limit")
    values = {a: _numbers(limit, a, 1, f"{element} <limit>", w) for a in ("lower", "upper", "effort", "velocity")}
    if values["lower"] is not None and values["upper"] is not None and values["lower"][0] > values["upper"][0]:
        w.fail(f"{element} <limit>", f"lower {values['lower'][0]:g} is above upper {values['upper'][0]:g}")
    for a in ("effort", "velocity"):
        if values[a] is not None and values[a][0] < 0:
            w.fail(f"{element} <limit> {a}", f"must be >= 0, got {values[a][0]:g}")
    dynamics = joint.find("dynamics")
    for a in ("damping", "friction"):
        _numbers(dynamics, a, 1, f"{element} <dynamics>", w)


def _check_inertial(inertial: ET.Element, element: str, w: _Where, physical: bool) -> None:
    """Finite numbers; and with ``physical`` (a link the chain moves) a rigid body's mass and inertia."""
    from ffopt.io.joints import inertia_problem

    _check_origin(inertial, element, w)
    mass = _numbers(inertial.find("mass"), "value", 1, f"{element} <mass>", w, required=True)[0]
    tensor = inertial.find("inertia")
    if tensor is None:
        w.fail(element, "has no <inertia ixx=... iyy=... izz=... ixy=... ixz=... iyz=...>")
    xx, xy, xz, yy, yz, zz = (_numbers(tensor, a, 1, f"{element} <inertia>", w, required=True)[0]
                              for a in INERTIA_KEYS)
    if not physical:
        return
    if mass < 0:
        w.fail(f"{element} <mass> value", f"must be >= 0 kg, got {mass:g}")
    problem = inertia_problem(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
    if problem is not None:
        w.fail(f"{element} <inertia>", problem)
