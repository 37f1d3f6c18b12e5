"""Pass 9, codegen: a generated ``def`` to source text, a module, and a live function.

Passes build expressions without caring about parentheses; `Parenthesize` puts back exactly
the ones Python's precedence rules require. `render_module` gives the complete module text
(docstring, imports of numpy and s2sgrad.runtime, ``__all__``, the function), and
`compile_module` compiles it, registers the text with `linecache` so tracebacks and pdb show
generated lines, and executes it in a namespace holding the user's captured constants.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
import s2sgrad.runtime as runtime

from .source import run_module
from .walk import _NameReader, read_names, rewrite_statement, visit

# Python's operator precedence, low to high.
_BINARY_PRECEDENCE = {
    cst.BitOr: 6,
    cst.BitXor: 7,
    cst.BitAnd: 8,
    cst.LeftShift: 9,
    cst.RightShift: 9,
    cst.Add: 10,
    cst.Subtract: 10,
    cst.Multiply: 11,
    cst.MatrixMultiply: 11,
    cst.Divide: 11,
    cst.FloorDivide: 11,
    cst.Modulo: 11,
    cst.Power: 13,
}
_UNARY = 12
_ATOM = 16


def _precedence(node: cst.BaseExpression) -> int:
    if isinstance(node, cst.BinaryOperation):
        return _BINARY_PRECEDENCE[type(node.operator)]
    if isinstance(node, cst.UnaryOperation):
        return 4 if isinstance(node.operator, cst.Not) else _UNARY
    if isinstance(node, cst.Comparison):
        return 5
    if isinstance(node, cst.BooleanOperation):
        return 3 if isinstance(node.operator, cst.And) else 2
    if isinstance(node, cst.IfExp):
        return 1
    if isinstance(node, (cst.Lambda, cst.NamedExpr)):
        return 0
    return _ATOM


_PARENTHESIZED = (
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.BooleanOperation,
    cst.IfExp,
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
)
_PARENS = {"lpar": (cst.LeftParen(),), "rpar": (cst.RightParen(),)}


def _wrap(node: cst.BaseExpression, needed: bool) -> cst.BaseExpression:
    if not isinstance(node, _PARENTHESIZED):
        return node
    return node.with_changes(**(_PARENS if needed else {"lpar": (), "rpar": ()}))


def _simple(node: cst.BaseExpression) -> bool:
    """Operands black writes ``**`` against without spaces: names, numbers, attribute chains."""
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, (cst.Name, cst.Integer, cst.Float))


def _spaced(operator: cst.BaseBinaryOp, hug: bool) -> cst.BaseBinaryOp:
    space = cst.SimpleWhitespace("" if hug else " ")
    return operator.with_changes(whitespace_before=space, whitespace_after=space)


def _binary(node: cst.BinaryOperation) -> cst.BinaryOperation:
    own = _BINARY_PRECEDENCE[type(node.operator)]
    left, right = node.left, node.right
    if own == 13:  # ** binds right to left and its right operand may be unary
        left_needs = _precedence(left) <= own
        right_needs = _precedence(right) < _UNARY
    else:
        left_needs = _precedence(left) < own
        right_needs = _precedence(right) <= own
    hug = own == 13 and not left_needs and _simple(left) and _simple(right)
    return node.with_changes(
        left=_wrap(left, left_needs),
        operator=_spaced(node.operator, hug=hug),
        right=_wrap(right, right_needs),
    )


def _unary(node: cst.UnaryOperation) -> cst.UnaryOperation:
    operand = node.expression
    return node.with_changes(expression=_wrap(operand, _precedence(operand) < _precedence(node)))


def _comparison(node: cst.Comparison) -> cst.Comparison:
    comparisons = tuple(
        c.with_changes(comparator=_wrap(c.comparator, _precedence(c.comparator) <= 5))
        for c in node.comparisons
    )
    return node.with_changes(
        left=_wrap(node.left, _precedence(node.left) <= 5), comparisons=comparisons
    )


def _attribute(node: cst.Attribute) -> cst.Attribute:
    value = node.value
    needs = _precedence(value) < _ATOM or isinstance(value, (cst.Integer, cst.Float))
    return node.with_changes(value=_wrap(value, needs))


def _call(node: cst.Call) -> cst.Call:
    args = tuple(a.with_changes(value=_wrap(a.value, False)) for a in node.args)
    return node.with_changes(func=_wrap(node.func, _precedence(node.func) < _ATOM), args=args)


def _subscript(node: cst.Subscript) -> cst.Subscript:
    elements = tuple(
        e.with_changes(slice=e.slice.with_changes(value=_wrap(e.slice.value, False)))
        if isinstance(e.slice, cst.Index)
        else e
        for e in node.slice
    )
    value = _wrap(node.value, _precedence(node.value) < _ATOM)
    return node.with_changes(value=value, slice=elements)


def _sequence(node: cst.Tuple | cst.List):
    return node.with_changes(
        elements=tuple(e.with_changes(value=_wrap(e.value, False)) for e in node.elements)
    )


_PARENTHESIZERS = {
    cst.BinaryOperation: _binary,
    cst.UnaryOperation: _unary,
    cst.Comparison: _comparison,
    cst.Attribute: _attribute,
    cst.Call: _call,
    cst.Subscript: _subscript,
    cst.Tuple: _sequence,
    cst.List: _sequence,
}


def parenthesize_node(node: cst.CSTNode) -> cst.CSTNode:
    """`node` with the parentheses of its children set by precedence (children done first)."""
    fix = _PARENTHESIZERS.get(type(node))
    return fix(node) if fix is not None else node


def parenthesize_statement(statement: cst.BaseSmallStatement) -> cst.BaseSmallStatement:
    """Parentheses of a whole small statement: none around its top-level expressions."""
    statement = rewrite_statement(statement, parenthesize_node)
    for field in ("value", "test"):
        value = getattr(statement, field, None)
        if isinstance(value, cst.BaseExpression):
            statement = statement.with_changes(**{field: _wrap(value, False)})
    return statement


class Parenthesize(cst.CSTTransformer):
    """Sets parentheses by precedence and spaces operators the way black does, in any tree
    (`render_module` uses the faster per-statement form)."""

    def on_leave(self, original, updated):
        if isinstance(updated, cst.BaseSmallStatement):
            return parenthesize_statement(updated)
        return updated


_RUNTIME_NAMES = frozenset(runtime.__all__) - {
    "registry",
    "Registry",
    "Rule",
    "rules",
    "qualified_name",
}


def runtime_names() -> frozenset[str]:
    """Helper names generated code may import from s2sgrad.runtime."""
    return _RUNTIME_NAMES


def render_module(funcdefs, docstring: str, constants: Mapping[str, object]) -> str:
    """The complete source of a module defining `funcdefs` (one ``def`` or a list)."""
    if isinstance(funcdefs, cst.FunctionDef):
        funcdefs = [funcdefs]
    rendered = [_parenthesized(funcdef) for funcdef in funcdefs]
    names: set[str] = set()
    for funcdef in rendered:
        for line in funcdef.body.body:
            if isinstance(line, cst.SimpleStatementLine):
                names.update(read_names(line.body[0], []))
            else:  # an if or a loop: everything its blocks read
                found: list[str] = []
                visit(line, _NameReader(found))
                names.update(found)
    header = [f'"""{docstring}"""', ""]
    if "math" in names:
        header.append("import math")
    header.append("import numpy as np")
    helpers = sorted(names & _RUNTIME_NAMES)
    if helpers:
        header.append(f"from s2sgrad.runtime import {', '.join(helpers)}")
    header.append("")
    used_constants = sorted(n for n in constants if n in names)
    # library functions and modules it reads (``from scipy.special import ndtr``) are imported,
    # so that the module runs on its own (sg.source, s2sgrad dump); other values are captured
    from s2sgrad.standalone import importing  # (no libcst there; it imports this lazily)

    text = "\n".join(cst.Module(body=(funcdef,)).code for funcdef in rendered)
    imports = {n: importing(constants[n], n, text) for n in used_constants}
    lines = sorted({line for text in imports.values() if text for line in text.splitlines()})
    if lines:
        header[header.index("import numpy as np") + 1 : 0] = lines
    captured = [n for n in used_constants if not imports[n]]
    if captured:
        listed = ", ".join(captured)
        header.append(f"# constants captured from the function's globals and closure: {listed}")
    entries = ", ".join(f'"{funcdef.name.value}"' for funcdef in rendered)
    header.append(f"__all__ = [{entries}]")
    header.extend(["", "", ""])
    body = "\n\n".join(cst.Module(body=(funcdef,)).code for funcdef in rendered)
    return "\n".join(header) + body


def _parenthesized(funcdef: cst.FunctionDef) -> cst.FunctionDef:
    return funcdef.with_changes(body=_parenthesized_block(funcdef.body))


def _parenthesized_block(node: cst.CSTNode) -> cst.CSTNode:
    """`Parenthesize` of a line or block, through the statements code is made of by hand
    (libcst's transformer rebuilds every expression node on the way)."""
    kind = type(node)
    if kind is cst.SimpleStatementLine:
        return node.with_changes(body=tuple(parenthesize_statement(s) for s in node.body))
    if kind in (cst.IndentedBlock, cst.Else):
        body = node.body
        if kind is cst.IndentedBlock:
            return node.with_changes(body=tuple(_parenthesized_block(line) for line in body))
        return node.with_changes(body=_parenthesized_block(body))
    if kind in (cst.If, cst.For, cst.While):
        orelse = node.orelse
        return node.with_changes(
            body=_parenthesized_block(node.body),
            orelse=None if orelse is None else _parenthesized_block(orelse),
        )
    return node.visit(Parenthesize())


def compile_functions(source: str, entries: list[str], constants: Mapping[str, object]) -> list:
    """Compile and run the module text; return the functions named `entries`."""
    first = compile_module(source, entries[0], constants)
    return [first] + [first.__globals__[name] for name in entries[1:]]


def compile_module(source: str, entry: str, constants: Mapping[str, object]):
    """Compile and run the module text; return its entry function (see `source.run_module`)."""
    return run_module(source, [entry], constants)[0]
