"""`GradientTape.jacobian` and `batch_jacobian`: the recording lowered to a function, then
`sg.jacobian` of that function.

The lowered primal (see `lowering`) is an ordinary Python function of the sources and constants
returning the target, so its Jacobian is whatever `sg.jacobian` computes for any function:
vectorized, not one backward pass per element. While `sg.jacobian` is not available (or when the
path crosses a custom-gradient call, whose backward function only the tape can call), the
Jacobian is assembled from one compiled vector-Jacobian product per target element, all using
the same cached adjoint.
"""

from __future__ import annotations

import numpy as np

import s2sgrad

from . import lowering
from .tensor import Tensor, wrap


def tape_jacobian(tape, target: Tensor, sources: list, batch: bool) -> list:
    """One Jacobian (or None when unconnected) per source; ``batch`` gives per-example ones."""
    for s in sources:
        if not isinstance(s, Tensor):
            raise TypeError(
                f"GradientTape.jacobian: sources must be Tensors or Variables; got "
                f"{type(s).__name__}"
            )
    tracked = tape._recording.tracked
    picked = [i for i, s in enumerate(sources) if s.dtype.kind in "fc" and s in tracked]
    result = [None] * len(sources)
    if not picked:
        return result
    distinct = {id(sources[i]): sources[i] for i in picked}  # a source given twice: once
    chosen = list(distinct.values())
    found = _vectorized(tape, target, chosen)
    if found is None:
        found = _by_rows(tape, target, chosen)
    by_id = dict(zip(distinct, found, strict=True))
    found = [by_id[id(sources[i])] for i in picked]
    for i, j in zip(picked, found, strict=True):
        if j is not None and batch:
            j = _per_example(j, target, sources[i])
        result[i] = j
    return result


_plans: dict[tuple, tuple | None] = {}  # plan key -> (origins, Jacobian function, wrt sources)


def _vectorized(tape, target, sources):
    """Jacobians from `sg.jacobian` of the lowered recording, or None when that is not
    possible (no `sg.jacobian` yet, a custom-gradient call on the path, nested tapes)."""
    jacobian = getattr(s2sgrad, "jacobian", None)
    recording = tape._recording
    if jacobian is None or recording.has_custom:
        return None
    key = recording.plan_key([target], [None], sources)
    if key not in _plans:
        if len(_plans) >= lowering.PLAN_LIMIT:
            _plans.clear()
        _plans[key] = _plan(recording, target, sources, jacobian)
    plan = _plans[key]
    if plan is None:  # no path from the sources to the target
        return [None] * len(sources)
    origins, jacobian_of, wrt_sources = plan
    objects, values = lowering.gather(recording, origins, [target], [None])
    if lowering.watched_elsewhere(objects, tape):
        return None
    found = [None] * len(sources)
    for index, j in zip(wrt_sources, jacobian_of(*values), strict=True):
        found[index] = j if found[index] is None else found[index] + j
    return [None if j is None else wrap(np.asarray(j)) for j in found]


def _plan(recording, target, sources, jacobian):
    relevant = lowering.prune(recording, [target], sources)
    if not relevant and not any(target is s for s in sources):
        return None
    low = lowering.lower(recording, relevant, [target], [None], sources)
    compiled = lowering.compiled_for(low)
    wrt = tuple(i for i, kind in enumerate(low.arg_kinds) if kind == "s")
    # the plan is for these shapes: one sweep per input element or one per output element,
    # whichever is fewer (the plan key holds the shapes, so this stays right for the plan)
    inputs = sum(np.size(low.values[i]) for i in wrt)
    mode = "forward" if inputs < np.size(target._value) else "reverse"
    jacobian_of = compiled.jacobians.get(mode)
    if jacobian_of is None:
        jacobian_of = compiled.jacobians[mode] = jacobian(compiled.primal, wrt=wrt, mode=mode)
    wrt_sources = [low.arg_sources[a] for a, kind in enumerate(low.arg_kinds) if kind == "s"]
    return tuple(low.origins), jacobian_of, wrt_sources


def _by_rows(tape, target, sources):
    """Jacobians from one vector-Jacobian product per target element (same compiled code)."""
    size = int(np.prod(target.shape, dtype=int))
    rows = [[] for _ in sources]
    connected = [False] * len(sources)
    for k in range(size):
        seed = np.zeros(size, dtype=np.result_type(target.dtype, 1.0))
        seed[k] = 1.0
        grads = lowering.backprop(
            tape._recording, [target], [seed.reshape(target.shape)], sources, tape
        )
        for i, (g, s) in enumerate(zip(grads, sources, strict=True)):
            if g is not None:
                connected[i] = True
            rows[i].append(_full(g, s))
    result = []
    for i, s in enumerate(sources):
        if not connected[i]:
            result.append(None)
            continue
        if any(isinstance(r, Tensor) for r in rows[i]):
            stacked = np.stack(rows[i]) if rows[i] else np.zeros((0, *s.shape))
            result.append(np.reshape(stacked, target.shape + s.shape))
        else:
            stacked = np.stack(rows[i]) if rows[i] else np.zeros((0, *s.shape))
            result.append(wrap(stacked.reshape(target.shape + s.shape)))
    return result


def _full(g, source):
    if g is None:
        return np.zeros(source.shape, dtype=np.result_type(source.dtype, 1.0))
    if isinstance(g, Tensor):
        return g if g.shape == source.shape else np.broadcast_to(g, source.shape)
    return np.broadcast_to(np.asarray(g), source.shape)


def _per_example(j, target, source):
    """From the full Jacobian (B, *outs, B, *ins) to the per-example one (B, *outs, *ins):
    the sum over the target's batch axis (the diagonal when examples are independent)."""
    outs = target.ndim - 1
    summed = np.sum(j, axis=0)  # (*outs, B, *ins)
    return np.moveaxis(summed, outs, 0)
