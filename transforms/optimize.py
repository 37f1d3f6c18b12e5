"""Pass 8, optimize: make the generated function what a careful person would write.

Input and output: a ``def`` whose body is a flat list of one-statement lines (the reverse
pass's output). Four rewrites, repeated until nothing changes:

- propagation: ``a = b`` and ``a = 1.0`` disappear, uses of ``a`` read ``b`` / ``1.0``
  (only for names assigned once and never updated in place);
- folding: arithmetic on literals is computed (``2 - 1`` is ``1``) and identities dropped
  (``x * 1.0``, ``x + 0``, ``x ** 1``, ``--x``);
- inlining: a temporary (``_t3``, ``_dt3``) used once is substituted into its use, so
  expressions read as written (``y = np.sin(x) * x``) rather than one operation per line;
- dead code: assignments nobody reads are removed. A removed line's source comment moves to
  the next line of the same group.
"""

from __future__ import annotations

import collections
import dataclasses
import math

import libcst as cst

from .walk import _NameReader, dotted_name, read_names, rewrite_statement, substitute_names

_TEMP_PREFIXES = ("_t", "_d")


@dataclasses.dataclass(frozen=True)
class _Usage:
    """Names a statement reads, assigns, and updates in place."""

    reads: tuple[str, ...]
    writes: tuple[str, ...]
    mutates: tuple[str, ...]


def _base_name(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _targets(target: cst.BaseExpression, writes: list, reads: list) -> None:
    if isinstance(target, cst.Name):
        writes.append(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _targets(element.value, writes, reads)
    else:
        read_names(target, reads)


_usage_cache: dict[int, tuple[cst.SimpleStatementLine, _Usage]] = {}


def _usage(line: cst.SimpleStatementLine) -> _Usage:
    cached = _usage_cache.get(id(line))
    if cached is not None and cached[0] is line:
        return cached[1]
    statement = line.body[0]
    reads: list[str] = []
    writes: list[str] = []
    mutates: list[str] = []
    kind = type(statement)
    if kind is cst.Assign:
        read_names(statement.value, reads)
        for target in statement.targets:
            _targets(target.target, writes, reads)
    elif kind is cst.AugAssign:
        target = statement.target
        if isinstance(target, cst.Name):
            reads.append(target.value)
        else:
            read_names(target, reads)
        base = _base_name(target)
        if base is not None:
            mutates.append(base)
        read_names(statement.value, reads)
    elif kind is cst.Expr:
        value = statement.value
        read_names(value, reads)
        if isinstance(value, cst.Call) and _is_name(value.func, "accumulate_at") and value.args:
            base = _base_name(value.args[0].value)
            if base is not None:
                mutates.append(base)
    elif kind is cst.Return:
        if statement.value is not None:
            read_names(statement.value, reads)
    else:
        statement.visit(_NameReader(reads))
    usage = _Usage(tuple(reads), tuple(writes), tuple(mutates))
    if len(_usage_cache) > 4096:
        _usage_cache.clear()
    _usage_cache[id(line)] = (line, usage)
    return usage


def _single_name_assign(line: cst.SimpleStatementLine) -> tuple[str, cst.BaseExpression] | None:
    statement = line.body[0]
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
        if isinstance(target, cst.Name):
            return target.value, statement.value
    return None


def _replace_line(line: cst.SimpleStatementLine, statement: cst.BaseSmallStatement):
    return line.with_changes(body=(statement,))


# -- propagation ----------------------------------------------------------------------------


def propagate(lines: list, params: frozenset[str]) -> tuple[list, bool]:
    writes = collections.Counter()
    last_change: dict[str, int] = {}  # index of the last line assigning or updating a name
    mutated = set()
    for i, line in enumerate(lines):
        usage = _usage(line)
        writes.update(usage.writes)
        mutated.update(usage.mutates)
        for name in (*usage.writes, *usage.mutates):
            last_change[name] = i
    mapping: dict[str, cst.BaseExpression] = {}
    keep = []
    for i, line in enumerate(lines):
        if mapping and any(name in mapping for name in _usage(line).reads):
            line = _replace_line(line, substitute_names(line.body[0], mapping))
        assign = _single_name_assign(line)
        if assign is not None:
            target, value = assign
            if writes[target] == 1 and target not in mutated and target not in params:
                # a copy of a name that never changes again (an accumulator after its last
                # update included) can be read in its place
                if _is_constant(value) or (
                    isinstance(value, cst.Name)
                    and last_change.get(value.value, -1) < i
                    and value.value not in ("True", "False", "None")
                ):
                    mapping[target] = value
                    keep.append(("drop", line))
                    continue
        keep.append(("keep", line))
    return _carry_comments(keep), bool(mapping)


def _is_constant(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    return (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, (cst.Integer, cst.Float))
    )


# -- folding --------------------------------------------------------------------------------


def _number(expr: cst.BaseExpression) -> float | int | None:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return expr.evaluated_value
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _number(expr.expression)
        return None if inner is None else -inner
    return None


def _literal(value: float | int) -> cst.BaseExpression:
    text = repr(value)
    node = cst.Integer(text.lstrip("-")) if isinstance(value, int) else cst.Float(text.lstrip("-"))
    return cst.UnaryOperation(cst.Minus(), node) if text.startswith("-") else node


_ARITHMETIC = {
    cst.Add: lambda a, b: a + b,
    cst.Subtract: lambda a, b: a - b,
    cst.Multiply: lambda a, b: a * b,
    cst.Divide: lambda a, b: a / b,
    cst.Power: lambda a, b: a**b,
}


class _Fold:
    """Folds one expression node whose children are already folded (see `rewrite`)."""

    def __init__(self) -> None:
        self.changed = False

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
            if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Divide):
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
                constant = constant / value if divisor else constant * value
            elif isinstance(factor, cst.UnaryOperation) and isinstance(factor.operator, cst.Minus):
                constant = -constant
                others.append((factor.expression, divisor))
            else:
                others.append((factor, divisor))
        if _is_canonical(node, factors, others, negate):
            return node
        self.changed = True
        if isinstance(constant, float) and constant.is_integer() and abs(constant) < 1e15:
            constant = int(constant) if constant in (1.0, -1.0) else constant
        if not others:
            return _literal(constant)
        numerators = [f for f, divisor in others if not divisor]
        divisors = [f for f, divisor in others if divisor]
        if numerators:
            result = numerators[0]
            if constant == -1:
                result = cst.UnaryOperation(cst.Minus(), result)
            elif constant != 1:
                result = cst.BinaryOperation(_literal(constant), cst.Multiply(), result)
        else:
            result = _literal(constant)
        for factor in numerators[1:]:
            result = cst.BinaryOperation(result, cst.Multiply(), factor)
        for factor in divisors:
            result = cst.BinaryOperation(result, cst.Divide(), factor)
        return result

    def binary(self, node: cst.BinaryOperation) -> cst.BaseExpression:
        left, right = _number(node.left), _number(node.right)
        op = type(node.operator)
        if left is not None and right is not None and op in _ARITHMETIC:
            try:
                value = _ARITHMETIC[op](left, right)
            except (ZeroDivisionError, OverflowError):
                return node
            if isinstance(value, (int, float)) and math.isfinite(value) and abs(value) < 1e15:
                self.changed = True
                return _literal(value)
        simpler = _identity(node, op, left, right)
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
        return _literal(-value)
    return None


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


def _identity(node: cst.BinaryOperation, op, left, right) -> cst.BaseExpression | None:
    if op is cst.Multiply:
        if right == 1:
            return node.left
        if left == 1:
            return node.right
        if right == -1:
            return cst.UnaryOperation(cst.Minus(), node.left)
        if left == -1:
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
_PURE = {
    "math.log": math.log,
    "math.exp": math.exp,
    "math.sqrt": math.sqrt,
    "np.log": math.log,
    "np.exp": math.exp,
    "np.sqrt": math.sqrt,
    "np.log2": math.log2,
    "np.log10": math.log10,
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
    return _literal(result) if math.isfinite(result) else None


def _is_name(expr: cst.BaseExpression, value: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == value


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
    if helper == "unreduce" and len(args) >= 2:
        axis_none = len(args) < 3 or _is_name(args[2], "None")
        keepdims = len(args) >= 4 and _is_name(args[3], "True")
        if axis_none or keepdims:
            return args[0]  # a full reduction's adjoint already broadcasts
    return None


_folded: dict[int, cst.SimpleStatementLine] = {}


def fold(lines: list) -> tuple[list, bool]:
    folder = _Fold()
    out = []
    for line in lines:
        if _folded.get(id(line)) is not line:
            line = _replace_line(line, rewrite_statement(line.body[0], folder))
            if len(_folded) > 4096:
                _folded.clear()
            _folded[id(line)] = line
        out.append(line)
    return out, folder.changed


# -- inlining -------------------------------------------------------------------------------


def inline(lines: list) -> tuple[list, bool]:
    usages = [_usage(line) for line in lines]
    reads = collections.Counter(name for u in usages for name in u.reads)
    writes = collections.Counter(name for u in usages for name in u.writes)
    changed = False
    lines = list(lines)
    for i in range(len(lines)):
        assign = None if _is_dropped(lines[i]) else _single_name_assign(lines[i])
        if assign is None:
            continue
        target, value = assign
        if not target.startswith(_TEMP_PREFIXES) or reads[target] != 1 or writes[target] != 1:
            continue
        value_reads = set(usages[i].reads)
        for j in range(i + 1, len(lines)):
            if _is_dropped(lines[j]):
                continue
            if target in usages[j].reads:
                statement = lines[j].body[0]
                if isinstance(statement, cst.AugAssign) and _base_name(statement.target) == target:
                    break
                lines[j] = _replace_line(lines[j], substitute_names(statement, {target: value}))
                usages[j] = _usage(lines[j])
                lines[i] = _Marked(lines[i])
                changed = True
                break
            if value_reads & (set(usages[j].writes) | set(usages[j].mutates)):
                break
    decisions = [("drop" if _is_dropped(line) else "keep", line) for line in lines]
    return _carry_comments(decisions), changed


class _Marked:
    """A line removed by a rewrite, kept only until its comment has been moved on."""

    def __init__(self, line):
        self.line = line
        self.leading_lines = line.leading_lines


def _is_dropped(line) -> bool:
    return isinstance(line, _Marked)


# -- accumulation fusion ------------------------------------------------------------------


def fuse_accumulations(lines: list) -> tuple[list, bool]:
    """``v = A`` followed, with no read of `v` in between, by ``v = v + B`` or ``v += B``
    becomes ``v = A + B``: an adjoint's first part joins its next one in one expression."""
    usages = [_usage(line) for line in lines]
    lines = list(lines)
    changed = False
    for i in range(len(lines)):
        assign = None if _is_dropped(lines[i]) else _single_name_assign(lines[i])
        if assign is None:
            continue
        target, first = assign
        value_reads = set(usages[i].reads)
        if target in value_reads:
            continue
        for j in range(i + 1, len(lines)):
            if _is_dropped(lines[j]):
                continue
            usage = usages[j]
            if target in usage.reads or target in usage.writes:
                rest = _accumulated_part(lines[j].body[0], target)
                if rest is not None and target not in read_names(rest[1], []):
                    operator, part = rest
                    fused = cst.Assign(
                        (cst.AssignTarget(cst.Name(target)),),
                        cst.BinaryOperation(first, operator, part),
                    )
                    lines[j] = _replace_line(lines[j], fused)
                    usages[j] = _usage(lines[j])
                    lines[i] = _Marked(lines[i])
                    changed = True
                break
            if value_reads & (set(usage.writes) | set(usage.mutates)):
                break
    decisions = [("drop" if _is_dropped(line) else "keep", line) for line in lines]
    return _carry_comments(decisions), changed


def _accumulated_part(statement, target: str):
    """(operator, B) if `statement` is ``target = target + B`` / ``- B`` or ``target += B``."""
    if isinstance(statement, cst.AugAssign) and _is_name(statement.target, target):
        if isinstance(statement.operator, cst.AddAssign):
            return cst.Add(), statement.value
        if isinstance(statement.operator, cst.SubtractAssign):
            return cst.Subtract(), statement.value
        return None
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        if not _is_name(statement.targets[0].target, target):
            return None
        value = statement.value
        if (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, (cst.Add, cst.Subtract))
            and _is_name(value.left, target)
        ):
            return type(value.operator)(), value.right
    return None


# -- dead code ------------------------------------------------------------------------------


def eliminate_dead_code(lines: list) -> tuple[list, bool]:
    live: set[str] = set()
    decisions = []
    changed = False
    for line in reversed(lines):
        statement = line.body[0]
        usage = _usage(line)
        if isinstance(statement, cst.Assign):
            needed = any(name in live for name in usage.writes)
            if needed:
                live.difference_update(usage.writes)
                live.update(usage.reads)
        elif isinstance(statement, cst.AugAssign):
            needed = any(name in live for name in usage.mutates)
            if needed:
                live.update(usage.reads)
        else:  # return, expression statements, assert: always kept
            needed = True
            live.update(usage.reads)
        if not needed:
            changed = True
        decisions.append(("keep" if needed else "drop", line))
    decisions.reverse()
    return _carry_comments(decisions), changed


def _carry_comments(decisions) -> list:
    """Keep the kept lines, moving a dropped line's comment to the next kept line."""
    kept = []
    pending = ()
    for decision, line in decisions:
        if isinstance(line, _Marked):
            decision, line_leading = "drop", line.leading_lines
        else:
            line_leading = line.leading_lines
        if decision == "drop":
            if line_leading and not pending:
                pending = line_leading
            continue
        if pending and not line.leading_lines:
            line = line.with_changes(leading_lines=pending)
        pending = ()
        kept.append(line)
    return kept


# -- driver ---------------------------------------------------------------------------------


def optimize(funcdef: cst.FunctionDef, max_rounds: int = 4) -> cst.FunctionDef:
    """Apply the rewrites of this module until the function stops changing."""
    params = frozenset(
        p.name.value
        for p in (
            *funcdef.params.posonly_params,
            *funcdef.params.params,
            *funcdef.params.kwonly_params,
        )
    )
    lines = list(funcdef.body.body)
    for _ in range(max_rounds):
        lines, propagated = propagate(lines, params)
        lines, folded = fold(lines)
        lines, dead = eliminate_dead_code(lines)
        lines, inlined = inline(lines)
        lines, fused = fuse_accumulations(lines)
        if not (propagated or folded or dead or inlined or fused):
            break
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(lines)))
