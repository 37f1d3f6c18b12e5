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
import math

import libcst as cst

from .templates import Substitute

_TEMP_PREFIXES = ("_t", "_d")


class _Usage(cst.CSTVisitor):
    """Names a statement reads, assigns, and updates in place."""

    def __init__(self) -> None:
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.mutates: list[str] = []

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> bool:
        self.reads.append(node.value)
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        self._target(node.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        target = node.target
        if isinstance(target, cst.Name):
            self.reads.append(target.value)
            self.mutates.append(target.value)
        else:
            target.visit(self)
            base = _base_name(target)
            if base is not None:
                self.mutates.append(base)
        node.value.visit(self)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        if isinstance(node.func, cst.Name) and node.func.value == "accumulate_at" and node.args:
            base = _base_name(node.args[0].value)
            if base is not None:
                self.mutates.append(base)
        return True

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.writes.append(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value)
        else:
            target.visit(self)


def _base_name(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _usage(line: cst.SimpleStatementLine) -> _Usage:
    usage = _Usage()
    line.body[0].visit(usage)
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
    mutated = set()
    for line in lines:
        usage = _usage(line)
        writes.update(usage.writes)
        mutated.update(usage.mutates)
    mapping: dict[str, cst.BaseExpression] = {}
    keep = []
    for line in lines:
        if mapping:
            line = line.visit(Substitute(mapping))
        assign = _single_name_assign(line)
        if assign is not None:
            target, value = assign
            if writes[target] == 1 and target not in mutated and target not in params:
                if _is_constant(value) or (
                    isinstance(value, cst.Name)
                    and (writes[value.value] <= 1)
                    and value.value not in mutated
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


class _Fold(cst.CSTTransformer):
    def __init__(self) -> None:
        self.changed = False

    def leave_BinaryOperation(self, original, updated):
        left, right = _number(updated.left), _number(updated.right)
        op = type(updated.operator)
        if left is not None and right is not None and op in _ARITHMETIC:
            try:
                value = _ARITHMETIC[op](left, right)
            except (ZeroDivisionError, OverflowError):
                return updated
            if isinstance(value, (int, float)) and math.isfinite(value) and abs(value) < 1e15:
                self.changed = True
                return _literal(value)
        simpler = _identity(updated, op, left, right)
        if simpler is not None:
            self.changed = True
            return simpler
        return updated

    def leave_Call(self, original, updated):
        simpler = _fold_helper(updated)
        if simpler is not None:
            self.changed = True
            return simpler
        return updated

    def leave_UnaryOperation(self, original, updated):
        inner = updated.expression
        if (
            isinstance(updated.operator, cst.Minus)
            and isinstance(inner, cst.UnaryOperation)
            and isinstance(inner.operator, cst.Minus)
        ):
            self.changed = True
            return inner.expression
        return updated


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
    return None


def _is_name(expr: cst.BaseExpression, value: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == value


def _fold_helper(call: cst.Call) -> cst.BaseExpression | None:
    """Runtime helper calls whose static arguments make them the identity."""
    if not isinstance(call.func, cst.Name) or any(a.keyword is not None for a in call.args):
        return None
    args = [a.value for a in call.args]
    helper = call.func.value
    if helper == "unreduce" and len(args) >= 2:
        axis_none = len(args) < 3 or _is_name(args[2], "None")
        keepdims = len(args) >= 4 and _is_name(args[3], "True")
        if axis_none or keepdims:
            return args[0]  # a full reduction's adjoint already broadcasts
    return None


def fold(lines: list) -> tuple[list, bool]:
    folder = _Fold()
    return [line.visit(folder) for line in lines], folder.changed


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
                lines[j] = lines[j].visit(Substitute({target: value}))
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
        if not (propagated or folded or dead or inlined):
            break
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(lines)))
