"""What optimizer passes ask of a statement line: the names it reads, assigns and updates in
place, the blocks of a compound line, and how to rebuild one. Shared by `optimize` and `fold`.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from .in_place import VIEW_FUNCTIONS, VIEW_METHODS
from .walk import _NameReader, read_names, substitute_names, visit


@dataclasses.dataclass(frozen=True)
class Usage:
    """Names a statement reads, assigns, and updates in place."""

    reads: tuple[str, ...]
    writes: tuple[str, ...]
    mutates: tuple[str, ...]


def base_name(expr: cst.BaseExpression) -> str | None:
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
        base = base_name(target)
        if base is not None:
            mutates.append(base)


_usage_cache: dict[int, tuple[cst.SimpleStatementLine, Usage]] = {}


def usage(line: cst.SimpleStatementLine) -> Usage:
    cached = _usage_cache.get(id(line))
    if cached is not None and cached[0] is line:
        return cached[1]
    if isinstance(line, COMPOUND):
        return _compound_usage(line)
    statement = line.body[0]
    reads: list[str] = []
    writes: list[str] = []
    mutates: list[str] = []
    kind = type(statement)
    if kind is cst.Assign:
        read_names(statement.value, reads)
        value = statement.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value == "pop":  # v = items.pop() changes the list
                base = base_name(value.func.value)
                if base is not None:
                    mutates.append(base)
        if isinstance(value, cst.Call) and _is_in_place_helper(value) and value.args:
            base = base_name(value.args[0].value)  # dx = accumulate_at(dx, ...) adds in place
            if base is not None:
                mutates.append(base)
        for target in statement.targets:
            _targets(target.target, writes, reads, mutates)
    elif kind is cst.AugAssign:
        target = statement.target
        if isinstance(target, cst.Name):
            reads.append(target.value)
        else:
            read_names(target, reads)
        base = base_name(target)
        if base is not None:
            mutates.append(base)
        read_names(statement.value, reads)
    elif kind is cst.Expr:
        value = statement.value
        read_names(value, reads)
        if isinstance(value, cst.Call) and _is_in_place_helper(value) and value.args:
            base = base_name(value.args[0].value)
            if base is not None:
                mutates.append(base)
        elif isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in ("append", "pop"):  # a list changing in place
                base = base_name(value.func.value)
                if base is not None:
                    mutates.append(base)
    elif kind is cst.Return:
        if statement.value is not None:
            read_names(statement.value, reads)
    else:
        visit(statement, _NameReader(reads))
    usage = Usage(tuple(reads), tuple(writes), tuple(mutates))
    if len(_usage_cache) > 4096:
        _usage_cache.clear()
    _usage_cache[id(line)] = (line, usage)
    return usage


COMPOUND = (cst.If, cst.For, cst.While)


def head(line) -> cst.BaseExpression:
    """The expression a compound line evaluates itself: an ``if``'s test, a loop's iterable."""
    return line.iter if isinstance(line, cst.For) else line.test


def _compound_usage(line) -> Usage:
    """An ``if`` reads its test and everything its branches read; a loop its iterable and
    its body; each writes what its blocks write (a loop also its target)."""
    reads = read_names(head(line), [])
    writes: list[str] = [line.target.value] if isinstance(line, cst.For) else []
    mutates: list[str] = []
    for block in blocks(line):
        for inner in block:
            used = usage(inner)
            reads.extend(used.reads)
            writes.extend(used.writes)
            mutates.extend(used.mutates)
    found = Usage(tuple(reads), tuple(writes), tuple(mutates))
    _usage_cache[id(line)] = (line, found)
    return found


def blocks(line) -> list[list]:
    """The statement lists of an ``if``'s branches or a loop's body."""
    found = [list(line.body.body)]
    if isinstance(line, cst.If) and line.orelse is not None:
        found.append(list(line.orelse.body.body))
    return found


def with_blocks(line, new_blocks: list[list], new_head=None):
    def block(lines, old):
        return old.with_changes(body=tuple(lines) or (cst.SimpleStatementLine((cst.Pass(),)),))

    changes = {"body": block(new_blocks[0], line.body)}
    if isinstance(line, cst.If) and line.orelse is not None:
        changes["orelse"] = line.orelse.with_changes(body=block(new_blocks[1], line.orelse.body))
    if new_head is not None:
        changes["iter" if isinstance(line, cst.For) else "test"] = new_head
    return line.with_changes(**changes)


def on_branches(line, rewrite_block, test_rewrite=None):
    """`line` with `rewrite_block` applied to each block (and `test_rewrite` to its head)."""
    new_head = test_rewrite(head(line)) if test_rewrite is not None else None
    return with_blocks(line, [rewrite_block(block) for block in blocks(line)], new_head)


def substitute_line(line, mapping):
    if isinstance(line, COMPOUND):
        return on_branches(
            line,
            lambda block: [substitute_line(inner, mapping) for inner in block],
            lambda test: substitute_names(test, mapping),
        )
    return replace_line(line, substitute_names(line.body[0], mapping))


def is_item_write(line) -> bool:
    """``y[index] = value``: other names may see the change (views), so nothing moves past it."""
    if not isinstance(line, cst.SimpleStatementLine):
        return False
    statement = line.body[0]
    return isinstance(statement, cst.Assign) and any(
        isinstance(t.target, cst.Subscript) for t in statement.targets
    )


def single_name_assign(line: cst.SimpleStatementLine) -> tuple[str, cst.BaseExpression] | None:
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    statement = line.body[0]
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
        if isinstance(target, cst.Name):
            return target.value, statement.value
    return None


def replace_line(line: cst.SimpleStatementLine, statement: cst.BaseSmallStatement):
    return line.with_changes(body=(statement,))


# runtime helpers that change their first argument in place (and return it)
IN_PLACE_HELPERS = frozenset({"accumulate_at", "set_batch_item"})


def _is_in_place_helper(value: cst.Call) -> bool:
    return isinstance(value.func, cst.Name) and value.func.value in IN_PLACE_HELPERS


def is_name(expr: cst.BaseExpression, value: str) -> bool:
    return isinstance(expr, cst.Name) and expr.value == value


class Marked:
    """A line removed by a rewrite, kept only until its comment has been moved on."""

    def __init__(self, line):
        self.line = line
        self.leading_lines = line.leading_lines


def is_dropped(line) -> bool:
    return isinstance(line, Marked)


def carry_comments(decisions) -> list:
    """Keep the kept lines, moving a dropped line's comment to the next kept line."""
    kept = []
    pending = ()
    for decision, line in decisions:
        if isinstance(line, Marked):
            decision, line_leading = "drop", line.leading_lines
        else:
            line_leading = line.leading_lines
        if decision == "drop":
            if line_leading:  # the last comment dropped is the one naming what comes next
                pending = line_leading
            continue
        if pending and not line.leading_lines:
            line = line.with_changes(leading_lines=pending)
        pending = ()
        kept.append(line)
    return kept


def widened(names, aliases: dict) -> set[str]:
    return {alias for name in names for alias in aliases.get(name, (name,))}


def alias_groups(lines: list) -> dict[str, tuple[str, ...]]:
    """For each name copied to or from another (``a = b``, anywhere in `lines`) or assigned a
    possible view of one (``a = b[1:]``, ``a = b.T``, ``a = b.reshape(3, 2)``), every name
    that may hold the same object or memory: the groups joined by those assignments. A view
    read after a write into its base (the backward sweep puts overwritten slots back) reads
    the new values, so nothing reading it moves past that write."""
    group: dict[str, set[str]] = {}

    def scan(block) -> None:
        for line in block:
            if isinstance(line, COMPOUND):
                for inner in blocks(line):
                    scan(inner)
                continue
            statement = line.body[0]
            if not isinstance(statement, cst.Assign):
                continue
            base = _viewed(statement.value)
            if base is None:
                continue
            for target in statement.targets:
                if isinstance(target.target, cst.Name):
                    a, b = target.target.value, base
                    joined = group.get(a, {a}) | group.get(b, {b})
                    for name in joined:
                        group[name] = joined

    scan(lines)
    return {name: tuple(names) for name, names in group.items()}


# methods and NumPy functions whose result may be a view of their (first) argument: the
# mutation analysis's lists (``np.flipud(b)`` was missing here, and a value reading such a
# view moved past the backward sweep's restore of ``b``'s slots)
_VIEWS = VIEW_METHODS | {function.__name__ for function in VIEW_FUNCTIONS}


def _viewed(value: cst.BaseExpression) -> str | None:
    """The name `value` is, or may be a view of: ``b``, ``b[...]``, ``b.T``, ``b.reshape(...)``,
    ``np.reshape(b, ...)``; None for anything else (arithmetic makes new arrays)."""
    if isinstance(value, cst.Name):
        return value.value
    if isinstance(value, (cst.Subscript, cst.Attribute)) and isinstance(value.value, cst.Name):
        return value.value.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        func = value.func
        if func.attr.value not in _VIEWS:
            return None
        if isinstance(func.value, cst.Name) and func.value.value not in ("np", "numpy"):
            return func.value.value  # b.reshape(...)
        if value.args and isinstance(value.args[0].value, cst.Name):
            return value.args[0].value.value  # np.reshape(b, ...)
    return None
