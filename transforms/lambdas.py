"""Pass 1 for a lambda: its expression read as the body of a ``def``.

``sg.grad(lambda w: loss(w, X, y))`` is transformed as

    def lambda_(w):
        return loss(w, X, y)

(`naming.LAMBDA`), whose parameters and returned expression are the lambda's own libcst nodes:
positions, messages and the ``# line N:`` comments of generated code are the user's. A
lambda's code object knows its file and first line only, and a line may hold several lambdas,
so the lambda is found in Python's own tree of the file: the one on that line whose
parameters are the code's and whose body spans every position the code's instructions have.
The snippet parsed with libcst is the innermost statement holding it.
"""

from __future__ import annotations

import ast
import linecache
import types

import libcst as cst

from .naming import LAMBDA
from .walk import visit


def parse_lambda(code: types.CodeType):
    """The `ParsedFunction` of the lambda whose code is `code`.

    Raises:
        TypeError: its file cannot be read, or the lambda cannot be found in it.
    """
    from .parse import ParsedFunction, _dedent  # (parse calls this module)

    filename = code.co_filename
    lines = linecache.getlines(filename)
    try:
        tree = ast.parse("".join(lines)) if lines else None
    except SyntaxError:
        tree = None
    found = _find(tree, code, lines) if tree is not None else None
    if found is None:
        raise TypeError(
            f"cannot read the source of the lambda defined at {filename}:{code.co_firstlineno}:"
            f" s2sgrad needs the function's source, so define it in a .py file rather than "
            f"with exec() or at an interactive prompt"
        )
    node, statement = found
    indent = statement.col_offset
    snippet = lines[statement.lineno - 1 : statement.end_lineno]
    dedented = _dedent(snippet, snippet[0][:indent])
    module = cst.parse_module(dedented)
    order = sorted(
        (n for n in ast.walk(statement) if isinstance(n, ast.Lambda)),
        key=lambda n: (n.lineno, n.col_offset),
    )
    collector = _Lambdas()
    visit(module, collector)
    lambda_ = collector.found[order.index(node)]
    returned = cst.Return(value=lambda_.body)
    line = cst.SimpleStatementLine(body=(returned,))
    block = cst.IndentedBlock(body=(line,))
    funcdef = cst.FunctionDef(name=cst.Name(LAMBDA), params=lambda_.params, body=block)
    definition = ast.FunctionDef(
        name=LAMBDA, args=node.args, body=[ast.Return(node.body)], decorator_list=[]
    )
    return ParsedFunction(
        funcdef=funcdef,
        filename=filename,
        first_line=statement.lineno,
        indent=indent,
        lines=tuple(dedented.splitlines()),
        module=module,
        original_def=lambda_,
        statement_lines={line: node.body.lineno},
        rebuilt={block: lambda_, line: lambda_.body, returned: lambda_.body},
        tree=ast.Module(body=[definition], type_ignores=[]),
    )


class _Lambdas(cst.CSTVisitor):
    """Every lambda of a tree, in source order."""

    def __init__(self) -> None:
        self.found: list[cst.Lambda] = []

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.found.append(node)


def _find(tree: ast.Module, code: types.CodeType, lines: list[str]):
    """(the lambda of `code`, the innermost statement holding it) in `tree`, or None."""
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    candidates = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Lambda)
        and n.lineno == code.co_firstlineno
        and [a.arg for a in (*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs)] == names
    ]
    positions = [  # (not the (line, 0, 0) of the instruction that starts every code object)
        (p[0], p[2]) for p in code.co_positions() if None not in p and (p[2], p[3]) != (0, 0)
    ]
    inside = [n for n in candidates if all(_within(n.body, p) for p in positions)]
    if not inside:
        return None
    node = min(inside, key=_span)
    statements = [
        s
        for s in ast.walk(tree)
        if isinstance(s, ast.stmt)
        and _within(s, (node.lineno, node.col_offset))
        and not _is_elif(s, lines)
    ]
    return (node, min(statements, key=_span)) if statements else None


def _within(node: ast.AST, position: tuple[int, int]) -> bool:
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= position <= end


def _span(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)


def _is_elif(statement: ast.stmt, lines: list[str]) -> bool:
    """An ``elif`` is an ``If`` in Python's tree, but its lines are no statement of their own."""
    return isinstance(statement, ast.If) and lines[statement.lineno - 1].lstrip().startswith("elif")
