"""Optional pass after optimize (``simplify=True``): symbolic simplification with sympy.

Input and output: a ``def`` whose body is one-statement lines and compound statements (the
optimizer's output). The body is cut into *segments*: maximal runs of consecutive assignments
``name = expression`` where `name` is assigned nowhere else, is not written into, and the
expression is arithmetic (``+ - * / **``, unary minus, numbers) and elementwise functions
(``np.sin``, ``math.exp``, ...) of names and *opaque* pure subexpressions (``x[1:]``,
``x.T``, ``unbroadcast(g, x)``, ``np.sum(a)``, each one sympy symbol). Every operation there is
elementwise, so an identity of real numbers is an identity of broadcast arrays too.

Each segment becomes sympy expressions (names assigned in it substituted into later ones), its
*outputs* (names read after it) are simplified (`sympy.simplify` within a size budget, or
cheaper rewrites beyond it) and common subexpressions are shared with `sympy.cse`; the result
is written back as NumPy code (``math`` functions when the segment used only those). A segment
is written back only if that is cheaper by an operation count; otherwise it is left as it was.
Pure runtime helpers are functions sympy does not look into, except ``safe_divide(g, q)`` where
`q` (seen through the segment's names it was computed in) is a positive number plus something
never negative: that is ``g / q``, and folds with the rest. On numbers (the specialization's
Python-number parameters and values computed from them alone) a temporary that is one
operation on names (``u * v``) is recomputed where it is read rather than kept as a statement.

Shapes: a rewrite that drops a name from an output's expression could drop the broadcasting
that name brought (``x - x + y`` is not ``y`` when `x` is the larger array), so an output whose
simplified form reads fewer names than its original keeps the original; a segment in which
sympy already lost a name while building an expression (``0.0 * x``) is left alone. Anything
sympy cannot represent (comparisons, boolean operators, calls that are not known to be pure,
values used before they are assigned in a loop) ends a segment and is kept as written.

Layout: this module is the driver (the function's counts, each block cut into segments, the
final fold into ``return``); `transforms.simplify_segment` collects one segment and converts it
to sympy and back, choosing the cheapest plan; `transforms.simplify_graph` rewrites a plan's
expressions (fold, share, factor, recompute) and emits them; `transforms.sympy_code` prints
sympy as code and prices it; `transforms.pure_calls` says which calls may be moved.
"""

from __future__ import annotations

import collections

import libcst as cst

from .lines import COMPOUND, on_branches, single_name_assign, usage
from .pure_calls import PURE_HELPERS
from .simplify_segment import Context, Segment, unique_comments


def simplify(
    funcdef: cst.FunctionDef,
    pure_helpers: frozenset[str] = PURE_HELPERS,
    scalars: frozenset[str] = frozenset(),
    lists: frozenset[str] = frozenset(),
) -> cst.FunctionDef:
    """Simplify the arithmetic segments of `funcdef` with sympy (see the module docstring).

    `pure_helpers` names runtime helpers generated code may call that have no side effects
    (``unbroadcast``, ...): calls of them may be moved or shared like NumPy calls. `scalars`
    names the parameters known to be numbers (the specialization's Python numbers): values
    computed from them alone are cheap enough to compute twice
    (`transforms.simplify_graph.Graph.rematerialize`). `lists` names the values that may be
    Python lists or tuples (`shapes.ShapeTokens.maybe_sequences`, and their tangents): ``+``
    of two joins them, which is no sum of real numbers (``a + b`` is not ``b + a``), and
    ``np.square`` of one is no ``L * L``, so arithmetic reading one is kept as written.
    """
    reads: collections.Counter = collections.Counter()
    writes: collections.Counter = collections.Counter()
    mutated: set[str] = set()
    for line in funcdef.body.body:
        used = usage(line)
        reads.update(used.reads)
        writes.update(used.writes)
        mutated.update(used.mutates)
        if isinstance(line, cst.For):  # a loop target changes on every iteration
            writes[line.target.value] += 2 if isinstance(line.target, cst.Name) else 0
    params = frozenset(
        p.name.value
        for p in (
            *funcdef.params.posonly_params,
            *funcdef.params.params,
            *funcdef.params.kwonly_params,
        )
    )
    taken = set(reads) | set(writes) | set(params)
    unwritten_scalars = {p for p in scalars if p in params and not writes[p]}
    context = Context(
        reads, writes, mutated, params, taken, pure_helpers, unwritten_scalars, frozenset(lists)
    )
    body = _block(list(funcdef.body.body), context)
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(body)))


def _block(lines: list, context: Context) -> list:
    """One block's lines with each of its segments simplified (and those of nested blocks)."""
    import sympy

    out: list = []
    segment = Segment(context, sympy)
    for line in lines:
        if isinstance(line, COMPOUND):
            out.extend(segment.flush())
            out.append(on_branches(line, lambda block: _block(block, context)))
            continue
        if not segment.add(line):
            out.extend(segment.flush())
            if not segment.add(line):
                out.append(line)
    out.extend(segment.flush())
    return _fold_into_return(out, context)


def _fold_into_return(lines: list, context: Context) -> list:
    """``dx = ...; dy = ...; return (dx, dy)`` -> ``return (..., ...)``: arithmetic
    assignments right before a ``return`` of names, each read only there, move into it (in
    the same order)."""
    if not lines or not isinstance(lines[-1], cst.SimpleStatementLine):
        return lines
    statement = lines[-1].body[0]
    if not isinstance(statement, cst.Return) or statement.value is None:
        return lines
    value = statement.value
    elements = [value] if isinstance(value, cst.Name) else None
    if isinstance(value, cst.Tuple) and all(
        isinstance(e, cst.Element) and isinstance(e.value, cst.Name) for e in value.elements
    ):
        elements = [e.value for e in value.elements]
    if not elements:
        return lines
    names = [e.value for e in elements]
    position = {n: i for i, n in enumerate(names) if names.count(n) == 1}
    # reads counted in the lines as simplified (a segment may have rewritten one adjoint in
    # terms of another, so the counts of the original function no longer hold)
    reads: collections.Counter = collections.Counter()
    for line in lines:
        reads.update(usage(line).reads)
    folded: dict[str, cst.BaseExpression] = {}
    comments: list = []
    limit, index = len(names), len(lines) - 2
    while index >= 0:
        assign = single_name_assign(lines[index])
        if assign is None:
            break
        target, expr = assign
        place = position.get(target)
        if place is None or place >= limit or reads[target] != 1 or context.reads[target] != 1:
            break
        if context.writes[target] != 1 or target not in context.arithmetic:
            break
        folded[target] = expr
        comments[:0] = lines[index].leading_lines
        limit, index = place, index - 1
    if not folded:
        return lines
    if isinstance(value, cst.Name):
        new_value = folded[value.value]
    else:
        new_value = value.with_changes(
            elements=[
                e.with_changes(value=folded.get(e.value.value, e.value)) for e in value.elements
            ]
        )
    last = lines[-1]
    returned = last.with_changes(
        body=(statement.with_changes(value=new_value),),
        leading_lines=tuple(unique_comments([*comments, *last.leading_lines])),
    )
    return [*lines[: index + 1], returned]
