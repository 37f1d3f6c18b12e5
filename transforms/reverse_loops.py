"""The adjoint of a loop: run backwards, each iteration popping what its forward run pushed.

`reverse_loop` handles ``for`` (over a range) and ``while`` loops in normal form; the rest of
the reverse pass is in `reverse`. Only what the loop's adjoint reads is pushed, one tuple per
iteration (shapes only, where only shapes are read); what is cheaper to recompute is
recomputed instead.
"""

from __future__ import annotations

import libcst as cst
from s2sgrad.runtime import SHAPE_ONLY_ARGUMENTS

from .adjoints import Adjoints, Context, assign, block, call, comment_line, is_basic_index
from .anf import name_expr
from .blocks import iter_small_statements
from .operations import POP, SETITEM, is_append, names_in
from .walk import _NameReader, dotted_name, read_names, renamed, visit


def reverse_loop(line: cst.For, adjoints: Adjoints, context: Context) -> None:
    """The adjoint of ``for i in r: body``: ``for i in backwards(r):`` running the body's
    adjoint. Each primal iteration pushes (one tuple, before its back-edge copies) the values
    of the iteration that the adjoint reads; each adjoint iteration starts by popping them."""
    if isinstance(line, cst.For):
        target = line.target.value
        loop_target = line.target
        iterated = line.iter
        if target in context.nf.loop_counts:  # it may break: only the iterations that ran
            count = cst.Name(context.nf.loop_counts[target])
            iterated = cst.Subscript(line.iter, (cst.SubscriptElement(cst.Slice(None, count)),))
        backwards = cst.Call(cst.Name("backwards"), (cst.Arg(iterated),))
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
    # names the body binds afresh; a slot write (``h[i] = v``) changes a container that
    # outlives the iteration, and so must its adjoint
    local = {t for op in body_ops if op.primitive is not SETITEM for t in op.targets} - headers
    reads: list[str] = []
    visit(line, _NameReader(reads))
    indexed = {
        op.args[0].value
        for op in body_ops
        if op.index is not None and op.args and isinstance(op.args[0], cst.Name)
    }
    written = {op.args[0].value for op in body_ops if op.primitive in (SETITEM, POP)}
    appended = {s.value.func.value.value for s in iter_small_statements(body) if is_append(s)}
    for name in sorted(written & set(adjoints.names)):  # a buffer the loop updates in place
        adjoint = adjoints.names[name]
        if adjoint not in adjoints.owned:
            adjoints.emit(assign(adjoint, call("fresh_adjoint", cst.Name(adjoint), cst.Name(name))))
            adjoints.full.add(adjoint)
            adjoints.owned.add(adjoint)
    # adjoints that accumulate across iterations exist before the adjoint loop starts
    for name in dict.fromkeys([*reads, *sorted(headers)]):
        if name in local or name not in context.activity.active or adjoints.has(name):
            continue
        adjoint = adjoints.names[name] = adjoints.namer.adjoint(name)
        if name in indexed or name in written:
            adjoints.emit(assign(adjoint, call("zero_adjoint", cst.Name(name))))
            adjoints.full.add(adjoint)
            adjoints.owned.add(adjoint)
        else:
            adjoints.emit(assign(adjoint, cst.Float("0.0")))
    # an adjoint the body resets to 0.0 (a name it reassigns, as a loop header) is a number
    # in the next iteration: not full, nor owned, anywhere in the body
    for name in {t for op in body_ops for t in op.targets} & context.reassigned:
        if adjoints.has(name):
            adjoints.full.discard(adjoints.names[name])
            adjoints.owned.discard(adjoints.names[name])
    inner = adjoints.fork()
    context.reverse_block(body, inner, context)
    adjoints.full &= inner.full
    adjoints.owned &= inner.owned
    if not inner.lines:
        return
    primal_body = with_primal_edits(body, context.primal_edits)
    assigned = assigned_names(primal_body)
    needed_reads: list[str] = []
    for adjoint_line in inner.lines:
        visit(adjoint_line, _NameReader(needed_reads))
    saved = [n for n in dict.fromkeys(needed_reads) if n in assigned and n != target]
    recomputed = _recomputable(body, target, headers | local | written | appended, context)
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
        before.append(cst.SimpleStatementLine((assign(stack, cst.List(())),)))
        for name in saved:
            if name not in defined_outside:  # unbound before the first iteration's push
                before.append(cst.SimpleStatementLine((assign(name, cst.Name("None")),)))
        shape_only = _read_only_for_shape(saved, adjoint_body)
        pushed = cst.Tuple(
            tuple(
                cst.Element(call("np.shape", cst.Name(n)) if n in shape_only else cst.Name(n))
                for n in saved
            )
        )
        # a shape is popped into a name of its own (``E_shape``), never a value's name,
        # which a debugger would show holding a tuple
        shapes = {n: context.namer.fresh(f"{n}_shape") for n in saved if n in shape_only}
        if shapes:
            adjoint_body = [renamed(statement, shapes) for statement in adjoint_body]
        popped = [shapes.get(n, n) for n in saved]
        values = cst.Tuple(tuple(cst.Element(cst.Name(n)) for n in popped))
        push = cst.Expr(cst.Call(name_expr(f"{stack}.append"), (cst.Arg(pushed),)))
        primal_body = _push_at_path_ends(primal_body, headers, push)
        pop = cst.Assign((cst.AssignTarget(values),), cst.Call(name_expr(f"{stack}.pop"), ()))
        adjoint_body.insert(0, cst.SimpleStatementLine((pop,)))
    context.primal_edits[id(line)] = (before, line.with_changes(body=block(primal_body)))
    comment_line(adjoints, line, context)
    leading = ()
    if adjoints.pending_comment is not None:
        leading = (cst.EmptyLine(comment=cst.Comment(adjoints.pending_comment)),)
        adjoints.pending_comment = None
    adjoints.lines.append(
        cst.For(
            target=loop_target,
            iter=backwards,
            body=block(adjoint_body),
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
        visit(line, _NameReader(all_reads))
        visit(line, _Reads())
    counts = {n: all_reads.count(n) for n in names}
    return {n for n in names if counts[n] and shape_reads.count(n) == counts[n]}


def _recomputable(body: list, target: str, changing: set[str], context: Context) -> dict:
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
            isinstance(value, cst.Subscript) and is_basic_index(value.slice, context.shapes)
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


def assigned_names(lines) -> set[str]:
    names: set[str] = set()
    for statement in iter_small_statements(lines):
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                names.update(names_in(target.target))
    for line in lines:
        if isinstance(line, (cst.For, cst.While)):
            if isinstance(line, cst.For):
                names.add(line.target.value)
            names |= assigned_names(line.body.body)
        elif isinstance(line, cst.If):
            names |= assigned_names(line.body.body)
            if line.orelse is not None:
                names |= assigned_names(line.orelse.body.body)
    return names


def _assigned_outside(context: Context, local: set[str]) -> set[str]:
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
            other_block = line.orelse.body.with_changes(body=tuple(other))
            line = line.with_changes(orelse=line.orelse.with_changes(body=other_block))
        else:  # no else: the path that skips the if ends after it
            line = line.with_changes(
                orelse=cst.Else(body=block([cst.SimpleStatementLine((push,))]))
            )
        return [*lines[:-1], line]
    if lines and _is_break(lines[-1]):
        return [*_insert_before_back_edge(lines[:-1], headers, push), lines[-1]]
    return _insert_before_back_edge(lines, headers, push)


def _is_pass(line) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Pass)


def _is_break(line) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Break)


def with_primal_edits(lines: list, edits: dict) -> list:
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
            inner = tuple(with_primal_edits(list(line.body.body), edits))
            result.append(line.with_changes(body=line.body.with_changes(body=inner)))
        elif isinstance(line, cst.If):
            inner = tuple(with_primal_edits(list(line.body.body), edits))
            body = line.body.with_changes(body=inner)
            orelse = line.orelse
            if orelse is not None:
                orelse = orelse.with_changes(
                    body=orelse.body.with_changes(
                        body=tuple(with_primal_edits(list(orelse.body.body), edits))
                    )
                )
            result.append(line.with_changes(body=body, orelse=orelse))
        else:
            result.append(line)
    return result
