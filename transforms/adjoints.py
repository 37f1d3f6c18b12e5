"""The adjoint sweep under construction, and the small builders the reverse passes share.

`Adjoints` knows, for every primal value that has an adjoint yet, its name and whether it is
*full* (exactly its primal's shape) or *owned* (a fresh array only this code refers to, so it
may be updated in place). `Context` is what the reverse passes of one function share.
"""

from __future__ import annotations

import dataclasses
import math
import re

import libcst as cst
from s2sgrad.runtime import SHAPE_ONLY_ARGUMENTS

from .activity import Activity
from .anf import NormalForm, name_expr
from .naming import Namer
from .shapes import ShapeTokens
from .walk import dotted_name


def call(func: str, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=name_expr(func), args=tuple(cst.Arg(a) for a in args))


def assign(target: str, value: cst.BaseExpression) -> cst.Assign:
    return cst.Assign((cst.AssignTarget(cst.Name(target)),), value)


class Adjoints:
    """The adjoint sweep being built: adjoint names and what is known about each."""

    def __init__(
        self,
        namer: Namer,
        shapes: ShapeTokens,
        active: frozenset[str],
        positive: frozenset[str] = frozenset(),
        by_parts: frozenset[str] = frozenset(),
        complex_results: frozenset[str] = frozenset(),
    ):
        self.namer = namer
        self.active = active
        self.shapes = shapes
        self.positive = positive  # names provably > 0 (`signs.positive_names`)
        # tuples a user function returned, read only element by element (``x, v = step()``):
        # their adjoint is a list with one adjoint per element (see `reverse`)
        self.by_parts = by_parts
        # names that may hold complex values (`complex_values.complex_names`): contributions
        # of the operations computing them are made real for a real argument (`as_kind_of`)
        self.complex_results = complex_results
        self.surely_complex: frozenset[str] = frozenset()  # (set by `reverse_sweeps`)
        self.names: dict[str, str] = {}
        self.full: set[str] = set()
        self.owned: set[str] = set()
        self.lines: list[cst.BaseStatement] = []
        self.pending_comment: str | None = None
        self.last_line: int | None = None

    def fork(self) -> Adjoints:
        """The state for one branch of an ``if``: same knowledge, its own statements."""
        branch = Adjoints(
            self.namer,
            self.shapes,
            self.active,
            self.positive,
            self.by_parts,
            self.complex_results,
        )
        branch.surely_complex = self.surely_complex
        branch.names = dict(self.names)
        branch.full = set(self.full)
        branch.owned = set(self.owned)
        return branch

    def join(self, test: cst.BaseExpression, then: Adjoints, other: Adjoints) -> None:
        """Emit ``if test:`` with the two branches' adjoint code, made to agree on names: an
        adjoint only one branch assigned is ``0.0`` (a lazily broadcast zero) in the other."""
        for primal in then.names.keys() | other.names.keys():
            if primal in self.names:
                continue
            if primal not in other.names:
                other.emit(assign(then.names[primal], cst.Float("0.0")))
                other.names[primal] = then.names[primal]
            elif primal not in then.names:
                then.emit(assign(other.names[primal], cst.Float("0.0")))
                then.names[primal] = other.names[primal]
            elif then.names[primal] != other.names[primal]:
                other.emit(assign(then.names[primal], cst.Name(other.names[primal])))
                other.names[primal] = then.names[primal]
        self.names = then.names
        self.full = then.full & other.full
        self.owned = then.owned & other.owned
        if not then.lines and not other.lines:
            return
        orelse = cst.Else(body=block(other.lines)) if other.lines else None
        leading = ()
        if self.pending_comment is not None:
            leading = (cst.EmptyLine(comment=cst.Comment(self.pending_comment)),)
            self.pending_comment = None
        self.lines.append(
            cst.If(test=test, body=block(then.lines), orelse=orelse, leading_lines=leading)
        )

    def shape_only(self, node: cst.CSTNode) -> cst.CSTNode:
        """A helper call with its shape-only arguments replaced by shape representatives (and
        what is known without running it: a count of a known shape, a product of matrices of
        known shapes, a division by a value known to be positive, which needs no
        `safe_divide`)."""
        if type(node) is not cst.Call:
            return node
        spelled = dotted_name(node.func)
        if spelled == "safe_divide" and len(node.args) == 2:
            divisor = node.args[1].value
            if self._known_positive(divisor):
                return cst.BinaryOperation(node.args[0].value, cst.Divide(), divisor)
        if spelled == "reduced_count":
            counted = self._exact_count(node)
            if counted is not None:
                return counted
        if spelled in _MATRIX_ADJOINTS:
            product = self._matrix_product(node, spelled)
            if product is not None:
                return product
        positions = SHAPE_ONLY_ARGUMENTS.get(spelled, ()) if spelled else ()
        if not positions:
            return node
        args = tuple(
            a.with_changes(value=self.representative(a.value))
            if i in positions and a.keyword is None
            else a
            for i, a in enumerate(node.args)
        )
        return node.with_changes(args=args)

    def _known_positive(self, expr: cst.BaseExpression) -> bool:
        """A name known to be > 0, or one times a number >= 1 (``2 * r`` in sqrt's rule: the
        product cannot underflow to 0)."""
        if isinstance(expr, cst.Name):
            return expr.value in self.positive
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
            for number, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if isinstance(number, (cst.Integer, cst.Float)) and number.evaluated_value >= 1:
                    return self._known_positive(other)
        return False

    def _matrix_product(self, node: cst.Call, spelled: str) -> cst.BinaryOperation | None:
        """``g @ y.T`` for ``matmul_left(g, x, y)`` and ``x.T @ g`` for ``matmul_right(g, x,
        y)`` when `x` and `y` are matrices of exactly known shapes (a specialization for
        shapes): the helpers' own first case, without the call. Only there: elsewhere the
        helper's call tells a later transformation (a Hessian) that its result has its
        argument's shape."""
        args = node.args
        if len(args) != 3 or any(a.keyword is not None for a in args):
            return None
        g, x, y = (a.value for a in args)
        for operand in (x, y):
            token = self.shapes.of(operand)
            if token[0] != "shape" or len(token[1]) != 2:
                return None
        if spelled == "matmul_left":
            return cst.BinaryOperation(g, cst.MatrixMultiply(), cst.Attribute(y, cst.Name("T")))
        return cst.BinaryOperation(cst.Attribute(x, cst.Name("T")), cst.MatrixMultiply(), g)

    def _exact_count(self, node: cst.Call) -> cst.Float | None:
        """``reduced_count(x, None)`` as the number it is when `x`'s shape is known exactly
        (a specialization for shapes) and not empty (an empty count stays a call: NumPy's
        nan for the mean of nothing)."""
        args = node.args
        if not args or args[0].keyword is not None or len(args) > 2:
            return None
        axis = args[1].value if len(args) == 2 else cst.Name("None")
        token = self.shapes.of(args[0].value)
        if token[0] != "shape" or not (isinstance(axis, cst.Name) and axis.value == "None"):
            return None
        count = math.prod(token[1])
        return cst.Float(f"{float(count)!r}") if count else None

    def emit(self, statement: cst.BaseSmallStatement) -> None:
        leading = ()
        if self.pending_comment is not None:
            leading = (cst.EmptyLine(comment=cst.Comment(self.pending_comment)),)
            self.pending_comment = None
        self.lines.append(cst.SimpleStatementLine((statement,), leading_lines=leading))

    def comment(self, text: str) -> None:
        self.pending_comment = text

    def representative(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """A value with `expr`'s shape for a helper that reads it for its shape
        (`ShapeTokens.representative`), but `expr` itself where it may be complex: a batched
        `unbroadcast` and `match_shape` make the adjoint of a real value real, so a real
        value standing for a complex one would lose the imaginary part of its adjoint."""
        if isinstance(expr, cst.Name) and expr.value in self.complex_results:
            return expr
        return self.shapes.representative(expr)

    def as_kind_of(
        self, arg: cst.BaseExpression, contribution: cst.BaseExpression, results
    ) -> cst.BaseExpression:
        """`contribution` to the adjoint of `arg` from an operation computing `results`: as
        it is, or, where a result may be complex, ``real_adjoint(arg, contribution)``, real
        for a real `arg` (README, "Complex numbers"), decided when it runs: `arg` may be
        complex only by the analysis' over-approximation (a loop's item, fuzz seed 14001256,
        whose real buffer then took a complex contribution). Real programs get no call."""
        if isinstance(arg, cst.Name) and arg.value in self.surely_complex:
            return contribution  # (an FFT's result: complex, its adjoint may be)
        if _of_kind(contribution, arg):
            return contribution  # the rule made it `arg`'s kind already
        if any(result in self.complex_results for result in results):
            return call("real_adjoint", arg, contribution)
        return contribution

    def has(self, primal: str) -> bool:
        return primal in self.names

    def contribute(
        self, primal: str, value: cst.BaseExpression, full: bool, fresh: bool = False
    ) -> None:
        """Add `value` to the adjoint of `primal` (assigning it if this is the first part)."""
        if primal not in self.names:
            name = self.names[primal] = self.namer.adjoint(primal)
            self.emit(assign(name, value))
            if full:
                self.full.add(name)
                if fresh:
                    self.owned.add(name)
            return
        name = self.names[primal]
        if name in self.owned:
            self.emit(cst.AugAssign(cst.Name(name), cst.AddAssign(), value))
            return
        self.emit(assign(name, cst.BinaryOperation(cst.Name(name), cst.Add(), value)))
        if full:
            self.full.add(name)
        if name in self.full:
            self.owned.add(name)  # the sum is a new array of the full shape

    def make_full(self, primal: str) -> str:
        """Ensure the adjoint of `primal` has exactly its shape; return its name."""
        name = self.names[primal]
        if name not in self.full and not self.shapes.is_scalar(cst.Name(primal)):
            shape_of = self.representative(cst.Name(primal))
            self.emit(assign(name, call("match_shape", cst.Name(name), shape_of)))
        self.full.add(name)
        return name


@dataclasses.dataclass
class Context:
    nf: NormalForm
    activity: Activity
    shapes: ShapeTokens
    namer: Namer
    comments: dict[int, str]
    reassigned: frozenset[str]  # names assigned more than once (joins, loop headers)
    splits: object = None  # gives the forward/backward pair of a user function
    primal_edits: dict = dataclasses.field(default_factory=dict)  # id(line) -> (before, line)
    callees: list = dataclasses.field(default_factory=list)
    reverse_block: object = None  # reverse.reverse_block, for the blocks inside loops


def block(lines: list) -> cst.IndentedBlock:
    return cst.IndentedBlock(body=tuple(lines) or (cst.SimpleStatementLine((cst.Pass(),)),))


def comment_line(adjoints: Adjoints, line: cst.If, context: Context) -> None:
    for empty in line.leading_lines:
        match = LINE_COMMENT.fullmatch(empty.comment.value) if empty.comment else None
        if match:
            adjoints.comment(f"# adjoint of line {match.group(1)}: {match.group(2)}")
            adjoints.last_line = int(match.group(1))


# helpers whose result is the kind of number of their argument at this position
_OF_KIND = {"real_adjoint": 0, "real_part_of": 0, "real_like": 1}


def _of_kind(contribution: cst.BaseExpression, arg: cst.BaseExpression) -> bool:
    """Whether `contribution` is a call making a value `arg`'s kind of number (real for a
    real `arg`), such as ``real_like(t, x)`` for `x` in the rules of the FFTs."""
    if not isinstance(contribution, cst.Call):
        return False
    position = _OF_KIND.get(dotted_name(contribution.func) or "")
    args = contribution.args
    return position is not None and len(args) > position and args[position].value.deep_equals(arg)


LINE_COMMENT = re.compile(r"# line (\d+): (.*)")
_MATRIX_ADJOINTS = frozenset({"matmul_left", "matmul_right"})


def is_basic_index(elements, shapes: ShapeTokens) -> bool:
    """Slices, integers and numbers only: each element is picked at most once, so the
    adjoint can be added in place with ``dx[index] += g``."""
    for element in elements:
        inner = element.slice
        if isinstance(inner, cst.Slice) or shapes.is_integer_index(element):
            continue
        value = inner.value
        if isinstance(value, cst.Integer) or (
            isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer)
        ):
            continue
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        if isinstance(value, cst.Ellipsis):
            continue
        return False
    return True


def index_value(elements) -> cst.BaseExpression:
    """Subscript elements (``1:, i``) as a value (``(slice(1, None), i)``)."""
    values = []
    for element in elements:
        inner = element.slice
        if isinstance(inner, cst.Index):
            values.append(inner.value)
        else:
            bounds = [
                b if b is not None else cst.Name("None")
                for b in (inner.lower, inner.upper, inner.step)
            ]
            values.append(call("slice", *bounds))
    if len(values) == 1:
        return values[0]
    return cst.Tuple(tuple(cst.Element(v) for v in values))
