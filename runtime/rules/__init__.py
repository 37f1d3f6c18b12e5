"""The derivative rules, one module per family, each filling the global `registry` on import.

elementwise  operators, ufuncs, `math` functions (broadcasting handled by the compiler)
reductions   sum, mean, prod, max, min, var, std, cumsum
assembly     tile, roll, pad, diag, tril, stacks, splits, sort, take, tensordot, kron, cross, diff
shape        transpose, reshape, expand_dims, squeeze, concatenate, stack, broadcast_to
indexing     reads by integer, slice, integer array and boolean mask
linalg       dot, matmul, einsum, outer, inv, solve, det, slogdet, norm
decompositions  cholesky, eigh, svd, qr, ... (numpy.linalg's factorizations)
fft          numpy.fft
nondiff      functions whose results carry no gradient
helpers      rules of the helpers generated code calls (higher order)
forward      forward rules that are not derived (linear marks, batched rules)
"""

from . import (
    assembly,
    decompositions,
    elementwise,
    fft,
    forward,
    helpers,
    indexing,
    linalg,
    nondiff,
    reductions,
    shape,
)

__all__ = [
    "assembly",
    "decompositions",
    "elementwise",
    "fft",
    "forward",
    "helpers",
    "indexing",
    "linalg",
    "nondiff",
    "reductions",
    "shape",
]
