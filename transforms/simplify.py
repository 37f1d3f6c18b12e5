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
from .walk import dotted_name, read_names

# sympy function name -> (numpy spelling, math spelling)
_FUNCTIONS = {
    "sin": ("np.sin", "math.sin"),
    "cos": ("np.cos", "math.cos"),
    "tan": ("np.tan", "math.tan"),
    "exp": ("np.exp", "math.exp"),
    "log": ("np.log", "math.log"),
    "tanh": ("np.tanh", "math.tanh"),
    "sinh": ("np.sinh", "math.sinh"),
    "cosh": ("np.cosh", "math.cosh"),
    "asin": ("np.arcsin", "math.asin"),
    "acos": ("np.arccos", "math.acos"),
    "atan": ("np.arctan", "math.atan"),
    "sqrt": ("np.sqrt", "math.sqrt"),
}
_SOURCE_FUNCTIONS = {
    spelling: name for name, spellings in _FUNCTIONS.items() for spelling in spellings
} | {"np.square": "square"}

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
    counter: itertools.count = dataclasses.field(default_factory=lambda: itertools.count(1))

    def fresh(self) -> str:
        while True:
            name = f"_s{next(self.counter)}"
            if name not in self.taken:
                self.taken.add(name)
                return name


def simplify(
    funcdef: cst.FunctionDef, pure_helpers: frozenset[str] = PURE_HELPERS
) -> cst.FunctionDef:
    """Simplify the arithmetic segments of `funcdef` with sympy (see the module docstring).

    `pure_helpers` names runtime helpers generated code may call that have no side effects
    (``unbroadcast``, ...): calls of them may be moved or shared like NumPy calls.
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
    context = _Context(reads, writes, mutated, params, taken, pure_helpers)
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
    return out


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
        self.lines.append(line)
        self.targets.append(target)
        self.inlined[target] = inlined
        self.local.append(local)
        self.leaves[target] = frozenset().union(
            *(self.leaves.get(n, frozenset({n})) for n in names)
        )
        self.size[target] = size
        self.direct[target] = frozenset(names)
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
            function = _SOURCE_FUNCTIONS.get(name or "")
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
        return self.atom(node, inline)

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

        Two plans, the cheaper wins: *inlined* writes only the outputs, each a simplified
        expression of the segment's inputs (best when a chain collapses); *local* keeps every
        assignment and simplifies each one with the names it reads as symbols (best when the
        chain's values are shared widely). Both share common subexpressions with `sympy.cse`.
        """
        outputs = self.outputs()
        if not outputs:
            return None
        printer = _Printer(self.atom_nodes, "math" if self.calls == {"math"} else "np")
        plans = [
            (
                sum(_written_cost(single_name_assign(n)[1]) for n in self.lines),
                len(self.lines),
                None,
            ),
            self.local_plan(printer),
            self.inlined_plan(outputs, printer),
        ]
        return min((p for p in plans if p is not None), key=lambda p: p[:2])[2]

    def inlined_plan(self, outputs: list[str], printer) -> tuple | None:
        chosen = []
        for name in outputs:
            expr = self.inlined[name]
            if expr is None:
                return None
            found = {self.symbol_name(s) for s in expr.free_symbols}
            if not set(self.leaves[name]) <= found:  # sympy dropped a name while building
                return None
            if self.sp.count_ops(expr) > _INLINE_BUDGET:
                return None
            chosen.append(self.simplest(expr, found, full=True))
        comments = _unique_comments([c for line in self.lines for c in line.leading_lines])
        return self.plan(outputs, chosen, printer, {outputs[0]: comments})

    def local_plan(self, printer) -> tuple | None:
        chosen = []
        for expr in self.local:
            found = {self.symbol_name(s) for s in expr.free_symbols}
            chosen.append(self.simplest(expr, found, full=False))
        for target, expr in zip(self.targets, self.local, strict=True):
            found = {self.symbol_name(s) for s in expr.free_symbols}
            if not self.direct[target] <= found:  # sympy dropped a name (x - x): its shape
                return None
        comments = {t: line.leading_lines for t, line in zip(self.targets, self.lines, strict=True)}
        return self.plan(self.targets, chosen, printer, comments)

    def plan(self, names: list[str], exprs: list, printer, comments: dict) -> tuple | None:
        """(cost, statement count, lines) for assigning `exprs` to `names`, with common
        subexpressions first computed once, each just before its first use."""
        sp = self.sp
        replacements, reduced = sp.cse(exprs, symbols=_numbered(sp, self.context))
        cost = sum(_cost(sp, e) for _, e in replacements) + sum(_cost(sp, e) for e in reduced)
        definitions = dict(replacements)
        renamed: dict = {}
        for name, expr in zip(names, reduced, strict=True):
            if expr in definitions and expr not in renamed:
                renamed[expr] = name  # a shared subexpression that is an output takes its name
        printer.names = renamed
        emitted: set = set()
        new: list = []
        try:
            for name, expr in zip(names, reduced, strict=True):
                start = len(new)
                self.emit_needed(expr, definitions, renamed, emitted, printer, new)
                if renamed.get(expr) != name:
                    new.append(_assign(name, printer.code(expr)))
                if comments.get(name) and len(new) > start:
                    new[start] = new[start].with_changes(leading_lines=tuple(comments[name]))
        except _Unsupported:
            return None
        return cost, len(new), new

    def emit_needed(self, expr, definitions, renamed, emitted, printer, new) -> None:
        """Assignments of the shared subexpressions `expr` reads (and those they read)."""
        for symbol in sorted(expr.free_symbols, key=lambda s: s.name):
            if symbol in definitions and symbol not in emitted:
                emitted.add(symbol)
                value = definitions[symbol]
                self.emit_needed(value, definitions, renamed, emitted, printer, new)
                target = renamed.get(symbol, symbol.name)
                new.append(_assign(target, printer.code(value)))

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
        return min(safe, key=lambda c: _shared_cost(sp, c))


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


def _cost(sp, expr) -> float:
    """Operations an expression costs, function calls weighing more than arithmetic."""
    cost = 0.0
    for sub in sp.preorder_traversal(expr):
        if sub.is_Add or sub.is_Mul:
            cost += len(sub.args) - 1
        elif sub.is_Pow:
            cost += 1 if sub.exp in (-1, 2, sp.Rational(1, 2)) else 3
        elif sub.is_Function:
            cost += 8
    return cost


def _written_cost(node: cst.BaseExpression) -> float:
    """`_cost` of an expression as written (sympy would already have folded ``2 * x * 3``)."""
    kind = type(node)
    if kind is cst.BinaryOperation:
        own = 1.0
        if isinstance(node.operator, cst.Power):
            exponent = node.right
            cheap = isinstance(exponent, (cst.Integer, cst.Float)) and exponent.value in (
                "2",
                "2.0",
            )
            own = 1.0 if cheap else 3.0
        return own + _written_cost(node.left) + _written_cost(node.right)
    if kind is cst.UnaryOperation:
        return 1.0 + _written_cost(node.expression)
    if kind is cst.Call and (dotted_name(node.func) or "") in _SOURCE_FUNCTIONS:
        return 8.0 + sum(_written_cost(arg.value) for arg in node.args)
    return 0.0  # names, numbers and opaque subexpressions: copied as they are


def _shared_cost(sp, expr) -> float:
    """The cost of `expr` once its repeated subexpressions are computed once."""
    replacements, reduced = sp.cse([expr])
    return sum(_cost(sp, e) for _, e in replacements) + _cost(sp, reduced[0])


class _Printer:
    """sympy expressions back to Python source: NumPy (or math) calls, opaque subexpressions
    as their original code, divisions collected into one ``/``."""

    def __init__(self, atoms: dict, flavor: str):
        self.atoms = atoms
        self.flavor = 1 if flavor == "math" else 0
        self.names: dict = {}

    def code(self, expr) -> str:
        return self.expr(expr)

    def expr(self, e) -> str:
        if e in self.names:
            return self.names[e]
        if e in self.atoms:
            return "(" + cst.Module(body=()).code_for_node(self.atoms[e]) + ")"
        if e.is_Symbol:
            return e.name
        if e.is_Integer:
            return str(int(e))
        if e.is_Rational:
            return repr(int(e.p) / int(e.q))
        if e.is_Float:
            return repr(float(e))
        if e.is_Add:
            return self.add(e)
        if e.is_Mul:
            return self.mul(e)
        if e.is_Pow:
            return self.power(e)
        if e.is_Function and type(e).__name__ in _FUNCTIONS and len(e.args) == 1:
            return f"{_FUNCTIONS[type(e).__name__][self.flavor]}({self.expr(e.args[0])})"
        if e.is_NumberSymbol and str(e) in ("pi", "E"):
            return ("np.", "math.")[self.flavor] + ("pi" if str(e) == "pi" else "e")
        raise _Unsupported

    def add(self, e) -> str:
        terms = list(e.as_ordered_terms())
        text = self.expr(terms[0])
        for term in terms[1:]:
            coefficient = term.as_coeff_Mul()[0]
            if coefficient.is_number and coefficient < 0:
                text += f" - ({self.expr(-term)})"
            else:
                text += f" + ({self.expr(term)})"
        return f"({text})"

    def mul(self, e) -> str:
        coefficient, rest = e.as_coeff_Mul()
        numerator, denominator = [], []
        for factor in rest.as_ordered_factors():
            base, exponent = factor.as_base_exp()
            if exponent.is_number and exponent.is_negative:
                denominator.append(base if exponent == -1 else base ** (-exponent))
            else:
                numerator.append(factor)
        parts = [f"({self.expr(f)})" for f in numerator]
        sign = ""
        if float(coefficient) == -1.0:
            sign = "-"
        elif float(coefficient) != 1.0:
            parts.insert(0, f"({self.expr(coefficient)})")
        text = " * ".join(parts) if parts else "1"
        if denominator:
            below = " * ".join(f"({self.expr(f)})" for f in denominator)
            text = f"{text} / ({below})"
        return f"({sign}({text}))" if sign else f"({text})"

    def power(self, e) -> str:
        base, exponent = e.args
        if exponent.is_number and float(exponent) == 0.5:
            return f"{_FUNCTIONS['sqrt'][self.flavor]}({self.expr(base)})"
        if exponent.is_number and exponent.is_negative:
            return f"(1 / ({self.expr(base ** (-exponent))}))"
        if exponent == 2 and (base.is_Symbol or base in self.names):  # x * x beats x ** 2
            return f"({self.expr(base)} * {self.expr(base)})"
        return f"(({self.expr(base)}) ** ({self.expr(exponent)}))"
