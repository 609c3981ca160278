"""The README a user reads: one page (at most 150 lines), every relative link resolves, every headline row names
the command that regenerates it, and no internal reference a user has never seen."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/overview.md", "docs/limits.md", "results/README.md"]


def test_readme_is_one_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_relative_links_resolve():
    broken = []
    for page in PAGES:
        path = ROOT / page
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            if "://" not in target and not (path.parent / target).exists():
                broken.append(f"{page}: {target}")
    assert broken == []


def test_every_headline_row_names_its_command():
    text = (ROOT / "README.md").read_text()
    table = text.split("## Headline numbers", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in table.splitlines() if r.startswith("| ") and not r.startswith("| what")]
    assert rows and all(re.search(r"`(ffopt|python) [^`]+`", r.split("|")[-2]) for r in rows)


def test_no_internal_references():
    for page in PAGES:
        text = (ROOT / page).read_text()
        assert not re.search(r"\bseed 00\d|\.\./shared", text), page
