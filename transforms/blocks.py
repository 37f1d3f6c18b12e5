"""What a block of statements does, read off its syntax tree: the names it assigns, whether
every path through it leaves, whether it jumps out; and small builders of normal-form lines.
Used by the normalizer (`anf`, `anf_loops`) and the passes after it."""

from __future__ import annotations

import libcst as cst

from .resolve import Resolution


def is_builtin_call(expr: cst.BaseExpression, name: str, resolution: Resolution) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Name)
        and resolution.spell(expr.func) == name
    )


def target_names(target: cst.BaseExpression, count: int) -> list | None:
    """The targets a loop binds, one per sequence (a name, or a tuple of targets unpacking
    that sequence's item); None if they do not match."""
    if count == 1:
        return [target] if _is_target(target) else None
    if not isinstance(target, (cst.Tuple, cst.List)) or len(target.elements) != count:
        return None
    targets = [element.value for element in target.elements]
    return targets if all(_is_target(t) for t in targets) else None


def _is_target(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):
        return True
    return isinstance(target, (cst.Tuple, cst.List)) and all(
        _is_target(e.value)
        if isinstance(e, cst.Element)
        else isinstance(e, cst.StarredElement) and isinstance(e.value, cst.Name)
        for e in target.elements
    )


class AssignedNames(cst.CSTVisitor):
    """The names a block assigns (plain, tuple and augmented targets), in order."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def _add(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            if target.value not in self.names:
                self.names.append(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._add(element.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target)


class NestedReads(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def names_in_target(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in names_in_target(e.value)]
    return []


def comment_lines(comment: str | None) -> tuple[cst.EmptyLine, ...]:
    """The leading lines of a statement headed by `comment` (one line per line of it)."""
    if not comment:
        return ()
    return tuple(cst.EmptyLine(comment=cst.Comment(text)) for text in comment.split("\n"))


def copy_line(target: str, source: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(
        (cst.Assign((cst.AssignTarget(cst.Name(target)),), cst.Name(source)),)
    )


def indented(lines: list) -> cst.IndentedBlock:
    return cst.IndentedBlock(body=tuple(lines) or (cst.SimpleStatementLine((cst.Pass(),)),))


def statements_of_else(orelse) -> list:
    if orelse is None:
        return []
    if isinstance(orelse, cst.If):  # elif
        return [orelse]
    return list(orelse.body.body)


def always_exits(statements: list) -> bool:
    """Every path through `statements` ends in ``return`` or ``raise``."""
    for statement in statements:
        if isinstance(statement, cst.If):
            orelse = statements_of_else(statement.orelse)
            if orelse and always_exits(list(statement.body.body)) and always_exits(orelse):
                return True
        elif isinstance(statement, cst.SimpleStatementLine):
            jumps = (cst.Return, cst.Raise, cst.Break, cst.Continue)
            if any(isinstance(small, jumps) for small in statement.body):
                return True
    return False


def contains_jump(statements: list, kinds=(cst.Return, cst.Break, cst.Continue)) -> bool:
    """`statements` hold a return, or a break/continue of the enclosing loop."""
    for statement in statements:
        if isinstance(statement, cst.If):
            inner = list(statement.body.body) + statements_of_else(statement.orelse)
            if contains_jump(inner, kinds):
                return True
        elif isinstance(statement, (cst.For, cst.While)):
            if cst.Return in kinds and contains_jump(list(statement.body.body), (cst.Return,)):
                return True  # a nested loop's break/continue are its own
        elif isinstance(statement, cst.SimpleStatementLine):
            if any(isinstance(small, kinds) for small in statement.body):
                return True
    return False


def contains_break(statements: list) -> bool:
    return contains_jump(statements, (cst.Break,))


def iter_small_statements(lines):
    """Every small statement of a normal-form body, in textual order, branches included."""
    for line in lines:
        if isinstance(line, cst.If):
            yield from iter_small_statements(line.body.body)
            if line.orelse is not None:
                yield from iter_small_statements(line.orelse.body.body)
        elif isinstance(line, (cst.For, cst.While)):
            yield from iter_small_statements(line.body.body)
        else:
            yield from line.body


def maybe(fn, value):
    return None if value is None else fn(value)


def first_line(statement: cst.CSTNode) -> str:
    """The statement's first line of code, for the ``# line N: ...`` comments (the comment
    lines above it, such as those of generated code transformed again, are not code)."""
    if hasattr(statement, "leading_lines"):
        statement = statement.with_changes(leading_lines=())
    text = cst.Module(body=()).code_for_node(statement).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] + (" ..." if len(lines) > 1 else "")
