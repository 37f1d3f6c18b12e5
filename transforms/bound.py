"""Callables that are not plain ``def`` functions, as the Python functions the compiler reads.

The compiler transforms a Python function whose parameters are all arguments and whose free
names are constants (globals and closure variables, captured when the transform is made). A
bound method (``model.loss``), a ``functools.partial``, a callable object (its ``__call__``)
and a ``classmethod`` are a user's function with some parameters fixed to values. So a fixed
parameter is made a closure variable: `bind` compiles the definition again, from the user's
file and at the user's line numbers, inside a function that takes the fixed parameters and
returns it. The result is an ordinary closure:

- its source is the method's own lines (`parse` drops the parameters the closure fixes), so
  messages point at the user's code;
- ``self`` is a constant of the derivative like any closure variable: its attributes are read
  when the derivative runs (``self.W`` after ``model.W = ...`` is the new ``W``), as a global's
  are, and they are never differentiated (pass what is differentiated as an argument);
- the transform cache checks closure values by identity, so another instance is another entry,
  and ``self.predict(x)`` inside is a call of a user function, transformed in turn.

A lambda is a function named ``<lambda>``, which is no identifier: it is given `LAMBDA` as its
name (a copy: the user's lambda is left alone), and `parse` reads its expression as the body of
a ``def``.

No libcst here: `s2sgrad.callables` uses this before deciding whether to load the compiler.
"""

from __future__ import annotations

import ast
import functools
import inspect
import types
import weakref

from .library import is_library_function, is_user_function
from .naming import LAMBDA
from .source import source_lines

# the function that compiles a definition again with fixed parameters, one per (code, names):
# the same code object every time, so that the transform cache (keyed by code) finds the
# transforms of `model.loss` again for the next `sg.grad(model.loss)`. A code object is its
# definition: a redefined method has a new one, so an entry can never be stale.
_rebinders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def user_function(value: object) -> types.FunctionType | None:
    """The Python function the compiler transforms for `value`, or None when `value` is not
    a user's function: `value` itself for a ``def`` function, and for a bound method, a
    ``functools.partial``, a callable object or a lambda, the function described in the
    module docstring."""
    found = _binding(value)
    if found is None:
        return None
    fn, fixed = found
    if fn.__code__.co_name == "<lambda>":
        if fixed:
            raise TypeError(
                "s2sgrad cannot fix arguments of a lambda (a functools.partial of one): "
                "define the function with `def`"
            )
        return _renamed(fn, LAMBDA)
    return bind(fn, fixed) if fixed else fn


def as_callee(value: object) -> object:
    """`value`, or the function `user_function` gives for it when `value` is a bound method,
    a partial, a callable object or a lambda of the user's (what a call in a function being
    transformed is a call of)."""
    if isinstance(value, types.FunctionType) and value.__code__.co_name != "<lambda>":
        return value
    if isinstance(value, (type, types.ModuleType)) or not callable(value):
        return value
    try:
        function = user_function(value)
    except TypeError:
        return value
    return value if function is None else function


def _binding(value: object):
    """(function, {fixed parameter: value}) for a callable of the user's, or None."""
    if isinstance(value, types.FunctionType):
        return (value, {}) if is_user_function(value) else None
    if isinstance(value, types.MethodType):
        inner = _binding(value.__func__)
        if inner is None or not _own_method(inner[0]):
            return None
        fn, fixed = inner
        free = _free_positional(fn, fixed)
        if not free:
            return None
        return fn, {**fixed, free[0]: value.__self__}
    if isinstance(value, functools.partial):
        inner = _binding(value.func)
        if inner is None:
            return None
        fn, fixed = inner
        free = _free_positional(fn, fixed)
        if len(value.args) > len(free):
            raise TypeError(
                f"functools.partial gives {fn.__name__} {len(value.args)} positional "
                f"arguments, more than its {len(free)} parameters"
            )
        fixed = {**fixed, **dict(zip(free, value.args, strict=False))}
        names = _parameters(fn)
        for name, keyword_value in value.keywords.items():
            if name not in names or name in fixed:
                raise TypeError(
                    f"functools.partial gives {fn.__name__} the keyword {name!r}, which is not "
                    f"one of its parameters"
                )
            fixed[name] = keyword_value
        return fn, fixed
    if isinstance(value, (type, types.ModuleType)) or not callable(value):
        return None
    call = inspect.getattr_static(type(value), "__call__", None)
    if isinstance(call, types.FunctionType):  # a callable object: its __call__, bound
        return _binding(types.MethodType(call, value))
    return None


def _own_method(fn: types.FunctionType) -> bool:
    """Not s2sgrad's own classes (``sg.nn.Dense``): those are differentiated by their tapes."""
    return not (getattr(fn, "__module__", "") or "").startswith("s2sgrad") and (
        not is_library_function(fn)
    )


def _parameters(fn: types.FunctionType) -> tuple[str, ...]:
    code = fn.__code__
    return code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]


def _free_positional(fn: types.FunctionType, fixed: dict) -> list[str]:
    code = fn.__code__
    return [n for n in code.co_varnames[: code.co_argcount] if n not in fixed]


def _renamed(fn: types.FunctionType, name: str) -> types.FunctionType:
    copy = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__qualname__ = fn.__qualname__.replace("<lambda>", name)
    copy.__module__ = fn.__module__
    return copy


def bind(fn: types.FunctionType, fixed: dict) -> types.FunctionType:
    """`fn` with the parameters `fixed` turned into closure variables holding those values
    (see the module docstring). Its other parameters keep their defaults.

    Raises:
        TypeError: the source of `fn` cannot be read.
    """
    names = tuple(n for n in _parameters(fn) if n in fixed)
    by_names = _rebinders.setdefault(fn.__code__, {})
    rebinder = by_names.get(names)
    if rebinder is None:
        rebinder = by_names[names] = _rebinder(fn, names)
    cells = [cell.cell_contents for cell in fn.__closure__ or ()]
    bound = rebinder(*(fixed[n] for n in names), *cells)
    code = fn.__code__
    positional = code.co_varnames[: code.co_argcount]
    defaults = fn.__defaults__ or ()
    with_defaults = positional[len(positional) - len(defaults) :]
    kept = tuple(v for n, v in zip(with_defaults, defaults, strict=True) if n not in fixed)
    bound.__defaults__ = kept or None
    kwdefaults = {k: v for k, v in (fn.__kwdefaults__ or {}).items() if k not in fixed}
    bound.__kwdefaults__ = kwdefaults or None
    bound.__qualname__ = fn.__qualname__
    bound.__module__ = fn.__module__
    bound.__doc__ = fn.__doc__
    return bound


def _rebinder(fn: types.FunctionType, names: tuple[str, ...]) -> types.FunctionType:
    """``def _bind(<names>, <fn's closure variables>): <fn's definition without names>;
    return fn`` compiled from the user's file, at the user's line numbers."""
    code = fn.__code__
    try:
        lines, first = source_lines(code)
    except (OSError, TypeError) as exc:
        raise TypeError(
            f"cannot read the source of {fn.__qualname__!r} (defined in {code.co_filename}): "
            f"s2sgrad needs the method's source, so define it in a .py file"
        ) from exc
    margin = lines[0][: len(lines[0]) - len(lines[0].lstrip())]
    text = "".join(line[len(margin) :] if line.startswith(margin) else line for line in lines)
    tree = ast.parse(text)
    definition = next(
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == code.co_name
    )
    ast.increment_lineno(tree, first - 1)
    definition.decorator_list = []
    definition.returns = None
    arguments = definition.args
    for group in ("posonlyargs", "args", "kwonlyargs"):
        setattr(arguments, group, [a for a in getattr(arguments, group) if a.arg not in names])
    for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        argument.annotation = None
    # the defaults' values are set on the bound function (`bind`): placeholders here
    count = len(arguments.posonlyargs) + len(arguments.args)
    kept_defaults = min(len(arguments.defaults), count)
    arguments.defaults = [ast.Constant(None) for _ in range(kept_defaults)]
    kwdefaults = fn.__kwdefaults__ or {}
    arguments.kw_defaults = [
        ast.Constant(None) if a.arg in kwdefaults else None for a in arguments.kwonlyargs
    ]
    outer_params = [ast.arg(n) for n in (*names, *code.co_freevars)]
    outer = ast.FunctionDef(
        name="_s2sgrad_bind",
        args=ast.arguments(
            posonlyargs=[], args=outer_params, kwonlyargs=[], kw_defaults=[], defaults=[]
        ),
        body=[definition, ast.Return(ast.Name(definition.name, ast.Load()))],
        decorator_list=[],
    )
    ast.copy_location(outer, definition)
    module = ast.Module(body=[outer], type_ignores=[])
    ast.fix_missing_locations(module)
    compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    outer_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(outer_code, fn.__globals__)
