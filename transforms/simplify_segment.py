"""A segment of the simplify pass: a run of arithmetic assignments, as sympy and back.

`transforms.simplify` walks a function's blocks and hands their lines to a `Segment` one by
one; the segment takes each assignment it can represent (the module docstring of
`transforms.simplify` says which), converting its expression from libcst to sympy twice: with
the segment's earlier names as symbols (for the *graph* plan) and with them substituted (for
the *inlined* plan). When a line does not fit, the pass flushes the segment, which writes it
back as the cheapest of: the lines as they were, the graph plan, the inlined plan (both built
and costed by `transforms.simplify_graph`). This module is the bridge between the two worlds:
what may enter a segment, how libcst becomes sympy (opaque pure subexpressions as symbols,
runtime helpers as uninterpreted functions), and which plan wins; the sympy-side rewriting
lives in the graph, the sympy-to-code printing in `transforms.sympy_code`.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools

import libcst as cst

from .codegen import parenthesize_node
from .lines import single_name_assign, usage
from .pure_calls import call_names, is_pure
from .simplify_graph import INLINE_BUDGET, Graph
from .sympy_code import (
    SOURCE_FUNCTIONS,
    STATEMENT_COST,
    Printer,
    bounded_away_from_zero,
    shared_cost,
    written_cost,
)
from .walk import dotted_name, read_names
from .walk import rewrite as rewrite_tree

_SIMPLIFY_BUDGET = 40  # sympy.simplify only for expressions up to this many operations


class _Unsupported(Exception):
    """The expression is not one sympy should see; the line is kept as written."""


@dataclasses.dataclass
class Context:
    """What the pass knows about the whole function, shared by all its segments: how often each
    name is read and written and which are mutated (a segment may only take a name assigned
    once and never written into), the parameters, the names in use (`fresh` avoids them), the
    pure runtime helpers; and what segments learn as they go (the targets they took in, the
    names known to hold numbers or floats)."""

    reads: collections.Counter
    writes: collections.Counter
    mutated: set
    params: frozenset
    taken: set
    pure_helpers: frozenset
    scalars: set  # names certainly holding one number (a Python or NumPy scalar)
    lists: frozenset  # names that may hold a list or tuple: ``+`` of two joins them
    arithmetic: set = dataclasses.field(default_factory=set)  # targets segments took in
    floats: set = dataclasses.field(default_factory=set)  # names certainly holding floats
    counter: itertools.count = dataclasses.field(default_factory=lambda: itertools.count(1))

    def fresh(self) -> str:
        """A name for a shared subexpression (``_s1``, ``_s2``, ...) used nowhere else."""
        while True:
            name = f"_s{next(self.counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name


class Segment:
    """A run of arithmetic assignments, collected line by line, then written back simplified."""

    def __init__(self, context: Context, sympy):
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
            if size <= INLINE_BUDGET and all(self.inlined.get(n, 0) is not None for n in names):
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
            if node.value in ("True", "False", "None") or node.value in self.context.lists:
                raise _Unsupported  # (a list: ``+`` joins, np.square of it is no L * L)
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
            if operator in (cst.Add, cst.Multiply) and self.may_join(node):
                raise _Unsupported  # (a join of lists, or a repeat: not arithmetic)
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
                if right.is_Integer and abs(right) > 64:
                    raise _Unsupported  # sympy would compute 9 ** 9 ** 9 (or expand (x + 1) ** n)
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

    def may_join(self, node: cst.BinaryOperation) -> bool:
        """An operand of `node` may be a list (`may_be_list`; a name itself is refused where
        it is read)."""
        return self.may_be_list(node.left) or self.may_be_list(node.right)

    def may_be_list(self, node: cst.BaseExpression) -> bool:
        """`node` may be a list: a list or tuple literal, a name in `Context.lists`, or an item
        or slice of one (an item of a list of lists is a list)."""
        while isinstance(node, cst.Subscript):
            node = node.value
        if isinstance(node, (cst.List, cst.Tuple)):
            return True
        return isinstance(node, cst.Name) and node.value in self.context.lists

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
        if not is_pure(node, self.context.pure_helpers):
            raise _Unsupported
        if isinstance(node, cst.Subscript) and self.may_be_list(node):
            raise _Unsupported  # (``rows[1]`` may be a list: np.square of it is no L * L)
        # (parentheses set first: passes build trees without them, and two different trees
        # must not print as the same text)
        code = cst.Module(body=()).code_for_node(rewrite_tree(node, parenthesize_node))
        symbol = self.atoms.get(code)
        if symbol is None:
            symbol = self.atoms[code] = self.sp.Dummy(real=True)
            self.atom_nodes[symbol] = node
            self.calls.update(n.split(".")[0] for n in call_names(node))
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
        factors sums (`Graph`); *inlined* writes only the outputs, each a simplified
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
            if self.sp.count_ops(expr) > INLINE_BUDGET:
                return None
            chosen[name] = self.simplest(expr, found, full=True)
            if chosen[name] is None:
                return None
        graph = Graph(self, chosen, set(outputs))
        graph.optimize()
        comments = unique_comments([c for line in self.lines for c in line.leading_lines])
        return graph.emit(outputs, printer, {outputs[0]: comments})

    def graph_plan(self, outputs: list[str], printer) -> tuple | None:
        for target, expr in zip(self.targets, self.local, strict=True):
            found = {self.symbol_name(s) for s in expr.free_symbols}
            if not self.direct[target] <= found:  # sympy dropped a name (x - x): its shape
                return None
        graph = Graph(self, dict(zip(self.targets, self.local, strict=True)), set(outputs))
        graph.fold()
        graph.optimize()
        comments: dict[str, list] = {}
        pending: list = []
        for target, line in zip(self.targets, self.lines, strict=True):
            pending.extend(line.leading_lines)
            if target in graph.exprs:
                comments[target] = unique_comments(pending)
                pending = []
        names = [t for t in self.targets if t in graph.exprs]
        if pending and names:
            comments[names[-1]] = unique_comments(comments.get(names[-1], []) + pending)
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
        # (sympy.simplify may factor over the complex numbers: (y**2 * t**2 + 1)**2 came back
        # as (I*y*t - 1)**2 * (I*y*t + 1)**2, fuzz seed 3704449; code computing it would be
        # complex, and a real input's derivative is real)
        safe = [
            c
            for c in candidates
            if {self.symbol_name(s) for s in c.free_symbols} >= names
            and not c.has(sp.I, sp.zoo, sp.nan, sp.oo, -sp.oo)
        ]
        return min(safe, key=lambda c: shared_cost(sp, c)) if safe else None


def unique_comments(comments: list) -> list:
    """Each comment line once, in order (a primal line and its adjoint both say `line 5`)."""
    seen: set[str] = set()
    unique = []
    for comment in comments:
        text = comment.comment.value if comment.comment is not None else ""
        if text not in seen:
            seen.add(text)
            unique.append(comment)
    return unique
