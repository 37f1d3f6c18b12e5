"""What a function returns, as written: a value to differentiate, or ``(value, aux)``.

`sg.grad` differentiates a function's value, an array or a number. A function returning a
tuple, a list, a dict, None or a string is not that, and used to be differentiated silently
(the seed ``1.0`` of a container stands for the sum of its elements). With
``has_aux=True`` (JAX's meaning) the function returns ``(value, aux)``: the value is
differentiated and ``aux`` is handed back unchanged.

- `output_forms` reads, from the normal form, what the output can be when that is visible in
  the source (a literal tuple/list/dict, None or a string, through copies and branches);
- `check_output` turns a visible non-value output into a TypeError that mentions ``has_aux``;
- `split_aux` (after normalize) makes ``return out`` into ``_value = out[0]``,
  ``_aux = out[1]``, ``return _value``: the value alone is differentiated;
- `attach_aux` (after reverse) returns ``(gradients, _aux)``, or ``((value, _aux), gradients)``
  with the value.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from .anf import NormalForm
from .naming import Namer

_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def output_forms(nf: NormalForm) -> set[str]:
    """The forms the output can take, as far as the source shows: ``"tuple"`` (``"pair"``
    for a 2-tuple), ``"list"``, ``"dict"``, ``"None"``, ``"str"``, ``"number"`` (arithmetic,
    a NumPy call: an array or a number), or ``"value"`` for anything else (an argument, an
    element, a user function's result: its kind shows only when it runs)."""
    assigned: dict[str, list[cst.BaseExpression]] = {}
    for statement in nf.statements:
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                if isinstance(target.target, cst.Name):
                    assigned.setdefault(target.target.value, []).append(statement.value)
    forms: set[str] = set()
    pending = [nf.output]
    seen: set[str] = set()
    if isinstance(nf.output, cst.Name) and nf.output.value == "None":
        return {"None"}  # ``return None``, or no return
    while pending:
        expr = pending.pop()
        if isinstance(expr, cst.Name) and expr.value == "None":
            continue  # the placeholder of a return inside a loop, before it is reached
        elif isinstance(expr, cst.Name) and expr.value in assigned:
            if expr.value not in seen:
                seen.add(expr.value)
                pending.extend(assigned[expr.value])
        elif isinstance(expr, cst.Tuple):
            forms.add("pair" if len(expr.elements) == 2 else "tuple")
        elif isinstance(expr, cst.List):
            forms.add("list")
        elif isinstance(expr, cst.Dict):
            forms.add("dict")
        elif isinstance(expr, _STRINGS):
            forms.add("str")
        elif isinstance(expr, _COMPUTED) or _library_call(expr):
            forms.add("number")
        else:
            forms.add("value")
    return forms


# expressions whose value is certainly an array or a number
_COMPUTED = (
    cst.BinaryOperation,
    cst.UnaryOperation,
    cst.Comparison,
    cst.Integer,
    cst.Float,
    cst.Imaginary,
)


def _library_call(expr: cst.BaseExpression) -> bool:
    """A call of a NumPy or math function (as normalized: ``np.sum(...)``, ``math.exp(...)``)."""
    if not isinstance(expr, cst.Call):
        return False
    func = expr.func
    while isinstance(func, cst.Attribute):
        func = func.value
    return isinstance(func, cst.Name) and func.value in ("np", "math")


_DESCRIBED = {
    "pair": "a tuple",
    "tuple": "a tuple",
    "list": "a list",
    "dict": "a dict",
    "None": "None",
    "str": "a string",
    "number": "a single array or number",
}


def check_output(
    nf: NormalForm, name: str, has_aux: bool, what: str, containers: bool = False
) -> None:
    """Raise TypeError when the output visible in the source is not what `what` (a transform's
    name) differentiates: an array or a number (or, with `containers`, a tuple, list or dict
    of them: `jvp` and `vjp` take pytree outputs), or with `has_aux` a ``(value, aux)``
    pair."""
    forms = output_forms(nf)
    if containers:
        forms -= {"pair", "tuple", "list", "dict"}
    if has_aux:
        wrong = sorted(forms - {"pair", "value"}, key=lambda form: form == "number")
        if wrong:
            raise TypeError(
                f"{what}(..., has_aux=True): {name} must return a pair (value, aux); it returns "
                f"{_DESCRIBED[wrong[0]]}"
            )
        return
    wrong = sorted(forms - {"value", "number"})
    if wrong and not forms & {"value", "number"}:  # (where one return gives a number, the
        # others may not run: checked when it runs, `output_check`; a flag choosing returns)
        raise TypeError(
            f"{what}: {name} returns {_DESCRIBED[wrong[0]]}, not an array or a number; to "
            f"differentiate one value and carry other results along, return (value, aux) and "
            f"pass has_aux=True (sg.grad and sg.value_and_grad), or differentiate one element"
        )


def output_check(nf: NormalForm, name: str) -> list[cst.BaseStatement]:
    """The statement checking that an output whose form the source does not show (an
    argument, an element, a user function's result) is not a container, None or a string: a
    TypeError at the first call rather than the gradient of the sum of its elements. It goes
    right after the primal sweep, where the output is final (the adjoint sweep pops loop
    values back into their names, the output's among them)."""
    output = nf.output
    forms = output_forms(nf)
    if not isinstance(output, cst.Name) or not forms - {"number"}:
        return []
    return [cst.parse_statement(f"check_output({output.value}, {name!r})\n")]


def split_aux(nf: NormalForm, namer: Namer) -> tuple[NormalForm, str]:
    """`nf` returning the value of its ``(value, aux)`` output, and the name holding aux."""
    output = nf.output
    if not isinstance(output, cst.Name):
        raise TypeError("has_aux=True: the function must return a pair (value, aux)")
    value, aux = namer.fresh("_value"), namer.fresh("_aux")
    body = list(nf.funcdef.body.body)
    last = body[-1]
    pair = _pair_literal(nf, output.value)
    if pair is not None:  # ``return loss, pred``: the two atoms themselves
        first, second = (cst.Module(body=()).code_for_node(e.value) for e in pair.elements)
    else:
        first, second = f"{output.value}[0]", f"{output.value}[1]"
    lines = [cst.parse_statement(f"{value} = {first}"), cst.parse_statement(f"{aux} = {second}")]
    lines[0] = lines[0].with_changes(leading_lines=last.leading_lines)
    returned = cst.SimpleStatementLine((cst.Return(cst.Name(value)),))
    funcdef = nf.funcdef.with_changes(
        body=nf.funcdef.body.with_changes(body=(*body[:-1], *lines, returned))
    )
    line = nf.line_of.get(output.value, 0)
    line_of = {**nf.line_of, value: line, aux: line}
    origins = dict(nf.origins)
    if output.value in origins:
        origins[value] = origins[aux] = origins[output.value]
    changed = dataclasses.replace(
        nf, funcdef=funcdef, output=cst.Name(value), line_of=line_of, origins=origins
    )
    return changed, aux


def _pair_literal(nf: NormalForm, name: str) -> cst.Tuple | None:
    """The 2-tuple literal `name` is assigned, when that is its only assignment."""
    values = [
        statement.value
        for statement in nf.statements
        if isinstance(statement, cst.Assign)
        and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in statement.targets
        )
    ]
    if len(values) == 1 and isinstance(values[0], cst.Tuple) and len(values[0].elements) == 2:
        return values[0]
    return None


def attach_aux(funcdef: cst.FunctionDef, aux: str, with_value: bool) -> cst.FunctionDef:
    """`funcdef` (a gradient) returning aux with its result (see the module docstring)."""
    body = list(funcdef.body.body)
    line = body[-1]
    returned = line.body[0].value
    if with_value:  # (value, gradients) -> ((value, aux), gradients)
        value, gradients = (e.value for e in returned.elements)
        pair = cst.Tuple((cst.Element(value), cst.Element(cst.Name(aux))))
        result = cst.Tuple((cst.Element(pair), cst.Element(gradients)))
    else:
        result = cst.Tuple((cst.Element(returned), cst.Element(cst.Name(aux))))
    body[-1] = line.with_changes(body=(line.body[0].with_changes(value=result),))
    return funcdef.with_changes(body=funcdef.body.with_changes(body=tuple(_check_pair(body, aux))))


def _check_pair(body: list, aux: str) -> list:
    """`body` checking, before it takes the output apart (``_value = out[0]``, ``_aux =
    out[1]``), that the output is a pair: a clear TypeError rather than a subscript error
    (or, for a triple, its first two elements)."""
    taken = {}  # output name -> index of the first line reading an element of it
    for index, line in enumerate(body):
        statement = line.body[0] if isinstance(line, cst.SimpleStatementLine) else None
        if not isinstance(statement, cst.Assign) or not isinstance(statement.value, cst.Subscript):
            continue
        base = statement.value.value
        if isinstance(base, cst.Name):
            taken.setdefault(base.value, index)
            target = statement.targets[0].target
            if isinstance(target, cst.Name) and target.value == aux:
                out = base.value
                check = cst.parse_statement(
                    f"if not isinstance({out}, (tuple, list)) or len({out}) != 2:\n"
                    f"    raise TypeError('has_aux=True: the function must return a pair "
                    f"(value, aux); it returned ' + type({out}).__name__)\n"
                )
                return [*body[: taken[out]], check, *body[taken[out] :]]
    return body
