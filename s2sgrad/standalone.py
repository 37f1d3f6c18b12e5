"""`sg.export`: a generated function as a standalone module (numpy and s2sgrad.runtime only).

A generated function lives in a module of its own whose globals hold what the text does not:
the constants captured from the user's globals and closure, and the forward/backward halves of
the user functions it calls (each compiled in a module of its own, see `transforms.calls`).
Export walks those globals from the entry function, writes every generated ``def`` it reaches
into one file, and writes each captured constant as a literal (exact: floats by `repr`, arrays
with NaN or many elements from their bytes). A constant that is not data (a function from
another library, an open file, ...) cannot be written down; export says which one instead of
writing a module that fails when imported.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import math
import os
import re
import tempfile
import types

import numpy as np

from .traceback_filter import api_boundary

__all__ = ["export"]

_READABLE_SIZE = 256  # arrays up to this size are written as nested lists, larger ones as bytes


@api_boundary
def export(fn, path, *example_args) -> str:
    """Write the generated source of `fn` as a module that needs only numpy and s2sgrad.runtime.

    Args:
        fn: a function returned by an s2sgrad transform (``sg.grad(f)``, ...). The general
            specialization is written, so the module accepts numbers and arrays of any rank
            (a container argument needs `example_args`); its entry checks the kinds of its
            arguments first (`runtime.check_kinds`), as it has no dispatcher choosing code.
        path: the file to write (str or path-like); written atomically, replacing a file there.
        example_args: arguments like those `fn` will be called with: the specialization they
            select is written instead (as for `sg.source`). Needed for transforms of generated
            code (``sg.hessian(f)``, ``sg.grad(sg.grad(f))``), whose code depends on them.

    Returns:
        The path written, as a string. ``import``-ing it (or running it with ``exec``) defines
        the entry function, which gives the same results as `fn`.

    Raises:
        TypeError: `fn` is not a generated function, or `path` is not a path.
        ValueError: the generated code reads a captured value that cannot be written as a
            literal (it is named in the message).

    Example:
        >>> df = sg.grad(f)                       # doctest: +SKIP
        >>> sg.export(df, "f_grad.py")            # doctest: +SKIP
        >>> from f_grad import dfdx               # doctest: +SKIP
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike; got {type(path).__name__}")
    path = os.fspath(path)
    entry = _generated_entry(fn, example_args)
    text = with_kind_check(standalone_source(entry), entry.__name__, _kinds(fn, example_args))
    text = with_defaults(text, entry.__name__, fn)
    compile(text, path, "exec")  # a bug here must not leave a broken file behind
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".s2sgrad-export-", suffix=".py", dir=directory)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def _kinds(fn, example_args: tuple) -> tuple | None:
    """(parameter, kind) for each parameter of the code exported for `example_args` (none:
    the general code, for numbers and arrays of any rank), as `runtime.check_kinds` takes
    them; None where the transform does not say what its parameters are."""
    from s2sgrad.runtime.boundaries import CONTAINER, NUMBER, NUMBER_OR_ARRAY

    from .dispatch import argument_kinds

    params = getattr(getattr(fn, "__wrapped_transform__", None), "params", None)
    if params is None:
        return None
    names = [p if isinstance(p, str) else p[0] for p in params]  # (name, kind) or a name
    if not example_args:
        return tuple((name, NUMBER_OR_ARRAY) for name in names)
    from .composed import bind

    scalars, ndims, containers = argument_kinds(names, bind(fn, example_args))
    ranks = dict(ndims)
    return tuple(
        (
            name,
            NUMBER
            if name in scalars
            else ranks.get(name, CONTAINER if name in containers else NUMBER_OR_ARRAY),
        )
        for name in names
    )


def with_kind_check(text: str, entry: str, kinds: tuple | None) -> str:
    """`text` whose `entry` first checks its arguments are of `kinds` (`runtime.check_kinds`):
    a standalone module has no dispatcher choosing its code by the arguments' kinds."""
    if kinds is None:
        return text
    from .dispatch import _insert_after_header

    names = ", ".join(name for name, _ in kinds) + ("," if len(kinds) == 1 else "")
    text = _insert_after_header(text, entry, f"    check_kinds({kinds!r}, ({names}))\n")
    tree = ast.parse(text)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    lines = text.splitlines()
    at = imports[-1].end_lineno if imports else 0
    lines.insert(at, "from s2sgrad.runtime import check_kinds")
    return "\n".join(lines) + "\n"


def with_defaults(text: str, entry: str, fn) -> str:
    """`text` with the defaults of `fn`'s parameters on the ``def`` of `entry`, its generated
    function, which has the same parameters but no defaults (they are values, read when the
    transformed function is called). Each is written as a constant ``DEFAULT_<name>`` (exact,
    as any captured value); a parameter the entry does not have, or a positional one followed
    by a parameter without a default, is left as it is."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return text
    empty = inspect.Parameter.empty
    defaults = {name: p.default for name, p in parameters.items() if p.default is not empty}
    tree = ast.parse(text)
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry), None)
    if node is None or not defaults or any(f"DEFAULT_{name}" in text for name in defaults):
        return text  # (a name taken by the code itself: no defaults rather than a clash)
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    tail = 0  # the positional parameters that get a default: a run at the end
    for arg in reversed(positional):
        if arg.arg not in defaults:
            break
        tail += 1
    constants = {}
    if tail:
        arguments.defaults = [ast.Name(f"DEFAULT_{a.arg}") for a in positional[-tail:]]
        constants.update((a.arg, defaults[a.arg]) for a in positional[-tail:])
    keyword = [
        ast.Name(f"DEFAULT_{a.arg}") if a.arg in defaults else None for a in arguments.kwonlyargs
    ]
    arguments.kw_defaults = keyword
    constants.update((a.arg, defaults[a.arg]) for a in arguments.kwonlyargs if a.arg in defaults)
    if not constants:
        return text
    lines = text.splitlines()
    first = last = node.lineno - 1  # the header: to the line that closes its parentheses
    depth = lines[last].count("(") - lines[last].count(")")
    while depth or not lines[last].rstrip().endswith(":"):
        last += 1
        depth += lines[last].count("(") - lines[last].count(")")
    stub = ast.FunctionDef(node.name, arguments, [ast.Pass()], [], None, None)
    header = ast.unparse(ast.fix_missing_locations(stub))
    assigned = []
    for name, value in constants.items():
        try:
            assigned.append(f"DEFAULT_{name} = {literal(value, name)}")
        except ValueError:
            raise ValueError(
                f"cannot export: the default of parameter {name!r} is a "
                f"{type(value).__name__}, which cannot be written into a standalone module "
                f"(only numbers, strings, NumPy arrays and tuples/lists/dicts of them can)"
            ) from None
    header_line = header.splitlines()[0]
    body = [*lines[:first], "# defaults of the parameters", *assigned, "", "", header_line]
    body += lines[last + 1 :]
    return "\n".join(body) + "\n"


def _generated_entry(fn, example_args: tuple = ()) -> types.FunctionType:
    from .dispatch import CompiledGradient

    compiled = getattr(fn, "__wrapped_transform__", None)
    if example_args and hasattr(compiled, "for_arguments"):
        from .composed import bind

        return compiled.for_arguments(bind(fn, example_args)).function
    if isinstance(compiled, CompiledGradient):
        return compiled.generic().function
    if hasattr(compiled, "generic"):  # a transform of generated code: needs example arguments
        compiled.generic()
    if isinstance(fn, types.FunctionType) and hasattr(fn, "__s2sgrad_source__"):
        return fn
    from .composed import refuse_hvp

    refuse_hvp(fn, "sg.export")
    raise TypeError(
        f"sg.export expects a function returned by an s2sgrad transform (sg.grad(f), ...); "
        f"got {getattr(fn, '__name__', fn)!r}"
    )


class _Module:
    """One generated module's text, parsed: its imports, defs and the names it reads."""

    def __init__(self, source: str, globals_: dict):
        self.source = source
        self.globals = globals_
        tree = ast.parse(self.source)
        self.docstring = ast.get_docstring(tree) or ""
        lines = self.source.splitlines()
        self.imports: list[ast.stmt] = []
        self.defs: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.append(node)
            elif isinstance(node, ast.FunctionDef):
                self.defs[node.name] = "\n".join(lines[node.lineno - 1 : node.end_lineno])
        bound = set(self.defs)
        for node in self.imports:
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        locals_ = {
            n.id
            for fn in tree.body
            if isinstance(fn, ast.FunctionDef)
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        } | {a.arg for fn in ast.walk(tree) if isinstance(fn, ast.arguments) for a in _args(fn)}
        # functions defined inside functions (a custom gradient's ``backward``)
        locals_ |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        self.free = sorted(read - bound - locals_ - {"__all__"})


def _args(arguments: ast.arguments) -> list[ast.arg]:
    found = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    return found + [a for a in (arguments.vararg, arguments.kwarg) if a is not None]


def standalone_source(entry: types.FunctionType) -> str:
    """The text of one module holding `entry`, every generated function it reaches and the
    constants they read."""
    modules: list[_Module] = []
    seen: set[int] = set()
    constants: dict[str, str] = {}
    owner: dict[str, str] = {}
    pending = [entry]
    while pending:
        function = pending.pop(0)
        source = _generated_source(function)
        if id(source) in seen:
            continue
        seen.add(id(source))
        module = _Module(source, function.__globals__)
        modules.append(module)
        for name in module.free:
            value = module.globals.get(name, _MISSING)
            if value is _MISSING:
                if hasattr(builtins, name):
                    continue
                raise ValueError(f"the generated code reads {name!r}, which is not defined")
            if _generated_source(value) is not None:
                pending.append(value)
                continue
            text = importing(value, name, module.source) or literal(value, name)
            if name in constants and constants[name] != text:
                raise ValueError(
                    f"cannot export: two generated modules read different values named "
                    f"{name!r} (closures made by two calls of a factory, say); rename one of "
                    f"them in the source to export this function"
                )
            constants[name] = text
    for module in modules:
        for name in module.defs:
            if name in owner and owner[name] != module.source:
                raise ValueError(f"cannot export: two generated functions are named {name!r}")
            owner[name] = module.source
    return _render(entry.__name__, modules, constants)


def merged_source(entry: types.FunctionType) -> str:
    """`sg.source`'s text of `entry`: like `standalone_source`, one module with one
    docstring, one import block and one ``__all__`` holding every generated function `entry`
    reaches, but captured values stay names (as in the code that runs), not literals."""
    modules: list[_Module] = []
    seen: set[int] = set()
    pending = [entry]
    while pending:
        function = pending.pop(0)
        source = _generated_source(function)
        if source is None or id(source) in seen:
            continue
        seen.add(id(source))
        module = _Module(source, function.__globals__)
        modules.append(module)
        pending.extend(module.globals.get(name) for name in module.free)
    if len(modules) == 1:
        return modules[0].source
    return _render(entry.__name__, modules, {}, exported=False)


_MISSING = object()


def _generated_source(value) -> str | None:
    """The module text a generated function was compiled from (codegen marks the module's
    first function; the others share its globals), or None for anything else."""
    if not isinstance(value, types.FunctionType):
        return None
    source = getattr(value, "__s2sgrad_source__", None)
    if source is not None:
        return source
    if not str(value.__globals__.get("__name__", "")).startswith("s2sgrad.generated."):
        return None
    for other in value.__globals__.values():
        if isinstance(other, types.FunctionType) and other.__globals__ is value.__globals__:
            source = getattr(other, "__s2sgrad_source__", None)
            if source is not None:
                return source
    return None


def _render(
    entry: str, modules: list[_Module], constants: dict[str, str], exported: bool = True
) -> str:
    plain: set[str] = set()
    helpers: set[str] = set()
    for module in modules:
        for node in module.imports:
            if isinstance(node, ast.ImportFrom) and node.module == "s2sgrad.runtime":
                helpers.update(a.name for a in node.names)
            else:  # (numpy, math, and the libraries the function reads: scipy.special's)
                plain.add(ast.unparse(node))
    docstring = modules[0].docstring.rstrip() + "\n"
    if exported:
        docstring += (
            "\nExported by s2sgrad.export: a standalone module that needs only numpy, "
            "s2sgrad.runtime and the libraries the function itself calls.\n"
        )
    imported = {name: text for name, text in constants.items() if text.startswith(_IMPORTS)}
    constants = {name: text for name, text in constants.items() if name not in imported}
    lines = [f'"""{docstring}"""', ""]
    lines += sorted(plain, key=lambda s: (s != "import math", s))
    # library functions and modules the function reads (SciPy's)
    lines += sorted({line for text in imported.values() for line in text.splitlines()})
    if helpers:
        lines.append(f"from s2sgrad.runtime import {', '.join(sorted(helpers))}")
    lines += ["", f'__all__ = ["{entry}"]', ""]
    if constants:
        lines.append("# constants captured from the functions' globals and closures")
        lines += [f"{name} = {text}" for name, text in sorted(constants.items())]
        lines.append("")
    for index, module in enumerate(modules):
        if index:
            first = module.docstring.splitlines()[0] if module.docstring else ""
            lines += ["", f"# {first}" if first else "# called above"]
        lines += ["", "\n\n\n".join(module.defs.values()), ""]
    return "\n".join(lines).rstrip() + "\n"


_IMPORTS = ("import ", "from ")


_DATA = (np.ndarray, np.generic, int, float, complex, str, bytes, tuple, list, dict, set)
_DATA += (frozenset, slice, range)  # (values, written as literals or refused: never imported)


def importing(value, name: str, source: str = "") -> str | None:
    """The import statement(s) binding `name` to `value` when `value` is a library module, or
    a function or object a library module holds under a name (``from scipy.special import
    gammaln``): the exported module's way to get library code it calls. None for data and for
    anything of the user's own modules (those are not importable from elsewhere). For a
    package (``scipy``), the submodules `source` reads through it (``scipy.stats``) too."""
    from s2sgrad.runtime import qualified_name
    from s2sgrad.transforms.library import is_library_module

    if isinstance(value, types.ModuleType):
        if not is_library_module(value):
            return None
        statement = f"import {value.__name__}"
        if value.__name__ != name:
            return statement + f" as {name}"
        subs = sorted(set(re.findall(rf"\b{re.escape(name)}\.(\w+)", source)))
        more = [
            f"import {value.__name__}.{sub}"
            for sub in subs
            if isinstance(getattr(value, sub, None), types.ModuleType)
        ]
        return "\n".join([statement, *more])
    if value is None or value is Ellipsis or isinstance(value, _DATA):
        return None  # (its type's module is builtins: `from builtins import ...` fails)
    public = qualified_name(value) if callable(value) else ""
    module = getattr(value, "__module__", None) or getattr(type(value), "__module__", None)
    candidates = [public.rpartition(".")[::2]] if "." in public else []
    if isinstance(module, str):
        attribute = getattr(value, "__name__", None) or name
        candidates += [(module.split("._")[0], attribute), (module, attribute)]
    for holder_name, attribute in dict.fromkeys(candidates):
        try:
            holder = importlib.import_module(holder_name)
        except ImportError:
            continue
        if is_library_module(holder) and getattr(holder, attribute, None) is value:
            alias = "" if attribute == name else f" as {name}"
            return f"from {holder_name} import {attribute}{alias}"
    return None


def literal(value, name: str = "value") -> str:
    """Python source that evaluates (with ``np`` imported) to a value equal to `value`.

    Raises:
        ValueError: `value` is not data (numbers, strings, arrays and containers of them).
    """
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f'float("{value!r}")'
    if isinstance(value, complex):
        return f"complex({literal(value.real)}, {literal(value.imag)})"
    if isinstance(value, np.generic) and value.dtype.kind in "biufc":
        item = value.item()
        return f"np.{value.dtype.name}({literal(item, name)})"
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return _array(value)
    if isinstance(value, (tuple, list)):
        items = [literal(v, name) for v in value]
        if isinstance(value, list):
            return f"[{', '.join(items)}]"
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if isinstance(value, dict) and all(isinstance(k, (str, int)) for k in value):
        return "{" + ", ".join(f"{k!r}: {literal(v, name)}" for k, v in value.items()) + "}"
    kind = type(value).__name__
    where = getattr(value, "__module__", None) or type(value).__module__
    raise ValueError(
        f"cannot export: the generated code reads {name!r}, a {kind} from {where}, which "
        f"cannot be written into a standalone module (only numbers, strings, NumPy arrays and "
        f"tuples/lists/dicts of them can)"
    )


def _array(value: np.ndarray) -> str:
    dtype = value.dtype.newbyteorder("<") if value.dtype.byteorder == ">" else value.dtype
    finite = value.dtype.kind not in "fc" or bool(np.all(np.isfinite(value)))
    if value.size <= _READABLE_SIZE and finite:
        items = repr(value.tolist())
        return f'np.array({items}, dtype="{dtype.str}").reshape({value.shape!r}).copy()'
    data = np.ascontiguousarray(value, dtype=dtype).tobytes().hex()
    chunks = "".join(f'\n        "{data[i : i + 80]}"' for i in range(0, len(data), 80))
    return (
        f'np.frombuffer(\n    bytes.fromhex({chunks}\n    ),\n    dtype="{dtype.str}",\n'
        f").reshape({value.shape!r}).copy()"
    )
