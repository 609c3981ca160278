"""A refactoring changes no plan: every shipped problem planned before and after, compared to the bit.

    python results/refactor_check_nlp.py run OUT [CASE ...]        plan every case into OUT/<case>/
    python results/refactor_check_nlp.py compare REFERENCE OUT     compare two such runs
    python results/refactor_check_nlp.py check REFERENCE OUT        run into OUT, then compare with REFERENCE
    python results/refactor_check_nlp.py list                       the cases

Make the reference on the commit before the refactoring (into a folder outside the repository), then run
``check`` on the refactored tree. Cases: every problem in problems/ with its own method and --no-verify; the
NLP problems also with --method nlp on each NLP backend that is installed (the structured-derivative
backends, nlpsol and the stage-ordered fatrop NLP; IPOPT's C interface and the Pyomo model for two); E1 with
the replication's BDF variants; a few problems with the default verification on, whose verification numbers
are compared too.

Compared: every array of trajectory.npz (same names, dtypes, shapes and bits; NaN equal to NaN) and, where
verified, summary.json's verification numbers (the tool errors of every case, the verdict). A case that
failed must fail the same way (same exit code). Exit code 0: identical; 1: a difference (each one listed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "problems"

# (case name, problem file, extra options); --no-verify unless the name ends in "_verified"
NLP_PROBLEMS = ["e12_torque_bounded", "e1_nmp", "e12_held"]
VERIFIED = ["e12_line", "e1_nmp", "two_link_elastic", "e12_held"]
# the installed command (its entry point, wherever the CLI's code lives), else the module
FFOPT = [shutil.which("ffopt", path=str(Path(sys.executable).parent)) or "ffopt"]


def cases() -> list[tuple[str, str, list[str]]]:
    out = [(p.stem, p.name, ["--no-verify"]) for p in sorted(PROBLEMS.glob("*.toml"))]
    for name in NLP_PROBLEMS:
        out.append((f"{name}_nlp", f"{name}.toml", ["--no-verify", "--method", "nlp"]))
        for backend in ("casadi", "cyipopt", "fatrop"):
            out.append((f"{name}_nlp_{backend}", f"{name}.toml",
                        ["--no-verify", "--method", "nlp", "--backend", backend]))
    for name in ("e12_torque_bounded", "e1_nmp"):  # IPOPT's C interface; the Pyomo model on a coarse grid (slow set-up)
        out.append((f"{name}_nlp_ipopt-c", f"{name}.toml", ["--no-verify", "--method", "nlp", "--backend", "ipopt-c"]))
        out.append((f"{name}_nlp_pyomo", f"{name}.toml",
                    ["--no-verify", "--method", "nlp", "--backend", "pyomo", "--step", "0.005"]))
    out.append(("e12_line_nlp", "e12_line.toml", ["--no-verify", "--method", "nlp"]))
    out.append(("e12_line_nlp_bdf_warm", "e12_line.toml", ["--no-verify", "--method", "nlp", "--warm-start", "bdf"]))
    out.append(("e12_line_auto", "e12_line.toml", ["--no-verify", "--method", "auto"]))
    out.append(("e1_nmp_auto", "e1_nmp.toml", ["--no-verify", "--method", "auto"]))
    out.append(("e12_line_linear_hold", "e12_line.toml",
                ["--no-verify", "--method", "nlp", "--hold", "linear", "--sample-time", "0.002"]))
    for form in ("I3", "I2"):
        out.append((f"e12_line_bdf_{form}", "e12_line.toml", ["--no-verify", "--method", "bdf", "--form", form]))
    for method in ("hi", "dd", "dd43", "km", "dc"):
        out.append((f"e1_complete_{method}", "e1_complete.toml", ["--no-verify", "--method", method]))
    for name in VERIFIED:
        out.append((f"{name}_verified", f"{name}.toml", []))
    return out


def run(out: Path, only: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    codes = {}
    codes_file = out / "exit_codes.json"
    if codes_file.exists():
        codes = json.loads(codes_file.read_text())
    for name, problem, options in cases():
        if only and name not in only:
            continue
        folder = out / name
        cmd = [*FFOPT, "plan", str(PROBLEMS / problem), "--out", str(folder),
               "--no-plots", "--quiet", *options]
        tic = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        codes[name] = proc.returncode
        (out / f"{name}.stderr.txt").write_text(proc.stderr)
        print(f"{name:40s} exit {proc.returncode}  {time.perf_counter() - tic:7.1f} s", flush=True)
        codes_file.write_text(json.dumps(codes, indent=1, sort_keys=True))


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return a.tobytes() == b.tobytes() or bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _verification_numbers(summary: dict) -> dict:
    """Every number under summary.json's verification, flattened (timings left out)."""
    flat = {}

    def walk(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(f"{prefix}[{i}]", v)
        elif not any(word in prefix for word in ("time", "wall", "cpu", "_s.", "elapsed", "seconds")):
            flat[prefix] = value

    walk("verification", summary.get("verification", {}))
    return flat


def compare(ref: Path, new: Path, only: list[str] | None = None) -> list[str]:
    problems = []
    ref_codes = json.loads((ref / "exit_codes.json").read_text())
    new_codes = json.loads((new / "exit_codes.json").read_text())
    n_arrays = n_numbers = 0
    for name, _, options in cases():
        if only and name not in only:
            continue
        if name not in ref_codes or name not in new_codes:
            problems.append(f"{name}: not run in {'the reference' if name not in ref_codes else 'the new run'}")
            continue
        if ref_codes[name] != new_codes[name]:
            problems.append(f"{name}: exit code {ref_codes[name]} -> {new_codes[name]}")
            continue
        a_file, b_file = ref / name / "trajectory.npz", new / name / "trajectory.npz"
        if not a_file.exists() and not b_file.exists():
            continue  # failed the same way in both
        if a_file.exists() != b_file.exists():
            problems.append(f"{name}: trajectory.npz only in {'the reference' if a_file.exists() else 'the new run'}")
            continue
        with np.load(a_file, allow_pickle=False) as a, np.load(b_file, allow_pickle=False) as b:
            if sorted(a.files) != sorted(b.files):
                problems.append(f"{name}: arrays {sorted(a.files)} -> {sorted(b.files)}")
            for key in sorted(set(a.files) & set(b.files)):
                n_arrays += 1
                if not _same_array(a[key], b[key]):
                    diff = (np.nanmax(np.abs(a[key] - b[key])) if a[key].shape == b[key].shape
                            and a[key].dtype.kind in "fc" else "shape/dtype")
                    problems.append(f"{name}: trajectory.npz[{key}] differs (max abs difference {diff})")
        if "--no-verify" not in options:
            sa = json.loads((ref / name / "summary.json").read_text())
            sb = json.loads((new / name / "summary.json").read_text())
            va, vb = _verification_numbers(sa), _verification_numbers(sb)
            if not va:
                problems.append(f"{name}: no verification in the reference's summary.json")
            for key in sorted(set(va) | set(vb)):
                n_numbers += 1
                if va.get(key, "<missing>") != vb.get(key, "<missing>"):
                    problems.append(f"{name}: {key}: {va.get(key, '<missing>')} -> {vb.get(key, '<missing>')}")
    print(f"compared {n_arrays} arrays and {n_numbers} verification entries of {len(ref_codes)} cases")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("out", type=Path)
    p_run.add_argument("cases", nargs="*")
    p_cmp = sub.add_parser("compare")
    p_cmp.add_argument("reference", type=Path)
    p_cmp.add_argument("out", type=Path)
    p_cmp.add_argument("cases", nargs="*")
    p_chk = sub.add_parser("check")
    p_chk.add_argument("reference", type=Path)
    p_chk.add_argument("out", type=Path)
    p_chk.add_argument("cases", nargs="*")
    sub.add_parser("list")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.command == "list":
        for name, problem, options in cases():
            print(f"{name:40s} {problem:28s} {' '.join(options)}")
        return 0
    if args.command in ("run", "check"):
        run(args.out, args.cases)
    if args.command == "run":
        return 0
    problems = compare(args.reference, args.out, args.cases)
    for line in problems:
        print("DIFFERENT", line)
    print("identical to the bit" if not problems else f"{len(problems)} difference(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
