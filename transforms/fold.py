"""Folding: arithmetic on literals computed, identities dropped, product chains written with
their numbers first and signs absorbed, constant math calls and no-op helper calls removed.
One of the optimizer's rewrites (see `optimize`), in a module of its own because it is long.

What folding computes is bounded, so that any source compiles quickly (``9 ** 9 ** 9`` has
about 1.2 billion bits: computing it takes hours). A literal takes part only if it is a finite
float or an integer of at most `_MAX_BITS` bits; an integer power is computed only when the
result's bit length, estimated from the operands' before computing, is at most `_MAX_BITS`;
a result or a product's accumulated constant that is not a finite float, or that underflowed,
is not written. Anything else is left as written, to be computed when the code runs, exactly
as Python would compute the user's own expression (``1e400`` stays ``1e400``, which is inf).
"""

from __future__ import annotations

import math
import sys

import libcst as cst

from .lines import (
    COMPOUND,
    alias_groups,
    is_name,
    on_branches,
    replace_line,
    usage,
    widened,
)
from .walk import dotted_name, rewrite, rewrite_statement

_MAX_BITS = 64  # larger integers are left as written (folded results are below 1e15 anyway)


def _number(expr: cst.BaseExpression) -> float | int | None:
    """The value of a number literal (or its negation) folding may compute with: a finite
    float or a small integer; None for anything else."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        try:
            value = expr.evaluated_value
        except (ValueError, OverflowError):  # an integer too long to convert (0x + many digits)
            return None
        return value if _small(value) else None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _number(expr.expression)
        return None if inner is None else -inner
    return None


def number_literal(value: float | int) -> cst.BaseExpression:
    if isinstance(value, float) and not math.isfinite(value):  # 1e400, 1e200 * 1e200
        special = cst.Attribute(cst.Name("np"), cst.Name("nan" if math.isnan(value) else "inf"))
        return cst.UnaryOperation(cst.Minus(), special) if value < 0 else special
    text = repr(value)
    node = cst.Integer(text.lstrip("-")) if isinstance(value, int) else cst.Float(text.lstrip("-"))
    return cst.UnaryOperation(cst.Minus(), node) if text.startswith("-") else node


def _small(value) -> bool:
    """A value folding may compute with and write: a finite float, an integer of at most
    `_MAX_BITS` bits."""
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, int) and value.bit_length() <= _MAX_BITS


def _cheap(op: type, left: float | int, right: float | int) -> bool:
    """Computing ``left op right`` (both `_small`) is quick: only an integer power can be huge,
    and its bit length is about ``right * log2(abs(left))``, known before computing it."""
    if op is not cst.Power or not isinstance(left, int) or not isinstance(right, int):
        return True
    return right <= 0 or abs(left) <= 1 or right * math.log2(abs(left)) <= _MAX_BITS


_ARITHMETIC = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.Divide: lambda a, b: a / b,
    cst.Power: lambda a, b: a**b,
}


class _Fold:
    """Folds one expression node whose children are already folded (see `rewrite`)."""

    def __init__(self, mutated: frozenset[str] = frozenset()) -> None:
        self.changed = False
        # arrays written into in place: `1.0 * y` must stay a new array, not become `y`,
        # or the adjoint would hold a reference that a later restore of `y` changes
        self.mutated = mutated

    def __call__(self, node: cst.CSTNode) -> cst.CSTNode:
        kind = type(node)
        if kind is cst.BinaryOperation:
            node = self.binary(node)
            if type(node) is cst.BinaryOperation and isinstance(node.operator, cst.Multiply):
                return self.product(node, negate=False)
            return node
        if kind is cst.UnaryOperation and isinstance(node.operator, cst.Minus):
            inner = node.expression
            if isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Minus):
                self.changed = True
                return inner.expression
            if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Multiply):
                return self.product(inner, negate=True)
            if (
                isinstance(inner, cst.BinaryOperation)
                and isinstance(inner.operator, cst.Divide)
                and _takes_a_sign(inner.left)
            ):
                # -(a / b) is (-a) / b, so a numeric factor of a absorbs the sign
                self.changed = True
                return inner.with_changes(left=self(cst.UnaryOperation(cst.Minus(), inner.left)))
        elif kind is cst.Call:
            simpler = _fold_helper(node) or _fold_constant_call(node)
            if simpler is not None:
                self.changed = True
                return simpler
        return node

    def product(self, node: cst.BinaryOperation, negate: bool) -> cst.BaseExpression:
        """A product chain with its numbers multiplied into one leading factor and any minus
        sign absorbed there: ``g * 2 * x * 100.0`` is ``200.0 * g * x``, ``-(g * 2 * x)`` is
        ``-2 * g * x``, ``2 * (g / (2 * r))`` is ``g / r``. The numbers then cost one scalar
        operation, not one pass over an array each."""
        factors: list[tuple[cst.BaseExpression, bool]] = []  # (factor, is a divisor)
        _flatten_product(node, factors, divisor=False)
        constant: float | int = -1 if negate else 1
        others: list[tuple[cst.BaseExpression, bool]] = []
        for factor, divisor in factors:
            value = _number(factor)
            if value is not None and (not divisor or value != 0):
                constant = _times(constant, value, divisor)
                if constant is None:  # the numbers' product overflows: leave them as written
                    return node
            elif isinstance(factor, cst.UnaryOperation) and isinstance(factor.operator, cst.Minus):
                constant = -constant
                others.append((factor.expression, divisor))
            else:
                others.append((factor, divisor))
        if _is_canonical(node, factors, others, negate):
            return node
        if constant == 1 and isinstance(constant, float) and _only_masks(others):
            return node  # 1.0 * (a == b) is numbers; the mask alone would add as a logical or
        self.changed = True
        if isinstance(constant, float) and constant.is_integer() and abs(constant) < 1e15:
            constant = int(constant) if constant in (1.0, -1.0) else constant
        if not others:
            return number_literal(constant)
        numerators = [f for f, divisor in others if not divisor]
        divisors = [f for f, divisor in others if divisor]
        if numerators and constant == -1:
            # the sign goes on a factor that is surely a number (an adjoint), never on one that
            # may be a boolean mask (NumPy refuses -mask); failing that, -1 leads the chain
            signed = next((i for i, f in enumerate(numerators) if _is_adjoint_name(f)), None)
            if signed is None:
                numerators = [number_literal(-1), *numerators]
            else:
                numerators[signed] = cst.UnaryOperation(cst.Minus(), numerators[signed])
            result = numerators[0]
        elif numerators:
            result = numerators[0]
            if constant != 1:
                result = cst.BinaryOperation(number_literal(constant), cst.Multiply(), result)
        else:
            result = number_literal(constant)
        for factor in numerators[1:]:
            result = cst.BinaryOperation(result, cst.Multiply(), factor)
        for factor in divisors:
            result = cst.BinaryOperation(result, cst.Divide(), factor)
        return result

    def binary(self, node: cst.BinaryOperation) -> cst.BaseExpression:
        left, right = _number(node.left), _number(node.right)
        op = type(node.operator)
        if left is not None and right is not None and op in _ARITHMETIC and _cheap(op, left, right):
            try:
                value = _ARITHMETIC[op](left, right)
            except (ZeroDivisionError, OverflowError):
                return node
            if _small(value) and abs(value) < 1e15 and value == value:
                self.changed = True
                return number_literal(value)
        simpler = _identity(node, op, left, right)
        if isinstance(simpler, cst.Name) and simpler.value in self.mutated:
            simpler = None
        if simpler is not None:
            self.changed = True
            return simpler
        left_node, right_node = node.left, node.right
        if (
            op is cst.Add
            and isinstance(left_node, cst.UnaryOperation)
            and isinstance(left_node.operator, cst.Minus)
        ):
            self.changed = True  # -a + b is b - a
            return node.with_changes(
                left=right_node, operator=cst.Subtract(), right=left_node.expression
            )
        positive = _without_leading_minus(right_node) if op in (cst.Add, cst.Subtract) else None
        if positive is not None:
            self.changed = True  # a + -2 * b is a - 2 * b
            flipped = cst.Subtract() if op is cst.Add else cst.Add()
            return node.with_changes(operator=flipped, right=positive)
        if (
            op in (cst.Add, cst.Subtract)
            and isinstance(right_node, cst.UnaryOperation)
            and isinstance(right_node.operator, cst.Minus)
        ):
            self.changed = True  # a + -b is a - b, a - -b is a + b
            flipped = cst.Subtract() if op is cst.Add else cst.Add()
            return node.with_changes(operator=flipped, right=right_node.expression)
        return node


def _times(constant: float | int, value: float | int, divisor: bool) -> float | int | None:
    """``constant * value`` (``/`` for a divisor), or None when that is not `_small` or
    underflowed to 0 or a subnormal float: numbers gathered at the front of a product must give
    what the product as written gives (``x * 1e-200 * 1e-200`` at x = 1e300 is 1e-100, not 0)."""
    try:
        result = constant / value if divisor else constant * value
    except (OverflowError, ZeroDivisionError):
        return None
    if not _small(result):
        return None
    if isinstance(result, float) and abs(result) < sys.float_info.min and value != 0:
        return None if constant != 0 else result
    return result


def _without_leading_minus(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """``2 * b / c`` for ``-2 * b / c``: a product whose first factor is a negative number,
    negated; None for anything else."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(
        expr.operator, (cst.Multiply, cst.Divide)
    ):
        inner = _without_leading_minus(expr.left)
        return None if inner is None else expr.with_changes(left=inner)
    value = _number(expr)
    if value is not None and value < 0:
        return number_literal(-value)
    return None


def _takes_a_sign(expr: cst.BaseExpression) -> bool:
    """A numerator a minus can move into safely (never a comparison, which may be boolean)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
        return True
    return _number(expr) is not None or _is_adjoint_name(expr)


def _is_adjoint_name(expr: cst.BaseExpression) -> bool:
    """Names the reverse pass gives adjoints (``dx``, ``_dt3``): always numbers."""
    return isinstance(expr, cst.Name) and expr.value.startswith(("d", "_d"))


def _is_canonical(node, factors, others, negate) -> bool:
    """Already as `product` would write it: one leading number at most, no signs or
    divisions inside, a left-leaning chain."""
    if negate or any(divisor for _, divisor in factors):
        return False
    numbers = len(factors) - len(others)
    if numbers > 1 or (numbers == 1 and _number(factors[0][0]) is None):
        return False
    if any(isinstance(f, cst.UnaryOperation) for f, _ in factors):
        return False
    return _left_leaning(node)


def _left_leaning(node: cst.BaseExpression) -> bool:
    while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        right = node.right
        if isinstance(right, cst.BinaryOperation) and isinstance(
            right.operator, (cst.Multiply, cst.Divide)
        ):
            return False
        node = node.left
    return True


def _only_masks(factors) -> bool:
    """Every factor may be a boolean array (a comparison), so none makes the product numbers."""
    return bool(factors) and all(isinstance(f, cst.Comparison) for f, _ in factors)


def _identity(node: cst.BinaryOperation, op, left, right) -> cst.BaseExpression | None:
    if op is cst.Multiply:
        if right == 1 and not (isinstance(right, float) and isinstance(node.left, cst.Comparison)):
            return node.left
        if left == 1 and not (isinstance(left, float) and isinstance(node.right, cst.Comparison)):
            return node.right
        if right == -1 and _takes_a_sign(node.left):
            return cst.UnaryOperation(cst.Minus(), node.left)
        if left == -1 and _takes_a_sign(node.right):
            return cst.UnaryOperation(cst.Minus(), node.right)
    elif op is cst.Add:
        if right == 0:
            return node.left
        if left == 0:
            return node.right
    elif op is cst.Subtract and right == 0:
        return node.left
    elif op is cst.Divide and right == 1:
        return node.left
    elif op is cst.Power and right == 1:
        return node.left
    elif op is cst.Power and right == 2 and isinstance(node.left, cst.Name):
        return cst.BinaryOperation(node.left, cst.Multiply(), node.left)  # cheaper than ** 2
    return None


def _flatten_product(node: cst.BaseExpression, factors: list, divisor: bool) -> None:
    """The factors of a chain of ``*`` and ``/``, each marked as multiplied or divided."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        _flatten_product(node.left, factors, divisor)
        _flatten_product(node.right, factors, divisor)
    elif (
        isinstance(node, cst.BinaryOperation)
        and isinstance(node.operator, cst.Divide)
        and not divisor
    ):
        _flatten_product(node.left, factors, divisor)
        denominator: list = []
        _flatten_product(node.right, denominator, False)
        # a division inside the denominator multiplies: x / (a / b) is x * b / a
        factors.extend((f, False) for f, inner in denominator if inner)
        denominator = [(f, inner) for f, inner in denominator if not inner]
        numbers = [f for f, _ in denominator if _number(f) is not None]
        rest = [f for f, _ in denominator if _number(f) is None]
        factors.extend((f, True) for f in numbers)
        if rest:
            joined = rest[0]
            for f in rest[1:]:
                joined = cst.BinaryOperation(joined, cst.Multiply(), f)
            factors.append((joined, True))
    else:
        factors.append((node, divisor))


_CONSTANTS = {"math.e": math.e, "math.pi": math.pi, "np.e": math.e, "np.pi": math.pi}
# math functions of numbers give Python floats, so computing them here changes nothing (NumPy's
# give np.float64, which has methods a Python float lacks: they are left alone)
_PURE = {
    "math.log": math.log,
    "math.exp": math.exp,
    "math.sqrt": math.sqrt,
    "math.log2": math.log2,
    "math.log10": math.log10,
}


def _fold_constant_call(call: cst.Call) -> cst.BaseExpression | None:
    """``math.log(math.e)``, ``np.log(2.0)``: computed once, here, instead of on every call."""
    function = _PURE.get(dotted_name(call.func) or "")
    if function is None or not call.args or any(a.keyword is not None for a in call.args):
        return None
    values = []
    for arg in call.args:
        value = _number(arg.value)
        if value is None:
            value = _CONSTANTS.get(dotted_name(arg.value) or "")
        if value is None:
            return None
        values.append(value)
    try:
        result = float(function(*values))
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
    return number_literal(result) if math.isfinite(result) else None


def _fold_helper(call: cst.Call) -> cst.BaseExpression | None:
    """Runtime helper calls whose static arguments make them the identity."""
    if not isinstance(call.func, cst.Name) or any(a.keyword is not None for a in call.args):
        return None
    args = [a.value for a in call.args]
    helper = call.func.value
    if helper in ("unbroadcast", "match_shape") and args:
        first = args[0]
        if isinstance(first, cst.UnaryOperation) and isinstance(first.operator, cst.Minus):
            # linear in its first argument: the sign moves out, where a product can absorb it
            inner = call.with_changes(
                args=(call.args[0].with_changes(value=first.expression), *call.args[1:])
            )
            return cst.UnaryOperation(cst.Minus(), inner)
    if helper == "ones_if_none" and len(args) == 1 and is_name(args[0], "None"):
        return cst.Float("1.0")  # logsumexp's weights b, not given
    if helper == "unreduce" and len(args) >= 2:
        axis_none = len(args) < 3 or is_name(args[2], "None")
        keepdims = len(args) >= 4 and is_name(args[3], "True")
        if axis_none or keepdims:
            return args[0]  # a full reduction's adjoint already broadcasts
    return None


_folded: dict[int, cst.SimpleStatementLine] = {}


# values that are new objects (arithmetic allocates its result)
_NEW = (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.Integer, cst.Float)


def _makes_an_alias(before, after, mutated: frozenset[str]) -> bool:
    """``y = x * 1.0`` folded to ``y = x`` (or ``y = GV[::-1] * 1.0`` to a view of a global,
    ``y = np.reshape(x, s) * 1.0`` to a view of `x`) would make `y` share another value's
    memory: wrong if `y` is written into later (the write would change that value)."""
    if not isinstance(after, cst.Assign) or isinstance(after.value, _NEW):
        return False
    if isinstance(before.value, (cst.Name, cst.Subscript, cst.Attribute)):
        return False  # it may share memory as written: folding made no alias
    return any(isinstance(t.target, cst.Name) and t.target.value in mutated for t in after.targets)


def fold(lines: list, folder: _Fold | None = None) -> tuple[list, bool]:
    if folder is None:
        # (under every name that may share their memory: ``y_1 = y`` copies a loop header)
        mutated = frozenset(name for line in lines for name in usage(line).mutates)
        folder = _Fold(frozenset(widened(mutated, alias_groups(lines))))
    out = []
    for line in lines:
        if isinstance(line, COMPOUND):
            line = on_branches(
                line, lambda block: fold(block, folder)[0], lambda test: rewrite(test, folder)
            )
        elif _folded.get(id(line)) is not line:
            folded = rewrite_statement(line.body[0], folder)
            if not _makes_an_alias(line.body[0], folded, folder.mutated):
                line = replace_line(line, folded)
            if len(_folded) > 4096:
                _folded.clear()
            _folded[id(line)] = line
        out.append(line)
    return out, folder.changed
