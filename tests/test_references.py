"""Every "Author & Author" citation of the code and the README names authors listed in docs/references.md."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIBLIOGRAPHY = (ROOT / "docs" / "references.md").read_text()
NAME = r"(?:(?:De|Van) )?[A-Z][a-zà-ÿ][\w-]*"
# "Moberg & Hanssen", "Thuemmel, Otter & Bals", "Vanroye, Sathya, De Schutter & Decré"
CITATION = re.compile(rf"\b{NAME}(?:, {NAME})* & {NAME}")


def citations() -> dict[str, str]:
    """{citation: a file that makes it} over ffopt/**/*.py and README.md."""
    found = {}
    for path in [*sorted((ROOT / "ffopt").rglob("*.py")), ROOT / "README.md"]:
        for match in CITATION.finditer(path.read_text()):
            found.setdefault(match.group(0), str(path.relative_to(ROOT)))
    return found


def test_every_cited_author_is_in_the_bibliography():
    found = citations()
    assert "Moberg & Hanssen" in found and "Singhose, Seering & Singer" in found
    missing = {c: where for c, where in found.items()
               if not all(name in BIBLIOGRAPHY for name in re.split(r", | & ", c))}
    assert not missing, f"cited but not in docs/references.md: {missing}"
