"""Fast walks over the expression nodes generated code is made of.

libcst's visitor machinery costs microseconds per node, and the optimizer asks "which names
does this line read?" and "substitute these names" hundreds of times per transform. These
functions recurse directly through the node types normal-form and generated code use and fall
back to libcst's visitors for anything else, so they give the same answers, faster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import libcst as cst

_LEAVES = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.Ellipsis)


def read_names(node: cst.CSTNode, out: list[str]) -> list[str]:
    """Append to `out` every name `node` reads (not attribute or keyword names)."""
    kind = type(node)
    if kind is cst.Name:
        out.append(node.value)
    elif kind in _LEAVES:
        pass
    elif kind is cst.BinaryOperation:
        read_names(node.left, out)
        read_names(node.right, out)
    elif kind is cst.UnaryOperation:
        read_names(node.expression, out)
    elif kind is cst.Attribute:
        read_names(node.value, out)
    elif kind is cst.Call:
        read_names(node.func, out)
        for arg in node.args:
            read_names(arg.value, out)
    elif kind is cst.Subscript:
        read_names(node.value, out)
        for element in node.slice:
            inner = element.slice
            if type(inner) is cst.Index:
                read_names(inner.value, out)
            else:
                for bound in (inner.lower, inner.upper, inner.step):
                    if bound is not None:
                        read_names(bound, out)
    elif kind in (cst.Tuple, cst.List):
        for element in node.elements:
            read_names(element.value, out)
    elif kind is cst.Comparison:
        read_names(node.left, out)
        for target in node.comparisons:
            read_names(target.comparator, out)
    else:
        node.visit(_NameReader(out))
    return out


def nesting_depth(node: cst.CSTNode, limit: int) -> int:
    """How deeply `node`'s expression nodes nest, counted without recursion up to `limit`
    (a larger depth gives ``limit + 1``): passes that build expressions keep them under it,
    since code generation and the walks here recurse once per level."""
    deepest = 0
    stack = [(node, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > limit:
            return limit + 1
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in _children(current))
    return deepest


def _children(node: cst.CSTNode) -> tuple:
    kind = type(node)
    if kind is cst.BinaryOperation:
        return (node.left, node.right)
    if kind is cst.UnaryOperation:
        return (node.expression,)
    if kind is cst.Attribute:
        return (node.value,)
    if kind is cst.Call:
        return (node.func, *(arg.value for arg in node.args))
    if kind is cst.Subscript:
        return (node.value,)
    if kind in (cst.Tuple, cst.List):
        return tuple(element.value for element in node.elements)
    if kind is cst.Comparison:
        return (node.left, *(target.comparator for target in node.comparisons))
    return ()


class _NameReader(cst.CSTVisitor):
    """The general case of `read_names`, for node types it does not walk itself."""

    def __init__(self, out: list[str]):
        self.out = out

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> bool:
        self.out.append(node.value)
        return False


def rewrite(node: cst.BaseExpression, leave: Callable[[cst.CSTNode], cst.CSTNode]):
    """Rebuild `node` bottom-up, calling `leave` on every expression node after its children."""
    kind = type(node)
    if kind is cst.Name or kind in _LEAVES:
        return leave(node)
    if kind is cst.BinaryOperation:
        left, right = rewrite(node.left, leave), rewrite(node.right, leave)
        if left is not node.left or right is not node.right:
            node = node.with_changes(left=left, right=right)
        return leave(node)
    if kind is cst.UnaryOperation:
        inner = rewrite(node.expression, leave)
        if inner is not node.expression:
            node = node.with_changes(expression=inner)
        return leave(node)
    if kind is cst.Attribute:
        value = rewrite(node.value, leave)
        if value is not node.value:
            node = node.with_changes(value=value)
        return leave(node)
    if kind is cst.Call:
        func = rewrite(node.func, leave)
        args = tuple(_rewrite_arg(arg, leave) for arg in node.args)
        if func is not node.func or any(a is not b for a, b in zip(args, node.args, strict=True)):
            node = node.with_changes(func=func, args=args)
        return leave(node)
    if kind in (cst.Tuple, cst.List):
        elements = tuple(
            e.with_changes(value=v) if (v := rewrite(e.value, leave)) is not e.value else e
            for e in node.elements
        )
        if any(a is not b for a, b in zip(elements, node.elements, strict=True)):
            node = node.with_changes(elements=elements)
        return leave(node)
    return node.visit(_Leave(leave))


def _rewrite_arg(arg: cst.Arg, leave) -> cst.Arg:
    value = rewrite(arg.value, leave)
    return arg if value is arg.value else arg.with_changes(value=value)


class _Leave(cst.CSTTransformer):
    """The general case of `rewrite`, for node types it does not walk itself."""

    def __init__(self, leave):
        self.leave = leave

    def on_leave(self, original, updated):
        # attribute names and keyword names are not references: put them back
        if isinstance(updated, cst.Attribute):
            updated = updated.with_changes(attr=original.attr)
        elif isinstance(updated, cst.Arg):
            return updated.with_changes(keyword=original.keyword)
        if isinstance(updated, cst.BaseExpression):
            return self.leave(updated)
        return updated


def renamed(node: cst.CSTNode, mapping: Mapping[str, str]) -> cst.CSTNode:
    """`node` (any statement, compound ones too) with every name in `mapping` renamed, the
    names it assigns included: the same code over other names."""

    def leave(n):
        if type(n) is cst.Name and n.value in mapping:
            return cst.Name(mapping[n.value])
        return n

    return node.visit(_Leave(leave))


def substitute_names(node, mapping: Mapping[str, cst.BaseExpression]):
    """`node` (an expression or a small statement) with the names in `mapping` replaced;
    names being assigned are left alone."""

    def leave(n):
        if type(n) is cst.Name:
            return mapping.get(n.value, n)
        return n

    if isinstance(node, cst.BaseSmallStatement):
        return rewrite_statement(node, leave)
    return rewrite(node, leave)


def rewrite_statement(statement, leave):
    """Apply `rewrite` to the expressions of a small statement (targets' values included)."""
    kind = type(statement)
    if kind is cst.Assign:
        value = rewrite(statement.value, leave)
        targets = tuple(
            t.with_changes(target=rewrite(t.target, leave)) if type(t.target) is not cst.Name else t
            for t in statement.targets
        )
        return statement.with_changes(value=value, targets=targets)
    if kind is cst.AugAssign:
        target = statement.target
        if type(target) is not cst.Name:
            target = rewrite(target, leave)
        return statement.with_changes(target=target, value=rewrite(statement.value, leave))
    if kind is cst.Return:
        if statement.value is None:
            return statement
        return statement.with_changes(value=rewrite(statement.value, leave))
    if kind is cst.Expr:
        return statement.with_changes(value=rewrite(statement.value, leave))
    return statement.visit(_Leave(leave))


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """``np.linalg.inv`` for that attribute chain; None for anything but names and attributes."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        base = dotted_name(expr.value)
        return None if base is None else f"{base}.{expr.attr.value}"
    return None
