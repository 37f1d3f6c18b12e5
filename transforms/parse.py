"""Pass 1, parse: a Python function object to a libcst tree with the user's positions.

Output: a `ParsedFunction` whose ``funcdef`` is the function's own definition (decorators
removed, body as written) and whose `position`/`error` map any node of that tree back to the
user's file, line and column. Later passes build new trees; they carry the original line in
comments and keep references to original nodes when they need to report an error.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import textwrap
import types
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from .errors import TransformError
from .source import source_lines


@dataclasses.dataclass(frozen=True)
class ParsedFunction:
    """A function's definition as a libcst tree, plus where it came from.

    Attributes:
        funcdef: the ``def`` without decorators.
        filename: the file the function was defined in.
        first_line: the file line number of the snippet's first line.
        indent: columns removed by dedenting the snippet.
        lines: the snippet's (dedented) source lines, for comments and messages.
        module: the parsed snippet; `positions` are computed from it only when asked for
            (they cost more than the rest of parsing, and only error messages need columns).
        statement_lines: file line of each top-level statement of the body (from `ast`).
    """

    funcdef: cst.FunctionDef
    filename: str
    first_line: int
    indent: int
    lines: tuple[str, ...]
    module: cst.Module
    original_def: cst.FunctionDef
    statement_lines: Mapping[cst.CSTNode, int]

    @functools.cached_property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        positions = dict(wrapper.resolve(PositionProvider))
        positions[self.funcdef] = positions[self.original_def]
        return positions

    def statement_line(self, statement: cst.CSTNode) -> int:
        """The file line where a top-level statement of the body starts."""
        line = self.statement_lines.get(statement)
        return line if line is not None else self.position(statement)[0]

    @property
    def name(self) -> str:
        return self.funcdef.name.value

    def position(self, node: cst.CSTNode) -> tuple[int, int]:
        """(line, 0-based column) of `node` in the user's file; the def line if unknown."""
        code_range = self.positions.get(node)
        if code_range is None:
            code_range = self.positions[self.funcdef]
        return (
            code_range.start.line + self.first_line - 1,
            code_range.start.column + self.indent,
        )

    def source_line(self, node: cst.CSTNode) -> str:
        """The stripped text of the line where `node` starts."""
        code_range = self.positions.get(node) or self.positions[self.funcdef]
        return self.lines[code_range.start.line - 1].strip()

    def error(self, node: cst.CSTNode, message: str) -> TransformError:
        lineno, col = self.position(node)
        return TransformError(message, self.filename, lineno, col, self.source_line(node))


def parse_function(fn: object) -> ParsedFunction:
    """Read and parse the source of `fn`.

    Raises:
        TypeError: `fn` is not a Python function, or its source cannot be read (built-ins,
            functions made by ``exec``, functions typed into an interactive prompt).
    """
    if not isinstance(fn, types.FunctionType):
        raise TypeError(
            f"s2sgrad transforms Python functions defined with `def`; got "
            f"{type(fn).__name__} {getattr(fn, '__name__', fn)!r}"
        )
    code = fn.__code__
    # code objects of identical functions in two files compare equal: the file is in the key
    return _parse_code(code, code.co_filename, code.co_firstlineno)


@functools.lru_cache(maxsize=512)
def _parse_code(code: types.CodeType, filename: str, first_line: int) -> ParsedFunction:
    name = code.co_name
    try:
        lines, first_line = source_lines(code)
    except (OSError, TypeError) as exc:
        raise TypeError(
            f"cannot read the source of {name!r} (defined in {code.co_filename}): s2sgrad "
            f"needs the function's source, so define it in a .py file rather than with exec() "
            f"or at an interactive prompt"
        ) from exc
    filename = code.co_filename
    snippet = "".join(lines)
    dedented = textwrap.dedent(snippet)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    if name == "<lambda>":
        raise TypeError(
            f"{filename}:{first_line}: s2sgrad cannot transform a lambda; define the function "
            f"with `def` instead"
        )
    try:
        module = cst.parse_module(dedented)
    except cst.ParserSyntaxError as exc:
        raise TransformError(
            f"cannot parse the source of {name!r}: {exc.message}",
            filename,
            first_line + exc.raw_line - 1,
            exc.raw_column + indent,
        ) from None
    funcdef = _find_def(module, name)
    if funcdef is None:
        raise TypeError(f"cannot find the definition of {name!r} in {filename}:{first_line}")
    stripped = funcdef.with_changes(decorators=())
    return ParsedFunction(
        funcdef=stripped,
        filename=filename,
        first_line=first_line,
        indent=indent,
        lines=tuple(dedented.splitlines()),
        module=module,
        original_def=funcdef,
        statement_lines=_statement_lines(funcdef, dedented, first_line),
    )


def _statement_lines(funcdef: cst.FunctionDef, source: str, first_line: int) -> dict:
    """File line of each top-level body statement, read from Python's own (fast) parser."""
    tree = ast.parse(source)
    node = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None
    )
    if node is None:
        return {}
    lines: dict[cst.CSTNode, int] = {}
    statements = iter(node.body)
    for statement in funcdef.body.body:
        count = len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
        first = None
        for _ in range(count):
            parsed = next(statements, None)
            if parsed is not None and first is None:
                first = parsed.lineno
        if first is None:
            break
        lines[statement] = first + first_line - 1
    return lines


def _find_def(module: cst.Module, name: str) -> cst.FunctionDef | None:
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None
