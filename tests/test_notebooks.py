"""The comparison-study notebooks (results/notebooks/*.py, jupytext percent format) run clean at the ci
size: each is converted with jupytext and executed by nbclient in a kernel of this Python (the venv's),
so a failing cell, and a conclusion that does not hold at the ci size (each notebook checks its own
table), fails the test. Each must state its question first, show plots and end with its conclusion
table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "results" / "notebooks"))
import nbsupport  # noqa: E402
from nbclient.exceptions import CellExecutionError  # noqa: E402  (the test extra: nbclient, jupytext, ipykernel)

CELL_TIMEOUT_S = 600  # per cell; at the ci size the slowest cell takes well under a minute
NOTEBOOKS = nbsupport.notebooks()


def test_the_four_studies_are_there():
    assert [p.stem for p in NOTEBOOKS] == ["a_bdf_forms_vs_published", "b_bdf_nlp_rigid", "c_bounds_and_nmp",
                                           "d_sweep_analysis"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_clean_at_ci_size(path):
    nb, seconds = nbsupport.execute(path, "ci", timeout=CELL_TIMEOUT_S)
    print(f"{path.name}: {seconds:.1f} s at the ci size")
    assert nb.cells[0].cell_type == "markdown" and "**Question.**" in nb.cells[0].source
    code = [c for c in nb.cells if c.cell_type == "code"]
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no plot"
    assert any("size ci" in o.get("text", "") for o in outputs), "the notebook did not run at the ci size"
    *_, table_cell, check_cell = code  # the conclusion table, then the check of its claims
    assert check_cell.source.strip() == "c.check()" and not check_cell.outputs
    html = "".join(o.get("data", {}).get("text/html", "") for o in table_cell.outputs)
    assert "finding" in html and "holds" in html and ">yes<" in html and ">NO<" not in html


def test_a_claim_that_does_not_hold_fails_the_notebook(tmp_path):
    """The mechanism the studies rely on: a false claim in the conclusion table raises in its cell."""
    (tmp_path / "false_claim.py").write_text(
        "# %% [markdown]\n# **Question.** Does a wrong claim fail?\n\n# %%\nimport nbsupport\n"
        "c = nbsupport.Conclusions()\nc.add('one is two', '1 != 2', 1 == 2)\nc.table()\n\n# %%\nc.check()\n")
    with pytest.raises(CellExecutionError, match="conclusions that do not hold: \\['one is two'\\]"):
        nbsupport.execute(tmp_path / "false_claim.py", "ci", timeout=120)


def test_size_parameter(monkeypatch):
    monkeypatch.setenv(nbsupport.SIZE_VARIABLE, "CI")
    assert nbsupport.size() == "ci"
    monkeypatch.delenv(nbsupport.SIZE_VARIABLE)
    assert nbsupport.size() == "full"
    monkeypatch.setenv(nbsupport.SIZE_VARIABLE, "huge")
    with pytest.raises(ValueError, match="FFOPT_NOTEBOOK_SIZE: must be one of ci, full, got 'huge'"):
        nbsupport.size()
