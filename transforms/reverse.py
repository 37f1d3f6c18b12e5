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
import re

import libcst as cst
from s2sgrad.runtime import SHAPE_ONLY_ARGUMENTS

from .activity import Activity
from .anf import NormalForm, iter_small_statements, name_expr
from .errors import TransformError
from .naming import Namer
from .operations import COPY, PACK, POP, SETITEM, Operation, is_append, names_in
from .shapes import ShapeTokens
from .templates import Template, instantiate, load_template
from .walk import _NameReader, dotted_name, read_names, rewrite, rewrite_statement


@dataclasses.dataclass(frozen=True)
class ReverseSpec:
    """What to differentiate and what to return."""

    entry: str
    wrt: tuple[str, ...]
    wrt_is_tuple: bool
    with_value: bool
    containers: frozenset[str] = frozenset()  # parameters holding dicts, lists or tuples


def _call(func: str, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=name_expr(func), args=tuple(cst.Arg(a) for a in args))


def _assign(target: str, value: cst.BaseExpression) -> cst.Assign:
    return cst.Assign((cst.AssignTarget(cst.Name(target)),), value)


class _Adjoints:
    """The adjoint sweep being built: adjoint names and what is known about each."""

    def __init__(self, namer: Namer, shapes: ShapeTokens, active: frozenset[str]):
        self.namer = namer
        self.active = active
        self.shapes = shapes
        self.names: dict[str, str] = {}
        self.full: set[str] = set()
        self.owned: set[str] = set()
        self.lines: list[cst.BaseStatement] = []
        self.pending_comment: str | None = None
        self.last_line: int | None = None

    def fork(self) -> _Adjoints:
        """The state for one branch of an ``if``: same knowledge, its own statements."""
        branch = _Adjoints(self.namer, self.shapes, self.active)
        branch.names = dict(self.names)
        branch.full = set(self.full)
        branch.owned = set(self.owned)
        return branch

    def join(self, test: cst.BaseExpression, then: _Adjoints, other: _Adjoints) -> None:
        """Emit ``if test:`` with the two branches' adjoint code, made to agree on names: an
        adjoint only one branch assigned is ``0.0`` (a lazily broadcast zero) in the other."""
        for primal in then.names.keys() | other.names.keys():
            if primal in self.names:
                continue
            if primal not in other.names:
                other.emit(_assign(then.names[primal], cst.Float("0.0")))
                other.names[primal] = then.names[primal]
            elif primal not in then.names:
                then.emit(_assign(other.names[primal], cst.Float("0.0")))
                then.names[primal] = other.names[primal]
            elif then.names[primal] != other.names[primal]:
                other.emit(_assign(then.names[primal], cst.Name(other.names[primal])))
                other.names[primal] = then.names[primal]
        self.names = then.names
        self.full = then.full & other.full
        self.owned = then.owned & other.owned
        if not then.lines and not other.lines:
            return
        orelse = cst.Else(body=_block(other.lines)) if other.lines else None
        leading = ()
        if self.pending_comment is not None:
            leading = (cst.EmptyLine(comment=cst.Comment(self.pending_comment)),)
            self.pending_comment = None
        self.lines.append(
            cst.If(test=test, body=_block(then.lines), orelse=orelse, leading_lines=leading)
        )

    def shape_only(self, node: cst.CSTNode) -> cst.CSTNode:
        """A helper call with its shape-only arguments replaced by shape representatives."""
        if type(node) is not cst.Call:
            return node
        spelled = dotted_name(node.func)
        positions = SHAPE_ONLY_ARGUMENTS.get(spelled, ()) if spelled else ()
        if not positions:
            return node
        args = tuple(
            a.with_changes(value=self.shapes.representative(a.value))
            if i in positions and a.keyword is None
            else a
            for i, a in enumerate(node.args)
        )
        return node.with_changes(args=args)

    def emit(self, statement: cst.BaseSmallStatement) -> None:
        leading = ()
        if self.pending_comment is not None:
            leading = (cst.EmptyLine(comment=cst.Comment(self.pending_comment)),)
            self.pending_comment = None
        self.lines.append(cst.SimpleStatementLine((statement,), leading_lines=leading))

    def comment(self, text: str) -> None:
        self.pending_comment = text

    def has(self, primal: str) -> bool:
        return primal in self.names

    def contribute(
        self, primal: str, value: cst.BaseExpression, full: bool, fresh: bool = False
    ) -> None:
        """Add `value` to the adjoint of `primal` (assigning it if this is the first part)."""
        if primal not in self.names:
            name = self.names[primal] = self.namer.adjoint(primal)
            self.emit(_assign(name, value))
            if full:
                self.full.add(name)
                if fresh:
                    self.owned.add(name)
            return
        name = self.names[primal]
        if name in self.owned:
            self.emit(cst.AugAssign(cst.Name(name), cst.AddAssign(), value))
            return
        self.emit(_assign(name, cst.BinaryOperation(cst.Name(name), cst.Add(), value)))
        if full:
            self.full.add(name)
        if name in self.full:
            self.owned.add(name)  # the sum is a new array of the full shape

    def make_full(self, primal: str) -> str:
        """Ensure the adjoint of `primal` has exactly its shape; return its name."""
        name = self.names[primal]
        if name not in self.full and not self.shapes.is_scalar(cst.Name(primal)):
            shape_of = self.shapes.representative(cst.Name(primal))
            self.emit(_assign(name, _call("match_shape", cst.Name(name), shape_of)))
        self.full.add(name)
        return name


@dataclasses.dataclass
class Sweeps:
    """The two halves of a reverse-mode derivative: the primal sweep (the function's own
    statements, with the pushes and saves the adjoint needs) and the adjoint sweep."""

    primal: list
    adjoint: list
    adjoints: _Adjoints
    callees: list  # the splits of user functions the code calls (see transforms/calls.py)


def reverse(
    nf: NormalForm,
    activity: Activity,
    shapes: ShapeTokens,
    spec: ReverseSpec,
    namer: Namer,
    splits=None,
) -> tuple[cst.FunctionDef, list]:
    """Build the gradient function of `nf` (see the module docstring); also return the
    splits of the user functions it calls."""
    sweeps = reverse_sweeps(nf, activity, shapes, namer, cst.Float("1.0"), True, splits)
    returned = _gradients(spec, sweeps.adjoints, nf.output)
    body = [*sweeps.primal, *sweeps.adjoint, cst.SimpleStatementLine((cst.Return(returned),))]
    funcdef = nf.funcdef.with_changes(
        name=cst.Name(spec.entry),
        params=without_defaults(nf.funcdef.params),
        body=cst.IndentedBlock(body=tuple(body)),
        returns=None,
    )
    return funcdef, sweeps.callees


def reverse_sweeps(
    nf: NormalForm,
    activity: Activity,
    shapes: ShapeTokens,
    namer: Namer,
    seed: cst.BaseExpression,
    scalar_output: bool,
    splits=None,
) -> Sweeps:
    """The primal and adjoint sweeps of `nf`, the output's adjoint starting as `seed`."""
    adjoints = _Adjoints(namer, shapes, activity.active)
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
    context = _Context(nf, activity, shapes, namer, _line_comments(nf), reassigned, splits)
    _reverse_block(list(nf.funcdef.body.body), adjoints, context)
    primal = _with_primal_edits(
        [line for line in nf.funcdef.body.body if not _is_return(line)], context.primal_edits
    )
    return Sweeps(primal, list(adjoints.lines), adjoints, context.callees)


@dataclasses.dataclass(frozen=True)
class _Context:
    nf: NormalForm
    activity: Activity
    shapes: ShapeTokens
    namer: Namer
    comments: dict[int, str]
    reassigned: frozenset[str]  # names assigned more than once (joins, loop headers)
    splits: object = None  # gives the forward/backward pair of a user function
    primal_edits: dict = dataclasses.field(default_factory=dict)  # id(line) -> (before, line)
    callees: list = dataclasses.field(default_factory=list)


def _reverse_block(lines: list, adjoints: _Adjoints, context: _Context) -> None:
    """Append the adjoint of the normal-form `lines` (last statement first) to `adjoints`."""
    for line in reversed(lines):
        if isinstance(line, (cst.For, cst.While)):
            _reverse_for(line, adjoints, context)
            continue
        if isinstance(line, cst.If):
            then, other = adjoints.fork(), adjoints.fork()
            _reverse_block(list(line.body.body), then, context)
            if line.orelse is not None:
                _reverse_block(list(line.orelse.body.body), other, context)
            _comment_line(adjoints, line, context)
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
                adjoints.emit(_assign(name, cst.Float("0.0")))
                adjoints.full.discard(name)
                adjoints.owned.discard(name)


def _reverse_for(line: cst.For, adjoints: _Adjoints, context: _Context) -> None:
    """The adjoint of ``for i in r: body``: ``for i in reversed(r):`` running the body's
    adjoint. Each primal iteration pushes (one tuple, before its back-edge copies) the values
    of the iteration that the adjoint reads; each adjoint iteration starts by popping them."""
    if isinstance(line, cst.For):
        target = line.target.value
        loop_target = line.target
        iterated = line.iter
        if target in context.nf.loop_counts:  # it may break: only the iterations that ran
            count = cst.Name(context.nf.loop_counts[target])
            iterated = cst.Subscript(line.iter, (cst.SubscriptElement(cst.Slice(None, count)),))
        backwards = cst.Call(cst.Name("reversed"), (cst.Arg(iterated),))
    else:  # while: run as many times as the primal loop counted
        target = line.test.value
        loop_target = cst.Name(context.namer.fresh("_"))
        counted = cst.Name(context.nf.loop_counts[target])
        backwards = cst.Call(cst.Name("range"), (cst.Arg(counted),))
    headers = set(context.nf.loop_headers.get(target, ()))
    body = list(line.body.body)
    body_ops = [
        context.activity.operation(s)
        for s in iter_small_statements(body)
        if isinstance(s, cst.Assign)
    ]
    local = {t for op in body_ops for t in op.targets} - headers
    reads: list[str] = []
    line.visit(_NameReader(reads))
    indexed = {
        op.args[0].value
        for op in body_ops
        if op.index is not None and op.args and isinstance(op.args[0], cst.Name)
    }
    written = {op.args[0].value for op in body_ops if op.primitive in (SETITEM, POP)}
    for name in sorted(written & set(adjoints.names)):  # a buffer the loop updates in place
        adjoint = adjoints.names[name]
        if adjoint not in adjoints.owned:
            adjoints.emit(
                _assign(adjoint, _call("fresh_adjoint", cst.Name(adjoint), cst.Name(name)))
            )
            adjoints.full.add(adjoint)
            adjoints.owned.add(adjoint)
    # adjoints that accumulate across iterations exist before the adjoint loop starts
    for name in dict.fromkeys([*reads, *sorted(headers)]):
        if name in local or name not in context.activity.active or adjoints.has(name):
            continue
        adjoint = adjoints.names[name] = adjoints.namer.adjoint(name)
        if name in indexed or name in written:
            adjoints.emit(_assign(adjoint, _call("zero_adjoint", cst.Name(name))))
            adjoints.full.add(adjoint)
            adjoints.owned.add(adjoint)
        else:
            adjoints.emit(_assign(adjoint, cst.Float("0.0")))
    inner = adjoints.fork()
    _reverse_block(body, inner, context)
    adjoints.full &= inner.full
    adjoints.owned &= inner.owned
    if not inner.lines:
        return
    primal_body = _with_primal_edits(body, context.primal_edits)
    assigned = _assigned_names(primal_body)
    needed_reads: list[str] = []
    for adjoint_line in inner.lines:
        adjoint_line.visit(_NameReader(needed_reads))
    saved = [n for n in dict.fromkeys(needed_reads) if n in assigned and n != target]
    recomputed = _recomputable(body, target, headers | local, context)
    prologue = _recompute(saved, recomputed)
    saved = [n for n in saved if n not in recomputed] + [
        n for n in _inputs_of(prologue) if n in assigned and n not in recomputed and n != target
    ]
    saved = list(dict.fromkeys(saved))
    before: list[cst.BaseStatement] = []
    adjoint_body = [cst.SimpleStatementLine((s,)) for s in prologue] + list(inner.lines)
    if saved:
        stack = context.namer.fresh("_stack")
        defined_outside = _assigned_outside(context, local)
        before.append(cst.SimpleStatementLine((_assign(stack, cst.List(())),)))
        for name in saved:
            if name not in defined_outside:  # unbound before the first iteration's push
                before.append(cst.SimpleStatementLine((_assign(name, cst.Name("None")),)))
        shape_only = _read_only_for_shape(saved, adjoint_body)
        pushed = cst.Tuple(
            tuple(
                cst.Element(_call("np.shape", cst.Name(n)) if n in shape_only else cst.Name(n))
                for n in saved
            )
        )
        values = cst.Tuple(tuple(cst.Element(cst.Name(n)) for n in saved))
        push = cst.Expr(cst.Call(name_expr(f"{stack}.append"), (cst.Arg(pushed),)))
        primal_body = _push_at_path_ends(primal_body, headers, push)
        pop = cst.Assign((cst.AssignTarget(values),), cst.Call(name_expr(f"{stack}.pop"), ()))
        adjoint_body.insert(0, cst.SimpleStatementLine((pop,)))
    context.primal_edits[id(line)] = (before, line.with_changes(body=_block(primal_body)))
    _comment_line(adjoints, line, context)
    leading = ()
    if adjoints.pending_comment is not None:
        leading = (cst.EmptyLine(comment=cst.Comment(adjoints.pending_comment)),)
        adjoints.pending_comment = None
    adjoints.lines.append(
        cst.For(
            target=loop_target,
            iter=backwards,
            body=_block(adjoint_body),
            leading_lines=leading,
        )
    )


# helpers whose shape-only arguments may be given as a shape tuple (they read it with _shape)
_TAKES_SHAPES = frozenset({"unbroadcast", "unreduce", "reduced_count", "match_shape"})


def _read_only_for_shape(names: list[str], lines: list) -> set[str]:
    """Those of `names` that `lines` read only as shape-only helper arguments: a loop pushes
    their shapes instead of their values, so the adjoint keeps less memory alive."""
    all_reads: list[str] = []
    shape_reads: list[str] = []

    class _Reads(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            helper = dotted_name(node.func)
            positions = SHAPE_ONLY_ARGUMENTS.get(helper, ()) if helper in _TAKES_SHAPES else ()
            for i, arg in enumerate(node.args):
                if i in positions and isinstance(arg.value, cst.Name):
                    shape_reads.append(arg.value.value)

    for line in lines:
        line.visit(_NameReader(all_reads))
        line.visit(_Reads())
    counts = {n: all_reads.count(n) for n in names}
    return {n for n in names if counts[n] and shape_reads.count(n) == counts[n]}


def _recomputable(body: list, target: str, changing: set[str], context: _Context) -> dict:
    """Statements at the top of a loop body that the adjoint can run again more cheaply than
    it can push and pop their values: element reads by basic indices and arithmetic on
    numbers, from the loop index and values the loop does not change."""
    found: dict[str, cst.Assign] = {}
    for line in body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        statement = line.body[0]
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
            continue
        name_node = statement.targets[0].target
        if not isinstance(name_node, cst.Name):
            continue
        name = name_node.value
        value = statement.value
        inputs = read_names(value, [])
        usable = all(n == target or n in found or n not in changing for n in inputs)
        cheap = (
            isinstance(value, cst.Subscript) and _is_basic_index(value.slice, context.shapes)
        ) or (
            isinstance(value, (cst.BinaryOperation, cst.UnaryOperation))
            and context.shapes.is_scalar(name_node)
        )
        if usable and cheap and name not in context.reassigned:
            found[name] = statement
    return found


def _recompute(names: list[str], recomputable: dict) -> list[cst.Assign]:
    """The statements recomputing `names` (and what they need), in their original order."""
    wanted: set[str] = set()
    pending = [n for n in names if n in recomputable]
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        pending += [n for n in read_names(recomputable[name].value, []) if n in recomputable]
    return [statement for name, statement in recomputable.items() if name in wanted]


def _inputs_of(statements: list) -> list[str]:
    names: list[str] = []
    for statement in statements:
        read_names(statement.value, names)
    return names


def _assigned_names(lines) -> set[str]:
    names: set[str] = set()
    for statement in iter_small_statements(lines):
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                names.update(names_in(target.target))
    for line in lines:
        if isinstance(line, (cst.For, cst.While)):
            if isinstance(line, cst.For):
                names.add(line.target.value)
            names |= _assigned_names(line.body.body)
        elif isinstance(line, cst.If):
            names |= _assigned_names(line.body.body)
            if line.orelse is not None:
                names |= _assigned_names(line.orelse.body.body)
    return names


def _assigned_outside(context: _Context, local: set[str]) -> set[str]:
    names = set(context.nf.params)
    for _, op in context.activity.operations:
        names.update(t for t in op.targets if t not in local)
    return names


def _insert_before_back_edge(lines: list, headers: set[str], statement) -> list:
    """`lines` with `statement` before the trailing copies to loop header names."""
    position = len(lines)
    while position > 0:
        line = lines[position - 1]
        if not (
            isinstance(line, cst.SimpleStatementLine)
            and isinstance(line.body[0], cst.Assign)
            and isinstance(line.body[0].targets[0].target, cst.Name)
            and line.body[0].targets[0].target.value in headers
        ):
            break
        position -= 1
    return [*lines[:position], cst.SimpleStatementLine((statement,)), *lines[position:]]


def _push_at_path_ends(lines: list, headers: set[str], push) -> list:
    """`push` at the end of every path through a loop body (normal, continue or break),
    before the path's copies to the header names (which overwrite values it pushes)."""
    lines = [line for line in lines if not _is_pass(line)]
    if lines and isinstance(lines[-1], cst.If):
        line = lines[-1]
        body = _push_at_path_ends(list(line.body.body), headers, push)
        line = line.with_changes(body=line.body.with_changes(body=tuple(body)))
        if line.orelse is not None:
            other = _push_at_path_ends(list(line.orelse.body.body), headers, push)
            block = line.orelse.body.with_changes(body=tuple(other))
            line = line.with_changes(orelse=line.orelse.with_changes(body=block))
        else:  # no else: the path that skips the if ends after it
            line = line.with_changes(
                orelse=cst.Else(body=_block([cst.SimpleStatementLine((push,))]))
            )
        return [*lines[:-1], line]
    if lines and _is_break(lines[-1]):
        return [*_insert_before_back_edge(lines[:-1], headers, push), lines[-1]]
    return _insert_before_back_edge(lines, headers, push)


def _is_pass(line) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Pass)


def _is_break(line) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Break)


def _with_primal_edits(lines: list, edits: dict) -> list:
    """The primal lines with each loop replaced by its edited form (pushes) and preceded by
    its set-up statements (the stack, initial values)."""
    result = []
    for line in lines:
        if isinstance(line, cst.SimpleStatementLine) and id(line) in edits:
            before, edited = edits[id(line)]
            result.extend(before)
            result.append(edited)
        elif isinstance(line, (cst.For, cst.While)) and id(line) in edits:
            before, edited = edits[id(line)]
            result.extend(before)
            result.append(edited)
        elif isinstance(line, (cst.For, cst.While)):
            inner = tuple(_with_primal_edits(list(line.body.body), edits))
            result.append(line.with_changes(body=line.body.with_changes(body=inner)))
        elif isinstance(line, cst.If):
            inner = tuple(_with_primal_edits(list(line.body.body), edits))
            body = line.body.with_changes(body=inner)
            orelse = line.orelse
            if orelse is not None:
                orelse = orelse.with_changes(
                    body=orelse.body.with_changes(
                        body=tuple(_with_primal_edits(list(orelse.body.body), edits))
                    )
                )
            result.append(line.with_changes(body=body, orelse=orelse))
        else:
            result.append(line)
    return result


def _differentiate_append(op: Operation, adjoints: _Adjoints) -> None:
    """``items.append(v)``: ``v`` gets the part of ``ditems`` for the last position, then the
    adjoint pops it, so earlier appends find their own position at the end of the list."""
    items, value = op.args
    if not adjoints.has(items.value):
        return
    last = cst.BinaryOperation(_call("len", items), cst.Subtract(), cst.Integer("1"))
    if isinstance(value, cst.Name) and value.value in adjoints.active:
        part = _call("part", cst.Name(adjoints.names[items.value]), last)
        adjoints.contribute(value.value, part, full=False)
    adjoints.emit(cst.Expr(cst.Call(name_expr(f"{items.value}.pop"), ())))


def _differentiate_pop(op: Operation, adjoints: _Adjoints) -> None:
    """``v = items.pop()``: ``dv`` goes to the position ``v`` left (now ``len(items)``), and
    the adjoint puts ``v`` back, so the list is as it was for earlier adjoints. With append's
    adjoint, this makes a list used as a stack differentiable, the generated code's own too."""
    items = op.args[0]
    target = op.targets[0]
    if items.value not in adjoints.active:
        return
    if adjoints.has(target):
        if not adjoints.has(items.value):
            name = adjoints.names[items.value] = adjoints.namer.adjoint(items.value)
            adjoints.emit(_assign(name, _call("zero_adjoint", items)))
        dv = cst.Name(adjoints.names[target])
        where = _call("len", items)
        adjoints.emit(
            cst.Expr(_call("accumulate_at", cst.Name(adjoints.names[items.value]), where, dv))
        )
    adjoints.emit(
        cst.Expr(cst.Call(name_expr(f"{items.value}.append"), (cst.Arg(cst.Name(target)),)))
    )


def _differentiate_pack(op: Operation, adjoints: _Adjoints) -> None:
    """``t = (a, b)`` or ``{"k": a}``: each element gets its part of ``dt``."""
    target = op.targets[0]
    if not adjoints.has(target):
        return
    dt = cst.Name(adjoints.names[target])
    for position, element in enumerate(op.args):
        if isinstance(element, cst.Name) and element.value in adjoints.active:
            key = op.kwargs[str(position)]
            adjoints.contribute(element.value, _call("part", dt, key), full=False)


def _differentiate_user_call(op: Operation, line, adjoints: _Adjoints, context: _Context) -> None:
    """``z = g(a, b)`` with `g` a user function: the primal calls ``g``'s generated forward
    half, which also returns what its backward half needs; the adjoint calls the backward half
    with that and ``dz``, and gets one adjoint per parameter of ``g``."""
    target = op.targets[0]
    if not adjoints.has(target):
        return
    split = context.splits(op.primitive)
    if split not in context.callees:
        context.callees.append(split)
    saved = context.namer.temp()
    call = line.body[0].value
    forward = cst.Assign(
        (
            cst.AssignTarget(
                cst.Tuple((cst.Element(cst.Name(target)), cst.Element(cst.Name(saved))))
            ),
        ),
        call.with_changes(func=cst.Name(split.forward)),
    )
    context.primal_edits[id(line)] = ([], line.with_changes(body=(forward,)))
    grads = context.namer.temp()
    dz = cst.Name(adjoints.names[target])
    adjoints.emit(_assign(grads, _call(split.backward, cst.Name(saved), dz)))
    bound = list(zip(split.params, op.args, strict=False))
    bound += [(key, value) for key, value in op.kwargs.items()]
    for param, arg in bound:
        if isinstance(arg, cst.Name) and arg.value in adjoints.active and param in split.params:
            index = cst.Integer(str(split.params.index(param)))
            part = cst.Subscript(cst.Name(grads), (cst.SubscriptElement(cst.Index(index)),))
            adjoints.contribute(arg.value, part, full=False)


def _differentiate_item_write(op: Operation, line, adjoints: _Adjoints, context: _Context) -> None:
    """``y[index] = v``: the primal saves the slots first; the adjoint gives ``v`` the adjoint
    of the slots, zeroes it (their old values were overwritten) and puts the old values back,
    so the adjoints of earlier statements read ``y`` as it was when they ran."""
    array, value = op.args
    saved = context.namer.temp()
    save = cst.SimpleStatementLine(
        (_assign(saved, _call("saved_slot", array, index_value(op.index))),)
    )
    context.primal_edits[id(line)] = ([save], line)
    if array.value in adjoints.names:
        name = adjoints.names[array.value]
        if name not in adjoints.owned:
            adjoints.emit(_assign(name, _call("fresh_adjoint", cst.Name(name), array)))
            adjoints.full.add(name)
            adjoints.owned.add(name)
        slots = cst.Subscript(cst.Name(name), op.index)
        if isinstance(value, cst.Name) and value.value in adjoints.active:
            # a copy: the slots are zeroed next, and a slice of them is a view
            contribution = _call("saved_slot", cst.Name(name), index_value(op.index))
            if not context.shapes.is_scalar(value):
                contribution = _call("unbroadcast", contribution, value)
            adjoints.contribute(value.value, contribution, full=True)
        adjoints.emit(cst.Assign((cst.AssignTarget(slots),), cst.Float("0.0")))
    restore = cst.Subscript(array, op.index)
    adjoints.emit(cst.Assign((cst.AssignTarget(restore),), cst.Name(saved)))


def _comment_line(adjoints: _Adjoints, line: cst.If, context: _Context) -> None:
    for empty in line.leading_lines:
        match = _LINE_COMMENT.fullmatch(empty.comment.value) if empty.comment else None
        if match:
            adjoints.comment(f"# adjoint of line {match.group(1)}: {match.group(2)}")
            adjoints.last_line = int(match.group(1))


def _is_return(line) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Return)


def _block(lines: list) -> cst.IndentedBlock:
    return cst.IndentedBlock(body=tuple(lines) or (cst.SimpleStatementLine((cst.Pass(),)),))


def _differentiate(
    op: Operation, adjoints: _Adjoints, shapes, nf: NormalForm, namer: Namer
) -> None:
    if op.primitive is COPY:
        g = cst.Name(adjoints.names[op.targets[0]])
        adjoints.contribute(op.args[0].value, g, full=g.value in adjoints.full)
        return
    if op.index is not None:
        _differentiate_index(op, adjoints, shapes)
        return
    rule = op.rule
    target, ans = _result(op, nf)
    if not adjoints.has(target):
        return  # only components without a gradient were used
    g = cst.Name(adjoints.names[target])
    if not rule.elementwise:
        g = cst.Name(adjoints.make_full(target))
    template = load_template(rule.vjp)
    bound = _bind(template, op, nf)
    leading = dict(zip(template.leading, (g, ans), strict=True))
    if template.per_argnum:
        for position, arg in enumerate(op.args):
            if _active_names(arg, adjoints, op):
                argnum = {"argnum": cst.Integer(str(position))}
                instance = instantiate(template, {**bound, **leading, **argnum}, namer)
                _emit_instance(instance, adjoints)
                _contribute(arg, instance.contributions[0], op, adjoints, shapes, g)
        return
    instance = instantiate(template, {**bound, **leading}, namer)
    _emit_instance(instance, adjoints)
    pairs = [
        (bound[param], contribution)
        for param, contribution in zip(template.params, instance.contributions, strict=False)
        if contribution is not None and param in bound and _active_names(bound[param], adjoints, op)
    ]
    for arg, contribution in _merge_repeated(pairs):
        _contribute(arg, contribution, op, adjoints, shapes, g)


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


def _emit_instance(instance, adjoints: _Adjoints) -> None:
    for statement in instance.statements:
        adjoints.emit(rewrite_statement(statement, adjoints.shape_only))


def _active_names(expr: cst.BaseExpression, adjoints: _Adjoints, op: Operation) -> bool:
    return any(name in adjoints.active for name in names_in(expr))


def _contribute(
    arg, contribution, op: Operation, adjoints: _Adjoints, shapes: ShapeTokens, g
) -> None:
    if isinstance(arg, (cst.List, cst.Tuple)):
        # a sequence argument (np.concatenate([a, b])): its contribution is a sequence too
        parts = adjoints.namer.temp()
        adjoints.emit(_assign(parts, contribution))
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
            others = (
                []
                if full
                else [
                    shapes.representative(a)
                    for a in op.args
                    if a is not arg and not shapes.is_scalar(a) and not _is_literal_none(a)
                ]
            )
            contribution = _call("unbroadcast", contribution, shapes.representative(arg), *others)
    else:
        # rule results have their argument's shape, except reductions', which broadcast
        full = not op.rule.reduction
    adjoints.contribute(arg.value, contribution, full=full)


def _is_literal_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _differentiate_index(op: Operation, adjoints: _Adjoints, shapes: ShapeTokens) -> None:
    source = op.args[0]
    if not isinstance(source, cst.Name) or source.value not in adjoints.active:
        return
    g = cst.Name(adjoints.names[op.targets[0]])
    primal = source.value
    if not adjoints.has(primal):
        name = adjoints.names[primal] = adjoints.namer.adjoint(primal)
        adjoints.emit(_assign(name, _call("zero_adjoint", source)))
        adjoints.full.add(name)
        adjoints.owned.add(name)
    name = adjoints.names[primal]
    if name not in adjoints.owned:
        adjoints.emit(_assign(name, _call("fresh_adjoint", cst.Name(name), source)))
        adjoints.full.add(name)
        adjoints.owned.add(name)
    if _is_basic_index(op.index, shapes):
        sliced = cst.Subscript(cst.Name(name), op.index)
        adjoints.emit(cst.AugAssign(sliced, cst.AddAssign(), g))
    else:
        adjoints.emit(cst.Expr(_call("accumulate_at", cst.Name(name), index_value(op.index), g)))


def _is_basic_index(elements, shapes: ShapeTokens) -> bool:
    """Slices, integers and numbers only: each element is picked at most once, so the
    adjoint can be added in place with ``dx[index] += g``."""
    for element in elements:
        inner = element.slice
        if isinstance(inner, cst.Slice) or shapes.is_integer_index(element):
            continue
        value = inner.value
        if isinstance(value, cst.Integer) or (
            isinstance(value, cst.UnaryOperation) and isinstance(value.expression, cst.Integer)
        ):
            continue
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        if isinstance(value, cst.Ellipsis):
            continue
        return False
    return True


def index_value(elements) -> cst.BaseExpression:
    """Subscript elements (``1:, i``) as a value (``(slice(1, None), i)``)."""
    values = []
    for element in elements:
        inner = element.slice
        if isinstance(inner, cst.Index):
            values.append(inner.value)
        else:
            bounds = [
                b if b is not None else cst.Name("None")
                for b in (inner.lower, inner.upper, inner.step)
            ]
            values.append(_call("slice", *bounds))
    if len(values) == 1:
        return values[0]
    return cst.Tuple(tuple(cst.Element(v) for v in values))


def _bind(template: Template, op: Operation, nf: NormalForm) -> dict[str, cst.BaseExpression]:
    """Match the call's arguments to the template's parameters, as Python would."""
    bound: dict[str, cst.BaseExpression] = {}
    positional = list(op.args)
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
    for keyword, value in op.kwargs.items():
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
    spec: ReverseSpec, adjoints: _Adjoints, output: cst.BaseExpression
) -> cst.BaseExpression:
    grads = []
    for name in spec.wrt:
        if name in spec.containers:  # the gradient has the argument's structure
            adjoint = cst.Name(adjoints.names[name]) if adjoints.has(name) else cst.Float("0.0")
            grads.append(_call("as_structure", adjoint, cst.Name(name)))
        elif adjoints.has(name):
            adjoint = adjoints.names[name]
            if adjoint in adjoints.full or adjoints.shapes.is_scalar(cst.Name(name)):
                grads.append(cst.Name(adjoint))
            else:
                grads.append(_call("match_shape", cst.Name(adjoint), cst.Name(name)))
        else:
            grads.append(_call("zero_adjoint", cst.Name(name)))
    result = cst.Tuple(tuple(cst.Element(g) for g in grads)) if spec.wrt_is_tuple else grads[0]
    if spec.with_value:
        return cst.Tuple((cst.Element(output), cst.Element(result)))
    return result


_LINE_COMMENT = re.compile(r"# line (\d+): (.*)")


def _line_comments(nf: NormalForm) -> dict[int, str]:
    comments: dict[int, str] = {}

    def scan(lines) -> None:
        for line in lines:
            for empty in line.leading_lines:
                match = _LINE_COMMENT.fullmatch(empty.comment.value) if empty.comment else None
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
