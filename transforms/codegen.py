"""Pass 9, codegen: a generated ``def`` to source text, a module, and a live function.

Passes build expressions without caring about parentheses; `Parenthesize` puts back exactly
the ones Python's precedence rules require. `render_module` gives the complete module text
(docstring, imports of numpy and s2sgrad.runtime, ``__all__``, the function), and
`compile_module` compiles it, registers the text with `linecache` so tracebacks and pdb show
generated lines, and executes it in a namespace holding the user's captured constants.
"""

from __future__ import annotations

import itertools
import linecache
from collections.abc import Mapping

import libcst as cst
import s2sgrad.runtime as runtime

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


class Parenthesize(cst.CSTTransformer):
    """Rewrites parentheses so that there are exactly those precedence requires, and spaces
    operators the way black does."""

    def leave_BinaryOperation(self, original, updated):
        own = _BINARY_PRECEDENCE[type(updated.operator)]
        left, right = updated.left, updated.right
        if own == 13:  # ** binds right to left and its right operand may be unary
            left_needs = _precedence(left) <= own
            right_needs = _precedence(right) < _UNARY
        else:
            left_needs = _precedence(left) < own
            right_needs = _precedence(right) <= own
        hug = own == 13 and not left_needs and _simple(left) and _simple(right)
        operator = _spaced(updated.operator, hug=hug)
        return updated.with_changes(
            left=_wrap(left, left_needs), operator=operator, right=_wrap(right, right_needs)
        )

    def leave_UnaryOperation(self, original, updated):
        own = _precedence(updated)
        operand = updated.expression
        return updated.with_changes(expression=_wrap(operand, _precedence(operand) < own))

    def leave_Comparison(self, original, updated):
        left = _wrap(updated.left, _precedence(updated.left) <= 5)
        comparisons = tuple(
            c.with_changes(comparator=_wrap(c.comparator, _precedence(c.comparator) <= 5))
            for c in updated.comparisons
        )
        return updated.with_changes(left=left, comparisons=comparisons)

    def leave_Attribute(self, original, updated):
        value = updated.value
        needs = _precedence(value) < _ATOM or isinstance(value, (cst.Integer, cst.Float))
        return updated.with_changes(value=_wrap(value, needs))

    def leave_Call(self, original, updated):
        return updated.with_changes(func=_wrap(updated.func, _precedence(updated.func) < _ATOM))

    def leave_Subscript(self, original, updated):
        return updated.with_changes(value=_wrap(updated.value, _precedence(updated.value) < _ATOM))

    # positions where no parentheses are ever needed
    def leave_Arg(self, original, updated):
        return updated.with_changes(value=_wrap(updated.value, False))

    def leave_Assign(self, original, updated):
        return updated.with_changes(value=_wrap(updated.value, False))

    def leave_AugAssign(self, original, updated):
        return updated.with_changes(value=_wrap(updated.value, False))

    def leave_Return(self, original, updated):
        if updated.value is None:
            return updated
        return updated.with_changes(value=_wrap(updated.value, False))

    def leave_Element(self, original, updated):
        return updated.with_changes(value=_wrap(updated.value, False))

    def leave_Index(self, original, updated):
        return updated.with_changes(value=_wrap(updated.value, False))


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


class _Referenced(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def render_module(funcdef: cst.FunctionDef, docstring: str, constants: Mapping[str, object]) -> str:
    """The complete source of a module defining `funcdef`."""
    funcdef = funcdef.visit(Parenthesize())
    referenced = _Referenced()
    funcdef.body.visit(referenced)
    names = referenced.names
    header = [f'"""{docstring}"""', ""]
    if "math" in names:
        header.append("import math")
    header.append("import numpy as np")
    helpers = sorted(names & _RUNTIME_NAMES)
    if helpers:
        header.append(f"from s2sgrad.runtime import {', '.join(helpers)}")
    header.append("")
    used_constants = sorted(n for n in constants if n in names)
    if used_constants:
        names = ", ".join(used_constants)
        header.append(f"# constants captured from the function's globals and closure: {names}")
    header.append(f'__all__ = ["{funcdef.name.value}"]')
    header.extend(["", "", ""])
    body = cst.Module(body=(funcdef,)).code
    return "\n".join(header) + body


_counter = itertools.count(1)


def compile_module(source: str, entry: str, constants: Mapping[str, object]):
    """Compile and run the module text; return its entry function."""
    filename = f"<s2sgrad {entry} #{next(_counter)}>"
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict[str, object] = {"__name__": f"s2sgrad.generated.{entry}", **constants}
    exec(code, namespace)
    function = namespace[entry]
    function.__s2sgrad_source__ = source
    return function
