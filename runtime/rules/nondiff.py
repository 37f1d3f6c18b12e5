"""Functions whose results carry no derivative: rounding, sign, argmax, comparisons, constructors.

A call to one of these is computed in the primal sweep and never differentiated; its result is
a constant of the derivative. Listing them (rather than leaving them unregistered) is what lets
the compiler tell "no gradient" apart from "no rule", which raises `LookupError`.

Only functions whose result is piecewise constant in every float argument belong here (a
shape, a count, an index, a rounded value). Constructors whose values move with a float
argument are not: ``np.linspace``'s ends and ``np.full``'s fill value have rules
(``rules/shape.py``); ``np.arange``'s start and step, ``np.logspace``, ``np.vander`` and
``np.meshgrid`` have none, so a differentiated argument there is a `LookupError`, never a
silent zero. Unused by the derivative (constant arguments), they need no rule at all.
"""

import builtins
import math
import operator

import numpy as np

from ..registry import registry

registry.register_nondiff(
    [
        # rounding and sign
        np.floor,
        np.ceil,
        np.round,
        np.rint,
        np.trunc,
        np.fix,
        np.sign,
        np.floor_divide,
        math.floor,
        math.ceil,
        math.trunc,
        builtins.round,
        operator.floordiv,
        # index-valued and boolean reductions
        np.argmax,
        np.argmin,
        np.argsort,
        np.nonzero,
        np.flatnonzero,
        np.count_nonzero,
        np.any,
        np.all,
        np.isnan,
        np.isinf,
        np.isfinite,
        np.iscomplex,
        np.isreal,
        np.iscomplexobj,
        np.isrealobj,
        np.isin,
        np.signbit,
        np.isposinf,
        np.isneginf,
        np.isscalar,
        np.array_equiv,
        np.argwhere,
        np.digitize,
        np.shares_memory,
        np.may_share_memory,
        np.searchsorted,
        # comparisons and logic
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.eq,
        operator.ne,
        operator.not_,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.invert,
        np.less,
        np.less_equal,
        np.greater,
        np.greater_equal,
        np.equal,
        np.not_equal,
        np.logical_and,
        np.logical_or,
        np.logical_not,
        np.logical_xor,
        np.isclose,
        np.allclose,
        np.array_equal,
        # shapes, sizes and constructors (their arguments are shapes, not values)
        np.shape,
        np.result_type,
        np.finfo,
        np.iinfo,
        np.ndim,
        np.size,
        builtins.len,
        builtins.isinstance,
        builtins.int,
        builtins.bool,
        builtins.range,
        builtins.print,
        np.zeros,
        np.ones,
        np.empty,
        np.eye,
        np.identity,
        np.zeros_like,
        np.ones_like,
        np.empty_like,
        np.tri,
        np.indices,
    ]
)
