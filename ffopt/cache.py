"""In-process cache of what the solvers build from one model object (CasADi functions, solvers).

A ``FlexibleModel`` builds its symbolic expressions once (cached properties); the functions the
BDF solver, the static equilibrium and the verification build on top of them are cached here per
model object, so a second plan on the same model (a sweep, replanning) pays only for the numbers.
Entries live as long as the model object (weak keys). Each entry also records the model's chain
and outputs as they were when it was built: a model whose chain was swapped afterwards is never
served a stale entry. Compiled code on disk has its own key (a hash of the generated functions,
``ffopt.dae.bdf``); nothing here depends on a reference path or on solver settings unless they
are part of ``key``.
"""

from __future__ import annotations

import weakref

_ENTRIES: "weakref.WeakKeyDictionary[object, dict]" = weakref.WeakKeyDictionary()
MAX_ENTRIES_PER_MODEL = 32


def per_model(model, key, build):  # also for other objects that are built once and not changed (references)
    """``build()`` once per (model object, key); later calls return the same object.

    ``build`` must not hold a reference to ``model`` in what it returns (the entry would keep the
    model alive)."""
    entries = _ENTRIES.setdefault(model, {})
    stamp = (getattr(model, "chain", None), tuple(getattr(model, "outputs", ())))
    hit = entries.get(key)
    if hit is not None and hit[0] is stamp[0] and hit[1] == stamp[1]:
        return hit[2]
    value = build()
    entries[key] = (*stamp, value)
    while len(entries) > MAX_ENTRIES_PER_MODEL:  # e.g. integrators for many grids in a sweep: oldest out
        entries.pop(next(iter(entries)))
    return value


def clear() -> None:
    """Forget every entry (benchmarks measuring a first call in a running process)."""
    _ENTRIES.clear()
