"""Writing results to disk without ever touching a file ffopt did not write.

A result folder (``ffopt plan --out DIR``) holds a marker, ``.ffopt-result.json``, listing the
files ffopt wrote there with their SHA-256 and the ffopt version. Rules:

- a new folder (or an empty one) is written in a temporary folder beside it and renamed at the end;
- an existing result folder is updated in place: each new file is renamed over the one ffopt wrote
  before, files of the previous run that this run does not write are removed, anything else (a
  user's notes) stays;
- an existing folder without the marker is refused unless ``force``; with ``force`` ffopt adds its
  files and a name clash with a file it did not write is an error naming that file;
- a file ffopt wrote but the user changed since (its SHA-256 differs) counts as the user's;
- a regular file given as the folder is an error.

The checks run before anything is written (``check_output_folder``, also called by the command
line before the solve) and again just before the files are moved into place. Files are first
written to a temporary folder; a failure or Ctrl-C while writing removes it (and any parent
folders created for the output) and leaves the target as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ffopt import interrupt
from ffopt._version import __version__
from ffopt.errors import OutputError
from ffopt.io.matfile import write_mat
from ffopt.trajectory import Trajectory

MARKER = ".ffopt-result.json"
_TMP_PREFIX = ".ffopt-tmp-"


# --- file formats ----------------------------------------------------------------------------


def write_trajectory_csv(traj: Trajectory, path: Path) -> None:
    """One header row of column names (units in summary.json's ``columns``), then the samples."""
    names, table = traj.columns()
    np.savetxt(path, table, delimiter=",", header=",".join(names), comments="", fmt="%.12g")


def read_trajectory_csv(path: str | Path) -> dict[str, np.ndarray]:
    """Read a trajectory.csv back into a dict of columns, e.g. ``data["u_q1"]``, ``data["tool_x_mm"]``."""
    with open(path) as f:
        names = f.readline().strip().split(",")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return {n: data[:, i] for i, n in enumerate(names)}


def write_trajectory_npz(traj: Trajectory, path: Path) -> None:
    """NumPy archive: one array per trajectory.csv column (same names), plus ``columns``, ``units`` and
    ``meanings`` (string arrays in column order). ``numpy.load(path)`` reads it without pickle."""
    spec = traj.column_spec()
    arrays = {name: np.asarray(values, float) for name, _, _, values in spec}
    np.savez(path, **arrays, columns=np.array([c[0] for c in spec]), units=np.array([c[1] for c in spec]),
                        meanings=np.array([c[2] for c in spec]))


def matlab_names(names: list[str]) -> list[str]:
    """Valid, distinct MATLAB variable names for ``names`` ('u_q-1' -> 'u_q_1'; at most 63 characters)."""
    out, seen = [], set()
    for name in names:
        base = re.sub(r"\W", "_", name, flags=re.ASCII)
        base = base if re.match(r"[A-Za-z]", base) else f"x{base}"
        candidate, k = base[:63], 2
        while candidate in seen:
            suffix = f"_{k}"
            candidate, k = base[:63 - len(suffix)] + suffix, k + 1
        seen.add(candidate)
        out.append(candidate)
    return out


def write_trajectory_mat(traj: Trajectory, path: Path) -> None:
    """MATLAB file (``load('trajectory.mat')``): every trajectory.csv column as a column vector named as in
    the CSV (characters MATLAB does not allow become '_'), the matrices ``u`` (torques, one column per
    actuated joint), ``qm``, ``dqm``, ``q``, ``dq`` and ``tool_mm``, and the cell arrays ``columns`` (CSV
    names), ``variables`` (their names here), ``units``, ``meanings``, ``actuated_joints``, ``link_joints``."""
    spec = traj.column_spec()
    names = matlab_names([c[0] for c in spec] + ["u", "qm", "dqm", "q", "dq", "tool_mm", "columns", "variables",
                                                 "units", "meanings", "actuated_joints", "link_joints"])
    columns, reserved = names[:len(spec)], names[len(spec):]
    data = {var: np.asarray(c[3], float).reshape(-1, 1) for var, c in zip(columns, spec)}
    cells = {"columns": [c[0] for c in spec], "variables": columns, "units": [c[1] for c in spec],
             "meanings": [c[2] for c in spec], "actuated_joints": traj.actuated_joints,
             "link_joints": [c[0][2:] for c in spec if c[0].startswith("q_")]}
    n_link = len(cells["link_joints"])
    matrices = {"u": traj.u, "qm": traj.qm, "dqm": traj.dqm, "q": traj.q[:, :n_link], "dq": traj.v[:, :n_link],
                "tool_mm": 1000.0 * traj.tool}
    for var, key in zip(reserved, [*matrices, *cells]):
        data[var] = np.asarray(matrices[key], float) if key in matrices else list(cells[key])
    write_mat(path, data)  # uncompressed: doubles hardly compress (169 vs 210 kB for E12)


def write_json(obj: dict, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2, default=_json_default) + "\n")


def _json_default(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (np.floating, np.integer)):
        return x.item()
    if isinstance(x, np.bool_):
        return bool(x)
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


# --- result folders --------------------------------------------------------------------------


def check_output_folder(out: str | Path, names, force: bool = False, command: str | None = None) -> dict[str, str]:
    """Raise OutputError if writing ``names`` into folder ``out`` could touch a file ffopt did not write,
    or (with ``command``) if ``out`` is an ffopt folder of another kind (``ffopt plan`` into a sweep's
    folder would replace its table).

    Returns the previous run's file table {name: sha256} ({} for a new, empty or foreign folder).
    """
    out = Path(out)
    try:
        owned = _check_output_folder(out, names, force)
    except OSError as err:
        raise OutputError(f"{out}: cannot use it as the output folder: {err.strerror or err}") from None
    kind = _marker_field(out, "command") if out.is_dir() and read_marker(out) is not None else None
    if command is not None and kind is not None and kind != command:
        raise OutputError(f"{out}: is the folder of an 'ffopt {kind}', not of an 'ffopt {command}'; writing "
                          f"there would replace its files: choose another output folder")
    return owned


def _check_output_folder(out: Path, names, force: bool) -> dict[str, str]:
    shown = f"{out} ({out.absolute()})" if out.name in ("", "..") else str(out)  # --out . names the folder
    if not out.exists():
        if out.is_symlink():
            raise OutputError(f"{out}: is a broken symbolic link, not a folder; choose another output folder")
        _check_parent(out)
        return {}
    if not out.is_dir():
        raise OutputError(f"{out}: is a file, not a folder; ffopt writes a result folder there: "
                          "choose a new folder name")
    _check_writable(out)
    owned = read_marker(out)
    entries = sorted(p.name for p in out.iterdir() if not p.name.startswith(_TMP_PREFIX))
    if owned is None:
        if entries and not force:
            raise OutputError(
                f"{shown}: exists and is not an ffopt result folder (it holds {_some(entries)}); ffopt writes only "
                "into new folders or its own: choose a new folder, or add --force to add ffopt's files beside "
                "yours (none of yours is replaced or deleted)")
        owned = {}
        names = [*names, MARKER]  # a foreign or broken marker file is the user's too
    for name in names:
        path = out / name
        if not (path.exists() or path.is_symlink()):
            continue
        if name not in owned or path.is_symlink() or not path.is_file():
            raise OutputError(f"{path}: exists and was not written by ffopt; ffopt never replaces your files: "
                              "move it away or choose another output folder")
        if file_sha256(path) != owned[name]:
            raise OutputError(f"{path}: was changed after ffopt wrote it, so it is treated as yours; "
                              "move it away or choose another output folder")
    return owned


def write_result_folder(out: str | Path, fill, force: bool = False, command: str = "plan",
                        add: bool = False, stop_on_interrupt: bool = True) -> Path:
    """Write folder ``out`` with ``fill(tmp_dir)`` (which writes plain files into tmp_dir), safely.

    See the module docstring for the rules. With ``add`` the files ffopt wrote there before and does
    not write now are kept (``ffopt report`` adding report.html to a plan). ``stop_on_interrupt=False``
    writes even after a Ctrl-C was received (what a sweep writes while it stops). Returns the absolute
    path of the folder.
    """
    out = Path(out).absolute()
    check_output_folder(out, [], force, None if add else command)
    if out.exists():
        parent_created = []
        tmp = _make_tmp_dir(out)
    else:
        parent_created = _make_parents(out.parent)
        tmp = _make_tmp_dir(out.parent, prefix=f".{out.name}{_TMP_PREFIX}")
    try:
        fill(tmp)
        names = sorted(p.name for p in tmp.iterdir())
        for name in names:
            if not (tmp / name).is_file() or name == MARKER:
                raise OutputError(f"internal: result entry {name!r} is not a plain file ffopt may write")
        if stop_on_interrupt:
            interrupt.check()
        files = {name: file_sha256(tmp / name) for name in names}
        with interrupt.deferred():
            if out.exists():
                _update_in_place(out, tmp, files, force, command, add)
            else:
                _write_marker(tmp / MARKER, files, command)
                os.replace(tmp, out)
    except OSError as err:
        _discard(tmp, parent_created)
        raise OutputError(f"cannot write the result folder {out}: {err.strerror or err}") from None
    except BaseException:
        _discard(tmp, parent_created)
        raise
    return out


def _discard(tmp: Path, parent_created: list[Path]) -> None:
    with interrupt.deferred():
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_empty(parent_created)


def _update_in_place(out: Path, tmp: Path, files: dict[str, str], force: bool, command: str,
                     add: bool = False) -> None:
    """Move the new files over ffopt's own, drop its stale ones (unless ``add``), keep everything else."""
    owned = check_output_folder(out, list(files), force)
    stale = {n: h for n, h in owned.items() if n not in files}
    kept = stale if add else {}
    if add and owned:
        command = _marker_field(out, "command") or command  # the folder stays what it was (a plan, ...)
    _write_marker(tmp / MARKER, {**stale, **files}, command)  # a crash half-way still lists every file of ffopt's
    os.replace(tmp / MARKER, out / MARKER)
    for name in files:
        os.replace(tmp / name, out / name)
    for name, digest in stale.items():
        path = out / name
        if not add and path.is_file() and not path.is_symlink() and file_sha256(path) == digest:
            path.unlink()
    _write_marker(tmp / MARKER, {**kept, **files}, command)
    os.replace(tmp / MARKER, out / MARKER)
    tmp.rmdir()


def _marker_field(folder: Path, key: str):
    try:
        return json.loads((folder / MARKER).read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None


def _write_marker(path: Path, files: dict[str, str], command: str) -> None:
    write_json({"written_by": "ffopt", "ffopt_version": __version__, "command": command,
                "written_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "files": {name: {"sha256": digest} for name, digest in sorted(files.items())}}, path)


def read_marker(folder: Path) -> dict[str, str] | None:
    """{name: sha256} from the folder's marker, or None if there is no valid ffopt marker."""
    try:
        data = json.loads((folder / MARKER).read_text())
        files = data["files"] if data.get("written_by") == "ffopt" else None
        table = {name: entry["sha256"] for name, entry in files.items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not all(isinstance(n, str) and n == Path(n).name and n not in ("", ".", "..") for n in table):
        return None  # only plain names inside the folder
    return table


# --- single files (analyze --json) -----------------------------------------------------------


def check_output_file(path: str | Path) -> None:
    """Raise OutputError unless ``path`` is new or a JSON file ffopt wrote (``"written_by": "ffopt ..."``)."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name for the JSON report")
    if path.exists() or path.is_symlink():
        try:
            ours = str(json.loads(path.read_text()).get("written_by", "")).startswith("ffopt")
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise OutputError(f"{path}: exists and was not written by ffopt; ffopt never replaces your files: "
                              "choose another file name")
    else:
        _check_parent(path)


def write_json_file(path: str | Path, obj: dict, command: str) -> Path:
    """Write ``obj`` (plus who wrote it) as JSON to ``path`` via a temporary file and a rename."""
    path = Path(path).absolute()
    check_output_file(path)
    created = _make_parents(path.parent)
    tmp = None
    try:
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{_TMP_PREFIX}", suffix=".json")
        os.close(fd)
        tmp = Path(name)
        tmp.chmod(0o666 & ~_umask())  # as open() would create it, not mkstemp's 0600
        write_json({"written_by": f"ffopt {command}", "ffopt_version": __version__, **obj}, tmp)
        with interrupt.deferred():
            check_output_file(path)
            os.replace(tmp, path)
    except BaseException as err:
        with interrupt.deferred():
            if tmp is not None:
                tmp.unlink(missing_ok=True)
            _remove_empty(created)
        if isinstance(err, OSError):
            raise OutputError(f"cannot write {path}: {err.strerror or err}") from None
        raise
    return path


# --- helpers ---------------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex), as the marker records it."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _some(entries: list[str]) -> str:
    shown = ", ".join(repr(e) for e in entries[:3])
    return shown + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")


def _check_parent(path: Path) -> None:
    """The nearest existing ancestor of a new output must be a folder we may write in."""
    for parent in Path(path).absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{path}: {parent} is a file, not a folder")
            _check_writable(parent)
            return


def _check_writable(folder: Path) -> None:
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(f"{folder}: no permission to write there; choose another output path")


def _make_parents(folder: Path) -> list[Path]:
    """mkdir -p; returns the folders it created (outermost first) so a failure can remove them."""
    missing = []
    for p in [folder, *folder.parents]:
        if p.exists():
            break
        missing.append(p)
    created = []
    try:
        for p in reversed(missing):
            p.mkdir()
            created.append(p)
    except OSError as err:
        _remove_empty(created)
        raise OutputError(f"cannot create the folder {p}: {err.strerror or err}") from None
    return created


def _make_tmp_dir(folder: Path, prefix: str = _TMP_PREFIX) -> Path:
    """A private temporary folder in ``folder``, with the permissions of a folder made by mkdir."""
    try:
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=folder))
        tmp.chmod(0o777 & ~_umask())
        return tmp
    except OSError as err:
        raise OutputError(f"cannot write into {folder}: {err.strerror or err}") from None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _remove_empty(created: list[Path]) -> None:
    for p in reversed(created):
        try:
            p.rmdir()
        except OSError:
            break

