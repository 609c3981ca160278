"""Settings defined once, at the ground floor (no heavy imports): the planning methods by name (methods.py) and
the collocation NLP's settings (nlp.py). The problem schema (``ffopt.io.problem``), the CLI and the solvers read
them here."""
