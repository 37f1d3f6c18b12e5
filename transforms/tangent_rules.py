"""The tangent of one primitive call: which forward rule applies, instantiated at a call site.

In order of preference (see ``runtime/rules/forward.py``):

1. a written forward template (``registry.jvp``), ``(tangents, ans, *params)``;
2. for a linear primitive in a batched sweep, its batched template, or else the primitive
   mapped over the directions (`map_examples`);
3. for a linear primitive, the call itself with one argument replaced by its tangent,
   summed over the arguments that have one (``np.sum(tx, axis=0)``, ``tA @ B + A @ tB``);
4. for an elementwise primitive, its reverse template with ``g`` replaced by the argument's
   tangent (a diagonal map is its own transpose): ``tx * np.cos(x)``.
"""

from __future__ import annotations

import builtins
import operator

import libcst as cst

from .adjoints import call, index_value
from .anf import name_expr
from .errors import TransformError
from .operations import Operation, names_in
from .sequences import LIST_OPERATORS, lists_read_as_arrays
from .templates import instantiate, load_template, takes_one_array
from .walk import read_names

# operators that have no meaning for Python lists: a list operand of one is an array
_ARRAY_OPERATORS = (operator.sub, operator.truediv, operator.pow, operator.matmul, operator.mod)


class TangentContext:
    """What instantiating forward rules needs: the namer, the shapes, batched or not."""

    def __init__(self, namer, shapes, batched: bool):
        self.namer = namer
        self.shapes = shapes
        self.batched = batched
        self.nf = None
        # the number of directions of a batched sweep (``_batch``, or a fresh variant of it
        # when the function has a local of that name)
        self.batch = namer.fresh("_batch") if batched else None

    def as_array(self, op, arg, tangent, position=None, keyword=None):
        """`tangent` of `arg`, made one array when `arg` is a list local that the primitive of
        `op` reads as one array (``np.var(w)``): ``np.asarray`` of the list of tangents, or
        in a batched sweep `batch_array` (the directions first, not second); both leave an
        array as it is, so a value that only may be a list (a callee's parameter, an item of
        a list: `ShapeTokens.maybe_sequences`) gets them too. Under ``+`` and
        ``*`` a list is one array, or is joined or repeated, by the other operand's type
        (``L + x``, ``L + M``, ``L * 2``): where the result may be a list, `operand_tangent`
        decides at run time from the result, and pads a joined list's tangent with zeros for
        an operand that has none."""
        primitive = op.rule.primitive
        maybe = self.shapes.maybe_sequences
        operands = primitive in LIST_OPERATORS and len(op.args) == 2
        if operands and op.targets[0] in maybe:
            return self._operand_tangent(op, arg, tangent)
        if not (isinstance(arg, cst.Name) and arg.value in maybe):
            return tangent
        # (lists have no ``w - v``; ``L + x`` that is no list is NumPy's sum)
        operator_ = operands or primitive in _ARRAY_OPERATORS
        if not (operator_ or takes_one_array(primitive, position, keyword)):
            return tangent
        if self.batched:
            return call("batch_array", tangent)
        return call(
            "np.asarray" if arg.value in self.shapes.sequences else "list_as_array", tangent
        )

    def _operand_tangent(self, op, arg, tangent):
        sequences = self.shapes.maybe_sequences
        if not any(isinstance(a, cst.Name) and a.value in sequences for a in op.args):
            return tangent
        args = [cst.Arg(a) for a in (tangent, arg, cst.Name(op.targets[0]))]
        if self.batched:
            args.append(cst.Arg(cst.Name("True")))
        at = next((k for k, a in enumerate(op.args) if a is arg), None)
        if at is None:
            at = next(k for k, a in enumerate(op.args) if a.deep_equals(arg))
        if op.rule.primitive is operator.add and self.of(op.args[1 - at]) is None:
            args.append(cst.Arg(cst.Integer(str(at)), keyword=cst.Name("joined_at")))
        return cst.Call(func=cst.Name("operand_tangent"), args=tuple(args))

    def of(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        raise NotImplementedError

    def zero(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        """The zero tangent of the value `expr`."""
        if not self.batched and self.shapes.is_scalar(expr):
            return cst.Float("0.0")
        if self.batched:
            return call("zero_tangent", expr, cst.Name(self.batch))
        return call("zero_tangent", expr)

    def index(self, source: cst.BaseExpression, index) -> cst.BaseExpression:
        """``source[index]`` for a tangent `source` (behind the batch axis when batched)."""
        if self.batched:
            return call("batch_index", source, index_value(index))
        return cst.Subscript(source, index)


def tangent_of_call(op: Operation, statement: cst.Assign, ctx: TangentContext):
    """Statements and one tangent expression per target (None: no tangent) of `op`."""
    rule = op.rule
    ans: cst.BaseExpression = cst.Name(op.targets[0])
    if len(op.targets) > 1:
        if rule.output is None:  # one array unpacked: its tangent is not the first name's
            raise _unpacked(op, ctx)  # (refused as the reverse pass refuses it)
        ans = cst.Tuple(tuple(cst.Element(cst.Name(t)) for t in op.targets))
    statements: list = []
    if rule.linear is not None and not _active_positions(op, ctx):
        tangent = None  # only arguments read for their shape vary
    elif rule.jvp is not None:
        tangent = _written(rule.jvp, op, ans, ctx, statements)
    elif rule.primitive is builtins.sum:
        tangent = _sum_tangent(op, ans, ctx)
    elif rule.linear is not None and ctx.batched:
        _refuse_what_reverse_mode_refuses(op, ctx)
        tangent = _batched_linear(op, ans, ctx, statements)
    elif rule.linear is not None:
        _refuse_what_reverse_mode_refuses(op, ctx)
        tangent = _linear(op, statement.value, ctx)
    else:
        tangent = elementwise_tangent(op, ans, ctx, statements)
    results = [None] * len(op.targets)
    results[rule.output or 0] = tangent
    return statements, results


def _unpacked(op: Operation, ctx: TangentContext) -> TransformError:
    message = f"cannot differentiate through the unpacked result of {op.name}"
    origin = ctx.nf.origins.get(op.targets[0]) if ctx.nf is not None else None
    if origin is None:
        return TransformError(message, "<unknown>", 1, 0)
    return TransformError(message, origin.filename, origin.line, origin.col, origin.text)


def _sum_tangent(op: Operation, ans, ctx: TangentContext) -> cst.BaseExpression:
    """The tangent of ``sum(items[, start])``, linear in the items and the start jointly
    (not in each apart, as ``@`` is): the sum of their tangents. In a batched sweep,
    `batch_sum` lifts each item's tangent to the result's rank behind the axis of directions
    before adding (the tangent of a number among vectors has one axis, a vector's two: added
    as they are, they broadcast the wrong way), from the start's tangent or the result's
    batched zero (a sum of no items is the number 0, which has no axis of directions)."""
    arguments = _arguments(op)
    active = _active_positions(op, ctx)
    items, start = arguments[0], arguments.get(1)
    tangents = _tangent_or_sequence(items, ctx) if 0 in active else cst.Name("None")
    if ctx.batched:
        first = ctx.zero(ans)
        if 1 in active:
            first = call("lift_tangent", ctx.of(start), start, ans)
        return call("batch_sum", tangents, items, ans, first)
    if 0 not in active:
        return call("broadcast_tangent", ctx.of(start), ans)
    if 1 not in active:
        return call("sum", tangents)
    return call("sum", tangents, ctx.of(start))


def _arguments(op: Operation) -> dict[int, cst.BaseExpression]:
    """The call's arguments by the position of the parameter they bind to: the positional
    ones, and keyword arguments naming a parameter of the rule's template
    (``np.full((3,), fill_value=c)``: ``c`` at 1). Forward rules see, and linear primitives
    vary, a keyword argument's tangent as they do a positional one's."""
    arguments = dict(enumerate(op.args))
    template_fn = op.rule.jvp or op.rule.vjp if op.rule is not None else None
    if op.kwargs and template_fn is not None:
        params = load_template(template_fn).params
        for keyword, value in op.kwargs.items():
            if keyword in params and params.index(keyword) not in arguments:
                arguments[params.index(keyword)] = value
    return arguments


def _keyword_at(op: Operation, position: int) -> str | None:
    """The keyword of the argument at `position` (see `_arguments`), or None if positional."""
    if position < len(op.args):
        return None
    node = _arguments(op)[position]
    return next(k for k, v in op.kwargs.items() if v is node)


def _tangent_args(op: Operation, ctx: TangentContext) -> cst.Tuple:
    """``tangents`` for a template: one entry per parameter position up to the last argument
    given (None: no tangent, or no argument there)."""
    arguments = _arguments(op)
    items = []
    for position in range(max(arguments, default=-1) + 1):
        arg = arguments.get(position)
        if arg is None:
            items.append(cst.Name("None"))
            continue
        if isinstance(arg, (cst.List, cst.Tuple)):
            if _has_tangent(arg, ctx):
                items.append(_sequence_tangent(arg, ctx))
            else:
                items.append(cst.Name("None"))
            continue
        tangent = ctx.of(arg)
        if tangent is not None:
            tangent = ctx.as_array(op, arg, tangent, position)
        items.append(tangent if tangent is not None else cst.Name("None"))
    return cst.Tuple(tuple(cst.Element(i) for i in items))


def _has_tangent(arg, ctx: TangentContext) -> bool:
    """Some element of `arg`, a (nested) list or tuple literal, has a tangent."""
    return any(ctx.of(cst.Name(name)) is not None for name in names_in(arg))


def _sequence_tangent(arg, ctx: TangentContext):
    """The tangent of a (nested) list or tuple literal: element by element, zeros where an
    element has none (``[[x, 1.0]]`` -> ``[[tx, 0.0]]``)."""
    elements = []
    for e in arg.elements:
        if isinstance(e.value, (cst.List, cst.Tuple)):
            elements.append(e.with_changes(value=_sequence_tangent(e.value, ctx)))
            continue
        tangent = ctx.of(e.value)
        elements.append(e.with_changes(value=tangent if tangent is not None else ctx.zero(e.value)))
    return arg.with_changes(elements=tuple(elements))


def written_tangent(template_fn, op: Operation, ans, ctx: TangentContext, statements: list):
    """The tangent a written forward rule (`template_fn`) gives `op`'s result, its statements
    appended to `statements`; None when it reads no tangent."""
    return _written(template_fn, op, ans, ctx, statements)


def _written(template_fn, op: Operation, ans, ctx: TangentContext, statements: list):
    from .reverse import bind_arguments

    template = load_template(template_fn)
    # (the rule reads the lists a NumPy function reads as one array as arrays, as reverse
    # rules do: ``cumprod_tangent(t, np.asarray(rows), 0)``)
    bound = lists_read_as_arrays(bind_arguments(template, op, ctx.nf), op, ctx.shapes)
    tangents = _tangent_args(op, ctx)
    leading = dict(zip(template.leading, (tangents, ans), strict=True))
    given = set(read_names(tangents, [])) - {"None"}
    if template.per_argnum:
        parts = []
        for position in _active_positions(op, ctx):
            argnum = {"argnum": cst.Integer(str(position))}
            instance = instantiate(template, {**bound, **leading, **argnum}, ctx.namer)
            part = _reading_tangents(instance, given)
            if part is not None:
                statements.extend(part[0])
                parts.append(part[1])
        return _sum(parts)
    instance = instantiate(template, {**bound, **leading}, ctx.namer)
    part = _reading_tangents(instance, given)
    if part is None:
        return None
    statements.extend(part[0])
    return part[1]


def _reading_tangents(instance, given: set[str]):
    """The statements and contribution of a forward rule's instance once each
    ``tangents[k]`` is the argument's tangent or None; None when it reads no tangent at all.

    A tangent is linear in the tangents of the arguments, so one that reads none of them is
    zero: the arguments that vary are read only for their shapes (``b`` in
    ``solve_transposed(a, g, b)``). The caller then writes the zero tangent of the result,
    with the batch axis of the sweep; a helper called with nothing but None would have no
    way to know how many directions the sweep carries."""
    statements = [_select_items(s) for s in instance.statements]
    contribution = _select_items(instance.contributions[0])
    read: list[str] = []
    for node in (*statements, contribution):
        read_names(node, read)
    if not given.intersection(read):
        return None
    return statements, contribution


def _active_positions(op: Operation, ctx: TangentContext) -> list[int]:
    positions = []
    for position, arg in sorted(_arguments(op).items()):
        if op.rule.linear is not None and position not in op.rule.linear:
            continue
        if any(ctx.of(cst.Name(n)) is not None for n in names_in(arg)):
            positions.append(position)
    return positions


def _batched_linear(op: Operation, ans, ctx: TangentContext, statements: list):
    if op.rule.batched_jvp is not None:
        return _written(op.rule.batched_jvp, op, ans, ctx, statements)
    parts = []
    function = _spelling(op.rule)
    for position in _active_positions(op, ctx):
        keyword = _keyword_at(op, position)
        tangent = _tangent_or_sequence(_arguments(op)[position], ctx, op, position)
        args = [tangent if k == position else arg for k, arg in enumerate(op.args)]
        packed = cst.Tuple(tuple(cst.Element(a) for a in args))
        kwargs = cst.Dict(
            tuple(
                cst.DictElement(cst.SimpleString(f'"{k}"'), tangent if k == keyword else v)
                for k, v in op.kwargs.items()
            )
        )
        where = cst.Integer(str(position)) if keyword is None else cst.SimpleString(f'"{keyword}"')
        parts.append(call("map_examples", function, where, packed, kwargs))
    return _sum(parts)


def _spelling(rule) -> cst.BaseExpression:
    """How generated code names a primitive: ``numpy.dot`` -> ``np.dot``, ``a @ b`` ->
    ``np.matmul``, a builtin by its name."""
    if rule.primitive is operator.matmul:
        return name_expr("np.matmul")
    if rule.name.startswith("numpy."):
        return name_expr("np." + rule.name[len("numpy.") :])
    return name_expr(rule.name.split(".")[-1])


def _tangent_or_sequence(arg, ctx: TangentContext, op=None, position=None):
    if isinstance(arg, (cst.List, cst.Tuple)):
        return _sequence_tangent(arg, ctx)
    tangent = ctx.of(arg)
    if tangent is None:
        return ctx.zero(arg)
    return ctx.as_array(op, arg, tangent, position) if op is not None else tangent


def _refuse_what_reverse_mode_refuses(op: Operation, ctx: TangentContext) -> None:
    """A linear function's tangent is the function applied to the tangent, its other
    arguments kept, so one that adds a constant (``np.sum(x, initial=3.0)``, ``np.diff(x,
    prepend=1.0)``) would add it to the tangent too, silently: arguments the reverse rule
    does not take are refused here as there."""
    if op.rule.vjp is not None:
        from .reverse import bind_arguments  # (reverse imports this module)

        bind_arguments(load_template(op.rule.vjp), op, ctx.nf)


def _linear(op: Operation, value: cst.BaseExpression, ctx: TangentContext):
    """The call `value` with one active argument at a time replaced by its tangent."""
    parts = []
    for position in _active_positions(op, ctx):
        tangent = _tangent_or_sequence(_arguments(op)[position], ctx, op, position)
        parts.append(_replace_argument(value, op, position, tangent))
    return _sum(parts)


def _replace_argument(value, op: Operation, position: int, new):
    if isinstance(value, cst.BinaryOperation):
        return value.with_changes(**{"left" if position == 0 else "right": new})
    if isinstance(value, cst.UnaryOperation):
        return value.with_changes(expression=new)
    if isinstance(value, cst.Attribute):
        return value.with_changes(value=new)
    if isinstance(value, cst.Call):
        func = value.func
        positional = [i for i, a in enumerate(value.args) if a.keyword is None]
        if isinstance(func, cst.Attribute) and op.args and func.value is op.args[0]:
            if position == 0:
                return value.with_changes(func=func.with_changes(value=new))
            position -= 1
        args = list(value.args)
        if position < len(positional):
            k = positional[position]
            args[k] = args[k].with_changes(value=new)
            return value.with_changes(args=tuple(args))
        # a collected positional (``x.reshape(3, 4)``) or keyword: replace by identity
        return value.deep_replace(_arguments(op)[position], new)
    raise AssertionError(f"cannot place a tangent in {type(value).__name__}")


def elementwise_tangent(op: Operation, ans, ctx: TangentContext, statements: list):
    """Forward rule from an elementwise reverse rule: ``g`` -> each argument's tangent."""
    from .reverse import bind_arguments

    template = load_template(op.rule.vjp)
    bound = bind_arguments(template, op, ctx.nf)
    arrays = lists_read_as_arrays(bound, op, ctx.shapes)
    target = cst.Name(op.targets[0])
    parts = []
    full = False
    for k, param in enumerate(template.params):
        arg = bound.get(param)
        tangent = ctx.of(arg) if isinstance(arg, cst.Name) else None
        if tangent is None:
            continue
        tangent = ctx.as_array(op, arg, tangent, keyword=param)
        same = ctx.shapes.same(arg, target)
        full = full or same
        if ctx.batched and not same:
            tangent = call("lift_tangent", tangent, arg, target)
        leading = dict(zip(template.leading, (tangent, ans), strict=True))
        instance = instantiate(template, {**arrays, **leading}, ctx.namer)
        contribution = (
            instance.contributions[k] if not instance.single else instance.contributions[0]
        )
        if contribution is None:
            continue
        statements.extend(instance.statements)
        parts.append(contribution)
    if not parts:
        return None
    total = _sum(parts)
    if full:
        return total
    batched = [cst.Arg(cst.Name("True"))] if ctx.batched else []
    return cst.Call(
        func=cst.Name("broadcast_tangent"),
        args=(cst.Arg(total), cst.Arg(target), *batched),
    )


def _sum(parts: list):
    if not parts:
        return None
    total = parts[0]
    for part in parts[1:]:
        total = cst.BinaryOperation(total, cst.Add(), part)
    return total


class _ItemSelector(cst.CSTTransformer):
    """``(a, b)[1]`` -> ``b``: a template's ``tangents[k]`` once ``tangents`` is a literal
    (``None`` past its end: no argument given there, so no tangent)."""

    def leave_Subscript(self, original, updated):
        if isinstance(updated.value, cst.Tuple) and len(updated.slice) == 1:
            index = updated.slice[0].slice
            if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer):
                k = int(index.value.value)
                elements = updated.value.elements
                return elements[k].value if k < len(elements) else cst.Name("None")
        return updated


def _select_items(node):
    return node.visit(_ItemSelector())


__all__ = ["TangentContext", "elementwise_tangent", "tangent_of_call", "written_tangent"]
