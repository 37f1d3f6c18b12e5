"""Pass 3, resolve: what every name in the function refers to.

An analysis: it returns an immutable `Resolution` and leaves the tree alone. Locals are the
parameters and every assigned name. Every other name is looked up the way Python would at call
time (closure cells, then the function's globals, then builtins) and its value captured now:
globals and free variables are constants of the derivative. Later passes ask the resolution
for the canonical spelling of a free reference (``onp.sin`` and ``from numpy import sin`` both
become ``np.sin``, so generated code needs nothing but ``import numpy as np``) and for the
namespace generated code runs in.
"""

from __future__ import annotations

import builtins
import dataclasses
import types
import warnings
from collections.abc import Mapping

import libcst as cst
import numpy as np

from .bound import as_callee
from .parse import ParsedFunction
from .spelling import RESERVED, canonical_spelling
from .walk import visit

# context managers a `with` of the user's may use: they change how NumPy reports errors or
# prints, or which warnings show, never a value, so the body runs as if they were not there
_INERT_MANAGERS = (np.errstate, np.printoptions, warnings.catch_warnings)

# Names generated code binds itself (RESERVED: its imports and the runtime helpers it calls);
# a user constant or local variable with one of these names is renamed. Both it and
# `canonical_spelling` live in `spelling`, which the on-disk cache uses without libcst.


@dataclasses.dataclass(frozen=True)
class Resolution:
    """The result of name resolution.

    Attributes:
        params: the function's parameter names in order.
        locals: every local name (parameters and assigned names).
        free: each free name mapped to the value it had when the function was transformed.
        spelling: each free name mapped to the expression generated code uses for it
            (``np.sin``, ``math.pi``, ``len`` or the name of a constant in `namespace`).
    """

    params: tuple[str, ...]
    locals: frozenset[str]
    free: Mapping[str, object]
    spelling: Mapping[str, str]

    def is_local(self, name: str) -> bool:
        return name in self.locals

    def value_of(self, expr: cst.BaseExpression) -> tuple[bool, object]:
        """Evaluate a free name or an attribute chain rooted at one: (found, value). A bound
        method, partial, callable object or lambda of the user's is the function the compiler
        transforms for it (`bound.as_callee`: ``self.predict`` is ``predict`` with ``self``
        fixed)."""
        found, value = self._value_of(expr)
        return (True, as_callee(value)) if found else (False, None)

    def function_of(self, expr: cst.BaseExpression) -> types.FunctionType | None:
        """The plain ``def`` function `expr` names (not a method, partial, callable object or
        lambda), or None."""
        found, value = self._value_of(expr)
        plain = isinstance(value, types.FunctionType) and value.__code__.co_name != "<lambda>"
        return value if found and plain else None

    def method_of(self, expr: cst.BaseExpression) -> types.FunctionType | None:
        """The plain ``def`` function of the instance method `expr` names (``self.step``, the
        instance a free value), called with that instance first; None for anything else (a
        class method's first argument is its class, not `expr`'s base)."""
        found, value = self._value_of(expr)
        if not found or not isinstance(value, types.MethodType):
            return None
        function = value.__func__
        if isinstance(value.__self__, type) or not isinstance(function, types.FunctionType):
            return None
        return function if function.__code__.co_name != "<lambda>" else None

    def _value_of(self, expr: cst.BaseExpression) -> tuple[bool, object]:
        if isinstance(expr, cst.Name):
            if expr.value in self.locals or expr.value not in self.free:
                return False, None
            return True, self.free[expr.value]
        if isinstance(expr, cst.Attribute):
            found, base = self._value_of(expr.value)
            if not found:
                return False, None
            try:
                return True, getattr(base, expr.attr.value)
            except AttributeError:
                return False, None
        return False, None

    def spell(self, expr: cst.BaseExpression) -> str | None:
        """The canonical spelling of a free reference, or None for locals and unknowns."""
        found, value = self.value_of(expr)
        if not found:
            return None
        canonical = canonical_spelling(value)
        if canonical is not None:
            return canonical
        if isinstance(expr, cst.Name):
            return self.spelling[expr.value]
        return f"{self.spell(expr.value)}.{expr.attr.value}"

    def namespace(self) -> dict[str, object]:
        """The globals generated code runs with: the user's constants under their spelling."""
        names: dict[str, object] = {}
        for name, value in self.free.items():
            spelled = self.spelling[name]
            if "." not in spelled and canonical_spelling(value) is None:
                names[spelled] = value
        return names


class _NameCollector(cst.CSTVisitor):
    """Collects assigned names and loaded names, skipping attribute and keyword names."""

    def __init__(self) -> None:
        self.assigned: set[str] = set()
        self.loaded: dict[str, cst.Name] = {}

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        visit(node.value, self)
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> bool:
        self._collect_target(node.target)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        self._collect_target(node.target)
        self._load(node.target)
        visit(node.value, self)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        self._collect_target(node.target)
        if node.value is not None:
            visit(node.value, self)
        return False

    def visit_Name(self, node: cst.Name) -> bool:
        self._load(node)
        return False

    def visit_For(self, node: cst.For) -> None:
        self._collect_target(node.target)

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        """A lambda's parameters are its own: only the other names its body reads (and its
        defaults) are read from the function."""
        from .anf_lambdas import lambda_parameters

        inner = _NameCollector()
        visit(node.body, inner)
        own = set(lambda_parameters(node))
        for name, read in inner.loaded.items():
            if name not in own:
                self.loaded.setdefault(name, read)
        for param in (*node.params.params, *node.params.kwonly_params):
            if param.default is not None:
                visit(param.default, self)
        return False

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._collect_target(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        # a nested function: its name and its parameters are locals (it is inlined)
        self.assigned.add(node.name.value)
        for param in node.params.params:
            self.assigned.add(param.name.value)

    def _load(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            self.loaded.setdefault(node.value, node)

    def _collect_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.assigned.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._collect_target(element.value)
        else:  # item and attribute targets load their base
            visit(target, self)


def resolve(parsed: ParsedFunction, fn: types.FunctionType) -> Resolution:
    """Bind every name of `parsed` (the source of `fn`).

    Raises:
        TransformError: a name that is neither local, free in `fn`, global nor builtin.
    """
    funcdef = parsed.funcdef
    star = funcdef.params.star_arg
    params = tuple(
        p.name.value
        for p in (
            *funcdef.params.posonly_params,
            *funcdef.params.params,
            *((star,) if isinstance(star, cst.Param) else ()),  # *args: a tuple
            *funcdef.params.kwonly_params,
            *((funcdef.params.star_kwarg,) if funcdef.params.star_kwarg else ()),  # a dict
        )
    )
    collector = _NameCollector()
    visit(funcdef.body, collector)
    for manager in parsed.managers:  # (the with statements whose bodies took their place)
        visit(manager, collector)  # (not the defaults: values the enclosing scope computed
    # when the def ran, which calls take from fn.__defaults__, not names the function reads)
    locals_ = frozenset(params) | frozenset(collector.assigned)

    closure = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            try:
                closure[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is assigned after the def
                pass
    free: dict[str, object] = {}
    for name, node in collector.loaded.items():
        if name in locals_:
            continue
        if name in closure:
            free[name] = closure[name]
        elif name in fn.__globals__:
            free[name] = fn.__globals__[name]
        elif hasattr(builtins, name):
            free[name] = getattr(builtins, name)
        else:
            raise parsed.error(node, f"name {name!r} is not defined")
    spelling = _spell_free_names(free, locals_)
    resolution = Resolution(
        params=params,
        locals=locals_,
        free=types.MappingProxyType(free),
        spelling=types.MappingProxyType(spelling),
    )
    for manager in parsed.managers:
        found, value = resolution.value_of(manager.func)
        if not (found and value in _INERT_MANAGERS):
            raise parsed.error(
                manager,
                "with is supported only for context managers that carry no derivative "
                "(np.errstate, np.printoptions, warnings.catch_warnings): move this one out "
                "of the differentiated function",
            )
    return resolution


def _spell_free_names(free: Mapping[str, object], locals_: frozenset[str]) -> dict[str, str]:
    taken = set(locals_) | set(free)
    spelling: dict[str, str] = {}
    for name, value in free.items():
        canonical = canonical_spelling(value)
        if canonical is not None:
            spelling[name] = canonical
        elif name in RESERVED:
            renamed = f"_{name}_const"
            while renamed in taken:
                renamed += "_"
            taken.add(renamed)
            spelling[name] = renamed
        else:
            spelling[name] = name
    return spelling
