"""The derivative rules, one module per family, each filling the global `registry` on import.

elementwise  operators, ufuncs, `math` functions (broadcasting handled by the compiler)
reductions   sum, mean, prod, max, min, var, std, cumsum
shape        transpose, reshape, expand_dims, squeeze, concatenate, stack, broadcast_to
indexing     reads by integer, slice, integer array and boolean mask
linalg       dot, matmul, einsum, outer, inv, solve, det, slogdet, norm
nondiff      functions whose results carry no gradient
helpers      rules of the helpers generated code calls (higher order)
forward      forward rules that are not derived (linear marks, batched rules)
"""

from . import (
    elementwise,
    forward,
    helpers,
    indexing,
    linalg,
    nondiff,
    reductions,
    shape,
)

__all__ = [
    "elementwise",
    "forward",
    "helpers",
    "indexing",
    "linalg",
    "nondiff",
    "reductions",
    "shape",
]
