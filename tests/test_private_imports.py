"""No ffopt module uses a private name (leading underscore) of another ffopt module: neither
``from ffopt.x import _name`` nor ``x._name`` on an imported ffopt module. A name another module needs is
public (or lives where both can reach it). An AST walk over ffopt/, no imports."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ffopt"


def _module_name(path: Path) -> str:
    parts = ("ffopt", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    base = PACKAGE.parent.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    """The module an ImportFrom imports from, relative imports resolved."""
    if not node.level:
        return node.module
    base = module.split(".")
    base = base[: len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def private_uses(path: Path) -> list[tuple[str, str, int]]:
    """(module, private name, line) of every private name of another ffopt module that ``path`` uses."""
    module = _module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    modules = {}  # local name -> the ffopt module it is bound to
    uses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ffopt") and alias.asname:
                    modules[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, path.name == "__init__.py")
            if not source or not source.startswith("ffopt"):
                continue
            for alias in node.names:
                if _private(alias.name) and source != module:
                    uses.append((source, alias.name, node.lineno))
                if _is_module(f"{source}.{alias.name}"):
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and modules.get(node.value.id, module) != module):
            uses.append((modules[node.value.id], node.attr, node.lineno))
    return uses


def test_no_module_uses_a_private_name_of_another():
    found = [f"ffopt/{path.relative_to(PACKAGE).as_posix()}:{line}: {source}.{name}"
             for path in sorted(PACKAGE.rglob("*.py")) for source, name, line in private_uses(path)]
    assert not found, "private names used from another module:\n" + "\n".join(found)


def test_the_walk_finds_both_forms(tmp_path, monkeypatch):
    """The check itself: a from-import of a private name and an attribute of an imported module are found, the
    module's own private names and dunders are not."""
    package = tmp_path / "ffopt"
    (package / "a").mkdir(parents=True)
    for init in (package / "__init__.py", package / "a" / "__init__.py"):
        init.write_text("")
    (package / "a" / "b.py").write_text("_x = 1\n")
    user = package / "a" / "c.py"
    user.write_text("from ffopt.a.b import _x\nfrom ffopt.a import b\nfrom ffopt import __version__\n"
                    "from ffopt.a.c import _own\ny = b._x + b.public\n")
    monkeypatch.setitem(globals(), "PACKAGE", package)
    assert sorted(private_uses(user)) == [("ffopt.a.b", "_x", 1), ("ffopt.a.b", "_x", 5)]
