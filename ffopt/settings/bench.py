"""The tables of ``ffopt bench`` (``ffopt.bench``), named once for the command line and the runner."""

BENCH_TABLES = ("forms", "plan", "steps", "bodies", "nlp", "motion")
