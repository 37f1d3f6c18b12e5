"""Pass 7, reverse: a normal form to a function computing its gradient.

Output: a ``def`` whose body is the primal sweep (the normal form's statements, unchanged and
with their line comments), the seed ``d<out> = 1.0``, then the adjoint sweep: for every active
statement, last to first, the statements of its rule template with ``g`` bound to the result's
adjoint, each group headed ``# adjoint of line N: <source>``, and finally
``return dx`` (or a tuple of gradients, or ``(value, gradients)``).

Adjoints follow the lazy-broadcast convention of ``runtime/registry.py``. The pass tracks, per
adjoint, whether it is *full* (known to have exactly its primal's shape) and *owned* (a fresh
array only this code refers to, so it may be updated in place), and emits ``unbroadcast`` /
``match_shape`` only where that is not known. Index reads scatter into an owned buffer:
``dx = zero_adjoint(x)`` then ``dx[1:] += g``.
"""

from __future__ import annotations

import dataclasses
import operator

import libcst as cst

from .activity import Activity
from .adjoints import (
    LINE_COMMENT,
    Adjoints,
    Context,
    assign,
    call,
    comment_line,
    index_value,
    is_basic_index,
)
from .anf import NormalForm, name_expr
from .blocks import AssignedNames
from .call_kinds import bind_call, call_kinds, key_literal
from .complex_values import surely_complex_names
from .errors import TransformError
from .naming import Namer
from .operations import APPEND, COPY, PACK, POP, SETITEM, Operation, is_append, names_in
from .reverse_loops import reverse_loop, with_primal_edits
from .sequences import LIST_OPERATORS, as_array_if_list, lists_read_as_arrays
from .shapes import ShapeTokens
from .signs import positive_names
from .stand_ins import stand_ins
from .templates import Template, instantiate, load_template
from .walk import read_names, rewrite, rewrite_statement, visit


@dataclasses.dataclass(frozen=True)
class ReverseSpec:
    """What to differentiate and what to return."""

    entry: str
    wrt: tuple[str, ...]
    wrt_is_tuple: bool
    with_value: bool
    containers: frozenset[str] = frozenset()  # parameters holding dicts, lists or tuples
    seed: str | None = None  # a parameter holding the output's adjoint (a VJP), else 1.0
    aux: str | None = None  # with has_aux: the name holding aux, returned as computed


@dataclasses.dataclass
class Sweeps:
    """The two halves of a reverse-mode derivative: the primal sweep (the function's own
    statements, with the pushes and saves the adjoint needs) and the adjoint sweep."""

    primal: list
    adjoint: list
    adjoints: Adjoints
    callees: list  # the splits of user functions the code calls (see transforms/calls.py)


def reverse(
    nf: NormalForm,
    activity: Activity,
    shapes: ShapeTokens,
    spec: ReverseSpec,
    namer: Namer,
    splits=None,
    checks: tuple = (),
    complex_possible: bool = False,
    complex_names: frozenset[str] = frozenset(),
) -> tuple[cst.FunctionDef, list]:
    """Build the gradient function of `nf` (see the module docstring); also return the
    splits of the user functions it calls. `checks` (statements reading the output) run
    between the sweeps, where the output is final; with `complex_possible` every gradient
    goes through `match_shape`, which gives a real input the real part of its adjoint, and
    the names that may hold complex values (`complex_names`) are those of
    `reverse_sweeps`."""
    seed = cst.Float("1.0") if spec.seed is None else cst.Name(spec.seed)
    sweeps = reverse_sweeps(
        nf, activity, shapes, namer, seed, spec.seed is None, splits, complex_names
    )
    output, keep = nf.output, []
    if spec.with_value:
        output, keep = _kept_value(nf, activity, sweeps, namer, nf.output)
    if spec.aux is not None:  # (kept under its own name, which attach_aux returns)
        keep += _kept_value(nf, activity, sweeps, namer, cst.Name(spec.aux), rebind=True)[1]
    returned = _gradients(spec, sweeps.adjoints, output, complex_possible)
    body = [
        *sweeps.primal,
        *checks,
        *keep,
        *sweeps.adjoint,
        cst.SimpleStatementLine((cst.Return(returned),)),
    ]
    body = stand_ins(body, activity, shapes)  # results read only for their shapes are not computed
    params = without_defaults(nf.funcdef.params)
    if spec.seed is not None:
        params = params.with_changes(params=(*params.params, cst.Param(cst.Name(spec.seed))))
    funcdef = nf.funcdef.with_changes(
        name=cst.Name(spec.entry),
        params=params,
        body=cst.IndentedBlock(body=tuple(body)),
        returns=None,
    )
    return funcdef, sweeps.callees


def _kept_value(
    nf: NormalForm,
    activity: Activity,
    sweeps: Sweeps,
    namer: Namer,
    output: cst.BaseExpression,
    rebind: bool = False,
):
    """The output's value as the primal sweep left it, and the statement keeping it: the
    adjoint sweep pops loop values back into their names and undoes slot writes, appends and
    pops, so a name the adjoint sweep assigns is kept first, and where the function changes
    anything in place, a copy of the value (`snapshot`: it may be, view or hold what the
    adjoint sweep changes back). `rebind`: kept under its own name."""
    if not isinstance(output, cst.Name):
        return output, []
    assigned = AssignedNames()
    for line in sweeps.adjoint:
        visit(line, assigned)
    # whatever the function changes in place, the value may hold or view: ``return
    # np.flipud(y1)`` after ``y1[1] += x`` came back with y1's slot as the adjoint sweep put
    # it back (fuzz seed 3801839), and so did an aux holding y1 in a tuple or a dict
    changed = changes_in_place(activity)
    if not changed and output.value not in assigned.names:
        return output, []
    value = output if rebind else cst.Name(namer.fresh("value"))
    kept = call("snapshot", output) if changed else output
    return value, [cst.SimpleStatementLine((cst.Assign((cst.AssignTarget(value),), kept),))]


def changes_in_place(activity: Activity) -> bool:
    """Whether the function writes a slot, appends or pops: then its adjoint sweep changes
    those values back in place (slot by slot, popping what was appended), and a value that
    leaves the primal sweep -- the output the caller goes on using, a forward half's result --
    must be a copy taken before it does (`snapshot`)."""
    return any(
        op.primitive in (SETITEM, POP, APPEND) and isinstance(op.args[0], cst.Name)
        for _, op in activity.operations
    )


def reverse_sweeps(
    nf: NormalForm,
    activity: Activity,
    shapes: ShapeTokens,
    namer: Namer,
    seed: cst.BaseExpression,
    scalar_output: bool,
    splits=None,
    complex_names: frozenset[str] = frozenset(),
) -> Sweeps:
    """The primal and adjoint sweeps of `nf`, the output's adjoint starting as `seed`. The
    contributions of operations whose results may be complex (`complex_names`, from
    `complex_values.complex_names`) go through `real_adjoint`, so that the adjoint of every
    real value is real."""
    adjoints = Adjoints(
        namer,
        shapes,
        activity.active,
        positive_names(activity),
        _read_by_parts(activity, shapes),
        complex_names,
    )
    if complex_names:
        adjoints.surely_complex = surely_complex_names(activity)
    output = nf.output
    if isinstance(output, cst.Name) and output.value in activity.active:
        full = scalar_output and shapes.is_scalar(output)
        adjoints.contribute(output.value, seed, full=full)
    counts: dict[str, int] = {}
    for _, op in activity.operations:
        for target in op.targets:
            counts[target] = counts.get(target, 0) + 1
    headers = {name for names in nf.loop_headers.values() for name in names}
    reassigned = frozenset(
        name for name, count in counts.items() if count > 1 or name in nf.params
    ) | frozenset(headers)
    context = Context(nf, activity, shapes, namer, _line_comments(nf), reassigned, splits)
    context.reverse_block = reverse_block
    reverse_block(list(nf.funcdef.body.body), adjoints, context)
    primal = with_primal_edits(
        [line for line in nf.funcdef.body.body if not _is_return(line)], context.primal_edits
    )
    return Sweeps(primal, list(adjoints.lines), adjoints, context.callees)


def _read_by_parts(activity: Activity, shapes: ShapeTokens) -> frozenset[str]:
    """The tuples a user function returned (their shape token says how many elements) that
    are read only as ``t[k]`` for integer literals ``k``: their adjoint can be a plain list of
    one adjoint per element, which the callee's backward half reads by `part` (a container
    adjoint, `zero_adjoint`, costs more than the arithmetic of a small callee)."""
    tuples = {
        target
        for _, op in activity.operations
        if op.user
        for target in op.targets
        if shapes.of(cst.Name(target))[0] == "tuple"
    }
    for _, op in activity.operations:
        by_index = op.index is not None and _element_position(op, shapes) is not None
        for name in op.input_names():
            if name in tuples and not by_index:
                tuples.discard(name)
    return frozenset(tuples)


def _element_position(op: Operation, shapes: ShapeTokens) -> int | None:
    """``k`` for ``t[k]`` of a tuple token with more than ``k`` elements, else None."""
    source = op.args[0]
    token = shapes.of(source)
    inner = op.index[0].slice if len(op.index) == 1 else None
    if token[0] != "tuple" or not isinstance(inner, cst.Index):
        return None
    if not isinstance(inner.value, cst.Integer) or int(inner.value.value) >= len(token[1]):
        return None
    return int(inner.value.value)


def reverse_block(lines: list, adjoints: Adjoints, context: Context) -> None:
    """Append the adjoint of the normal-form `lines` (last statement first) to `adjoints`."""
    for line in reversed(lines):
        if isinstance(line, (cst.For, cst.While)):
            reverse_loop(line, adjoints, context)
            continue
        if isinstance(line, cst.If):
            then, other = adjoints.fork(), adjoints.fork()
            reverse_block(list(line.body.body), then, context)
            if line.orelse is not None:
                reverse_block(list(line.orelse.body.body), other, context)
            comment_line(adjoints, line, context)
            adjoints.join(line.test, then, other)
            continue
        statement = line.body[0]
        if is_append(statement):
            _differentiate_append(context.activity.operation(statement), adjoints)
            continue
        if not isinstance(statement, cst.Assign):
            continue
        op = context.activity.operation(statement)
        if op.primitive is SETITEM:
            _differentiate_item_write(op, line, adjoints, context)
            continue
        if op.user:
            _differentiate_user_call(op, line, adjoints, context)
            continue
        if op.primitive is PACK:
            _differentiate_pack(op, adjoints)
            continue
        if op.primitive is POP:
            _differentiate_pop(op, adjoints)
            continue
        if not op.differentiable:
            continue  # e.g. a constant assigned in one branch of an if: no contribution
        if not any(adjoints.has(t) for t in op.targets if t in context.activity.active):
            continue
        source_line = context.nf.line_of.get(op.targets[0])
        if op.targets[0] in context.reassigned:
            source_line = adjoints.last_line  # a copy joining branches or iterations
        if source_line != adjoints.last_line and source_line in context.comments:
            adjoints.comment(f"# adjoint of line {source_line}: {context.comments[source_line]}")
            adjoints.last_line = source_line
        _differentiate(op, adjoints, context.shapes, context.nf, context.namer)
        for target in op.targets:
            if target in context.reassigned and adjoints.has(target):
                # the value before this assignment is another value: its adjoint starts at 0
                name = adjoints.names[target]
                adjoints.emit(assign(name, cst.Float("0.0")))
                adjoints.full.discard(name)
                adjoints.owned.discard(name)


def _differentiate_append(op: Operation, adjoints: Adjoints) -> None:
    """``items.append(v)``: ``v`` gets the part of ``ditems`` for the last position, which is
    then cleared, and the adjoint pops the list, so earlier appends find their own position
    at the end of the list (and no adjoint of a later element there)."""
    items, value = op.args
    if items.value not in adjoints.active:
        return
    # the pop runs even while the list has no adjoint yet: the adjoints of earlier reads
    # find their positions counted from the end of the list as it was then
    last = cst.BinaryOperation(call("len", items), cst.Subtract(), cst.Integer("1"))
    if adjoints.has(items.value):
        name = adjoints.names[items.value]
        if name not in adjoints.owned:
            adjoints.emit(assign(name, call("fresh_adjoint", cst.Name(name), items)))
            adjoints.full.add(name)
            adjoints.owned.add(name)
        if isinstance(value, cst.Name) and value.value in adjoints.active:
            part = adjoints.as_kind_of(value, call("part", cst.Name(name), last), op.targets)
            adjoints.contribute(value.value, part, full=False)
        # the position is gone: an element appended there earlier starts from zero
        slot = cst.Subscript(cst.Name(name), (cst.SubscriptElement(cst.Index(last)),))
        adjoints.emit(cst.Assign((cst.AssignTarget(slot),), cst.Float("0.0")))
    adjoints.emit(cst.Expr(cst.Call(name_expr(f"{items.value}.pop"), ())))


def _differentiate_pop(op: Operation, adjoints: Adjoints) -> None:
    """``v = items.pop()``: ``dv`` goes to the position ``v`` left (now ``len(items)``), and
    the adjoint puts ``v`` back, so the list is as it was for earlier adjoints. With append's
    adjoint, this makes a list used as a stack differentiable, the generated code's own too."""
    items = op.args[0]
    target = op.targets[0]
    if items.value not in adjoints.active:
        # the value goes back all the same: the adjoint sweep restores earlier slot writes
        # of the list by position (IndexError once it was shorter)
        adjoints.emit(
            cst.Expr(cst.Call(name_expr(f"{items.value}.append"), (cst.Arg(cst.Name(target)),)))
        )
        return
    if adjoints.has(items.value):
        # the adjoint so far is of the list without `v` (an array adjoint of the list read as
        # one array has a row per element it had): by element now, so `v`'s position, past
        # them, starts at zero once `v` is back
        name = adjoints.names[items.value]
        adjoints.emit(assign(name, call("by_element", cst.Name(name), items)))
    if adjoints.has(target):
        if not adjoints.has(items.value):
            name = adjoints.names[items.value] = adjoints.namer.adjoint(items.value)
            adjoints.emit(assign(name, call("zero_adjoint", items)))
        dv = cst.Name(adjoints.names[target])
        where = call("len", items)
        name = adjoints.names[items.value]
        adjoints.emit(assign(name, call("accumulate_at", cst.Name(name), where, dv)))
    adjoints.emit(
        cst.Expr(cst.Call(name_expr(f"{items.value}.append"), (cst.Arg(cst.Name(target)),)))
    )


def _differentiate_pack(op: Operation, adjoints: Adjoints) -> None:
    """``t = (a, b)`` or ``{"k": a}``: each element gets its part of ``dt``."""
    target = op.targets[0]
    if not adjoints.has(target):
        return
    dt = cst.Name(adjoints.names[target])
    for position, element in enumerate(op.args):
        part = call("part", dt, op.kwargs[str(position)])
        _contribute_parts(element, part, adjoints, op.targets)


def _contribute_parts(
    element, adjoint: cst.BaseExpression, adjoints: Adjoints, results: tuple[str, ...]
) -> None:
    """`adjoint` to the name `element`, or to each name in a nested tuple or list literal
    (``[(a, 1.0), (2.0, b)]``) its part; real for a real one where `results` (what the
    operation computed) may be complex."""
    if isinstance(element, cst.Name) and element.value in adjoints.active:
        adjoint = adjoints.as_kind_of(element, adjoint, results)
        adjoints.contribute(element.value, adjoint, full=False)
    elif isinstance(element, (cst.Tuple, cst.List)):
        for k, inner in enumerate(element.elements):
            part = call("part", adjoint, cst.Integer(str(k)))
            _contribute_parts(inner.value, part, adjoints, results)


def _differentiate_user_call(op: Operation, line, adjoints: Adjoints, context: Context) -> None:
    """``z = g(a, b)`` with `g` a user function: the primal calls ``g``'s generated forward
    half, which also returns what its backward half needs; the adjoint calls the backward half
    with that and ``dz``, and gets one adjoint per parameter of ``g``."""
    target = op.targets[0]
    original = line.body[0].value
    kinds = call_kinds(
        op.primitive, op, original, context.shapes, lambda name: name in adjoints.active
    )
    if not adjoints.has(target):
        if any(name in adjoints.active for name in op.input_names()):
            context.splits(op.primitive, kinds)  # transformed all the same: an error if it
        return  # mutates them
    split = context.splits(op.primitive, kinds)
    if split not in context.callees:
        context.callees.append(split)
    saved = context.namer.temp()
    forward = cst.Assign(
        (
            cst.AssignTarget(
                cst.Tuple((cst.Element(cst.Name(target)), cst.Element(cst.Name(saved))))
            ),
        ),
        original.with_changes(func=cst.Name(split.forward)),
    )
    context.primal_edits[id(line)] = ([], line.with_changes(body=(forward,)))
    grads = context.namer.temp()
    dz = cst.Name(adjoints.names[target])
    adjoints.emit(assign(grads, call(split.backward, cst.Name(saved), dz)))
    # (bound to the split's function: a custom-gradient wrapper takes *args, the function not)
    for param, arg, key in bind_call(split.fn, op.args, op.kwargs):
        if param in split.wrt and any(n in adjoints.active for n in names_in(arg)):
            index = cst.Integer(str(split.wrt.index(param)))
            part = cst.Subscript(cst.Name(grads), (cst.SubscriptElement(cst.Index(index)),))
            if key is not None:  # an argument *args or **kwargs took: its part of theirs
                part = call("part", part, key_literal(key))
            _contribute_parts(arg, part, adjoints, op.targets)


def _differentiate_item_write(op: Operation, line, adjoints: Adjoints, context: Context) -> None:
    """``y[index] = v``: the primal saves the slots first; the adjoint gives ``v`` the adjoint
    of the slots, zeroes it (their old values were overwritten) and puts the old values back,
    so the adjoints of earlier statements read ``y`` as it was when they ran."""
    array, value = op.args
    saved = context.namer.temp()
    save = cst.SimpleStatementLine(
        (assign(saved, call("saved_slot", array, index_value(op.index))),)
    )
    context.primal_edits[id(line)] = ([save], line)
    if array.value in adjoints.names:
        name = adjoints.names[array.value]
        if name not in adjoints.owned:
            adjoints.emit(assign(name, call("fresh_adjoint", cst.Name(name), array)))
            adjoints.full.add(name)
            adjoints.owned.add(name)
        index = slot_index(op.index, array, context.shapes)
        slots = cst.Subscript(cst.Name(name), index)
        if isinstance(value, cst.Name) and value.value in adjoints.active:
            # a copy: the slots are zeroed next, and a slice of them is a view
            contribution = call("written_slots", cst.Name(name), index_value(index))
            # an array's slots are full; a list's or dict's element adjoint may be a number
            # standing for all of it (the adjoint of np.sum of the element), or a missing 0
            full = array.value not in context.shapes.maybe_sequences and (
                context.shapes.ndim(array) is not None
            )
            if full or value.value not in context.shapes.maybe_sequences:
                # (a number too: ``y[1:] = s`` gives s the sum over the slots; an array's
                # slots read a tuple of values as one array: a bare tuple is read as a shape)
                contribution = call(
                    "unbroadcast", contribution, as_array_if_list(value, context.shapes)
                )
            # (else a list's slot, holding a list or tuple as it is: its adjoint is the
            # element's, as ``states[t] = (m, P)`` stores it, neither an array nor a shape)
            contribution = adjoints.as_kind_of(value, contribution, op.targets)
            if value.value == array.value:
                # ``y[::-1] = y``: the value's adjoint is the array's own, whose slots are
                # zeroed next: held, zeroed, then added (it was added, then zeroed)
                held = context.namer.temp()
                adjoints.emit(assign(held, contribution))
                adjoints.emit(cst.Assign((cst.AssignTarget(slots),), cst.Float("0.0")))
                adjoints.contribute(value.value, cst.Name(held), full=full)
                slots = None
            else:
                adjoints.contribute(value.value, contribution, full=full)
        if slots is not None:
            adjoints.emit(cst.Assign((cst.AssignTarget(slots),), cst.Float("0.0")))
    restore = cst.Subscript(array, op.index)
    adjoints.emit(cst.Assign((cst.AssignTarget(restore),), cst.Name(saved)))


def _is_return(line) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Return)


def _differentiate(op: Operation, adjoints: Adjoints, shapes, nf: NormalForm, namer: Namer) -> None:
    if op.primitive is COPY:
        g = cst.Name(adjoints.names[op.targets[0]])
        adjoints.contribute(op.args[0].value, g, full=g.value in adjoints.full)
        return
    if op.index is not None:
        _differentiate_index(op, adjoints, shapes)
        return
    if op.primitive in LIST_OPERATORS and op.targets[0] in shapes.sequences:
        _differentiate_sequence(op, adjoints)
        return
    rule = op.rule
    target, ans = _result(op, nf)
    if not adjoints.has(target):
        return  # only components without a gradient were used
    g = cst.Name(adjoints.names[target])
    if not (rule.elementwise or rule.broadcast_g):
        g = cst.Name(adjoints.make_full(target))
    template = load_template(rule.vjp)
    bound = bind_arguments(template, op, nf)
    arrays = lists_read_as_arrays(bound, op, shapes)  # (what the rule reads)
    leading = dict(zip(template.leading, (g, ans), strict=True))
    if template.per_argnum:
        for position, arg in enumerate(op.args):
            if _active_names(arg, adjoints, op):
                argnum = {"argnum": cst.Integer(str(position))}
                instance = instantiate(template, {**arrays, **leading, **argnum}, namer)
                _emit_instance(instance, adjoints)
                _contribute(arg, instance.contributions[0], op, adjoints, shapes, g)
        return
    instance = instantiate(template, {**arrays, **leading}, namer)
    _emit_instance(instance, adjoints)
    pairs = [
        (bound[param], contribution)
        for param, contribution in zip(template.params, instance.contributions, strict=False)
        if contribution is not None and param in bound and _active_names(bound[param], adjoints, op)
    ]
    for arg, contribution in _merge_repeated(pairs):
        _contribute(arg, contribution, op, adjoints, shapes, g)


def _differentiate_sequence(op: Operation, adjoints: Adjoints) -> None:
    """A list or tuple joined (``hs + [h]``) or repeated (``xs * 2``): each operand's adjoint
    is its elements' part of the result's (`joined_part`), or their sum over the repeats
    (`repeated_part`); an integer count has none."""
    target = op.targets[0]
    if not adjoints.has(target):
        return
    g, joined = cst.Name(adjoints.names[target]), cst.Name(target)
    for position, arg in enumerate(op.args):
        if not (isinstance(arg, cst.Name) and arg.value in adjoints.active):
            continue
        if op.primitive is operator.add:
            index = cst.Integer(str(position))
            contribution = call("joined_part", g, joined, op.args[0], index)
        else:
            contribution = call("repeated_part", g, joined, arg)
        adjoints.contribute(arg.value, contribution, full=True)


def _merge_repeated(pairs):
    """Equal contributions to one argument become one scaled contribution: ``x * x`` gives
    ``dx = 2 * (g * x)``, not two additions of ``g * x``."""
    merged: list[list] = []
    for arg, contribution in pairs:
        for entry in merged:
            if (
                isinstance(arg, cst.Name)
                and isinstance(entry[0], cst.Name)
                and entry[0].value == arg.value
                and entry[1].deep_equals(contribution)
            ):
                entry[2] += 1
                break
        else:
            merged.append([arg, contribution, 1])
    return [
        (arg, c if k == 1 else cst.BinaryOperation(cst.Integer(str(k)), cst.Multiply(), c))
        for arg, c, k in merged
    ]


def _result(op: Operation, nf: NormalForm) -> tuple[str, cst.BaseExpression]:
    """The name whose adjoint the rule receives as ``g``, and what it receives as ``ans``."""
    index = op.rule.output
    if index is None:
        if len(op.targets) > 1:
            raise _error(nf, op, f"cannot differentiate through the unpacked result of {op.name}")
        return op.targets[0], cst.Name(op.targets[0])
    if len(op.targets) == 1:
        raise _error(
            nf, op, f"unpack the result of {op.name} into names (a, b = ...) to differentiate it"
        )
    elements = tuple(cst.Element(cst.Name(t)) for t in op.targets)
    return op.targets[index], cst.Tuple(elements)


def _emit_instance(instance, adjoints: Adjoints) -> None:
    for statement in instance.statements:
        adjoints.emit(rewrite_statement(statement, adjoints.shape_only))


def _active_names(expr: cst.BaseExpression, adjoints: Adjoints, op: Operation) -> bool:
    return any(name in adjoints.active for name in names_in(expr))


def _contribute(
    arg, contribution, op: Operation, adjoints: Adjoints, shapes: ShapeTokens, g
) -> None:
    if isinstance(arg, (cst.List, cst.Tuple)):
        # a sequence argument (np.concatenate([a, b])): its contribution is a sequence too
        parts = adjoints.namer.temp()
        adjoints.emit(assign(parts, contribution))
        for k, element in enumerate(arg.elements):
            item = cst.Subscript(
                cst.Name(parts), (cst.SubscriptElement(cst.Index(cst.Integer(str(k)))),)
            )
            _contribute(element.value, item, op, adjoints, shapes, g)
        return
    if not isinstance(arg, cst.Name) or arg.value not in adjoints.active:
        return
    contribution = rewrite(contribution, adjoints.shape_only)
    target = cst.Name(op.targets[0])  # elementwise rules have a single result
    if op.rule.elementwise:
        # the contribution broadcasts to the result, so it has the result's exact shape if g
        # does or if it reads a value of that shape (``g * (1 - ans**2)``)
        full = g.value in adjoints.full or any(
            shapes.same(cst.Name(name), target) for name in read_names(contribution, [])
        )
        if not shapes.same(arg, target):
            # a full contribution has the result's shape; a lazy one needs the other operands
            # to tell how many times `arg` was repeated
            summed = _summed_to(contribution, arg, target, shapes) if full else None
            if summed is not None:
                contribution = summed
            else:
                others = (
                    []
                    if full
                    else [
                        adjoints.representative(a)
                        for a in op.args
                        if a is not arg and not shapes.is_scalar(a) and not _is_literal_none(a)
                    ]
                )
                contribution = call(
                    "unbroadcast", contribution, adjoints.representative(arg), *others
                )
    else:
        # rule results have their argument's shape, except reductions', which broadcast
        full = not op.rule.reduction
    contribution = adjoints.as_kind_of(arg, contribution, op.targets)
    adjoints.contribute(arg.value, contribution, full=full)


def _summed_to(
    contribution: cst.BaseExpression, arg: cst.BaseExpression, target: cst.Name, shapes
) -> cst.Call | None:
    """``g.sum(axis=...)`` (or ``np.sum``) reducing a contribution of the result's exact shape
    to `arg`'s, when both shapes are known exactly (a specialization for shapes) and `arg`'s
    is the trailing part of the result's (a bias added to a batch); None otherwise, and
    `unbroadcast` works it out at run time."""
    have, want = shapes.of(target), shapes.of(arg)
    if have[0] != "shape" or want[0] != "shape" or not want[1]:
        return None
    lead = len(have[1]) - len(want[1])
    if lead <= 0 or have[1][lead:] != want[1]:
        return None
    axes = [cst.Integer(str(k)) for k in range(lead)]
    axis = axes[0] if lead == 1 else cst.Tuple([cst.Element(a) for a in axes])
    nowhere = cst.SimpleWhitespace("")
    keyword = cst.Arg(
        axis,
        keyword=cst.Name("axis"),
        equal=cst.AssignEqual(whitespace_before=nowhere, whitespace_after=nowhere),
    )
    if isinstance(contribution, cst.Name):  # the method: without np.sum's Python layer
        return cst.Call(cst.Attribute(contribution, cst.Name("sum")), (keyword,))
    return cst.Call(name_expr("np.sum"), (cst.Arg(contribution), keyword))


def _is_literal_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _differentiate_index(op: Operation, adjoints: Adjoints, shapes: ShapeTokens) -> None:
    source = op.args[0]
    if not isinstance(source, cst.Name) or source.value not in adjoints.active:
        return
    g = cst.Name(adjoints.names[op.targets[0]])
    primal = source.value
    if not adjoints.has(primal) and primal in adjoints.by_parts:
        count = len(shapes.of(source)[1])
        zeros = cst.List(tuple(cst.Element(cst.Float("0.0")) for _ in range(count)))
        name = adjoints.names[primal] = adjoints.namer.adjoint(primal)
        adjoints.emit(assign(name, zeros))
        adjoints.full.add(name)
        adjoints.owned.add(name)
    if not adjoints.has(primal):
        name = adjoints.names[primal] = adjoints.namer.adjoint(primal)
        adjoints.emit(assign(name, call("zero_adjoint", source)))
        adjoints.full.add(name)
        adjoints.owned.add(name)
    name = adjoints.names[primal]
    if name not in adjoints.owned:
        adjoints.emit(assign(name, call("fresh_adjoint", cst.Name(name), source)))
        adjoints.full.add(name)
        adjoints.owned.add(name)
    index = slot_index(op.index, source, shapes)
    if is_basic_index(op.index, shapes) or _is_key(op.index):
        # ``dx[index] += g`` (a key of a dict too): a further transformation reads it as an
        # addition, whose tangent lines a lazily broadcast ``g`` up with the slot
        sliced = cst.Subscript(cst.Name(name), index)
        adjoints.emit(cst.AugAssign(sliced, cst.AddAssign(), g))
    else:
        accumulated = call("accumulate_at", cst.Name(name), index_value(index), g)
        adjoints.emit(assign(name, accumulated))


def _is_key(index: tuple) -> bool:
    """A string key: ``d["h"]``."""
    inner = index[0].slice
    return (
        len(index) == 1
        and isinstance(inner, cst.Index)
        and isinstance(inner.value, cst.SimpleString)
    )


def slot_index(index: tuple, value: cst.BaseExpression, shapes: ShapeTokens) -> tuple:
    """The subscript of ``value[index]``'s slot in the adjoint of `value`. The adjoint of a
    list or tuple is keyed by position, so where `value` may be one (its rank is not known)
    a negative position or a slice becomes ``slot_key(value, index)``, made absolute against
    the list as it is at that point; a non-negative integer or a string key is itself."""
    if len(index) != 1 or shapes.ndim(value) is not None:
        return index
    inner = index[0].slice
    if isinstance(inner, cst.Index) and isinstance(inner.value, (cst.Integer, cst.SimpleString)):
        return index
    key = call("slot_key", value, index_value(index))
    return (cst.SubscriptElement(cst.Index(key)),)


def bind_arguments(
    template: Template, op: Operation, nf: NormalForm
) -> dict[str, cst.BaseExpression]:
    """Match the call's arguments to the template's parameters, as Python would."""
    bound: dict[str, cst.BaseExpression] = {}
    positional, keywords = list(op.args), dict(op.kwargs)
    params = list(template.params)
    for param, arg in zip(params, positional, strict=False):
        bound[param] = arg
    extra = positional[len(params) :]
    if extra:
        if template.varargs is None:
            raise _error(
                nf, op, f"{op.name} got more positional arguments than its gradient rule takes"
            )
        bound[template.varargs] = cst.Tuple(tuple(cst.Element(e) for e in extra))
    elif template.varargs is not None:
        bound[template.varargs] = cst.Tuple(())
    for keyword, value in keywords.items():
        if keyword == "out" and isinstance(value, cst.Name) and value.value == "None":
            continue  # (NumPy's default, written out: see `operations.past_out`)
        if keyword not in params and keyword not in template.keyword_only:
            raise _error(
                nf, op, f"argument {keyword!r} of {op.name} is not supported when differentiating"
            )
        bound[keyword] = value
    for param in (*params, *template.keyword_only):
        if param not in bound:
            if param not in template.defaults:
                raise _error(nf, op, f"{op.name} is missing argument {param!r}")
            bound[param] = template.defaults[param]
    return bound


def _gradients(
    spec: ReverseSpec, adjoints: Adjoints, output: cst.BaseExpression, complex_possible: bool
) -> cst.BaseExpression:
    grads = []
    for name in spec.wrt:
        if name in spec.containers:  # the gradient has the argument's structure
            adjoint = cst.Name(adjoints.names[name]) if adjoints.has(name) else cst.Float("0.0")
            grads.append(call("as_structure", adjoint, cst.Name(name)))
        elif adjoints.has(name):
            adjoint = adjoints.names[name]
            exact = adjoint in adjoints.full or adjoints.shapes.is_scalar(cst.Name(name))
            if exact and not complex_possible:
                grads.append(cst.Name(adjoint))
            else:
                grads.append(call("match_shape", cst.Name(adjoint), cst.Name(name)))
        else:
            grads.append(call("zero_adjoint", cst.Name(name)))
    result = cst.Tuple(tuple(cst.Element(g) for g in grads)) if spec.wrt_is_tuple else grads[0]
    if spec.with_value:
        return cst.Tuple((cst.Element(output), cst.Element(result)))
    return result


def _line_comments(nf: NormalForm) -> dict[int, str]:
    comments: dict[int, str] = {}

    def scan(lines) -> None:
        for line in lines:
            for empty in line.leading_lines:
                match = LINE_COMMENT.fullmatch(empty.comment.value) if empty.comment else None
                if match:
                    comments[int(match.group(1))] = match.group(2)
            if isinstance(line, cst.If):
                scan(line.body.body)
                if line.orelse is not None:
                    scan(line.orelse.body.body)

    scan(nf.funcdef.body.body)
    return comments


def without_defaults(params: cst.Parameters) -> cst.Parameters:
    """The generated function is called with every argument: defaults live on the wrapper."""

    def strip(ps):
        return tuple(
            p.with_changes(default=None, equal=cst.MaybeSentinel.DEFAULT, annotation=None)
            for p in ps
        )

    return params.with_changes(
        params=strip(params.params),
        posonly_params=strip(params.posonly_params),
        kwonly_params=strip(params.kwonly_params),
    )


def _error(nf: NormalForm, op: Operation, message: str) -> TransformError:
    origin = nf.origins.get(op.targets[0])
    if origin is None:
        return TransformError(message, "<unknown>", 1, 0)
    return TransformError(message, origin.filename, origin.line, origin.col, origin.text)
