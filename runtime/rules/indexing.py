"""Reverse rules of indexing reads: ``x[i]``, ``x[1:3]``, ``x[idx_array]``, ``x[mask]``.

The compiler emits a subscript read ``y = x[index]`` as a call of `operator.getitem`; its
adjoint scatters ``g`` back into zeros shaped like ``x``. Repeated integer indices accumulate.
When the compiler can see that the index is basic (slices and integers) and that the adjoint
buffer is its own, it writes ``dx[index] += g`` in place instead.
"""

import operator

from ..adjoint_helpers import index_adjoint
from ..registry import registry


@registry.vjp(operator.getitem)
def getitem(g, ans, x, index):
    return index_adjoint(g, x, index)
