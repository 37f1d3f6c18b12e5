"""Pass 8, optimize: make the generated function what a careful person would write.

Input and output: a ``def`` whose body is a flat list of one-statement lines (the reverse
pass's output). Four rewrites, repeated until nothing changes:

- propagation: ``a = b`` and ``a = 1.0`` disappear, uses of ``a`` read ``b`` / ``1.0``
  (only for names assigned once and never updated in place);
- folding: arithmetic on literals is computed (``2 - 1`` is ``1``) and identities dropped
  (``x * 1.0``, ``x + 0``, ``x ** 1``, ``--x``);
- inlining: a temporary (``_t3``, ``_dt3``) used once is substituted into its use, so
  expressions read as written (``y = np.sin(x) * x``) rather than one operation per line;
- dead code: assignments nobody reads are removed. A removed line's source comment moves to
  the next line of the same group.
"""

from __future__ import annotations

import collections

import libcst as cst

from .fold import fold
from .lines import (
    COMPOUND,
    Marked,
    alias_groups,
    base_name,
    blocks,
    carry_comments,
    head,
    is_dropped,
    is_item_write,
    is_name,
    on_branches,
    replace_line,
    single_name_assign,
    substitute_line,
    usage,
    widened,
    with_blocks,
)
from .walk import nesting_depth, read_names, substitute_names

_TEMP_PREFIXES = ("_t", "_d")
MAX_NESTING = 40  # deepest expression inlining and fusing build


# -- propagation ----------------------------------------------------------------------------


def propagate(lines: list, params: frozenset[str]) -> tuple[list, bool]:
    """Replace copies and constants by what they copy, in every block.

    ``a = b`` disappears if `a` is assigned once and `b` never changes after that line in
    textual order (which, with branches, is a conservative stand-in for "on any path")."""
    writes: collections.Counter = collections.Counter()
    mutated: set[str] = set()
    last_change: dict[str, int] = {}
    index_of: dict[int, int] = {}

    def scan(block) -> None:
        for line in block:
            if isinstance(line, COMPOUND):
                for inner in blocks(line):
                    scan(inner)
                if isinstance(line, cst.For):  # the target changes on every iteration
                    last_change[line.target.value] = len(index_of)
                    writes[line.target.value] += 2
                continue
            index = index_of[id(line)] = len(index_of)
            used = usage(line)
            writes.update(used.writes)
            mutated.update(used.mutates)
            for name in (*used.writes, *used.mutates):
                last_change[name] = index

    scan(lines)
    mapping: dict[str, cst.BaseExpression] = {}

    def walk(block) -> list:
        decisions = []
        for line in block:
            if isinstance(line, COMPOUND):
                new_head = substitute_names(head(line), mapping) if mapping else None
                new_blocks = [walk(b) for b in blocks(line)]
                decisions.append(("keep", with_blocks(line, new_blocks, new_head)))
                continue
            index = index_of[id(line)]
            if mapping and any(name in mapping for name in usage(line).reads):
                line = substitute_line(line, mapping)
            assign = single_name_assign(line)
            if assign is not None:
                target, value = assign
                if writes[target] == 1 and target not in mutated and target not in params:
                    if _is_constant(value) or (
                        isinstance(value, cst.Name)
                        and last_change.get(value.value, -1) < index
                        and value.value not in ("True", "False", "None")
                    ):
                        mapping[target] = value
                        decisions.append(("drop", line))
                        continue
            decisions.append(("keep", line))
        return carry_comments(decisions)

    result = walk(lines)
    return result, bool(mapping)


def _is_constant(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    return (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, (cst.Integer, cst.Float))
    )


# -- inlining -------------------------------------------------------------------------------


def inline(lines: list, counts: tuple | None = None) -> tuple[list, bool]:
    """Substitute single-use temporaries into their use, within one block (an ``if`` is a
    barrier: nothing moves into or out of a branch); then the same inside each branch."""
    usages = [usage(line) for line in lines]
    if counts is None:  # reads and writes over the whole function, branches included
        counts = (
            collections.Counter(name for u in usages for name in u.reads),
            collections.Counter(name for u in usages for name in u.writes),
            alias_groups(lines),
        )
    reads, writes, aliases = counts
    changed = False
    lines = list(lines)
    for i in range(len(lines)):
        assign = None if is_dropped(lines[i]) else single_name_assign(lines[i])
        if assign is None:
            continue
        target, value = assign
        if reads[target] != 1 or writes[target] != 1:
            continue
        if not target.startswith(_TEMP_PREFIXES):
            changed = _coalesce_copy(lines, usages, i, target, value) or changed
            continue
        if nesting_depth(value, MAX_NESTING) > MAX_NESTING:
            continue  # a thousand-term sum stays in pieces (see walk.nesting_depth)
        value_reads = widened(usages[i].reads, aliases)
        # a value that changes a list (``items.pop()``) moves only past lines not using it
        # (under any of its names)
        value_mutates = widened(set(usages[i].mutates) - {target}, aliases)
        for j in range(i + 1, len(lines)):
            if is_dropped(lines[j]):
                continue
            if is_item_write(lines[j]):
                break
            used_j = usages[j]
            if value_mutates & {*used_j.reads, *used_j.writes, *used_j.mutates}:
                break
            if target in usages[j].reads:
                if isinstance(lines[j], COMPOUND):
                    break
                statement = lines[j].body[0]
                if isinstance(statement, cst.AugAssign) and base_name(statement.target) == target:
                    break
                lines[j] = replace_line(lines[j], substitute_names(statement, {target: value}))
                usages[j] = usage(lines[j])
                lines[i] = Marked(lines[i])
                changed = True
                break
            # (a rebinding matters for the names the value reads; a change in place for
            # every name that may share their memory)
            if set(usages[i].reads) & set(usages[j].writes) or value_reads & set(
                usages[j].mutates
            ):
                break
    nested_changed = False

    def inline_block(block):
        nonlocal nested_changed
        result, block_changed = inline(block, counts)
        nested_changed = nested_changed or block_changed
        return result

    lines = [
        on_branches(line, inline_block) if isinstance(line, COMPOUND) else line for line in lines
    ]
    decisions = [("drop" if is_dropped(line) else "keep", line) for line in lines]
    return carry_comments(decisions), changed or nested_changed


def _coalesce_copy(lines, usages, i, target, value) -> bool:
    """``a = E`` whose one use is a later copy ``b = a`` in the same block becomes ``b = E``
    (a variable assigned in a branch only to be copied into the name it has after the if)."""
    value_reads = set(usages[i].reads)
    for j in range(i + 1, len(lines)):
        if is_dropped(lines[j]):
            continue
        if target in usages[j].reads:
            copy = None if isinstance(lines[j], COMPOUND) else single_name_assign(lines[j])
            if copy is None or not is_name(copy[1], target):
                return False
            joined = copy[0]
            between = usages[i + 1 : j]
            if any(joined in u.reads or joined in u.writes for u in between):
                return False
            statement = lines[i].body[0]
            renamed = statement.with_changes(targets=(cst.AssignTarget(cst.Name(joined)),))
            lines[i] = replace_line(lines[i], renamed)
            usages[i] = usage(lines[i])
            lines[j] = Marked(lines[j])
            return True
        if value_reads & (set(usages[j].writes) | set(usages[j].mutates)):
            return False
    return False


# -- accumulation fusion ------------------------------------------------------------------


def fuse_accumulations(lines: list, aliases: dict | None = None) -> tuple[list, bool]:
    """``v = A`` followed, with no read of `v` in between, by ``v = v + B`` or ``v += B``
    becomes ``v = A + B``: an adjoint's first part joins its next one in one expression. `A`
    moves down, so not past a change of what it reads under any name (`aliases`:
    ``L = items`` then ``items.pop()`` in a loop changes ``L``)."""
    aliases = alias_groups(lines) if aliases is None else aliases
    usages = [usage(line) for line in lines]
    lines = list(lines)
    changed = False
    for i in range(len(lines)):
        assign = None if is_dropped(lines[i]) else single_name_assign(lines[i])
        if assign is None:
            continue
        target, first = assign
        value_reads = set(usages[i].reads)
        changes_reads = set(widened(usages[i].reads, aliases))  # (in place, under any name)
        if target in value_reads or nesting_depth(first, MAX_NESTING) > MAX_NESTING:
            continue
        for j in range(i + 1, len(lines)):
            if is_dropped(lines[j]):
                continue
            used = usages[j]
            if is_item_write(lines[j]):
                break
            if target in used.reads or target in used.writes:
                if isinstance(lines[j], COMPOUND):
                    break
                rest = _accumulated_part(lines[j].body[0], target)
                if rest is not None and target not in read_names(rest[1], []):
                    operator, part = rest
                    fused = cst.Assign(
                        (cst.AssignTarget(cst.Name(target)),),
                        cst.BinaryOperation(first, operator, part),
                    )
                    lines[j] = replace_line(lines[j], fused)
                    usages[j] = usage(lines[j])
                    lines[i] = Marked(lines[i])
                    changed = True
                break
            if value_reads & set(used.writes) or changes_reads & set(used.mutates):
                break
    nested_changed = False

    def fuse_block(block):
        nonlocal nested_changed
        result, block_changed = fuse_accumulations(block, aliases)
        nested_changed = nested_changed or block_changed
        return result

    lines = [
        on_branches(line, fuse_block) if isinstance(line, COMPOUND) else line for line in lines
    ]
    decisions = [("drop" if is_dropped(line) else "keep", line) for line in lines]
    return carry_comments(decisions), changed or nested_changed


def _accumulated_part(statement, target: str):
    """(operator, B) if `statement` is ``target = target + B`` / ``- B`` or ``target += B``."""
    if isinstance(statement, cst.AugAssign) and is_name(statement.target, target):
        if isinstance(statement.operator, cst.AddAssign):
            return cst.Add(), statement.value
        if isinstance(statement.operator, cst.SubtractAssign):
            return cst.Subtract(), statement.value
        return None
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        if not is_name(statement.targets[0].target, target):
            return None
        value = statement.value
        if (
            isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, (cst.Add, cst.Subtract))
            and is_name(value.left, target)
        ):
            return type(value.operator)(), value.right
    return None


# -- dead code ------------------------------------------------------------------------------


def eliminate_dead_code(
    lines: list, live: set[str] | None = None, aliases: dict | None = None
) -> tuple[list, bool]:
    """Remove assignments nobody reads. `live` holds the names read after `lines` (updated in
    place to those read before them); an ``if`` keeps what either branch needs. A change in
    place (``items.pop()``) is needed while the changed value is read later under any of its
    names (`aliases`, from the copies ``a = b``: ``L = items; L.pop()`` changes ``items``)."""
    live = set() if live is None else live
    aliases = alias_groups(lines) if aliases is None else aliases

    def changes_live(names) -> bool:
        return not live.isdisjoint(widened(names, aliases))

    decisions = []
    changed = False
    for line in reversed(lines):
        if isinstance(line, (cst.For, cst.While)):
            line, needed, loop_changed = _dead_code_in_loop(line, live, aliases)
            changed = changed or loop_changed or not needed
            decisions.append(("keep" if needed else "drop", line))
            continue
        if isinstance(line, cst.If):
            line, needed, branch_changed = _dead_code_in_if(line, live, aliases)
            changed = changed or branch_changed
            decisions.append(("keep" if needed else "drop", line))
            if not needed:
                changed = True
            continue
        statement = line.body[0]
        used = usage(line)
        if is_item_write(line):
            needed = True  # a write into an array (a view of it may be read later)
            live.update(used.reads)
        elif isinstance(statement, cst.Assign):
            # ``v = items.pop()`` is needed while `items` is read later, `v` or not
            needed = any(name in live for name in used.writes) or changes_live(used.mutates)
            if needed:
                live.difference_update(used.writes)
                live.update(used.reads)
        elif isinstance(statement, cst.AugAssign):
            needed = changes_live(used.mutates)
            if needed:
                live.update(used.reads)
        else:  # return, raise, expression statements, assert: always kept
            needed = True
            live.update(used.reads)
        if not needed:
            changed = True
        decisions.append(("keep" if needed else "drop", line))
    decisions.reverse()
    return carry_comments(decisions), changed


def _dead_code_in_loop(
    line, live: set[str], aliases: dict
) -> tuple[cst.BaseCompoundStatement, bool, bool]:
    """What is live at the end of a loop body is what is live after the loop plus what the
    body's start needs (the next iteration): found by repeating the analysis to a fixpoint.
    A ``for`` whose body is dead stays (as ``pass``) while its target is read after it."""
    head_reads = read_names(head(line), [])
    body_lines = list(line.body.body)
    live_end = set(live) | set(head_reads)
    for _ in range(8):
        trial = set(live_end)
        eliminate_dead_code(body_lines, trial, aliases)
        grown = set(live) | set(head_reads) | trial
        if grown == live_end:
            break
        live_end = grown
    start = set(live_end)
    body, changed = eliminate_dead_code(body_lines, start, aliases)
    # a loop whose body is dead still assigns its target, which may be read after it
    target = line.target.value if isinstance(line, cst.For) else None
    if not body and target not in live:
        return line, False, True
    start.discard(target)  # (each iteration assigns it before the body reads it)
    live |= start | set(head_reads)
    return with_blocks(line, [body]), True, changed


def _dead_code_in_if(line: cst.If, live: set[str], aliases: dict) -> tuple[cst.If, bool, bool]:
    after = set(live)
    live_in: set[str] = set()
    kept_blocks, changed = [], False
    for block in blocks(line):
        branch_live = set(after)
        kept, block_changed = eliminate_dead_code(block, branch_live, aliases)
        kept_blocks.append(kept)
        live_in |= branch_live
        changed = changed or block_changed
    if len(kept_blocks) == 1:
        live_in |= after  # no else: the names needed after may come from before the if
    needed = any(kept_blocks)
    if needed:
        live.clear()
        live.update(live_in)
        live.update(read_names(line.test, []))
        if len(kept_blocks) == 2 and not kept_blocks[1]:
            return with_blocks(line, kept_blocks).with_changes(orelse=None), True, changed
        if len(kept_blocks) == 2 and not kept_blocks[0]:  # if t: pass / else: B  is  if not t: B
            inverted = cst.UnaryOperation(cst.Not(), line.test)
            body = line.body.with_changes(body=tuple(kept_blocks[1]))
            return line.with_changes(test=inverted, body=body, orelse=None), True, True
    return with_blocks(line, kept_blocks), needed, changed


# -- driver ---------------------------------------------------------------------------------


def optimize(funcdef: cst.FunctionDef, max_rounds: int = 4) -> cst.FunctionDef:
    """Apply the rewrites of this module until the function stops changing."""
    params = frozenset(
        p.name.value
        for p in (
            *funcdef.params.posonly_params,
            *funcdef.params.params,
            *funcdef.params.kwonly_params,
        )
    )
    lines = list(funcdef.body.body)
    for _ in range(max_rounds):
        lines, propagated = propagate(lines, params)
        lines, folded = fold(lines)
        lines, dead = eliminate_dead_code(lines)
        lines, inlined = inline(lines)
        lines, fused = fuse_accumulations(lines)
        if not (propagated or folded or dead or inlined or fused):
            break
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(lines)))
