"""Delta reduction of a failing program: delete statements, splice blocks, drop helpers,
replace an assigned value by a constant.

A candidate is kept when checking it (in the failing mode only) still gives a failure with the
same signature; a candidate that no longer runs, or fails differently, is discarded. Programs
are small (a few dozen statements), so a greedy pass to a fixed point takes seconds.
"""

from __future__ import annotations

import copy
import re

from .program import Block, Program, Simple, Text, statements_of

CONSTANTS = ("0.5", "np.full(3, 0.5)")  # what an assignment's value is replaced with
_ASSIGNMENT = re.compile(r"^(\w+) = (.+)$")


def _bodies(program: Program) -> list:
    return [program.main.body] + [h.body for h in program.helpers]


def _candidates(program: Program):
    """Programs one edit smaller than `program`, roughly the biggest cuts first."""
    if program.closure is not None:
        candidate = copy.deepcopy(program)
        candidate.closure = None
        yield candidate
    for number in range(len(program.helpers)):
        candidate = copy.deepcopy(program)
        del candidate.helpers[number]
        yield candidate
    for which, body in enumerate(_bodies(program)):
        count = len(list(statements_of(body)))
        for position in range(count):
            for edit in ("delete", "body", "orelse", "outline", "0.5", "np.full(3, 0.5)"):
                candidate = copy.deepcopy(program)
                block, index = list(statements_of(_bodies(candidate)[which]))[position]
                if _edit(block, index, edit, last=which == 0 and block is candidate.main.body):
                    yield candidate


def _edit(block: list, index: int, edit: str, last: bool) -> bool:
    statement = block[index]
    if edit in CONSTANTS:
        return _to_constant(block, index, edit)
    if edit == "delete":
        if last and index == len(block) - 1:
            return False  # f's final return
        del block[index]
        return True
    if not isinstance(statement, Block):
        return False
    if edit == "body":
        block[index : index + 1] = statement.setup + statement.body
        return True
    if edit == "orelse" and statement.orelse is not None:
        block[index : index + 1] = statement.setup + statement.orelse
        return True
    if edit == "outline" and statement.inline:
        statement.inline = False
        return True
    return False


def reduce(program: Program, still_fails, budget: int = 300) -> Program:
    """The smallest program greedy edits find for which ``still_fails(candidate)``."""
    tries = 0
    changed = True
    while changed and tries < budget:
        changed = False
        for candidate in _candidates(program):
            tries += 1
            if still_fails(candidate):
                program, changed = candidate, True
                break
            if tries >= budget:
                break
    return program


def _to_constant(block: list, index: int, constant: str) -> bool:
    """``name = <expression>`` becomes ``name = <constant>`` (a float or a 3-vector)."""
    statement = block[index]
    if not isinstance(statement, Simple):
        return False
    match = _ASSIGNMENT.match(statement.text.src)
    if match is None or match.group(2) in CONSTANTS:
        return False
    block[index] = Simple(Text.plain(f"{match.group(1)} = {constant}"))
    return True
