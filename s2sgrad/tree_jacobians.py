"""`sg.jacobian` and `sg.hessian` where an argument or the output is a pytree, as JAX gives them:
a nested structure of blocks.

The Jacobian of an output leaf ``o`` with respect to an argument leaf ``a`` is a block shaped
``o.shape + a.shape``. The blocks are arranged in the output's structure, and inside it in the
argument's: ``J["loss"]["W"]`` for an output ``{"loss": ...}`` and an argument
``{"W": ...}``; an array output gives the argument's structure alone (``J["W"]``), an array
argument the output's alone. A Hessian is the Jacobian of the gradient, whose structure is the
argument's: ``H["W"]["b"]``, shaped ``W.shape + b.shape``.

How: the argument's floating leaves are numbered as one vector of ``n`` elements and seeded
with the identity. For the user's function that is one batched forward sweep (tangents with a
leading axis of ``n`` directions, in the argument's structure); for generated code (the
gradient a Hessian differentiates) it is one forward sweep per direction, each the
Hessian-vector product `sg.hvp` computes. The generated Jacobian function of `jacobian_code`
calls `pytree_jacobian` where an argument it differentiates or the output is a container, and
keeps its vectorized sweeps for arrays and numbers.
"""

from __future__ import annotations

import numpy as np

from s2sgrad.runtime import keyed

from . import tree
from .binding import arguments, concrete, parameter_names, transformed
from .forward_api import forward_transform, in_structure, jvp_of_values


def pytree_jacobian(f, names: tuple[str, ...], is_tuple: bool, values: tuple):
    """The Jacobian of `f` at `values` (one per parameter) with respect to each of `names`:
    nested blocks (see the module docstring), a tuple of them when `is_tuple`."""
    params = parameter_names(f)
    found = tuple(_jacobian(f, params.index(name), values) for name in names)
    return found if is_tuple else found[0]


def _jacobian(f, index: int, values: tuple):
    arg = values[index]
    arg_leaves, arg_def = tree.flatten(arg)
    floating = [_is_float(leaf) for leaf in arg_leaves]
    sizes = [int(np.size(leaf)) if fl else 0 for leaf, fl in zip(arg_leaves, floating, strict=True)]
    n = sum(sizes)
    if transformed(f) is None:
        out, columns = _batched_sweep(f, index, values, arg_leaves, arg_def, sizes, n)
    else:
        out, columns = _sweep_per_direction(f, index, values, arg_leaves, arg_def, sizes, n)
    out_leaves, out_def = tree.flatten(out)
    blocks_by_output = []
    for o, column in zip(out_leaves, columns, strict=True):
        blocks = []
        start = 0
        for leaf, size in zip(arg_leaves, sizes, strict=True):
            if not size and not _is_float(leaf):
                blocks.append(None)  # an integer or other constant leaf: no derivative
                continue
            part = np.moveaxis(column[start : start + size], 0, -1)
            blocks.append(np.reshape(part, np.shape(o) + np.shape(leaf)))
            start += size
        blocks_by_output.append(tree.unflatten(arg_def, blocks))
    if out_def.kind == "leaf":
        return blocks_by_output[0]
    return tree.unflatten(out_def, blocks_by_output)


def _directions(arg_leaves, sizes, n: int) -> list:
    """Per argument leaf, its tangents along the ``n`` unit directions: ``(n, *leaf.shape)``."""
    identity = np.eye(n)
    found, start = [], 0
    for leaf, size in zip(arg_leaves, sizes, strict=True):
        shape = (n, *np.shape(leaf))
        if size:
            found.append(np.reshape(identity[:, start : start + size], shape))
        else:
            found.append(np.zeros(shape))
        start += size
    return found


def _batched_sweep(f, index, values, arg_leaves, arg_def, sizes, n):
    """One batched forward sweep of the user's function `f` along every direction at once:
    the output and, per output leaf, its tangents ``(n, *leaf.shape)``."""
    params = parameter_names(f)
    tangent = keyed(tree.unflatten(arg_def, _directions(arg_leaves, sizes, n)))
    compiled = forward_transform(f, (params[index],), batched=True)
    positional, keywords = arguments(f, params, values)
    out, t_out = compiled.function_for(*values)(*positional, tangent, **keywords)
    return out, _columns(out, t_out, n)


def _sweep_per_direction(f, index, values, arg_leaves, arg_def, sizes, n):
    """One forward sweep of generated code `f` per direction (as `sg.hvp` runs it)."""
    directions = _directions(arg_leaves, sizes, n)
    out, rows = None, []
    for k in range(n):
        tangent = tree.unflatten(arg_def, [d[k] for d in directions])
        tangents = tuple(tangent if i == index else None for i in range(len(values)))
        out, t_out = jvp_of_values(f, values, tangents)
        rows.append(t_out)
    if out is None:  # an argument without floating elements
        out = concrete(f, values)(*values)
    out_leaves, out_def = tree.flatten(out)
    columns = []
    for position, o in enumerate(out_leaves):
        stacked = [_full(out_def.flatten_up_to(row)[position], o) for row in rows]
        columns.append(np.stack(stacked) if stacked else np.zeros((0, *np.shape(o))))
    return out, columns


def _columns(out, t_out, n: int) -> list:
    """Per leaf of `out`, its batched tangent from `t_out` as ``(n, *leaf.shape)``."""
    out_leaves, out_def = tree.flatten(out)
    found = []
    t_out = in_structure(t_out, out)
    for o, t in zip(out_leaves, out_def.flatten_up_to(t_out), strict=True):
        shape = (n, *np.shape(o))
        found.append(np.zeros(shape) if t is None else np.broadcast_to(np.asarray(t), shape))
    return found


def _full(t, o) -> np.ndarray:
    return np.zeros(np.shape(o)) if t is None else np.broadcast_to(np.asarray(t), np.shape(o))


def _is_float(x) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (float, complex, np.floating, np.complexfloating)):
        return True
    return isinstance(x, np.ndarray) and x.dtype.kind in "fc"
