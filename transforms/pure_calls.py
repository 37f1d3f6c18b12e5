"""Which calls the simplify pass may move, merge or drop: those with no side effects and no state.

A segment of the simplify pass (`transforms.simplify_segment`) treats a subexpression it cannot
read as arithmetic (``x[1:]``, ``np.sum(a)``, ``unbroadcast(g, x)``) as one opaque symbol, and
the rewritten segment may compute it in another place, once instead of twice, or not at all.
That is only sound for pure code; this module is the one place that decides what is pure, so
the list of runtime helpers and the rule for NumPy and builtins are read together.
"""

from __future__ import annotations

import libcst as cst

from .walk import dotted_name, visit

# calls that may be moved, merged or dropped: no side effects, no state
_PURE_PREFIXES = ("np.", "math.")
_IMPURE_PREFIXES = ("np.random.",)
_PURE_BUILTINS = frozenset({"len", "abs", "float", "int", "min", "max", "range", "tuple"})

# runtime helpers that only compute a new value from their arguments (no writes, no state)
PURE_HELPERS = frozenset(
    {
        "unbroadcast",
        "match_shape",
        "unreduce",
        "reduced_count",
        "safe_divide",
        "matmul_left",
        "matmul_right",
        "dot_adjoint_a",
        "dot_adjoint_b",
        "inner_adjoint_a",
        "inner_adjoint_b",
        "extremum_weights",
        "prod_of_others",
        "reverse_cumsum",
        "trace_adjoint",
        "norm_adjoint",
        "solve_transposed",
    }
)


def is_pure(node: cst.BaseExpression, helpers: frozenset[str]) -> bool:
    """Whether evaluating `node` has no effect but its value: every call in it is a NumPy or
    ``math`` function (not ``np.random``), one of `helpers` or a pure builtin, and it holds no
    lambda, walrus, ``yield`` or ``await``."""
    for name in call_names(node):
        if name.startswith(_IMPURE_PREFIXES):
            return False
        if not (name.startswith(_PURE_PREFIXES) or name in helpers or name in _PURE_BUILTINS):
            return False
    return not any(
        isinstance(n, (cst.Lambda, cst.NamedExpr, cst.Yield, cst.Await)) for n in _walk(node)
    )


def call_names(node: cst.CSTNode) -> list[str]:
    """The dotted names of the functions called in `node` (``"?"`` for a computed callee)."""
    found: list[str] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(dotted_name(call.func) or "?")

    visit(node, Calls())
    return found


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)
