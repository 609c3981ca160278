"""Property test: a problem file or URDF mutated as a hostile user would (numbers to nan, inf, negative, huge,
tiny or zero, text for a number, keys deleted, joints duplicated; URDF attributes garbled, loops added, joints
removed) planned by ``ffopt plan``: every outcome is exit 0 or 3 (a plan written and judged), 2 (one line
naming the problem) or 1 (a solver failure reported in one line with its status), never a traceback, a crash,
a run away (each example has a time limit) or a partial or temporary folder.

Deterministic in CI: a fixed seed and a committed example database, ``tests/hypothesis/hostile_inputs``
(read-only here), which replays the mutations that broke ffopt while it was being hardened. To search further
and record new failures into it: ``FFOPT_RECORD_HOSTILE=200 python -m pytest tests/test_hostile_inputs.py``.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import signal
import tomllib
import warnings
from pathlib import Path

import pytest
from helpers import toml_text
from hypothesis import HealthCheck, Phase, event, given, note, seed, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

from ffopt.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
DATABASE = Path(__file__).parent / "hypothesis" / "hostile_inputs"
RECORD = int(os.environ.get("FFOPT_RECORD_HOSTILE", "0"))
EXAMPLES = 12  # ~1-2 s each on the two-link arm and the UR5's URDF
TIME_LIMIT_S = 60  # an example still running then is a run away

TOML_BASE = "two_link_elastic"
URDF_BASE = "ur5_joint_ptp"
NUMBERS = [float("nan"), float("inf"), float("-inf"), 0.0, 1e308, "abc",  # and factors of the value given:
           ("x", -1.0), ("x", 1e12), ("x", 1e-12), ("x", 1e6), ("x", 1e-6), ("x", 1e3), ("x", 1e-3)]
URDF_TEXTS = ["nan", "-1", "1e400", "abc", "0", "", "1 2"]
URDF_ATTRIBUTE = re.compile(r'\b(ixx|ixy|ixz|iyy|iyz|izz|value|xyz|rpy|lower|upper|effort|velocity)="([^"]*)"')


def _numbers(d, path=()):
    """(path, value) of every number (and number in a list) of a problem dict, in a fixed order."""
    items = d.items() if isinstance(d, dict) else enumerate(d)
    for key, value in items:
        if isinstance(value, (dict, list)):
            yield from _numbers(value, (*path, key))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield (*path, key), value


def _keys(d, path=()):
    """The path of every key of every table (deleting it is an edit), in a fixed order."""
    if isinstance(d, dict):
        for key, value in d.items():
            yield (*path, key)
            yield from _keys(value, (*path, key))
    elif isinstance(d, list):
        for k, value in enumerate(d):
            yield from _keys(value, (*path, k))


def _at(d, path):
    for key in path[:-1]:
        d = d[key]
    return d


def _toml_edit(draw, data: dict) -> str:
    op = draw(st.sampled_from(["number", "number", "number", "delete", "duplicate"]))
    if op == "duplicate":
        joints = data["model"]["joints"]
        joints.append(copy.deepcopy(joints[draw(st.integers(0, len(joints) - 1))]))
        return "duplicate joint"
    if op == "delete":
        path = draw(st.sampled_from(list(_keys(data))))
        del _at(data, path)[path[-1]]
        return f"delete {'.'.join(map(str, path))}"
    path, value = draw(st.sampled_from(list(_numbers(data))))
    new = draw(st.sampled_from(NUMBERS))
    if isinstance(new, tuple):  # a factor of the value given
        new = float(value) * new[1] if value else new[1]
    _at(data, path)[path[-1]] = new
    return f"{'.'.join(map(str, path))} = {new!r}"


def _urdf_edit(draw, text: str) -> tuple[str, str]:
    op = draw(st.sampled_from(["attribute", "attribute", "loop", "remove-joint"]))
    if op == "attribute":
        found = list(URDF_ATTRIBUTE.finditer(text))
        m = found[draw(st.integers(0, len(found) - 1))]
        new = draw(st.sampled_from(URDF_TEXTS + [f"-{m.group(2)}"]))
        return text[:m.start(2)] + new + text[m.end(2):], f"{m.group(1)}=\"{new}\" at {m.start()}"
    links = re.findall(r'<link name="([^"]+)"', text)
    if op == "loop":
        a, b = draw(st.sampled_from(links)), draw(st.sampled_from(links))
        joint = (f'<joint name="hostile" type="revolute"><parent link="{a}"/><child link="{b}"/><axis xyz="0 0 1"/>'
                 '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
        return text.replace("</robot>", joint + "</robot>"), f"loop {a} -> {b}"
    joints = list(re.finditer(r"<joint .*?</joint>", text, flags=re.S))
    m = joints[draw(st.integers(0, len(joints) - 1))]
    return text[:m.start()] + text[m.end():], f"remove {m.group(0)[:40]}"


@st.composite
def mutations(draw):
    """(problem text, URDF text or None, what was changed) of one hostile edit."""
    urdf = draw(st.booleans())
    data = tomllib.loads((ROOT / "problems" / f"{URDF_BASE if urdf else TOML_BASE}.toml").read_text())
    if urdf:
        text, what = _urdf_edit(draw, (ROOT / "problems" / "urdf" / "ur5.urdf").read_text())
        return toml_text(data), text, what
    what = _toml_edit(draw, data)
    return toml_text(data), None, what


def _settings():
    """CI: a fixed seed and the recorded edits, read-only. Recording: a search without a seed (hypothesis saves
    failing examples only then), without shrinking (each step of it could take a run away's time limit)."""
    common = dict(deadline=None, suppress_health_check=list(HealthCheck), print_blob=True)
    if RECORD:  # new failures only (replaying the recorded ones first would stop the search at them)
        return settings(database=DirectoryBasedExampleDatabase(DATABASE), max_examples=RECORD,
                        phases=[Phase.generate], **common)
    common["phases"] = [Phase.explicit, Phase.reuse, Phase.generate]
    configured = settings(database=ReadOnlyDatabase(DirectoryBasedExampleDatabase(DATABASE)), max_examples=EXAMPLES,
                          **common)
    return lambda test: seed(34)(configured(test))


class RanAway(Exception):
    pass


def _alarm(signum, frame):
    raise RanAway(f"still running after {TIME_LIMIT_S} s")


def _in_this_process(argv, capsys) -> tuple[int, str]:
    capsys.readouterr()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIME_LIMIT_S)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the command line prints them one line each; here they are noise
            code = main(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, capsys.readouterr().err


def _in_a_process(argv, capsys) -> tuple[int, str]:
    """A search runs each example in its own process: a crash (a negative exit code) is a failure it records,
    not the end of the search."""
    import subprocess
    import sys

    try:
        proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "ffopt.cli.main", *argv], capture_output=True,
                              text=True, timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        raise RanAway(f"still running after {TIME_LIMIT_S} s") from None
    return proc.returncode, proc.stderr


@_settings()
@given(mutation=mutations())
def test_a_hostile_edit_is_planned_or_refused_in_one_line(mutation, tmp_path_factory, capsys):
    problem_text, urdf_text, what = mutation
    note(what)
    work = tmp_path_factory.mktemp("hostile")
    (work / "p.toml").write_text(problem_text)
    if urdf_text is not None:
        (work / "urdf").mkdir()
        (work / "urdf" / "ur5.urdf").write_text(urdf_text)
    argv = ["plan", str(work / "p.toml"), "--out", str(work / "out"), "--no-plots"]
    argv += ["--no-verify"] if urdf_text is not None else []
    code, err = (_in_a_process if RECORD else _in_this_process)(argv, capsys)
    note(f"exit {code}: {err[-600:]}")
    event(f"exit {code}")
    assert "Traceback" not in err
    assert code in (0, 1, 2, 3)
    errors = [line for line in err.splitlines() if line.startswith("ffopt")]
    if code in (1, 2):
        assert len(errors) == 1 and errors[0].startswith(("ffopt: error: ", "ffopt plan: error: ")), err
        assert not (work / "out").exists()
    else:
        assert errors == [] and (work / "out" / "summary.json").is_file()
    assert not [p for p in work.rglob("*") if ".ffopt-tmp-" in p.name]
    shutil.rmtree(work)


def test_the_recorded_edits_are_replayed():
    """The replay finds the recorded edits under a hash of its test's source (editing that test orphans them) and
    decodes them with this hypothesis version: both must work, or the replay tests nothing."""
    from hypothesis.database import choices_from_bytes
    from hypothesis.internal.reflection import function_digest

    key = function_digest(test_a_hostile_edit_is_planned_or_refused_in_one_line.hypothesis.inner_test)
    recorded = list(DirectoryBasedExampleDatabase(DATABASE).fetch(key))
    assert len(recorded) >= 3, "no recorded edits under the replay test's key: record them (see the module docstring)"
    assert all(choices_from_bytes(value) for value in recorded)
