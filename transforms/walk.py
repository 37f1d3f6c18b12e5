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
    elif kind is cst.Index:
        read_names(node.value, out)
    elif kind is cst.Slice:
        for bound in (node.lower, node.upper, node.step):
            if bound is not None:
                read_names(bound, out)
    elif kind is cst.Assign:  # (every name, as the visitor: the targets' too)
        for target in node.targets:
            read_names(target.target, out)
        read_names(node.value, out)
    elif kind is cst.AugAssign:
        read_names(node.target, out)
        read_names(node.value, out)
    elif kind in (cst.Return, cst.Expr):
        if node.value is not None:
            read_names(node.value, out)
    else:
        visit(node, _NameReader(out))
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


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for a visitor, without rebuilding the tree.

    libcst's `visit` rebuilds (and validates) every node it passes, for transformers' sake, and
    the analyses' walks spent a third of a transform's time there. This one calls the
    visitor's own ``on_visit``/``on_leave`` as libcst does, finds the children of the node
    types code is made of in `_CHILDREN` (without trivia: whitespace, commas, parentheses,
    comments), and asks libcst for the children of any other. A transformer is handed to
    libcst."""
    if not isinstance(visitor, cst.CSTVisitor):
        node.visit(visitor)
        return
    if visitor.on_visit(node):
        children = _CHILDREN.get(type(node))
        for child in children(node) if children is not None else node.children:
            visit(child, visitor)
    visitor.on_leave(node)


def _present(*nodes) -> tuple:
    return tuple(node for node in nodes if node is not None)


_CHILDREN: dict[type, Callable[[cst.CSTNode], tuple]] = {
    cst.Name: lambda n: (),
    **{kind: (lambda n: ()) for kind in _LEAVES},
    cst.Attribute: lambda n: (n.value, n.attr),
    cst.Call: lambda n: (n.func, *n.args),
    cst.Arg: lambda n: _present(n.keyword, n.value),
    cst.BinaryOperation: lambda n: (n.left, n.operator, n.right),
    cst.BooleanOperation: lambda n: (n.left, n.operator, n.right),
    cst.UnaryOperation: lambda n: (n.operator, n.expression),
    cst.Comparison: lambda n: (n.left, *n.comparisons),
    cst.ComparisonTarget: lambda n: (n.operator, n.comparator),
    cst.Subscript: lambda n: (n.value, *n.slice),
    cst.SubscriptElement: lambda n: (n.slice,),
    cst.Index: lambda n: (n.value,),
    cst.Slice: lambda n: _present(n.lower, n.upper, n.step),
    cst.Tuple: lambda n: n.elements,
    cst.List: lambda n: n.elements,
    cst.Set: lambda n: n.elements,
    cst.Element: lambda n: (n.value,),
    cst.StarredElement: lambda n: (n.value,),
    cst.Dict: lambda n: n.elements,
    cst.DictElement: lambda n: (n.key, n.value),
    cst.StarredDictElement: lambda n: (n.value,),
    cst.IfExp: lambda n: (n.body, n.test, n.orelse),
    cst.SimpleStatementLine: lambda n: n.body,
    cst.Assign: lambda n: (*n.targets, n.value),
    cst.AssignTarget: lambda n: (n.target,),
    cst.AugAssign: lambda n: (n.target, n.operator, n.value),
    cst.Return: lambda n: _present(n.value),
    cst.Expr: lambda n: (n.value,),
    cst.Assert: lambda n: _present(n.test, n.msg),
    cst.Pass: lambda n: (),
    cst.Break: lambda n: (),
    cst.Continue: lambda n: (),
    cst.IndentedBlock: lambda n: n.body,
    cst.If: lambda n: _present(n.test, n.body, n.orelse),
    cst.Else: lambda n: (n.body,),
    cst.For: lambda n: _present(n.asynchronous, n.target, n.iter, n.body, n.orelse),
    cst.While: lambda n: _present(n.test, n.body, n.orelse),
}


def _operators(base: type):
    for kind in base.__subclasses__():
        yield kind
        yield from _operators(kind)


for _base in (cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseUnaryOp, cst.BaseCompOp, cst.BaseAugOp):
    _CHILDREN.update({kind: (lambda n: ()) for kind in _operators(_base)})


class _NameReader(cst.CSTVisitor):
    """The general case of `read_names`, for node types it does not walk itself."""

    def __init__(self, out: list[str]):
        self.out = out

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        visit(node.value, self)
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
    if kind is cst.Subscript:
        value = rewrite(node.value, leave)
        elements = tuple(_rewrite_element(e, leave) for e in node.slice)
        if value is not node.value or any(
            a is not b for a, b in zip(elements, node.slice, strict=True)
        ):
            node = node.with_changes(value=value, slice=elements)
        return leave(node)
    if kind is cst.Comparison:
        left = rewrite(node.left, leave)
        targets = tuple(
            t.with_changes(comparator=c)
            if (c := rewrite(t.comparator, leave)) is not t.comparator
            else t
            for t in node.comparisons
        )
        if left is not node.left or any(
            a is not b for a, b in zip(targets, node.comparisons, strict=True)
        ):
            node = node.with_changes(left=left, comparisons=targets)
        return leave(node)
    if kind in (cst.IfExp, cst.BooleanOperation):
        fields = ("body", "test", "orelse") if kind is cst.IfExp else ("left", "right")
        changed = {}
        for field in fields:
            part = getattr(node, field)
            if (new := rewrite(part, leave)) is not part:
                changed[field] = new
        return leave(node.with_changes(**changed) if changed else node)
    return node.visit(_Leave(leave))


def _rewrite_element(element: cst.SubscriptElement, leave) -> cst.SubscriptElement:
    inner = element.slice
    if type(inner) is cst.Index:
        value = rewrite(inner.value, leave)
        if value is inner.value:
            return element
        return element.with_changes(slice=inner.with_changes(value=value))
    if type(inner) is not cst.Slice:
        return element.visit(_Leave(leave))
    bounds = {}
    for field in ("lower", "upper", "step"):
        bound = getattr(inner, field)
        if bound is not None and (new := rewrite(bound, leave)) is not bound:
            bounds[field] = new
    return element.with_changes(slice=inner.with_changes(**bounds)) if bounds else element


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
