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
"""

from __future__ import annotations

import collections
import dataclasses
import itertools

import libcst as cst

from .lines import COMPOUND, on_branches, single_name_assign, usage
from .sympy_code import (
    SOURCE_FUNCTIONS,
    STATEMENT_COST,
    Printer,
    Unprintable,
    bounded_away_from_zero,
    floating,
    one_operation,
    operations,
    shared_cost,
    written_cost,
)
from .walk import dotted_name, read_names

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

_SIMPLIFY_BUDGET = 40  # sympy.simplify only for expressions up to this many operations
_INLINE_BUDGET = 400  # a larger expression ends its segment rather than grow further
_REMATERIALIZE_OPERATIONS = 3  # recomputing a scalar temporary may add this many operations


class _Unsupported(Exception):
    """The expression is not one sympy should see; the line is kept as written."""


@dataclasses.dataclass
class _Context:
    reads: collections.Counter
    writes: collections.Counter
    mutated: set
    params: frozenset
    taken: set
    pure_helpers: frozenset
    scalars: set  # names certainly holding one number (a Python or NumPy scalar)
    arithmetic: set = dataclasses.field(default_factory=set)  # targets segments took in
    floats: set = dataclasses.field(default_factory=set)  # names certainly holding floats
    counter: itertools.count = dataclasses.field(default_factory=lambda: itertools.count(1))

    def fresh(self) -> str:
        while True:
            name = f"_s{next(self.counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name


def simplify(
    funcdef: cst.FunctionDef,
    pure_helpers: frozenset[str] = PURE_HELPERS,
    scalars: frozenset[str] = frozenset(),
) -> cst.FunctionDef:
    """Simplify the arithmetic segments of `funcdef` with sympy (see the module docstring).

    `pure_helpers` names runtime helpers generated code may call that have no side effects
    (``unbroadcast``, ...): calls of them may be moved or shared like NumPy calls. `scalars`
    names the parameters known to be numbers (the specialization's Python numbers): values
    computed from them alone are cheap enough to compute twice (`_Graph.rematerialize`).
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
    context = _Context(reads, writes, mutated, params, taken, pure_helpers, unwritten_scalars)
    body = _block(list(funcdef.body.body), context)
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(body)))


def _block(lines: list, context: _Context) -> list:
    """One block's lines with each of its segments simplified (and those of nested blocks)."""
    import sympy

    out: list = []
    segment = _Segment(context, sympy)
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


def _fold_into_return(lines: list, context: _Context) -> list:
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
        leading_lines=tuple(_unique_comments([*comments, *last.leading_lines])),
    )
    return [*lines[: index + 1], returned]


class _Segment:
    """A run of arithmetic assignments, collected line by line, then written back simplified."""

    def __init__(self, context: _Context, sympy):
        self.context = context
        self.sp = sympy
        self.reset()

    def reset(self) -> None:
        self.lines: list = []
        self.targets: list[str] = []
        self.inlined: dict[str, object] = {}  # name -> expression of the segment's inputs
        self.local: list = []  # each line's expression with the segment's names as symbols
        self.leaves: dict[str, frozenset] = {}  # name -> the input names it depends on
        self.atoms: dict[str, object] = {}  # code of an opaque subexpression -> its symbol
        self.atom_nodes: dict[object, cst.BaseExpression] = {}
        self.read_free: set[str] = set()
        self.seen: list[str] = []
        self.calls: set[str] = set()
        self.direct: dict[str, frozenset] = {}  # name -> what its own line reads
        self.size: dict[str, int] = {}  # name -> operations of its inlined expression

    def add(self, line) -> bool:
        """Take `line` into the segment; False if it cannot be part of this one."""
        assign = single_name_assign(line)
        if assign is None:
            return False
        target, value = assign
        context = self.context
        if (
            context.writes[target] != 1
            or target in context.mutated
            or target in context.params
            or target in self.read_free  # read before this assignment: a loop-carried value
        ):
            return False
        try:
            self.seen = []
            local = self.convert(value, inline=False)
            names = self.seen  # the names and opaque subexpressions the line reads
            size = self.sp.count_ops(local) + sum(self.size.get(n, 0) for n in names)
            inlined = None
            if size <= _INLINE_BUDGET and all(self.inlined.get(n, 0) is not None for n in names):
                inlined = self.convert(value, inline=True)
        except _Unsupported:
            return False
        self.read_free.update(read_names(value, []))
        context.arithmetic.add(target)
        self.lines.append(line)
        self.targets.append(target)
        self.inlined[target] = inlined
        self.local.append(local)
        self.leaves[target] = frozenset().union(
            *(self.leaves.get(n, frozenset({n})) for n in names)
        )
        self.size[target] = size
        self.direct[target] = frozenset(names)
        if all(n in context.scalars for n in names):  # arithmetic of numbers is a number
            context.scalars.add(target)
        return True

    # -- libcst -> sympy ----------------------------------------------------------------------

    def convert(self, node: cst.BaseExpression, inline: bool):
        sp = self.sp
        kind = type(node)
        if kind is cst.Name:
            if node.value in ("True", "False", "None"):
                raise _Unsupported
            if inline and node.value in self.inlined:
                return self.inlined[node.value]  # (None: too large, and never asked for)
            if not inline:
                self.seen.append(node.value)
            return sp.Symbol(node.value, real=True)
        if kind is cst.Integer:
            return sp.Integer(node.evaluated_value)
        if kind is cst.Float:
            return sp.Float(node.evaluated_value)
        if kind is cst.UnaryOperation and isinstance(node.operator, (cst.Minus, cst.Plus)):
            operand = self.convert(node.expression, inline)
            return -operand if isinstance(node.operator, cst.Minus) else operand
        if kind is cst.BinaryOperation:
            operator = type(node.operator)
            if operator in (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.Power):
                left = self.convert(node.left, inline)
                right = self.convert(node.right, inline)
                if operator is cst.Add:
                    return left + right
                if operator is cst.Subtract:
                    return left - right
                if operator is cst.Multiply:
                    return left * right
                if operator is cst.Divide:
                    if right == 0:
                        raise _Unsupported
                    return left / right
                if left == 0 and (not right.is_number or right.is_negative):
                    raise _Unsupported
                return left**right
        if kind is cst.Call:
            name = dotted_name(node.func)
            function = SOURCE_FUNCTIONS.get(name or "")
            if function is not None and len(node.args) == 1 and node.args[0].keyword is None:
                if node.args[0].star:
                    raise _Unsupported
                self.calls.add(name.split(".")[0])
                argument = self.convert(node.args[0].value, inline)
                if function == "square":
                    return argument**2
                if function == "sqrt":
                    return sp.sqrt(argument)
                return getattr(sp, function)(argument)
            if name in self.context.pure_helpers and node.args:
                return self.helper(node, name, inline)
        return self.atom(node, inline)

    def helper(self, node: cst.Call, name: str, inline: bool):
        """A pure runtime helper (``safe_divide(g, y)``) as an uninterpreted sympy function of
        its converted arguments: shared and moved like arithmetic, never looked into."""
        seen = len(self.seen)
        try:
            if any(a.keyword is not None or a.star for a in node.args):
                raise _Unsupported
            arguments = [self.convert(a.value, inline) for a in node.args]
        except _Unsupported:
            del self.seen[seen:]
            return self.atom(node, inline)
        if (
            name == "safe_divide"
            and len(arguments) == 2
            and bounded_away_from_zero(self.resolved(arguments[1]))
        ):
            numerator, denominator = arguments
            if numerator.is_Float and float(numerator).is_integer():
                numerator = self.sp.Integer(int(numerator))  # 1 / y: no 1.0 * x to carry around
            return numerator / denominator  # safe_divide differs from x / y only where y is 0
        self.calls.add(name)
        return self.sp.Function(name)(*arguments)

    def resolved(self, expr):
        """`expr` with the segment's names replaced by what they hold (in terms of the
        segment's inputs), so that a property of a value is seen through the names it was
        computed in: the divisor ``_t13`` of ``safe_divide(g, _t13)`` is ``c * c + 1.0``."""
        replacements = {
            s: self.inlined[s.name]
            for s in expr.free_symbols
            if s.is_Symbol and self.inlined.get(s.name) is not None
        }
        return expr.xreplace(replacements) if replacements else expr

    def atom(self, node: cst.BaseExpression, inline: bool):
        """An opaque subexpression as one symbol: pure, and reading no name of the segment
        (that name might not exist any more once the segment is rewritten)."""
        names = read_names(node, [])
        if any(n in self.inlined for n in names):
            raise _Unsupported
        if not _pure(node, self.context.pure_helpers):
            raise _Unsupported
        code = cst.Module(body=()).code_for_node(node)
        symbol = self.atoms.get(code)
        if symbol is None:
            symbol = self.atoms[code] = self.sp.Dummy(real=True)
            self.atom_nodes[symbol] = node
            self.calls.update(n.split(".")[0] for n in _call_names(node))
        if not inline:
            self.seen.append(self.symbol_name(symbol))
        return symbol

    # -- writing back -------------------------------------------------------------------------

    def flush(self) -> list:
        lines = self.lines
        try:
            if len(lines) == 0:
                return []
            rewritten = self.rewrite()
            return lines if rewritten is None else rewritten
        finally:
            self.reset()

    def outputs(self) -> list[str]:
        """Names of the segment read after it (or by a later iteration of a loop)."""
        inside: collections.Counter = collections.Counter()
        for line in self.lines:
            inside.update(usage(line).reads)
        return [t for t in self.targets if self.context.reads[t] > inside[t]]

    def rewrite(self) -> list | None:
        """The segment written back, or None where that would not be cheaper.

        Two plans, the cheaper wins (operations, plus a little per statement): *graph* keeps
        the segment's assignments as a graph and folds away every one that costs nothing to
        fold (read once, or trivially cheap, or cheaper once substituted), then shares common
        subexpressions across all that remain (the forward and adjoint sweep alike) and
        factors sums (`_Graph`); *inlined* writes only the outputs, each a simplified
        expression of the segment's inputs (best when a whole chain collapses).
        """
        outputs = self.outputs()
        if not outputs:
            return None
        flavor = "math" if "math" in self.calls and "np" not in self.calls else "np"
        printer = Printer(self.atom_nodes, flavor)
        helpers = self.context.pure_helpers
        written = sum(written_cost(single_name_assign(n)[1], helpers) for n in self.lines)
        plans = [
            (written + STATEMENT_COST * len(self.lines), len(self.lines), None),
            self.graph_plan(outputs, printer),
            self.inlined_plan(outputs, printer),
        ]
        return min((p for p in plans if p is not None), key=lambda p: p[:2])[2]

    def inlined_plan(self, outputs: list[str], printer) -> tuple | None:
        chosen = {}
        for name in outputs:
            expr = self.inlined[name]
            if expr is None:
                return None
            found = {self.symbol_name(s) for s in expr.free_symbols}
            if not set(self.leaves[name]) <= found:  # sympy dropped a name while building
                return None
            if self.sp.count_ops(expr) > _INLINE_BUDGET:
                return None
            chosen[name] = self.simplest(expr, found, full=True)
            if chosen[name] is None:
                return None
        graph = _Graph(self, chosen, set(outputs))
        graph.optimize()
        comments = _unique_comments([c for line in self.lines for c in line.leading_lines])
        return graph.emit(outputs, printer, {outputs[0]: comments})

    def graph_plan(self, outputs: list[str], printer) -> tuple | None:
        for target, expr in zip(self.targets, self.local, strict=True):
            found = {self.symbol_name(s) for s in expr.free_symbols}
            if not self.direct[target] <= found:  # sympy dropped a name (x - x): its shape
                return None
        graph = _Graph(self, dict(zip(self.targets, self.local, strict=True)), set(outputs))
        graph.fold()
        graph.optimize()
        comments: dict[str, list] = {}
        pending: list = []
        for target, line in zip(self.targets, self.lines, strict=True):
            pending.extend(line.leading_lines)
            if target in graph.exprs:
                comments[target] = _unique_comments(pending)
                pending = []
        names = [t for t in self.targets if t in graph.exprs]
        if pending and names:
            comments[names[-1]] = _unique_comments(comments.get(names[-1], []) + pending)
        return graph.emit(names, printer, comments)

    def symbol_name(self, symbol) -> str:
        return f"<atom {symbol.dummy_index}>" if symbol in self.atom_nodes else symbol.name

    def simplest(self, expr, names: set[str], full: bool):
        """The cheapest of `expr` and its simplified forms that still reads every name
        (`sympy.simplify` only if `full` and the expression is small: it can take seconds)."""
        sp = self.sp
        candidates = [expr]
        rewrites = [sp.factor_terms, sp.powsimp]
        if full and sp.count_ops(expr) <= _SIMPLIFY_BUDGET:
            rewrites.append(sp.simplify)
        for rewrite in rewrites:
            try:
                candidates.append(rewrite(expr))
            except Exception:  # sympy gives up on some expressions in many ways: keep ours
                continue
        safe = [c for c in candidates if {self.symbol_name(s) for s in c.free_symbols} >= names]
        return min(safe, key=lambda c: shared_cost(sp, c)) if safe else None


class _Graph:
    """A segment's assignments as ``name -> sympy expression`` (of the names before it and the
    segment's inputs), rewritten in place and then written out in dependency order.

    Every rewrite keeps each expression reading every name it read (through the names it now
    reads instead): dropping one could drop the broadcasting it brought.
    """

    def __init__(self, segment: _Segment, exprs: dict, outputs: set[str]):
        self.segment = segment
        self.sp = segment.sp
        self.exprs = dict(exprs)
        self.outputs = outputs
        self.symbols = {name: self.sp.Symbol(name, real=True) for name in exprs}
        self.shared = False
        self.recomputed = 0.0  # operations `rematerialize` added, less the statements it saved

    def names(self, expr) -> set[str]:
        return {self.segment.symbol_name(s) for s in expr.free_symbols}

    def cost(self, expr) -> float:
        """What `expr` costs once written: as it is once `share` has run, else with its
        repeated subexpressions counted once (`share` will compute them once)."""
        return operations(self.sp, expr) if self.shared else shared_cost(self.sp, expr)

    def optimize(self) -> None:
        """Common subexpressions once, shared factors out of sums, then fold what that left,
        then recompute the cheapest scalar temporaries where they are read."""
        self.share()
        self.factor()
        self.fold()
        self.rematerialize()

    # -- folding -------------------------------------------------------------------------------

    def fold(self) -> None:
        """Substitute each non-output assignment into its readers wherever that costs nothing:
        read once (a chain becomes one expression), trivially cheap (``-d``, a copy), or
        cheaper after substitution (``sqrt(u) ** 2``); until nothing changes."""
        changed = True
        while changed:
            changed = False
            for name in list(self.exprs):
                if name not in self.outputs and self.fold_one(name):
                    changed = True

    def fold_one(self, name: str) -> bool:
        symbol, value = self.symbols[name], self.exprs[name]
        readers = [r for r, e in self.exprs.items() if symbol in e.free_symbols]
        before = STATEMENT_COST + self.cost(value)
        before += sum(self.cost(self.exprs[r]) for r in readers)
        new = {}
        for reader in readers:
            old = self.exprs[reader]
            wanted = (self.names(old) - {name}) | self.names(value)
            substituted = old.xreplace({symbol: value})
            if self.sp.count_ops(substituted) > _INLINE_BUDGET:
                return False
            best = self.segment.simplest(substituted, wanted, full=False)
            if best is None:
                return False
            new[reader] = best
        if sum(self.cost(e) for e in new.values()) > before + 1e-9:
            return False
        self.exprs.update(new)
        del self.exprs[name]
        return True

    # -- rematerializing -----------------------------------------------------------------------

    def rematerialize(self) -> None:
        """Write a temporary that is one operation on names and numbers (``_s1 * dd``,
        ``u * v``, ``1 / u``, ``-u``) and holds a number into its readers instead of holding it
        in a statement, when that adds at most `_REMATERIALIZE_OPERATIONS` operations in all.

        `fold` keeps such a value when it is read twice, as `sympy.cse` would: its cost model
        counts operations, and an assignment costs less than a float operation. But on a number
        the extra operations cost some 10-20 ns each in CPython, while a statement less is a
        line less to read; on arrays each one is a pass over memory, so arrays never get here.
        Transcendental functions are never recomputed (not one operation on atoms). The plans
        of `_Segment.rewrite` are compared without the operations added here (`recomputed`), so
        a plan is not turned down for the trade made on purpose.
        """
        changed = True
        while changed:
            changed = False
            for name in list(self.exprs):
                if name not in self.outputs and self.rematerialize_one(name):
                    changed = True

    def rematerialize_one(self, name: str) -> bool:
        value = self.exprs[name]
        if not (one_operation(value) and self.is_scalar(self.symbols[name])):
            return False
        symbol = self.symbols[name]
        readers = [r for r, e in self.exprs.items() if symbol in e.free_symbols]
        if not readers:
            return False
        new = {r: self.exprs[r].xreplace({symbol: value}) for r in readers}
        added = sum(operations(self.sp, e) for e in new.values()) - sum(
            operations(self.sp, self.exprs[r]) for r in readers
        )
        if added - operations(self.sp, value) > _REMATERIALIZE_OPERATIONS + 1e-9:
            return False
        self.recomputed += added - operations(self.sp, value) - STATEMENT_COST
        if any(not self.names(e) >= self.names(self.exprs[r]) - {name} for r, e in new.items()):
            return False  # sympy dropped a name while substituting (u - u): keep the temporary
        self.exprs.update(new)
        del self.exprs[name]
        return True

    def is_scalar(self, symbol) -> bool:
        """Whether `symbol` certainly holds a number: a name known to, or a temporary of this
        graph computed from such names alone."""
        scalars = self.segment.context.scalars
        pending, seen = [symbol], set()
        while pending:
            current = pending.pop()
            name = self.segment.symbol_name(current)
            if name in seen or name in scalars:
                continue
            seen.add(name)
            if name not in self.exprs:
                return False
            pending.extend(self.exprs[name].free_symbols)
        return True

    # -- sharing and factoring -----------------------------------------------------------------

    def share(self) -> None:
        """`sympy.cse` over every expression at once (forward and adjoint sweep together); a
        shared subexpression that is all of some assignment takes that assignment's name."""
        sp = self.sp
        names = list(self.exprs)
        context = self.segment.context
        replacements, reduced = sp.cse(
            [self.exprs[n] for n in names], symbols=_numbered(sp, context), order="none"
        )
        definitions = dict(replacements)
        renaming = {}
        for name, expr in zip(names, reduced, strict=True):
            if expr in definitions and expr not in renaming:
                renaming[expr] = self.symbols[name]
        exprs = {}
        for symbol, value in replacements:
            target = renaming.get(symbol, symbol)
            exprs[target.name] = value.xreplace(renaming)
            self.symbols[target.name] = target
        for name, expr in zip(names, reduced, strict=True):
            if renaming.get(expr) is not self.symbols[name]:
                exprs[name] = expr.xreplace(renaming)
        self.exprs = exprs
        self.shared = True

    def factor(self) -> None:
        """Shared factors out of sums, numbers too (``2*a - 2*b -> 2*(a - b)``)."""
        for name, expr in list(self.exprs.items()):
            candidates = [self.collected(expr)]
            try:
                candidates.append(self.sp.factor_terms(candidates[0]))
            except Exception:  # sympy gives up on some expressions: keep ours
                pass
            wanted = self.names(expr)
            safe = [c for c in candidates if self.names(c) >= wanted]
            self.exprs[name] = min(safe, key=self.cost)

    def collected(self, expr):
        """`expr` with a factor two terms of a sum share pulled out (``a*s + b*s -> (a + b)*s``)
        wherever that is cheaper, in sums at any depth."""
        sp = self.sp
        if not expr.args or expr.is_Atom:
            return expr
        args = [self.collected(a) for a in expr.args]
        if any(a is not b for a, b in zip(args, expr.args, strict=True)):
            expr = expr.func(*args, evaluate=False) if expr.is_Mul else expr.func(*args)
        if not expr.is_Add:
            return expr
        wanted, best, best_cost = self.names(expr), expr, self.cost(expr)
        improved = True
        while improved and best.is_Add:
            improved = False
            counts = collections.Counter(s for t in best.args for s in t.free_symbols)
            for symbol in sorted((s for s, n in counts.items() if n > 1), key=str):
                try:
                    candidate = sp.collect(best, symbol)
                except Exception:  # sympy's collect gives up on some expressions: skip
                    continue
                cost = self.cost(candidate)
                if cost < best_cost - 1e-9 and self.names(candidate) >= wanted:
                    best, best_cost, improved = candidate, cost, True
                    break
        return best

    # -- writing -------------------------------------------------------------------------------

    def emit(self, roots: list[str], printer, comments: dict) -> tuple | None:
        """(cost, statement count, lines): `roots` in order, each after the assignments it
        reads that are not written yet."""
        lines: list = []
        done: set[str] = set()
        cost = 0.0
        floats = self.segment.context.floats
        try:
            for root in roots:
                start = len(lines)
                stack = [(root, False)]
                while stack:
                    name, ready = stack.pop()
                    if name in done:
                        continue
                    if ready:
                        done.add(name)
                        expr = self.exprs[name]
                        cost += operations(self.sp, expr) + STATEMENT_COST
                        is_float = printer.flavor == 1 and floating(self.sp, expr, floats)
                        if is_float:
                            floats.add(name)
                        lines.append(_assign(name, printer.code(expr, floating=is_float)))
                        continue
                    stack.append((name, True))
                    needed = sorted(self.names(self.exprs[name]) & set(self.exprs), reverse=True)
                    stack.extend((n, False) for n in needed if n not in done)
                if comments.get(root) and len(lines) > start:
                    lines[start] = lines[start].with_changes(leading_lines=tuple(comments[root]))
        except Unprintable:
            return None
        return cost - max(self.recomputed, 0.0), len(lines), lines


def _unique_comments(comments: list) -> list:
    """Each comment line once, in order (a primal line and its adjoint both say `line 5`)."""
    seen: set[str] = set()
    unique = []
    for comment in comments:
        text = comment.comment.value if comment.comment is not None else ""
        if text not in seen:
            seen.add(text)
            unique.append(comment)
    return unique


def _numbered(sp, context: _Context):
    while True:
        yield sp.Symbol(context.fresh(), real=True)


def _assign(target: str, code: str) -> cst.SimpleStatementLine:
    value = cst.parse_expression(code)
    return cst.SimpleStatementLine((cst.Assign((cst.AssignTarget(cst.Name(target)),), value),))


def _call_names(node: cst.CSTNode) -> list[str]:
    found: list[str] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(dotted_name(call.func) or "?")

    node.visit(Calls())
    return found


def _pure(node: cst.BaseExpression, helpers: frozenset[str]) -> bool:
    for name in _call_names(node):
        if name.startswith(_IMPURE_PREFIXES):
            return False
        if not (name.startswith(_PURE_PREFIXES) or name in helpers or name in _PURE_BUILTINS):
            return False
    return not any(
        isinstance(n, (cst.Lambda, cst.NamedExpr, cst.Yield, cst.Await)) for n in _walk(node)
    )


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)
