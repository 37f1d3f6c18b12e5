"""Pass 1, parse: a Python function object to a libcst tree with the user's positions.

Output: a `ParsedFunction` whose ``funcdef`` is the function's own definition (decorators
removed) with every block indented: a one-line compound statement (``if c: y = 2 * x``,
``for i in r: a; b``) gets an indented block holding the same statements, so later passes
read every block as ``block.body`` of statement lines. `position`/`error` map any node of that
tree (rebuilt nodes through the originals they replace) back to the user's file, line and
column. Later passes build new trees; they carry the original line in comments and keep
references to original nodes when they need to report an error.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
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
        rebuilt: each node of `funcdef` that replaces a node of `module` (the blocks made
            indented, and their parents), mapped to the node it replaces.
        tree: the snippet as parsed by Python's `ast` (cheap questions about the whole
            function, such as whether anything in it may change a value in place).
        managers: the context managers of the ``with`` statements whose bodies `funcdef`
            holds in their place (``with np.errstate(...):``, see `_IndentBlocks`); `resolve`
            checks that each is one that carries no derivative.
    """

    funcdef: cst.FunctionDef
    filename: str
    first_line: int
    indent: int
    lines: tuple[str, ...]
    module: cst.Module
    original_def: cst.FunctionDef
    statement_lines: Mapping[cst.CSTNode, int]
    rebuilt: Mapping[cst.CSTNode, cst.CSTNode] = dataclasses.field(default_factory=dict)
    tree: ast.Module | None = None
    managers: tuple[cst.Call, ...] = ()

    @functools.cached_property
    def positions(self) -> Mapping[cst.CSTNode, CodeRange]:
        wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
        positions = dict(wrapper.resolve(PositionProvider))
        for new, old in self.rebuilt.items():
            if old in positions:
                positions[new] = positions[old]
        positions[self.funcdef] = positions[self.original_def]
        return positions

    def statement_line(self, statement: cst.CSTNode) -> int:
        """The file line where a top-level statement of the body starts."""
        line = self.statement_lines.get(statement)
        return line if line is not None else self.position(statement)[0]

    def locates(self, statement: cst.CSTNode) -> bool:
        """Whether `statement` is the user's (one normal form builds, such as the loop of a
        comprehension, has no line of its own: it belongs to the line that holds it)."""
        return statement in self.statement_lines or statement in self.positions

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
    if name == "<lambda>":
        from .lambdas import parse_lambda  # (it builds a ParsedFunction)

        return parse_lambda(code)
    try:
        lines, first_line = source_lines(code)
    except (OSError, TypeError) as exc:
        raise TypeError(
            f"cannot read the source of {name!r} (defined in {code.co_filename}): s2sgrad "
            f"needs the function's source, so define it in a .py file rather than with exec() "
            f"or at an interactive prompt"
        ) from exc
    filename = code.co_filename
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    dedented = _dedent(lines, lines[0][:indent] if lines else "")
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
    tree = ast.parse(dedented)
    stripped = funcdef.with_changes(decorators=(), params=_own_parameters(funcdef.params, code))
    indenter = _IndentBlocks()
    try:
        if _needs_rewriting(tree, dedented.splitlines()):
            stripped = stripped.visit(indenter)
    except _TooDeep:
        line, col = _deepest(tree)
        raise TransformError(
            f"this expression is nested more than {_MAX_DEPTH} levels deep, which s2sgrad does "
            f"not support: split it with intermediate variables",
            filename,
            first_line + line - 1,
            col + indent,
        ) from None
    return ParsedFunction(
        funcdef=stripped,
        filename=filename,
        first_line=first_line,
        indent=indent,
        lines=tuple(dedented.splitlines()),
        module=module,
        original_def=funcdef,
        statement_lines=_statement_lines(stripped, tree, first_line),
        rebuilt=indenter.rebuilt,
        tree=tree,
        managers=tuple(indenter.managers),
    )


def _own_parameters(params: cst.Parameters, code: types.CodeType) -> cst.Parameters:
    """The definition's parameters that are parameters of `code`: a method bound to its
    instance (`transforms/bound.py`) is its definition compiled again with ``self`` a closure
    variable, so its source names a parameter its code does not have."""
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    own = set(code.co_varnames[:count])
    listed = (*params.posonly_params, *params.params, *params.kwonly_params)
    if all(p.name.value in own for p in listed):
        return params
    kwonly = tuple(p for p in params.kwonly_params if p.name.value in own)
    star = params.star_arg
    if not kwonly and isinstance(star, cst.ParamStar):  # ``*, k`` with k fixed: no bare ``*``
        star = cst.MaybeSentinel.DEFAULT
    return params.with_changes(
        posonly_params=tuple(p for p in params.posonly_params if p.name.value in own),
        params=tuple(p for p in params.params if p.name.value in own),
        kwonly_params=kwonly,
        star_arg=star,
    )


def _dedent(lines: list[str], margin: str) -> str:
    """The definition's lines without the first line's indentation `margin`. Unlike
    `textwrap.dedent` this leaves alone a line that lacks the margin (a comment at column 0
    inside an indented method, the inside of a multi-line string), rather than keeping
    every line's indentation because of it."""
    if not margin:
        return "".join(lines)
    return "".join(line[len(margin) :] if line.startswith(margin) else line for line in lines)


# Deeper trees than this exhaust Python's recursion limit in the passes (libcst's visitors
# and the normalizer recurse); long chains of one operator are rebalanced to stay under it.
_MAX_DEPTH = 150
_LONG_CHAIN = 64  # chains up to this many operands are kept exactly as written

# operators a long chain of which may be regrouped: (a + b) + c is a + (b + c), a - b - c is
# a - (b + c) (the second operator of each pair is the first's inverse, or None)
_REGROUPABLE = {
    cst.Add: (cst.Add, cst.Subtract),
    cst.Subtract: (cst.Add, cst.Subtract),
    cst.Multiply: (cst.Multiply, None),
    cst.BitAnd: (cst.BitAnd, None),
    cst.BitOr: (cst.BitOr, None),
    cst.BitXor: (cst.BitXor, None),
    cst.And: (cst.And, None),
    cst.Or: (cst.Or, None),
}


class _TooDeep(Exception):
    pass


class _IndentBlocks(cst.CSTTransformer):
    """Every ``SimpleStatementSuite`` (``if c: a; b``) as an indented block of one statement
    line holding the same small statements (the same node objects, so their positions and
    the messages that use them stay the user's); every chain of more than `_LONG_CHAIN`
    operands of one operator (``x + x + ... + x``) regrouped as a balanced tree, its operands
    in the same order, so that no pass recurses a thousand levels deep. `rebuilt` maps each
    new node to its original. Raises `_TooDeep` past `_MAX_DEPTH` nested nodes."""

    def __init__(self) -> None:
        self.rebuilt: dict[cst.CSTNode, cst.CSTNode] = {}
        self.depth = 0
        self.managers: list[cst.Call] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if _chain(node) is not None:
            return False  # rebuilt whole in on_leave, its operands visited there
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _TooDeep
        return super().on_visit(node)

    def leave_With(self, original, updated):
        """``with np.errstate(...): body`` as the statements of its body (a context manager
        that carries no derivative changes nothing the derivative computes; `resolve` checks
        which it is). A ``with`` binding a name (``as``) stays, for `fence` to refuse."""
        if isinstance(updated.asynchronous, cst.Asynchronous) or not all(
            isinstance(item.item, cst.Call) and item.asname is None for item in updated.items
        ):
            return updated
        self.managers.extend(item.item for item in updated.items)
        body = updated.body
        if isinstance(body, cst.SimpleStatementSuite):
            line = cst.SimpleStatementLine(body=body.body)
            self.rebuilt[line] = original
            return line
        first, *rest = body.body
        first = first.with_changes(leading_lines=(*original.leading_lines, *first.leading_lines))
        self.rebuilt.setdefault(first, body.body[0])
        return cst.FlattenSentinel((first, *rest))

    def leave_SimpleStatementSuite(self, original, updated):
        line = cst.SimpleStatementLine(
            body=updated.body, trailing_whitespace=updated.trailing_whitespace
        )
        block = cst.IndentedBlock(body=(line,))
        self.rebuilt[line] = original
        self.rebuilt[block] = original
        return block

    def on_leave(self, original, updated):
        chain = _chain(original)
        if chain is not None:
            operands = [(operator, operand.visit(self)) for operator, operand in chain]
            updated = _balanced(operands).with_changes(lpar=original.lpar, rpar=original.rpar)
        else:
            self.depth -= 1
            updated = super().on_leave(original, updated)
        if isinstance(updated, cst.CSTNode) and updated is not original:
            self.rebuilt.setdefault(updated, original)
        return updated


def _chain(node: cst.CSTNode) -> list | None:
    """The operands of a long left-nested chain of regroupable operators, each with the
    operator before it (None for the first), read without recursion; None for other nodes."""
    if not isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
        return None
    group = _REGROUPABLE.get(type(node.operator))
    if group is None:
        return None
    operands = []
    while (
        isinstance(node, (cst.BinaryOperation, cst.BooleanOperation))
        and type(node.operator) in group
    ):
        operands.append((node.operator, node.right))
        node = node.left
        if node.lpar:  # (a + b) + c written with parentheses: a + b is one operand
            break
    if len(operands) < _LONG_CHAIN:
        return None
    operands.append((None, node))
    operands.reverse()
    return operands


def _balanced(operands: list) -> cst.BaseExpression:
    """``a op b op c ...`` for [(None, a), (op, b), ...] as a tree of depth log2(n); a right
    half after an inverse operator (``-``) has its operators inverted (a - b - c is
    a - (b + c))."""
    if len(operands) == 1:
        return operands[0][1]
    half = len(operands) // 2
    left = _balanced(operands[:half])
    joining = operands[half][0]
    rest = [(None, operands[half][1]), *operands[half + 1 :]]
    base, inverse = _REGROUPABLE[type(joining)]
    if inverse is not None and isinstance(joining, inverse):
        rest = [(None, rest[0][1])] + [(_invert(op, base, inverse), e) for op, e in rest[1:]]
    right = _balanced(rest).with_changes(lpar=(cst.LeftParen(),), rpar=(cst.RightParen(),))
    if isinstance(joining, (cst.And, cst.Or)):
        return cst.BooleanOperation(left, joining, right)
    return cst.BinaryOperation(left, joining, right)


def _invert(op, base, inverse):
    return inverse() if isinstance(op, base) else base()


def _needs_rewriting(tree: ast.Module, lines: list[str]) -> bool:
    """Whether `_IndentBlocks` has work to do, read from Python's own (fast) tree: a
    statement that does not start its line (``if c: y = x``), or nesting deep enough for a
    long chain to regroup or a limit to check."""
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > _LONG_CHAIN // 2:
            return True
        if isinstance(node, ast.stmt) and lines[node.lineno - 1][: node.col_offset].strip():
            return True
        if isinstance(node, ast.With):  # (its body takes its place)
            return True
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return False


def _deepest(tree: ast.AST) -> tuple[int, int]:
    """(line, column) of the most deeply nested expression of `tree`, found without
    recursion."""
    best, where = -1, (1, 0)
    stack = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > best and isinstance(node, ast.expr):
            best, where = depth, (node.lineno, node.col_offset)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return where


def _statement_lines(funcdef: cst.FunctionDef, tree: ast.Module, first_line: int) -> dict:
    """File line of each top-level body statement, read from Python's own (fast) parser."""
    node = next(
        (n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None
    )
    if node is None:
        return {}
    lines: dict[cst.CSTNode, int] = {}
    statements = iter(_without_with(node.body))
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


def _without_with(statements: list[ast.stmt]) -> list[ast.stmt]:
    """`statements` with each ``with`` that `_IndentBlocks` replaces by its body so replaced."""
    flat: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, ast.With) and all(
            isinstance(item.context_expr, ast.Call) and item.optional_vars is None
            for item in statement.items
        ):
            flat.extend(_without_with(statement.body))
        else:
            flat.append(statement)
    return flat


def _find_def(module: cst.Module, name: str) -> cst.FunctionDef | None:
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return statement
    return None
