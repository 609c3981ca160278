"""The planning methods by name, defined once: the problem schema's choices (``solver.method``), the CLI's
``--method`` choices and the planner's registry (``ffopt.plan.methods.METHODS``) all read them here."""

# Moberg & Hanssen's solver family (dd: the production dummy-derivative route; the rest: ffopt.replication)
MOBERG_HANSSEN_METHODS = ("hi", "dd", "dd43", "dd44", "dd48", "dd49", "km", "dc")
# the methods that step a BDF (solver.order, solver.step, solver.scaling_power apply to them)
BDF_FAMILY = ("bdf",) + MOBERG_HANSSEN_METHODS
# every value of solver.method: auto chooses among the others (ffopt.auto_method)
METHODS = ("auto", "bdf", "nlp") + MOBERG_HANSSEN_METHODS

# BDF orders: BDF is zero-stable up to order 6 only
BDF_ORDER_MIN, BDF_ORDER_MAX = 1, 6
