"""The schema of sweep files (``ffopt.sweep.spec`` parses them): here, beside the problem schema, so that the
format reference (``ffopt.io.format_reference``, docs/problem-format.md) documents both without importing the
sweep machinery."""

from ffopt.io.schema import Field

MODES = ("grid", "list", "random")
DETERMINISTIC = ("values", "linspace", "logspace")
# columns of the results table a parameter must not shadow (ffopt.sweep.runner writes them)
RESERVED = ("run", "run_id", "block", "status", "error_type", "error", "folder", "method", "n_points", "ffopt_version",
            "finished_utc")
RESERVED_PREFIXES = ("t_", "peak_u_", "solver_", "error_", "worker_")
RANDOM = ("uniform", "loguniform", "integers", "choice")

PLAN_SCHEMA = {
    "verify": Field("bool", default=None, doc="run the verification (default: the problem's verification.enabled)"),
    # Each run with its own model or path compiles its own C code (1-2 s of gcc; E12 BDF in CasADi's VM
    # takes 0.25 s): compile only pays for runs that share model, path, order and form.
    "compile": Field("bool", default=False, doc="compile the BDF stepping loop to C (default: CasADi's VM)"),
    "plots": Field("bool", default=False, doc="write the plan's PNG plots into every run folder"),
}
BLOCK_SCHEMA = {
    "name": Field("str", default="", doc="block name (the results table's block column; default its number)"),
    "mode": Field("str", default="grid", choices=MODES,
                  doc="grid: every combination of the parameters' values; list: the i-th values together; random: "
                      "samples draws with seed"),
    "set": Field("raw_table", default=None, doc="fields set for the runs of this block, as the sweep's set"),
    "parameters": Field("raw_table", required=True,
                        doc="the fields to vary, one entry each: \"dotted.field\" = [values], or a table with one "
                            "way to give the values and optionally fields"),
    "samples": Field("int", default=None, check=lambda n: None if n > 0 else f"must be > 0, got {n}",
                     doc="mode random: the number of runs drawn"),
    "seed": Field("int", default=None, doc="mode random: seed of the draws (the same seed draws the same runs)"),
}
SWEEP_SCHEMA = {
    "name": Field("str", default="", doc="name of the sweep (default: the file name)"),
    "description": Field("str", default="", doc="what the sweep studies, in a line"),
    "problem": Field("str", required=True, doc="the base problem file, relative to the sweep file"),
    "set": Field("raw_table", default=None,
                 doc="fields set for every run: \"dotted.field.name\" = value, e.g. \"solver.step\" = 2e-3"),
    "plan": Field("table", default=None, schema=PLAN_SCHEMA, doc="how every run is planned"),
    "runs": Field("tables", required=True, schema=BLOCK_SCHEMA,
                  doc="blocks of runs, one [[runs]] entry each; the sweep is their union"),
}
# One entry of [runs.parameters]: `name = [values]` or `name = { <one of these keys>, fields = [...] }`.
# Documentation only (``ffopt schema sweep.runs.parameters``); _parameter() parses the entries.
PARAMETER_SCHEMA = {
    "fields": Field("str_list", doc="problem fields (dotted names) set to the parameter's value; default: the "
                                    "parameter's own name"),
    "values": Field("list", doc="the values (a plain list `name = [...]` means the same)"),
    "linspace": Field("list", doc="[first, last, count]: count values evenly spaced"),
    "logspace": Field("list", doc="[first, last, count]: count values evenly spaced in log (first, last > 0)"),
    "uniform": Field("list", doc="mode random: [low, high], uniform draws"),
    "loguniform": Field("list", doc="mode random: [low, high], uniform in log (low > 0)"),
    "integers": Field("list", doc="mode random: [low, high], integers, both ends included"),
    "choice": Field("list", doc="mode random: draws from this list of values"),
}
