"""Pass 7 (forward mode), forward: a normal form to a function computing its JVP.

Output: a ``def`` with the function's parameters followed by one tangent parameter per
differentiated parameter (``tx`` for ``x``), whose body is the normal form with, after every
active statement, the statements computing its result's tangent (``ty = tx * np.cos(x)``),
and which ends ``return out, tout``. Control flow stays as it is: a loop computes tangents as
it goes, an ``if`` computes them in the branch taken, so forward mode needs no stacks.

A tangent has exactly its primal's shape (never lazily broadcast), plus, in a *batched*
sweep, a leading axis indexing several directions (``_batch`` of them) at once: that is how
`sg.jacobian` and `sg.hessian` get every column from one sweep. Forward rules come from
`transforms/tangent_rules.py`.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from .activity import Activity
from .adjoints import assign, call, index_value
from .anf import NormalForm, name_expr
from .call_kinds import CallKinds, bind_call, call_kinds, key_literal
from .diagonal import Diagonals, read_names
from .naming import Namer
from .operations import APPEND, COPY, PACK, POP, SETITEM, Operation, is_append
from .reverse import without_defaults
from .shapes import ShapeTokens
from .tangent_rules import TangentContext, tangent_of_call


@dataclasses.dataclass(frozen=True)
class ForwardSpec:
    """What to differentiate: the parameters that get a tangent, and whether tangents carry
    a leading batch axis."""

    entry: str
    wrt: tuple[str, ...]
    batched: bool = False
    # batched, one parameter: its tangent is every unit direction of it (not a parameter),
    # diagonal tangents stay diagonal (see `transforms/diagonal.py`), and the function
    # returns the tangent alone (the columns of a Jacobian), so the value is computed only
    # as far as the tangent needs it
    identity_seed: bool = False


class Tangents(TangentContext):
    """Tangent names and the builders of one forward sweep."""

    def __init__(self, namer, shapes, active, batched, splits):
        super().__init__(namer, shapes, batched)
        self.active = active
        self.names: dict[str, str] = {}
        self.splits = splits
        self.callees: list = []
        self.diagonals: Diagonals | None = None
        self.tangent_only = False

    def name(self, primal: str) -> str:
        if primal not in self.names:
            self.names[primal] = self.namer.tangent(primal)
        return self.names[primal]

    def of(self, expr: cst.BaseExpression) -> cst.BaseExpression | None:
        """The tangent of an atom, or None if it has none (a constant, an inactive value)."""
        if isinstance(expr, cst.Name) and expr.value in self.active and expr.value in self.names:
            return cst.Name(self.names[expr.value])
        return None

    def of_or_zero(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        if isinstance(expr, (cst.Tuple, cst.List)):  # a returned ``(out, (saved, ...))``
            elements = tuple(e.with_changes(value=self.of_or_zero(e.value)) for e in expr.elements)
            return expr.with_changes(elements=elements)
        tangent = self.of(expr)
        return tangent if tangent is not None else self.zero(expr)


def forward(
    nf: NormalForm,
    activity: Activity,
    shapes: ShapeTokens,
    spec: ForwardSpec,
    namer: Namer,
    splits=None,
    tangent_names: dict | None = None,
) -> tuple[cst.FunctionDef, list]:
    """Build the JVP function of `nf` (see the module docstring); also return the forward
    functions of the user functions it calls. `tangent_names` fixes the names of the tangent
    parameters (a recursive callee needs them before its code exists); the sweep adds the
    name of every other tangent to it."""
    tangents = Tangents(namer, shapes, activity.active | frozenset(spec.wrt), spec.batched, splits)
    if tangent_names is not None:
        tangents.names = tangent_names
    tangents.nf = nf
    body: list = []
    if spec.identity_seed:
        (seed,) = spec.wrt
        tangents.diagonals = Diagonals(seed, tangents)
        tangents.tangent_only = True
        tangent_params = []
        body.append(_line(assign(tangents.batch, call("np.size", cst.Name(seed)))))
    else:
        tangent_params = [cst.Param(cst.Name(tangents.name(p))) for p in spec.wrt]
    if spec.batched and spec.wrt and not spec.identity_seed:
        first = cst.Name(tangents.names[spec.wrt[0]])
        body.append(_line(assign(tangents.batch, call("batch_size", first))))
    body.extend(forward_block(list(nf.funcdef.body.body), tangents, activity))
    params = without_defaults(nf.funcdef.params)
    funcdef = nf.funcdef.with_changes(
        name=cst.Name(spec.entry),
        params=params.with_changes(params=(*params.params, *tangent_params)),
        body=cst.IndentedBlock(body=tuple(body)),
        returns=None,
    )
    return funcdef, tangents.callees


def forward_block(lines: list, tangents: Tangents, activity: Activity) -> list:
    """The normal-form `lines` with the tangent statements interleaved."""
    out: list = []
    diagonals = tangents.diagonals
    for line in lines:
        if isinstance(line, (cst.For, cst.While, cst.If)):
            if diagonals is not None:  # nothing stays diagonal through control flow
                mentioned = read_names(line)
                out.extend(_line(s) for s in diagonals.materialize(mentioned))
                diagonals.forget(mentioned)
            tangents.diagonals = None
            if isinstance(line, cst.If):
                out.append(_forward_if(line, tangents, activity))
            else:
                body = forward_block(list(line.body.body), tangents, activity)
                out.append(line.with_changes(body=line.body.with_changes(body=tuple(body))))
            tangents.diagonals = diagonals
            continue
        statement = line.body[0]
        if diagonals is not None:
            before, kept = _diagonal_statements(statement, tangents, activity)
            out.extend(_line(s) for s in before)
            if kept is not None:
                out.append(line)
                out.extend(_line(s) for s in kept)
                continue
        if isinstance(statement, cst.Return):
            value = statement.value
            if tangents.tangent_only:  # the columns of a Jacobian: the value is not wanted
                out.append(line.with_changes(body=(cst.Return(tangents.of_or_zero(value)),)))
                continue
            pair = cst.Tuple((cst.Element(value), cst.Element(tangents.of_or_zero(value))))
            out.append(line.with_changes(body=(cst.Return(pair),)))
            continue
        if not (isinstance(statement, cst.Assign) or is_append(statement)):
            out.append(line)
            continue
        op = activity.operation(statement)
        if op.user and any(t in tangents.active for t in op.targets):
            out.append(_user_call(op, line, tangents))
            continue
        if op.user and any(name in tangents.active for name in op.input_names()):
            kinds = _call_kinds(op, line, tangents)
            tangents.splits(op.primitive, tangents.batched, kinds)  # an error if it mutates them
        out.append(line)
        out.extend(_line(s) for s in _tangent_statements(op, statement, tangents))
    return out


def _diagonal_statements(statement, tangents: Tangents, activity: Activity):
    """With an identity seed: ``(before, after)``, the statements to emit before `statement`
    (the full tangents it reads, when no rule of `transforms/diagonal.py` applies) and its
    tangent statements when one does (else None: the statement is handled as usual)."""
    diagonals = tangents.diagonals
    if isinstance(statement, cst.Assign) and not is_append(statement):
        op = activity.operation(statement)
        if not any(t in tangents.active for t in op.targets):
            diagonals.forget(op.targets)
            return [], None  # nothing to differentiate: the diagonals it reads are not needed
        kept = diagonals.tangent_statements(op)
        if kept is not None:
            return [], kept
        read = read_names(statement.value)
        for target in statement.targets:  # ``y[0] = v`` writes into y's tangent: read it
            if not isinstance(target.target, cst.Name):
                read |= read_names(target.target)
        before = diagonals.materialize(read)
        diagonals.forget(op.targets)  # their tangents will be full ones
        return before, None
    return diagonals.materialize(read_names(statement)), None


def _forward_if(line: cst.If, tangents: Tangents, activity: Activity) -> cst.If:
    body = forward_block(list(line.body.body), tangents, activity)
    orelse = line.orelse
    if orelse is not None:
        other = forward_block(list(orelse.body.body), tangents, activity)
        orelse = orelse.with_changes(body=orelse.body.with_changes(body=tuple(other)))
    return line.with_changes(body=line.body.with_changes(body=tuple(body)), orelse=orelse)


def _tangent_statements(op: Operation, statement, tangents: Tangents) -> list:
    """The statements computing the tangents of what `op` assigns (none if inactive)."""
    if op.primitive is POP and tangents.of(op.args[0]) is not None:
        # the list's tangent loses its last element too, whether the value is used or not
        pop = cst.Call(name_expr(f"{tangents.name(op.args[0].value)}.pop"), ())
        if op.targets[0] not in tangents.active:
            return [cst.Expr(pop)]
        return [assign(tangents.name(op.targets[0]), pop)]
    if not any(t in tangents.active for t in op.targets):
        return []
    if op.primitive is COPY:
        return [assign(tangents.name(op.targets[0]), tangents.of_or_zero(op.args[0]))]
    if op.primitive is PACK:
        return [assign(tangents.name(op.targets[0]), _pack(op, statement.value, tangents))]
    if op.primitive is APPEND:
        items, value = op.args
        append = name_expr(f"{tangents.name(items.value)}.append")
        return [cst.Expr(cst.Call(append, (cst.Arg(tangents.of_or_zero(value)),)))]
    if op.primitive is POP:  # from a list without a tangent
        return [assign(tangents.name(op.targets[0]), tangents.zero(cst.Name(op.targets[0])))]
    if op.primitive is SETITEM:
        return _item_write(op, tangents)
    if op.index is not None:
        source = tangents.of(op.args[0])
        if source is None:
            return [assign(tangents.name(op.targets[0]), tangents.zero(cst.Name(op.targets[0])))]
        return [assign(tangents.name(op.targets[0]), tangents.index(source, op.index))]
    if not op.differentiable or op.rule is None:
        # a constant (zeros an item write fills in later, a count): its tangent is zero
        return [
            assign(tangents.name(t), tangents.zero(cst.Name(t)))
            for t in op.targets
            if t in tangents.active
        ]
    statements, results = tangent_of_call(op, statement, tangents)
    for target, tangent in zip(op.targets, results, strict=True):
        if target in tangents.active:
            value = tangent if tangent is not None else tangents.zero(cst.Name(target))
            statements.append(assign(tangents.name(target), value))
    return statements


def _pack(op: Operation, value: cst.BaseExpression, tangents: Tangents) -> cst.BaseExpression:
    """``(a, b)`` -> ``(ta, tb)``, ``{"k": a}`` -> ``{"k": ta}``, zeros where none; a
    NamedTuple or dataclass built, ``p = P(a, b)``, -> ``container_adjoint({0: ta, 1: tb}, p)``
    (keyed by field, as derivative code reads a record's tangent)."""
    parts = [tangents.of_or_zero(element) for element in op.args]
    if isinstance(value, cst.Call):
        pairs = tuple(cst.DictElement(op.kwargs[str(k)], part) for k, part in enumerate(parts))
        if tangents.batched:  # (a field left to its default: zeros for every direction)
            return call(
                "container_adjoint",
                cst.Dict(pairs),
                cst.Name(op.targets[0]),
                cst.Name(tangents.batch),
            )
        return call("container_adjoint", cst.Dict(pairs), cst.Name(op.targets[0]))
    elements = tuple(
        e.with_changes(value=part) for e, part in zip(value.elements, parts, strict=True)
    )
    return value.with_changes(elements=elements)


def _item_write(op: Operation, tangents: Tangents) -> list:
    """``y[index] = v``: the tangent of ``y`` gets ``tv`` (or 0) at `index`, in a copy of
    its own (a tangent may be shared with another value, as ``ty = tx`` for ``y = x``)."""
    array, value = op.args
    name = tangents.name(array.value)
    statements = []
    existing = tangents.of(array)
    if existing is None:
        statements.append(assign(name, tangents.zero(array)))
    else:
        statements.append(assign(name, call("writable_tangent", cst.Name(name))))
    new = tangents.of(value)
    written = new if new is not None else cst.Float("0.0")
    if new is None and tangents.batched:
        # zeros for every direction, shaped like the slots as written (a number standing for
        # zero is no batched tangent where the slot is a list's or a dict's element)
        written = tangents.zero(cst.Subscript(array, op.index))
    if tangents.batched:
        statements.append(
            assign(name, call("set_batch_item", cst.Name(name), index_value(op.index), written))
        )
    else:
        slots = cst.Subscript(cst.Name(name), op.index)
        statements.append(cst.Assign((cst.AssignTarget(slots),), written))
    return statements


def _user_call(op: Operation, line, tangents: Tangents):
    """``z = g(a, b)`` with `g` a user function: ``z, tz = _jvp_g(a, b, ta, tb)``, where
    ``_jvp_g`` is `g`'s own forward-mode function (generated once, shared by call sites)."""
    split = tangents.splits(op.primitive, tangents.batched, _call_kinds(op, line, tangents))
    if split not in tangents.callees:
        tangents.callees.append(split)
    original = line.body[0].value
    bound: dict = {}  # parameter -> its argument's tangent
    starred: dict = {}  # *args or **kwargs parameter -> {key: tangent}
    for param, arg, key in bind_call(split.fn, op.args, op.kwargs):
        if key is None:
            bound[param] = tangents.of_or_zero(arg)
        else:
            starred.setdefault(param, {})[key] = tangents.of_or_zero(arg)
    for param, parts in starred.items():  # a tuple of tangents, or a dict of them
        if all(isinstance(key, int) for key in parts):
            items = [cst.Element(t) for t in parts.values()]
            if len(items) == 1:  # (t,)
                items[0] = items[0].with_changes(comma=cst.Comma())
            bound[param] = cst.Tuple(tuple(items))
        else:
            items = (cst.DictElement(key_literal(k), t) for k, t in parts.items())
            bound[param] = cst.Dict(tuple(items))
    tangent_args = tuple(
        cst.Arg(bound[p], keyword=cst.Name(split.tangent_names[p])) for p in split.wrt if p in bound
    )
    if split.batch_param is not None:  # a batched callee: our number of directions
        tangent_args += (cst.Arg(cst.Name(tangents.batch), keyword=cst.Name(split.batch_param)),)
    call_ = original.with_changes(func=cst.Name(split.name), args=(*original.args, *tangent_args))
    target = op.targets[0]
    pair = cst.Tuple((cst.Element(cst.Name(target)), cst.Element(cst.Name(tangents.name(target)))))
    return line.with_changes(body=(cst.Assign((cst.AssignTarget(pair),), call_),))


def _call_kinds(op: Operation, line, tangents: Tangents) -> CallKinds:
    """What the call `line` of a user function knows of its arguments (an argument carries a
    derivative where it reads an active name)."""
    active = tangents.active
    return call_kinds(op.primitive, op, line.body[0].value, tangents.shapes, active.__contains__)


def _line(statement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine((statement,))
