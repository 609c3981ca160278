"""Test helpers: problem dicts back to TOML text, and snapshots of a folder (to show nothing was touched)."""

import hashlib
import json
from pathlib import Path


def snapshot(folder: Path) -> dict:
    """Every entry below ``folder``: kind, content hash and modification time."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = ("dir", None) if p.is_dir() else ("file", hashlib.sha256(p.read_bytes()).hexdigest(),
                                                      p.stat().st_mtime_ns)
    return out


def toml_text(data: dict) -> str:
    """Minimal TOML writer for the problem dicts used here (tables, arrays of tables, scalars, lists)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return repr(v)

    lines = []

    def table(prefix, d):
        scalars = {k: v for k, v in d.items() if not isinstance(v, dict) and not is_table_list(v)}
        if prefix:
            lines.append(f"[{prefix}]")
        lines.extend(f"{k} = {value(v)}" for k, v in scalars.items())
        for k, v in d.items():
            name = f"{prefix}.{k}" if prefix else k
            if isinstance(v, dict):
                table(name, v)
            elif is_table_list(v):
                for item in v:
                    lines.append(f"[[{name}]]")
                    lines.extend(f"{kk} = {value(vv)}" for kk, vv in item.items())

    table("", data)
    return "\n".join(lines) + "\n"


def is_table_list(v):
    return isinstance(v, list) and v and all(isinstance(x, dict) for x in v)
