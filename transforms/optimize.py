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

from .walk import _NameReader, dotted_name, read_names, rewrite, rewrite_statement, substitute_names

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


def _targets(target: cst.BaseExpression, writes: list, reads: list, mutates: list) -> None:
    if isinstance(target, cst.Name):
        writes.append(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _targets(element.value, writes, reads, mutates)
    else:  # y[index] = ...: reads the index, updates y in place
        read_names(target, reads)
        base = _base_name(target)
        if base is not None:
            mutates.append(base)


_usage_cache: dict[int, tuple[cst.SimpleStatementLine, _Usage]] = {}


def _usage(line: cst.SimpleStatementLine) -> _Usage:
    cached = _usage_cache.get(id(line))
    if cached is not None and cached[0] is line:
        return cached[1]
    if isinstance(line, _COMPOUND):
        return _compound_usage(line)
    statement = line.body[0]
    reads: list[str] = []
    writes: list[str] = []
    mutates: list[str] = []
    kind = type(statement)
    if kind is cst.Assign:
        read_names(statement.value, reads)
        for target in statement.targets:
            _targets(target.target, writes, reads, mutates)
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
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in ("append", "pop"):  # a list changing in place
                base = _base_name(value.func.value)
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


_COMPOUND = (cst.If, cst.For, cst.While)


def _head(line) -> cst.BaseExpression:
    """The expression a compound line evaluates itself: an ``if``'s test, a loop's iterable."""
    return line.iter if isinstance(line, cst.For) else line.test


def _compound_usage(line) -> _Usage:
    """An ``if`` reads its test and everything its branches read; a loop its iterable and
    its body; each writes what its blocks write (a loop also its target)."""
    reads = read_names(_head(line), [])
    writes: list[str] = [line.target.value] if isinstance(line, cst.For) else []
    mutates: list[str] = []
    for block in _blocks(line):
        for inner in block:
            usage = _usage(inner)
            reads.extend(usage.reads)
            writes.extend(usage.writes)
            mutates.extend(usage.mutates)
    usage = _Usage(tuple(reads), tuple(writes), tuple(mutates))
    _usage_cache[id(line)] = (line, usage)
    return usage


def _blocks(line) -> list[list]:
    """The statement lists of an ``if``'s branches or a loop's body."""
    blocks = [list(line.body.body)]
    if isinstance(line, cst.If) and line.orelse is not None:
        blocks.append(list(line.orelse.body.body))
    return blocks


def _with_blocks(line, blocks: list[list], head=None):
    def block(lines, old):
        return old.with_changes(body=tuple(lines) or (cst.SimpleStatementLine((cst.Pass(),)),))

    changes = {"body": block(blocks[0], line.body)}
    if isinstance(line, cst.If) and line.orelse is not None:
        changes["orelse"] = line.orelse.with_changes(body=block(blocks[1], line.orelse.body))
    if head is not None:
        changes["iter" if isinstance(line, cst.For) else "test"] = head
    return line.with_changes(**changes)


def _on_branches(line, rewrite_block, test_rewrite=None):
    """`line` with `rewrite_block` applied to each block (and `test_rewrite` to its head)."""
    head = test_rewrite(_head(line)) if test_rewrite is not None else None
    return _with_blocks(line, [rewrite_block(block) for block in _blocks(line)], head)


def _substitute_line(line, mapping):
    if isinstance(line, _COMPOUND):
        return _on_branches(
            line,
            lambda block: [_substitute_line(inner, mapping) for inner in block],
            lambda test: substitute_names(test, mapping),
        )
    return _replace_line(line, substitute_names(line.body[0], mapping))


def _is_item_write(line) -> bool:
    """``y[index] = value``: other names may see the change (views), so nothing moves past it."""
    if not isinstance(line, cst.SimpleStatementLine):
        return False
    statement = line.body[0]
    return isinstance(statement, cst.Assign) and any(
        isinstance(t.target, cst.Subscript) for t in statement.targets
    )


def _single_name_assign(line: cst.SimpleStatementLine) -> tuple[str, cst.BaseExpression] | None:
    if not isinstance(line, cst.SimpleStatementLine):
        return None
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
    """Replace copies and constants by what they copy, in every block.

    ``a = b`` disappears if `a` is assigned once and `b` never changes after that line in
    textual order (which, with branches, is a conservative stand-in for "on any path")."""
    writes: collections.Counter = collections.Counter()
    mutated: set[str] = set()
    last_change: dict[str, int] = {}
    index_of: dict[int, int] = {}

    def scan(block) -> None:
        for line in block:
            if isinstance(line, _COMPOUND):
                for inner in _blocks(line):
                    scan(inner)
                if isinstance(line, cst.For):  # the target changes on every iteration
                    last_change[line.target.value] = len(index_of)
                    writes[line.target.value] += 2
                continue
            index = index_of[id(line)] = len(index_of)
            usage = _usage(line)
            writes.update(usage.writes)
            mutated.update(usage.mutates)
            for name in (*usage.writes, *usage.mutates):
                last_change[name] = index

    scan(lines)
    mapping: dict[str, cst.BaseExpression] = {}

    def walk(block) -> list:
        decisions = []
        for line in block:
            if isinstance(line, _COMPOUND):
                head = substitute_names(_head(line), mapping) if mapping else None
                blocks = [walk(b) for b in _blocks(line)]
                decisions.append(("keep", _with_blocks(line, blocks, head)))
                continue
            index = index_of[id(line)]
            if mapping and any(name in mapping for name in _usage(line).reads):
                line = _substitute_line(line, mapping)
            assign = _single_name_assign(line)
            if assign is not None:
                target, value = assign
                if writes[target] == 1 and target not in mutated and target not in params:
                    if _is_constant(value) or (
                        isinstance(value, cst.Name)
                        and last_change.get(value.value, -1) < index
                        and value.value not in ("True", "False", "None")
                    ):
                        mapping[target] = value
                        decisions.append(("drop", line))
                        continue
            decisions.append(("keep", line))
        return _carry_comments(decisions)

    result = walk(lines)
    return result, bool(mapping)


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
        if numerators and constant == -1:
            # the sign goes on a factor that is surely a number (an adjoint), never on one that
            # may be a boolean mask (NumPy refuses -mask); failing that, -1 leads the chain
            signed = next((i for i, f in enumerate(numerators) if _is_adjoint_name(f)), None)
            if signed is None:
                numerators = [_literal(-1), *numerators]
            else:
                numerators[signed] = cst.UnaryOperation(cst.Minus(), numerators[signed])
            result = numerators[0]
        elif numerators:
            result = numerators[0]
            if constant != 1:
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


def _identity(node: cst.BinaryOperation, op, left, right) -> cst.BaseExpression | None:
    if op is cst.Multiply:
        if right == 1:
            return node.left
        if left == 1:
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


def _makes_an_alias(before, after, mutated: frozenset[str]) -> bool:
    """``y = x * 1.0`` folded to ``y = x`` would make `y` another name for `x`'s array: wrong
    if `y` is written into later (the write would change `x`)."""
    if not isinstance(after, cst.Assign) or not isinstance(after.value, cst.Name):
        return False
    if isinstance(before.value, cst.Name):
        return False
    return any(isinstance(t.target, cst.Name) and t.target.value in mutated for t in after.targets)


def fold(lines: list, folder: _Fold | None = None) -> tuple[list, bool]:
    if folder is None:
        mutated = frozenset(name for line in lines for name in _usage(line).mutates)
        folder = _Fold(mutated)
    out = []
    for line in lines:
        if isinstance(line, _COMPOUND):
            line = _on_branches(
                line, lambda block: fold(block, folder)[0], lambda test: rewrite(test, folder)
            )
        elif _folded.get(id(line)) is not line:
            folded = rewrite_statement(line.body[0], folder)
            if not _makes_an_alias(line.body[0], folded, folder.mutated):
                line = _replace_line(line, folded)
            if len(_folded) > 4096:
                _folded.clear()
            _folded[id(line)] = line
        out.append(line)
    return out, folder.changed


# -- inlining -------------------------------------------------------------------------------


def inline(lines: list, counts: tuple | None = None) -> tuple[list, bool]:
    """Substitute single-use temporaries into their use, within one block (an ``if`` is a
    barrier: nothing moves into or out of a branch); then the same inside each branch."""
    usages = [_usage(line) for line in lines]
    if counts is None:  # reads and writes over the whole function, branches included
        counts = (
            collections.Counter(name for u in usages for name in u.reads),
            collections.Counter(name for u in usages for name in u.writes),
        )
    reads, writes = counts
    changed = False
    lines = list(lines)
    for i in range(len(lines)):
        assign = None if _is_dropped(lines[i]) else _single_name_assign(lines[i])
        if assign is None:
            continue
        target, value = assign
        if reads[target] != 1 or writes[target] != 1:
            continue
        if not target.startswith(_TEMP_PREFIXES):
            changed = _coalesce_copy(lines, usages, i, target, value) or changed
            continue
        value_reads = set(usages[i].reads)
        for j in range(i + 1, len(lines)):
            if _is_dropped(lines[j]):
                continue
            if _is_item_write(lines[j]):
                break
            if target in usages[j].reads:
                if isinstance(lines[j], _COMPOUND):
                    break
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
    nested_changed = False

    def inline_block(block):
        nonlocal nested_changed
        result, block_changed = inline(block, counts)
        nested_changed = nested_changed or block_changed
        return result

    lines = [
        _on_branches(line, inline_block) if isinstance(line, _COMPOUND) else line for line in lines
    ]
    decisions = [("drop" if _is_dropped(line) else "keep", line) for line in lines]
    return _carry_comments(decisions), changed or nested_changed


def _coalesce_copy(lines, usages, i, target, value) -> bool:
    """``a = E`` whose one use is a later copy ``b = a`` in the same block becomes ``b = E``
    (a variable assigned in a branch only to be copied into the name it has after the if)."""
    value_reads = set(usages[i].reads)
    for j in range(i + 1, len(lines)):
        if _is_dropped(lines[j]):
            continue
        if target in usages[j].reads:
            copy = None if isinstance(lines[j], _COMPOUND) else _single_name_assign(lines[j])
            if copy is None or not _is_name(copy[1], target):
                return False
            joined = copy[0]
            between = usages[i + 1 : j]
            if any(joined in u.reads or joined in u.writes for u in between):
                return False
            statement = lines[i].body[0]
            renamed = statement.with_changes(targets=(cst.AssignTarget(cst.Name(joined)),))
            lines[i] = _replace_line(lines[i], renamed)
            usages[i] = _usage(lines[i])
            lines[j] = _Marked(lines[j])
            return True
        if value_reads & (set(usages[j].writes) | set(usages[j].mutates)):
            return False
    return False


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
            if _is_item_write(lines[j]):
                break
            if target in usage.reads or target in usage.writes:
                if isinstance(lines[j], _COMPOUND):
                    break
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
    nested_changed = False

    def fuse_block(block):
        nonlocal nested_changed
        result, block_changed = fuse_accumulations(block)
        nested_changed = nested_changed or block_changed
        return result

    lines = [
        _on_branches(line, fuse_block) if isinstance(line, _COMPOUND) else line for line in lines
    ]
    decisions = [("drop" if _is_dropped(line) else "keep", line) for line in lines]
    return _carry_comments(decisions), changed or nested_changed


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


def eliminate_dead_code(lines: list, live: set[str] | None = None) -> tuple[list, bool]:
    """Remove assignments nobody reads. `live` holds the names read after `lines` (updated in
    place to those read before them); an ``if`` keeps what either branch needs."""
    live = set() if live is None else live
    decisions = []
    changed = False
    for line in reversed(lines):
        if isinstance(line, (cst.For, cst.While)):
            line, needed, loop_changed = _dead_code_in_loop(line, live)
            changed = changed or loop_changed or not needed
            decisions.append(("keep" if needed else "drop", line))
            continue
        if isinstance(line, cst.If):
            line, needed, branch_changed = _dead_code_in_if(line, live)
            changed = changed or branch_changed
            decisions.append(("keep" if needed else "drop", line))
            if not needed:
                changed = True
            continue
        statement = line.body[0]
        usage = _usage(line)
        if _is_item_write(line):
            needed = True  # a write into an array (a view of it may be read later)
            live.update(usage.reads)
        elif isinstance(statement, cst.Assign):
            needed = any(name in live for name in usage.writes)
            if needed:
                live.difference_update(usage.writes)
                live.update(usage.reads)
        elif isinstance(statement, cst.AugAssign):
            needed = any(name in live for name in usage.mutates)
            if needed:
                live.update(usage.reads)
        else:  # return, raise, expression statements, assert: always kept
            needed = True
            live.update(usage.reads)
        if not needed:
            changed = True
        decisions.append(("keep" if needed else "drop", line))
    decisions.reverse()
    return _carry_comments(decisions), changed


def _dead_code_in_loop(line, live: set[str]) -> tuple[cst.BaseCompoundStatement, bool, bool]:
    """What is live at the end of a loop body is what is live after the loop plus what the
    body's start needs (the next iteration): found by repeating the analysis to a fixpoint."""
    head = read_names(_head(line), [])
    body_lines = list(line.body.body)
    live_end = set(live) | set(head)
    for _ in range(8):
        trial = set(live_end)
        eliminate_dead_code(body_lines, trial)
        grown = set(live) | set(head) | trial
        if grown == live_end:
            break
        live_end = grown
    start = set(live_end)
    body, changed = eliminate_dead_code(body_lines, start)
    if not body:
        return line, False, True
    live |= start | set(head)
    return _with_blocks(line, [body]), True, changed


def _dead_code_in_if(line: cst.If, live: set[str]) -> tuple[cst.If, bool, bool]:
    after = set(live)
    live_in: set[str] = set()
    blocks, changed = [], False
    for block in _blocks(line):
        branch_live = set(after)
        kept, block_changed = eliminate_dead_code(block, branch_live)
        blocks.append(kept)
        live_in |= branch_live
        changed = changed or block_changed
    if len(blocks) == 1:
        live_in |= after  # no else: the names needed after may come from before the if
    needed = any(blocks)
    if needed:
        live.clear()
        live.update(live_in)
        live.update(read_names(line.test, []))
        if len(blocks) == 2 and not blocks[1]:
            return _with_blocks(line, blocks).with_changes(orelse=None), True, changed
        if len(blocks) == 2 and not blocks[0]:  # if t: pass / else: B  is  if not t: B
            inverted = cst.UnaryOperation(cst.Not(), line.test)
            body = line.body.with_changes(body=tuple(blocks[1]))
            return line.with_changes(test=inverted, body=body, orelse=None), True, True
    return _with_blocks(line, blocks), needed, changed


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
