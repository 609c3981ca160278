"""In-process cache of what the solvers build from one model object (CasADi functions, solvers), and results
kept on disk between processes (``on_disk``).

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

import hashlib
import json
import os
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


def on_disk_path(prefix: str, key: str):
    """The file ``on_disk`` keeps the result of (prefix, key) in."""
    from ffopt.codegen import cache_dir

    return cache_dir() / f"{prefix}_{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"


def on_disk(prefix: str, key: str | None, compute, encode=lambda value: value, decode=lambda data: data):
    """``compute()`` kept on disk beside the compiled code (``ffopt.codegen.cache_dir``) as
    ``<prefix>_<sha256(key)>.json`` (``on_disk_path``): ``decode`` of the file if it is there and reads, else
    ``compute()``, its ``encode`` written atomically (a read-only cache, or ``encode`` None for a result not
    worth keeping, e.g. a failure: not written). ``key``: everything the result depends on, the ffopt version
    included (None: no file, computed every time)."""
    if key is None:
        return compute()
    path = on_disk_path(prefix, key)
    try:
        return decode(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):  # not there, or written by an older layout
        pass
    value = compute()
    try:
        data = encode(value)
        if data is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(data))
            tmp.replace(path)
    except (OSError, TypeError, ValueError):  # read-only, or not JSON: computed again next time
        pass
    return value
