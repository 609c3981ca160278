"""A sweep's output folder: one Parquet row file per finished run, assembled into one table.

    DIR/.ffopt-result.json   marker (ffopt.io.results): the folder is ffopt's, command "sweep"
    DIR/sweep.toml           the sweep file as run
    DIR/results.parquet      one row per run of the sweep (assembled from rows/ with Arrow datasets)
    DIR/rows/<run id>.parquet    one row, committed when the run ends (temporary file + rename)
    DIR/runs/<run id>/       the run's plan files (a result folder of its own, as ``ffopt plan`` writes)

The run id is a hash of the run's full spec (the resolved problem, the plan settings, the ffopt
version), so a rerun of the same sweep finds what is done, and a changed sweep reuses the runs it
shares with the old one. A row file appears only after the run's folder is complete; a run is
committed or absent, whatever stops the sweep (a killed worker, Ctrl-C, a crash of the client).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from ffopt import interrupt
from ffopt.errors import OutputError
from ffopt.io.results import check_output_folder, read_marker, write_result_folder

TABLE = "results.parquet"
SWEEP_FILE = "sweep.toml"
ROWS, RUNS = "rows", "runs"
_ROW_FILE = re.compile(r"[0-9a-f]{16}\.parquet")
FIRST_COLUMNS = ("run", "run_id", "block", "status", "error_type", "error", "folder")


def check_sweep_folder(out: Path, force: bool = False) -> None:
    """The sweep folder must be new, empty, a sweep folder ffopt wrote, or (``force``) a folder without
    rows/ and runs/ of the user's; its own files are checked as ``ffopt plan`` checks them."""
    check_output_folder(out, [TABLE, SWEEP_FILE], force, "sweep")  # also refuses a plan's folder
    if out.is_dir() and read_marker(out) is None:
        for d in (ROWS, RUNS):
            if (out / d).exists() or (out / d).is_symlink():
                raise OutputError(f"{out / d}: exists and was not written by ffopt; ffopt never replaces your "
                                  "files: move it away or choose another output folder")


def open_sweep_folder(out: Path, sweep_text: str, force: bool = False) -> None:
    """Create (or reopen) the sweep folder with its marker, sweep.toml and the rows/ and runs/ folders."""
    check_sweep_folder(out, force)
    write_result_folder(out, lambda tmp: _write_top(tmp, sweep_text, None), force, command="sweep")
    for d in (ROWS, RUNS):
        (out / d).mkdir(exist_ok=True)
    for stale in (out / ROWS).glob(".tmp-*"):  # a row file a crash left half-written (never renamed)
        stale.unlink(missing_ok=True)


def _write_top(tmp: Path, sweep_text: str, table: pa.Table | None) -> None:
    (tmp / SWEEP_FILE).write_text(sweep_text, encoding="utf-8")
    table = table if table is not None else pa.table({"run": pa.array([], pa.int64())})
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                  b"ffopt.units": json.dumps(column_units(table.column_names))}),
                   tmp / TABLE)


# a column's unit from its name's ending (longest first); the sweep's parameters keep their problem-file names
UNIT_SUFFIXES = (("_rad_s", "rad/s"), ("_mrad", "mrad"), ("_mm", "mm"), ("_Nm", "N m"), ("_s", "s"),
                 ("_rad", "rad"), ("_V", "V"), ("_A", "A"))


def column_units(names) -> dict[str, str]:
    """{column: unit} of a sweep table ("" for a count, a name or a status): stored in results.parquet's
    metadata (``ffopt.units``) and in ``read_results(...).attrs["units"]``."""
    out = {}
    for name in names:
        base = name[:-4] if name.endswith("_max") else name  # solver statistics' maxima keep their unit
        out[name] = next((unit for suffix, unit in UNIT_SUFFIXES if base.endswith(suffix)), "")
    return out


def write_row(out: Path, row: dict) -> None:
    """Commit one run's row: rows/<run id>.parquet, written to a temporary file and renamed."""
    table = pa.Table.from_pylist([row])
    fd, name = tempfile.mkstemp(dir=out / ROWS, prefix=".tmp-", suffix=".parquet")
    os.close(fd)
    try:
        pq.write_table(table, name)
        os.replace(name, out / ROWS / f"{row['run_id']}.parquet")
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def write_run_folder(out: Path, run_id: str, files: dict[str, bytes]) -> None:
    """The run's plan files under runs/<run id>/ (a result folder: replaced only if ffopt wrote it)."""
    def fill(tmp: Path):
        for name, data in files.items():
            (tmp / name).write_bytes(data)

    write_result_folder(out / RUNS / run_id, fill, command="sweep run")


def row_files(out: Path) -> dict[str, Path]:
    """{run id: row file} of every committed run in the folder."""
    folder = out / ROWS
    if not folder.is_dir():
        return {}
    return {p.stem: p for p in folder.iterdir() if _ROW_FILE.fullmatch(p.name)}


def read_rows(out: Path, run_ids=None) -> pa.Table:
    """The committed rows (of ``run_ids`` only, if given) as one Arrow table, in sweep order."""
    files = row_files(out)
    if run_ids is not None:
        wanted = set(run_ids)
        files = {k: p for k, p in files.items() if k in wanted}
    if not files:
        return pa.table({"run": pa.array([], pa.int64())})
    paths = [str(p) for p in files.values()]
    schema = pa.unify_schemas([pq.read_schema(p) for p in paths], promote_options="permissive")
    table = ds.dataset(paths, schema=schema, format="parquet").to_table()
    table = table.sort_by("run")
    first = [c for c in FIRST_COLUMNS if c in table.column_names]
    return table.select(first + [c for c in table.column_names if c not in first])


def statuses(out: Path, run_ids) -> dict[str, str]:
    """{run id: status} of the committed runs among ``run_ids``."""
    table = read_rows(out, run_ids)
    if "run_id" not in table.column_names:
        return {}
    return dict(zip(table.column("run_id").to_pylist(), table.column("status").to_pylist()))


def write_table(out: Path, sweep_text: str, run_ids) -> pa.Table:
    """Assemble results.parquet from the committed rows of this sweep's runs (all or nothing; also while
    a Ctrl-C stops the sweep)."""
    table = read_rows(out, run_ids)
    with interrupt.deferred():
        write_result_folder(out, lambda tmp: _write_top(tmp, sweep_text, table), command="sweep",
                            stop_on_interrupt=False)
    return table


def read_results(out: str | Path):
    """A sweep's table (results.parquet) as a pandas DataFrame, one row per run. (After a crash of the
    sweep itself, rerun it: it recomputes only the missing runs and assembles the table again.)"""
    path = Path(out) / TABLE
    if not path.is_file():
        raise OutputError(f"{out}: no {TABLE} (not a sweep folder; ffopt sweep SWEEP.toml --out DIR writes one)")
    table = pq.read_table(path)
    df = table.to_pandas()
    meta = (table.schema.metadata or {}).get(b"ffopt.units")
    df.attrs["units"] = json.loads(meta) if meta else column_units(df.columns)
    return df
