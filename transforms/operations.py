"""What each normal-form statement computes: its primitive, arguments and rule.

A pure function of a statement, shared by the analyses and the reverse pass: operator syntax
maps to the `operator` module (``a * b`` is `operator.mul`), array methods and attributes map
to the NumPy functions they mirror (``x.sum(axis=0)`` is ``np.sum(x, axis=0)``, ``x.T`` is
``np.transpose(x)``), subscripts to `operator.getitem`, calls to the object their canonical
spelling names.
"""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import math
import operator
from collections.abc import Callable, Mapping

import libcst as cst
import numpy as np
from s2sgrad.runtime import Registry, Rule, item_of, qualified_name
from s2sgrad.runtime.definitions import DEFINITION_MODULES, DEFINITIONS

from s2sgrad import runtime

from .bound import as_callee
from .library import is_user_function
from .walk import read_names

# Results of these carry no derivative and need no registry entry.
NO_DERIVATIVE = object()
COPY = object()  # ``a = b``: the adjoint passes through
SETITEM = object()  # ``y[index] = v``: an in-place write into a local array
PACK = object()  # ``t = (a, b)``, ``[a, b]``, ``{"k": a}``: a container of values
APPEND = object()  # ``items.append(v)``: a list growing by one value
POP = object()  # ``v = items.pop()``: a list giving back its last value
# ``f = lambda t: k * t``: no derivative of its own, but a function of the names it closes
# over, so that what it is given to depends on them (a callee that calls it is refused)
FUNCTION_VALUE = object()

_BINARY = {
    cst.Add: operator.add,
    cst.Subtract: operator.sub,
    cst.Multiply: operator.mul,
    cst.Divide: operator.truediv,
    cst.FloorDivide: operator.floordiv,
    cst.Modulo: operator.mod,
    cst.Power: operator.pow,
    cst.MatrixMultiply: operator.matmul,
    cst.BitAnd: operator.and_,
    cst.BitOr: operator.or_,
    cst.BitXor: operator.xor,
    cst.LeftShift: operator.lshift,
    cst.RightShift: operator.rshift,
}
_UNARY = {
    cst.Minus: operator.neg,
    cst.Plus: operator.pos,
    cst.BitInvert: operator.invert,
    cst.Not: operator.not_,
}

# array method -> (NumPy function, name of the parameter that collects extra positionals)
_METHODS: dict[str, tuple[Callable, str | None]] = {
    "sum": (np.sum, None),
    "mean": (np.mean, None),
    "prod": (np.prod, None),
    "max": (np.max, None),
    "min": (np.min, None),
    "var": (np.var, None),
    "std": (np.std, None),
    "cumsum": (np.cumsum, None),
    "cumprod": (np.cumprod, None),
    "item": (item_of, None),
    "trace": (np.trace, None),
    "diagonal": (np.diagonal, None),
    "repeat": (np.repeat, None),
    "take": (np.take, None),
    "conj": (np.conj, None),
    "conjugate": (np.conjugate, None),
    "dot": (np.dot, None),
    "reshape": (np.reshape, "shape"),
    "transpose": (np.transpose, "axes"),
    "squeeze": (np.squeeze, None),
    "ravel": (np.ravel, None),
    "flatten": (np.ravel, None),
    "copy": (np.copy, None),
    "clip": (np.clip, None),
    "swapaxes": (np.swapaxes, None),
    "round": (np.round, None),
    "argmax": (np.argmax, None),
    "argmin": (np.argmin, None),
    "argsort": (np.argsort, None),
    "nonzero": (np.nonzero, None),
    "any": (np.any, None),
    "all": (np.all, None),
}
_ATTRIBUTES: dict[str, Callable | object] = {
    "T": np.transpose,
    "real": np.real,
    "imag": np.imag,
    "shape": NO_DERIVATIVE,
    "ndim": NO_DERIVATIVE,
    "size": NO_DERIVATIVE,
    "dtype": NO_DERIVATIVE,
}


@dataclasses.dataclass(frozen=True)
class Operation:
    """One normal-form statement, seen as a primitive applied to arguments.

    Attributes:
        targets: assigned names (one, or several for ``a, b = f(...)``).
        primitive: the callable, `COPY`, `NO_DERIVATIVE`, or None for an unknown callee.
        name: how messages name the primitive (``numpy.sin``, ``array method .foo``).
        args: positional argument expressions (the receiver first for methods).
        kwargs: keyword argument expressions.
        index: for subscripts, the subscript elements.
        rule: the registry entry, or None.
        user: `primitive` is a user function: it is differentiated by transforming it too.
    """

    targets: tuple[str, ...]
    primitive: object
    name: str
    args: tuple[cst.BaseExpression, ...] = ()
    kwargs: Mapping[str, cst.BaseExpression] = dataclasses.field(default_factory=dict)
    index: tuple[cst.SubscriptElement, ...] | None = None
    rule: Rule | None = None
    user: bool = False

    @property
    def differentiable(self) -> bool:
        if self.primitive in (COPY, SETITEM, PACK, APPEND, POP):
            return True
        if self.primitive in (NO_DERIVATIVE, FUNCTION_VALUE):
            return False
        return self.rule is None or self.rule.differentiable

    def input_names(self) -> list[str]:
        """Local names whose values flow into the result (not indices or static options).

        For a primitive marked linear in some arguments and with no other rule (the helpers
        generated code calls), only those arguments flow: the others are read for their shape.
        """
        rule = self.rule
        exprs = (*self.args, *self.kwargs.values())
        if rule is not None and rule.linear is not None and rule.vjp is None and rule.jvp is None:
            exprs = tuple(a for k, a in enumerate(self.args) if k in rule.linear)
        names: list[str] = []
        for expr in exprs:
            names.extend(names_in(expr))
        return names


def _definition(primitive: object):
    """The definition differentiated for `primitive` (`runtime/definitions.py`), or None;
    a definition calling a function of that module (`median` calls `quantile`) calls it
    directly."""
    if getattr(primitive, "__module__", None) in DEFINITION_MODULES:
        return primitive
    try:
        return DEFINITIONS.get(primitive)
    except TypeError:  # unhashable: no definition
        return None


def past_out(primitive, args: tuple, kwargs) -> tuple[tuple, dict]:
    """`args` and `kwargs` with the arguments NumPy's `primitive` takes after its ``out``
    parameter made keywords, by NumPy's names. Rules and definitions leave ``out`` out, so
    ``np.var(x, 0, None, None, 1)``'s fifth argument, ``ddof`` to NumPy, went to the rule's
    fourth parameter: a crash inside the rule, or another parameter's value (hunt, repro_5).
    ``out`` becomes a keyword too, which the rules take only as None."""
    try:
        parameters = inspect.signature(primitive).parameters.values()
    except (TypeError, ValueError):
        return args, kwargs
    names = []
    for parameter in parameters:  # those a call may pass by position
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            break
        names.append(parameter.name)
    if "out" not in names or len(args) <= names.index("out"):
        return args, kwargs
    at = names.index("out")
    named = dict(zip(names[at:], args[at:], strict=False))
    return args[:at], {**named, **kwargs}


def _is_user_function(value: object) -> bool:
    """A Python function of the user's (not library code: NumPy, SciPy, the standard library,
    any installed package; see `transforms/library.py`): transformed in turn. A
    ``@sg.custom_gradient`` function counts: its own code gives its value and its backward
    function the derivative (see `transforms/calls.py`). So do `sg.nn`'s activations (NumPy
    code; `sg.nn.relu` has a rule, which is found first)."""
    return is_user_function(value)


def is_append(statement) -> bool:
    """``items.append(v)`` on a local list, as a statement."""
    if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
        return False
    func = statement.value.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "append"
        and isinstance(func.value, cst.Name)
        and len(statement.value.args) == 1
    )


def names_in(expr: cst.BaseExpression) -> list[str]:
    """The plain names an argument expression reads (elements of tuple/list literals too)."""
    if isinstance(expr, cst.Name):
        return [] if expr.value in ("True", "False", "None") else [expr.value]
    if isinstance(expr, (cst.Tuple, cst.List)):
        return [n for element in expr.elements for n in names_in(element.value)]
    if isinstance(expr, cst.Lambda):  # the names it closes over flow into what it is given to
        params = expr.params
        own = {p.name.value for p in (*params.posonly_params, *params.params)}
        own |= {p.name.value for p in params.kwonly_params}
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                own.add(star.name.value)
        read = read_names(expr.body, [])
        return [n for n in dict.fromkeys(read) if n not in own and n not in _CONSTANT_NAMES]
    return []


_CONSTANT_NAMES = ("True", "False", "None")


def evaluate_spelling(
    expr: cst.BaseExpression, namespace: Mapping[str, object]
) -> tuple[bool, object]:
    """Evaluate a canonical reference (``np.linalg.inv``, a constant's name) to its object (a
    bound method, partial, callable object or lambda of the user's: the function the compiler
    transforms for it, `bound.as_callee`)."""
    found, value = _evaluate(expr, namespace)
    return (True, as_callee(value)) if found else (False, None)


def _evaluate(expr: cst.BaseExpression, namespace: Mapping[str, object]) -> tuple[bool, object]:
    if isinstance(expr, cst.Name):
        if expr.value in namespace:
            return True, namespace[expr.value]
        if expr.value == "np":
            return True, np
        if expr.value == "math":
            return True, math
        if hasattr(builtins, expr.value):
            return True, getattr(builtins, expr.value)
        if expr.value in runtime.__all__:  # a helper generated code imports
            return True, getattr(runtime, expr.value)
        return False, None
    if isinstance(expr, cst.Attribute):
        found, base = _evaluate(expr.value, namespace)
        if found:
            try:
                return True, getattr(base, expr.attr.value)
            except AttributeError:
                return False, None
    return False, None


def field_read(read: cst.Attribute) -> tuple[cst.SubscriptElement, ...]:
    """The index that stands for ``p.W`` (a name that is no array attribute) in derivative
    code: the field name, ``"W"``. The primal reads the attribute as written; the adjoint and
    tangent of a NamedTuple or dataclass argument are keyed by field (`ContainerAdjoint`, which
    takes a NamedTuple's field name and its position for the same key), so ``dp["W"] += g``
    and ``tp["W"]`` are what the derivative of the read needs. On an array, ``x.W`` raises
    AttributeError going forward, as Python does."""
    return (cst.SubscriptElement(cst.Index(cst.SimpleString(f'"{read.attr.value}"'))),)


def _is_record_class(value) -> bool:
    """A NamedTuple class or a dataclass (the class, not an instance)."""
    if not isinstance(value, type):
        return False
    if issubclass(value, tuple):
        return isinstance(getattr(value, "_fields", None), tuple)
    return dataclasses.is_dataclass(value)


def _record_pack(targets, cls: type, call: cst.Call) -> Operation | None:
    """``P(a, b=c)`` building a NamedTuple or dataclass: a container of its arguments, keyed
    as derivative code keys the record's adjoint and tangent (a NamedTuple's field by
    position, a dataclass's by name: see `field_read`). None for ``*args``/``**kwargs``."""
    named = issubclass(cls, tuple)
    if not named and hasattr(cls, "__post_init__"):
        # what __post_init__ computes from the arguments (a field it sets, one it changes)
        # is no container of them: its derivative was the arguments' alone, silently
        return None
    fields = list(cls._fields) if named else [f.name for f in dataclasses.fields(cls) if f.init]
    elements, keys = [], {}
    for k, arg in enumerate(call.args):
        if arg.star or (arg.keyword is None and k >= len(fields)):
            return None
        name = fields[k] if arg.keyword is None else arg.keyword.value
        if name not in fields:
            return None
        key = cst.Integer(str(fields.index(name))) if named else cst.SimpleString(f'"{name}"')
        keys[str(len(elements))] = key
        elements.append(arg.value)
    return Operation(targets, PACK, f"{cls.__name__}(...)", tuple(elements), keys)


class Classifier:
    """Turns normal-form statements into `Operation`s, for one function."""

    def __init__(self, registry: Registry, namespace: dict[str, object], local_names):
        self.registry = registry
        self.namespace = namespace
        self.locals = local_names

    def classify(self, statement) -> Operation:
        if isinstance(statement, cst.Expr):  # items.append(v)
            items = statement.value.func.value
            return Operation(
                (items.value,), APPEND, "list.append", (items, statement.value.args[0].value)
            )
        target = statement.targets[0].target
        if isinstance(target, cst.Subscript):  # y[index] = v: the new y depends on y and v
            base = target.value
            args = (base, statement.value)
            return Operation((base.value,), SETITEM, "item assignment", args, index=target.slice)
        if isinstance(target, cst.Tuple):
            targets = tuple(e.value.value for e in target.elements)
        else:
            targets = (target.value,)
        return self._value(targets, statement.value)

    def _value(self, targets, value: cst.BaseExpression) -> Operation:
        if isinstance(value, cst.BinaryOperation):
            return self._primitive(
                targets, _BINARY[type(value.operator)], (value.left, value.right)
            )
        if isinstance(value, cst.UnaryOperation):
            if isinstance(value.expression, (cst.Integer, cst.Float, cst.Imaginary)):
                return Operation(targets, NO_DERIVATIVE, "constant", (value,))
            return self._primitive(targets, _UNARY[type(value.operator)], (value.expression,))
        if isinstance(value, cst.Comparison):
            return Operation(targets, NO_DERIVATIVE, "comparison")
        if isinstance(value, cst.Subscript):
            return self._primitive(
                targets, operator.getitem, (value.value,), index=tuple(value.slice)
            )
        if isinstance(value, cst.Attribute):
            if self._is_local(value.value):
                primitive = _ATTRIBUTES.get(value.attr.value)
                if primitive is None:  # a field of a NamedTuple or dataclass: see field_read
                    return self._primitive(
                        targets, operator.getitem, (value.value,), index=field_read(value)
                    )
                if primitive is NO_DERIVATIVE:
                    return Operation(targets, NO_DERIVATIVE, f".{value.attr.value}", (value.value,))
                return self._primitive(targets, primitive, (value.value,))
            return Operation(targets, NO_DERIVATIVE, "constant", (value,))
        if isinstance(value, cst.Lambda):
            closed = tuple(cst.Name(n) for n in names_in(value) if n in self.locals)
            return Operation(targets, FUNCTION_VALUE, "lambda", closed)
        if isinstance(value, cst.Call):
            return self._call(targets, value)
        if isinstance(value, cst.Name):
            if value.value in self.locals:
                return Operation(targets, COPY, "copy", (value,))
            return Operation(targets, NO_DERIVATIVE, "constant", (value,))
        if isinstance(value, (cst.Tuple, cst.List)):
            elements = tuple(e.value for e in value.elements)
            keys = {str(i): cst.Integer(str(i)) for i in range(len(elements))}
            return Operation(targets, PACK, "container", elements, keys)
        if isinstance(value, cst.Dict):
            elements = tuple(e.value for e in value.elements)
            keys = {str(i): e.key for i, e in enumerate(value.elements)}
            return Operation(targets, PACK, "container", elements, keys)
        return Operation(targets, NO_DERIVATIVE, "constant", (value,))

    def _capture_rule_constants(self, rule: Rule) -> None:
        """The values a user-registered rule reads (``sg.register_vjp`` on a function of the
        user's module) join the generated code's globals, where its inlined body finds them."""
        from .templates import load_template

        for template in (rule.vjp, rule.jvp):
            module = getattr(template, "__module__", None) or ""
            if template is not None and not module.startswith("s2sgrad.runtime"):
                self.namespace.update(load_template(template).constants)

    def _is_local(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self.locals

    def _reads_locals(self, exprs) -> bool:
        """Whether any of `exprs` reads a local name (in a lambda or comprehension too)."""
        names: list[str] = []
        for expr in exprs:
            read_names(expr, names)
        return any(name in self.locals for name in names)

    def _call(self, targets, call: cst.Call) -> Operation:
        positional = tuple(a.value for a in call.args if a.keyword is None)
        kwargs = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        func = call.func
        if isinstance(func, cst.Attribute) and self._is_local(func.value):
            method = func.attr.value
            if method == "pop" and not positional and not kwargs:
                return Operation(targets, POP, "list.pop", (func.value,))
            if method == "astype":
                return self._astype(targets, func.value, positional, kwargs)
            entry = _METHODS.get(method)
            if entry is None:
                return Operation(
                    targets, None, f"array method .{method}", (func.value, *positional), kwargs
                )
            primitive, collect = entry
            if collect is not None and len(positional) > 1:
                packed = cst.Tuple(tuple(cst.Element(p) for p in positional))
                return self._primitive(
                    targets, primitive, (func.value,), {**kwargs, collect: packed}
                )
            return self._primitive(targets, primitive, (func.value, *positional), kwargs)
        found, callee = evaluate_spelling(func, self.namespace)
        if not found:
            return Operation(targets, None, cst.Module(()).code_for_node(func), positional, kwargs)
        if _is_record_class(callee) and self.registry.lookup(callee) is None:
            record = _record_pack(targets, callee, call)
            if record is not None:
                return record
        return self._primitive(targets, callee, positional, kwargs)

    def _astype(self, targets, receiver, positional, kwargs) -> Operation:
        dtype_expr = positional[0] if positional else kwargs.get("dtype")
        found, dtype = (False, None)
        if isinstance(dtype_expr, cst.SimpleString):
            found, dtype = True, dtype_expr.evaluated_value
        elif dtype_expr is not None:
            found, dtype = evaluate_spelling(dtype_expr, self.namespace)
        try:
            kind = np.dtype(dtype).kind if found else "f"
        except TypeError:
            kind = "f"
        if kind in "fc":
            return self._primitive(targets, np.copy, (receiver,))
        return Operation(targets, NO_DERIVATIVE, ".astype", (receiver,))

    def _primitive(self, targets, primitive, args, kwargs=None, index=None) -> Operation:
        args, kwargs = past_out(primitive, tuple(args), kwargs or {})
        rule = self.registry.lookup(primitive)  # (first: it loads SciPy's rules and definitions)
        definition = _definition(primitive) if rule is None else None
        if definition is not None:  # differentiated through its definition (runtime/definitions.py)
            return Operation(
                targets, definition, qualified_name(primitive), tuple(args), kwargs or {}, user=True
            )
        if rule is not None:
            self._capture_rule_constants(rule)
        if rule is None and _is_user_function(primitive):
            name = getattr(primitive, "__qualname__", "function")
            return Operation(targets, primitive, name, tuple(args), kwargs or {}, user=True)
        if rule is None and not self._reads_locals((*args, *(kwargs or {}).values())):
            # a call of constants alone (``GV.copy()``: a bound method of a global array)
            # computes a constant, even when an item write later makes its name active
            return Operation(targets, NO_DERIVATIVE, qualified_name(primitive), tuple(args))
        return Operation(
            targets=targets,
            primitive=primitive,
            name=qualified_name(primitive),
            args=tuple(args),
            kwargs=kwargs or {},
            index=index,
            rule=rule,
        )
