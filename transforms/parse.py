"""Pass 1, parse: a Python function object to a libcst tree with the user's positions.

Output: a `ParsedFunction` whose ``funcdef`` is the function's own definition (decorators
removed, body as written) and whose `position`/`error` map any node of that tree back to the
user's file, line and column. Later passes build new trees; they carry the original line in
comments and keep references to original nodes when they need to report an error.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import linecache
import textwrap
import types
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from .errors import TransformError


@dataclasses.dataclass(frozen=True)
class ParsedFunction:
    """A function's definition as a libcst tree, plus where it came from.

    Attributes:
        funcdef: the ``def`` without decorators.
        filename: the file the function was defined in.
        first_line: the file line number of the snippet's first line.
        indent: columns removed by dedenting the snippet.
        lines: the snippet's (dedented) source lines, for comments and messages.
        positions: libcst positions of every node of the snippet tree.
    """

    funcdef: cst.FunctionDef
    filename: str
    first_line: int
    indent: int
    lines: tuple[str, ...]
    positions: Mapping[cst.CSTNode, CodeRange]

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
    return _parse_code(fn.__code__)


@functools.lru_cache(maxsize=512)
def _parse_code(code: types.CodeType) -> ParsedFunction:
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
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    funcdef = _find_def(module, name)
    if funcdef is None:
        raise TypeError(f"cannot find the definition of {name!r} in {filename}:{first_line}")
    stripped = funcdef.with_changes(decorators=())
    # keep positions for the undecorated def too (with_changes makes a new node)
    positions = {**positions, stripped: positions[funcdef]}
    return ParsedFunction(
        funcdef=stripped,
        filename=filename,
        first_line=first_line,
        indent=indent,
        lines=tuple(dedented.splitlines()),
        positions=positions,
    )


def source_lines(code: types.CodeType) -> tuple[list[str], int]:
    """The lines of the definition `code` was compiled from, and the number of the first.

    Like `inspect.getsourcelines`, without its search through every loaded module for the
    function's module (which costs more than parsing a small function).
    """
    lines = linecache.getlines(code.co_filename)
    if not lines:
        raise OSError(f"no source for {code.co_filename}")
    start = code.co_firstlineno - 1
    return inspect.getblock(lines[start:]), start + 1


def _find_def(module: cst.Module, name: str) -> cst.FunctionDef | None:
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None
