"""Optimisation-based feedforward: direct collocation of the inverse-dynamics DAE into an NLP.

- collocation.py: Radau IIA rules (selectable degree) and implicit Euler (the low-order rule)
- transcription.py: the scaled, sparse CasADi NLP (exact tracking on the index-reduced I1 form,
  or band / penalty tracking on the forward model), torque and torque-rate bounds, objectives,
  pre-/post-actuation (extended horizon); its parts: grid.py (the collocation grid and the layout of the
  NLP vector, the hold's control grid; immutable), kernels.py (the model at one point, the interval and point
  kernels with their sparsity patterns), problem.py (the scaled NLP and its scales, what ``build`` returns)
- backends/: IPOPT through CasADi (default), through cyipopt, and a pyomo.dae model (.nl file);
  newton.py: square NLPs (causal exact tracking) by Newton, the step by block forward substitution in stage order
  (else SuperLU) (casadi and auto backends);
  backend 'auto': Newton if square, else IPOPT via cyipopt with interval-wise derivatives
- stages.py: the same NLP ordered stage by stage (one stage per interval) for fatrop, a
  stage-structured interior point (backends/fatrop_backend.py: ``nlp.backend = "fatrop"``)
- monitor.py: iteration and wall-time limits, live progress and Ctrl-C for every backend
  (backends/isolated.py: the Pyomo route in a worker process, so its limits hold)
- feasibility.py: torque / torque-rate bounds against the holding torques and the exact-tracking
  needs, before solving
- solve.py: strategy from the zero dynamics, BDF warm start, diagnosis, Trajectory
Entry points: ``ffopt.nlp.solve.solve_inverse_nlp`` and ``ffopt.nlp.solve.plan_nlp``.
"""

from ffopt.nlp.settings import NlpSettings

__all__ = ["NlpSettings"]
