"""Rule templates: parsed once per process, instantiated into generated code by substitution.

A template (see ``runtime/registry.py``) is a Python function whose body is a few assignments
and one ``return``. `load_template` parses its source once; `instantiate` substitutes the
parameters with the expressions of one call site, renames the template's locals to fresh
temporaries and hands back the statements plus one contribution expression per parameter.
"""

from __future__ import annotations

import builtins
import dataclasses
import functools
import textwrap
from collections.abc import Callable, Mapping

import libcst as cst

from .naming import Namer
from .parse import source_lines
from .walk import _NameReader, substitute_names, visit


@dataclasses.dataclass(frozen=True)
class Template:
    """A parsed rule template.

    Attributes:
        params: the parameters after the two leading ones (``g, ans``), in order.
        leading: the two leading parameter names.
        defaults: default-value expressions of optional parameters.
        varargs: the name of a ``*args`` parameter, if any.
        keyword_only: keyword-only parameters other than ``argnum``.
        per_argnum: the template takes keyword-only ``argnum`` and gives one argument's
            contribution per instantiation.
        body: the assignments before the ``return``.
        result: the returned expression; a tuple literal gives one contribution per parameter.
        local_names: names the body assigns.
        constants: values the template reads from its own module or closure (user rules
            only; the built-in rules read nothing but ``np``, ``math`` and runtime helpers),
            under the names the instantiated code uses for them.
    """

    name: str
    leading: tuple[str, str]
    params: tuple[str, ...]
    defaults: Mapping[str, cst.BaseExpression]
    varargs: str | None
    keyword_only: tuple[str, ...]
    per_argnum: bool
    body: tuple[cst.BaseSmallStatement, ...]
    result: cst.BaseExpression
    local_names: frozenset[str]
    constants: Mapping[str, object] = dataclasses.field(default_factory=dict)
    powers: bool = False  # it calls `scaled_power` (see `_PlainPowers`)

    def contribution_count(self) -> int | None:
        """How many contributions the result lists (None: a single one for the first param)."""
        if isinstance(self.result, cst.Tuple):
            return len(self.result.elements)
        return None


@functools.cache
def load_template(fn: Callable) -> Template:
    """Parse the template function `fn` (cached: each template is parsed once per process)."""
    lines, _ = source_lines(fn.__code__)
    source = textwrap.dedent("".join(lines))
    module = cst.parse_module(source)
    funcdef = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    params = funcdef.params
    names = [p.name.value for p in params.params]
    defaults = {
        p.name.value: p.default
        for p in (*params.params, *params.kwonly_params)
        if p.default is not None
    }
    varargs = params.star_arg.name.value if isinstance(params.star_arg, cst.Param) else None
    kwonly = [p.name.value for p in params.kwonly_params]
    statements = [small for line in funcdef.body.body for small in _smalls(line, fn)]
    *body, last = statements
    if not isinstance(last, cst.Return) or last.value is None:
        raise TypeError(f"rule template {fn.__qualname__} must end with `return <expression>`")
    local_names = set()
    for statement in body:
        if not isinstance(statement, cst.Assign):
            raise TypeError(f"rule template {fn.__qualname__}: only assignments may precede return")
        for target in statement.targets:
            if not isinstance(target.target, cst.Name):
                raise TypeError(f"rule template {fn.__qualname__}: assign to plain names only")
            local_names.add(target.target.value)
    names_read: list[str] = []
    for node in (*body, last.value):
        visit(node, _NameReader(names_read))
    parameters = set(names) | set(kwonly) | {varargs} | local_names
    constants = _constants(fn, [n for n in dict.fromkeys(names_read) if n not in parameters])
    if constants:
        renamed = {name: cst.Name(spelled) for spelled, (name, _) in constants.items()}
        body = [substitute_names(statement, renamed) for statement in body]
        last = last.with_changes(value=substitute_names(last.value, renamed))
    return Template(
        constants={spelled: value for spelled, (_, value) in constants.items()},
        name=fn.__qualname__,
        leading=(names[0], names[1]),
        params=tuple(names[2:]),
        defaults=defaults,
        varargs=varargs,
        keyword_only=tuple(k for k in kwonly if k != "argnum"),
        per_argnum="argnum" in kwonly,
        body=tuple(body),
        result=last.value,
        local_names=frozenset(local_names),
        powers="scaled_power" in names_read,
    )


def _constants(fn: Callable, free: list[str]) -> dict[str, tuple[str, object]]:
    """The names `fn` reads besides ``np``, ``math``, runtime helpers and builtins, each with
    its value and the name generated code gives it (prefixed, so it cannot clash with the
    differentiated function's own names)."""
    from .codegen import runtime_names

    closure = {}
    if fn.__closure__:
        cells = (c.cell_contents for c in fn.__closure__)
        closure = dict(zip(fn.__code__.co_freevars, cells, strict=True))
    found: dict[str, tuple[str, object]] = {}
    for name in free:
        if name in ("np", "math", "True", "False", "None") or name in runtime_names():
            continue
        if name in closure:
            value = closure[name]
        elif name in fn.__globals__:
            value = fn.__globals__[name]
        elif hasattr(builtins, name):
            continue
        else:
            raise TypeError(f"rule template {fn.__qualname__}: name {name!r} is not defined")
        found[f"_{fn.__name__}_{name}"] = (name, value)
    return found


def _smalls(line: cst.BaseStatement, fn: Callable):
    if not isinstance(line, cst.SimpleStatementLine):
        raise TypeError(f"rule template {fn.__qualname__} must be straight-line code")
    for small in line.body:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
            continue  # docstring
        yield small


@dataclasses.dataclass(frozen=True)
class Instance:
    """A template instantiated at one call site."""

    statements: tuple[cst.BaseSmallStatement, ...]
    contributions: tuple[cst.BaseExpression | None, ...]
    single: bool  # the template returned one expression (for the first parameter only)


def instantiate(
    template: Template, bindings: Mapping[str, cst.BaseExpression], namer: Namer
) -> Instance:
    """Substitute `bindings` (parameter name -> expression) into `template`."""
    mapping = dict(bindings)
    for local in sorted(template.local_names):
        mapping[local] = cst.Name(namer.temp())
    statements = tuple(
        substitute_names(statement, mapping).with_changes(
            targets=tuple(
                t.with_changes(target=mapping.get(t.target.value, t.target))
                for t in statement.targets
            )
        )
        for statement in template.body
    )
    result = substitute_names(template.result, mapping)
    if template.powers:
        statements = tuple(s.visit(_PlainPowers()) for s in statements)
        result = result.visit(_PlainPowers())
    if isinstance(template.result, cst.Tuple):
        contributions = tuple(
            None if _is_none(element.value) else element.value for element in result.elements
        )
        return Instance(statements, contributions, single=False)
    return Instance(statements, (None if _is_none(result) else result,), single=True)


def takes_one_array(primitive: object, position: int | None, keyword: str | None = None) -> bool:
    """Whether a list or tuple passed to `primitive` at `position` (or as `keyword`) is one
    array: the parameter of a NumPy function with a rule that differentiates it and does not
    take a sequence of arrays (`Rule.sequences`). ``np.dot(x, [1.0, 2.0])`` and
    ``np.var([x, 2 * x])`` are; ``np.concatenate([a, b])``, ``np.reshape(x, (3, 4))`` and
    ``np.sum(x, axis=(0, 1))`` are not. The normal form converts the first kind with
    ``np.asarray``, as NumPy itself does, so that no rule reads a list's shape."""
    from s2sgrad.runtime import registry

    rule = registry.lookup(primitive)
    if rule is None or rule.vjp is None or not rule.name.startswith("numpy."):
        return False
    template = load_template(rule.vjp)
    if keyword is not None:
        name = keyword
    elif position is not None and position < len(template.params):
        name = template.params[position]
    else:
        name = template.varargs
    if name is None or name in rule.sequences or name not in template.params:
        return False
    k = template.params.index(name)
    if not isinstance(template.result, cst.Tuple):
        return k == 0
    elements = template.result.elements
    return k < len(elements) and not _is_none(elements[k].value)


def one_array_arguments(callee: object, method: str | None, args) -> frozenset[int]:
    """The positions in `args` (a call's ``cst.Arg``s) of the list and tuple literals that
    `takes_one_array` says are one array, for a call of `callee` (None if unknown) or of the
    array method `method` (whose receiver is the NumPy function's first argument)."""
    if method is not None:
        from .operations import _METHODS

        entry = _METHODS.get(method)
        callee, shift = (entry[0], 1) if entry is not None and entry[1] is None else (None, 0)
    else:
        shift = 0
    if callee is None:
        return frozenset()
    found = set()
    position = shift
    for k, arg in enumerate(args):
        keyword = arg.keyword.value if arg.keyword is not None else None
        if isinstance(arg.value, (cst.List, cst.Tuple)) and takes_one_array(
            callee, None if keyword else position, keyword
        ):
            found.add(k)
        position += keyword is None
    return frozenset(found)


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


class _PlainPowers(cst.CSTTransformer):
    """``scaled_power(c, x, p)`` -> ``c * x ** p`` where `p` is arithmetic on numbers that
    comes to a number >= 0: ``x ** p`` is then finite, so the plain product is the same value
    (``2 * g * x ** (2 - 1)``, which the optimizer folds to ``2 * g * x``)."""

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (isinstance(func, cst.Name) and func.value == "scaled_power"):
            return updated
        if len(updated.args) != 3 or any(a.keyword is not None for a in updated.args):
            return updated
        c, x, p = (a.value for a in updated.args)
        value = _number_of(p)
        if value is None or not value >= 0:
            return updated
        power = cst.BinaryOperation(_parenthesized(x), cst.Power(), _parenthesized(p))
        return cst.BinaryOperation(_parenthesized(c), cst.Multiply(), power)


def _parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, (cst.Name, cst.Integer, cst.Float, cst.Call, cst.Attribute)):
        return expr
    return expr.with_changes(lpar=(cst.LeftParen(),), rpar=(cst.RightParen(),))


_ARITHMETIC = {cst.Add: float.__add__, cst.Subtract: float.__sub__, cst.Multiply: float.__mul__}


def _number_of(expr: cst.BaseExpression) -> float | None:
    """The value of `expr` if it is arithmetic (+, -, *) on number literals, else None."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.evaluated_value)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _number_of(expr.expression)
        return None if inner is None else -inner
    if isinstance(expr, cst.BinaryOperation) and type(expr.operator) in _ARITHMETIC:
        left, right = _number_of(expr.left), _number_of(expr.right)
        if left is None or right is None:
            return None
        return _ARITHMETIC[type(expr.operator)](left, right)
    return None
