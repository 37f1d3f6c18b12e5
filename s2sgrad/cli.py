"""The `s2sgrad` command (also `python -m s2sgrad`): ``dump``, ``check`` and ``cache``
(API.md section 4).

``dump`` never runs the user's file. `static_load` builds the functions it needs the way
`python` would, minus every side effect: only the file's imports of numpy, math and scipy run,
each top-level ``def`` is compiled on its own (decorators, annotations and non-literal
defaults dropped, since those are expressions Python evaluates at definition time), and
top-level ``NAME = <literal>`` constants are read with `ast.literal_eval` (``NAME = np.tanh``,
a reference into an allowed import, is looked up). Any other top-level ``NAME = ...`` (an array
computed when the file runs) is a `StaticConstant`: a constant of unknown value that generated
code reads by its name. The compiler then reads the functions' source from `linecache`, where
the file's text is registered. A name the file binds any other way is simply undefined, and
the compiler reports it with its position.

``check`` does import the file (it has to run the function) and says so in its help; the
file's directory comes first on `sys.path` while it is imported, as under ``python FILE.py``.

``cache info`` shows the disk cache (directory, entries, bytes, bound) and ``cache clear``
removes its entries (`s2sgrad.cache_files`).

Under ``python -m s2sgrad``, Python puts the current directory first on `sys.path`;
`s2sgrad.__main__` removes it before anything else is imported, so that a ``numpy.py`` lying
in the directory where ``dump`` is run is never imported.

Every failure the user can cause prints one line, ``s2sgrad: error: ...``, and exits with
status 2; ``check`` exits with 1 when derivatives disagree.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import linecache
import os
import sys
import types

from s2sgrad import __version__

_ALLOWED_IMPORTS = ("numpy", "math", "scipy")


class UsageError(Exception):
    """A mistake on the command line or in the user's file: one line, exit status 2."""


# -- reading a file without running it -----------------------------------------------------


def split_target(target: str) -> tuple[str, str]:
    """``FILE.py:FUNC`` to (file, function name)."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise UsageError(f"expected FILE.py:FUNC, got {target!r}")
    if not name.isidentifier():
        raise UsageError(f"{name!r} (after the colon in {target!r}) is not a function name")
    return path, name


def _read(path: str) -> str:
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory, expected a Python file")
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read: {exc}") from None


def static_load(path: str) -> dict:
    """The namespace of `path` as far as it can be built without running the file.

    Raises:
        UsageError: the file is missing or is not valid Python (with its line).
    """
    text = _read(path)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        raise UsageError(
            f"{path}:{exc.lineno}:{exc.offset or 0}: syntax error: {exc.msg}"
        ) from None
    lines = text.splitlines(keepends=True)
    linecache.cache[path] = (len(text), None, lines, path)  # no mtime: never evicted
    namespace: dict = {
        "__name__": "__s2sgrad_dump__",
        "__file__": path,
        "__builtins__": __builtins__,
    }
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if _allowed_import(node):
                _run(node, path, namespace)
        elif isinstance(node, ast.FunctionDef):
            _run(_without_evaluated_parts(node), path, namespace)
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            value = _static_value(node.value, namespace)
            for target in node.targets:
                namespace[target.id] = (
                    value if value is not _UNKNOWN else StaticConstant(target.id, node.lineno)
                )
    return namespace


class StaticConstant:
    """A top-level value `dump` cannot compute without running the file (``A = np.eye(3)``,
    ``W = rng.normal(size=(3, 4))``): a constant of the derivative whose value is unknown.
    Generated code reads it by its name, which is all the printed source needs; its shape is
    unknown, so the code keeps the shape bookkeeping a known array would make unnecessary."""

    def __init__(self, name: str, line: int):
        self.name = name
        self.line = line

    def __repr__(self) -> str:
        return f"<{self.name}: computed at line {self.line} when the file runs>"


_UNKNOWN = object()


def _static_value(node: ast.expr, namespace: dict):
    """A literal's value, a reference into an allowed import (``np.tanh``, ``math.pi``), or
    `_UNKNOWN`: nothing the file defines is run."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not isinstance(namespace.get(node.id), types.ModuleType):
        return _UNKNOWN
    value = namespace[node.id]
    for part in reversed(parts):
        value = getattr(value, part, _UNKNOWN)
        if value is _UNKNOWN:
            break
    return value


def _allowed_import(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        modules = [node.module or ""] if node.level == 0 else [""]
    else:
        modules = [alias.name for alias in node.names]
    return all(module.split(".")[0] in _ALLOWED_IMPORTS for module in modules)


def _without_evaluated_parts(node: ast.FunctionDef) -> ast.FunctionDef:
    """The def with nothing Python would evaluate while defining it (the compiler reads the
    text from linecache, so the text keeps them)."""
    node.decorator_list = []
    node.returns = None
    arguments = node.args
    for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        arg.annotation = None
    for extra in (arguments.vararg, arguments.kwarg):
        if extra is not None:
            extra.annotation = None
    arguments.defaults = [_literal_or_none(d) for d in arguments.defaults]
    arguments.kw_defaults = [d if d is None else _literal_or_none(d) for d in arguments.kw_defaults]
    return node


def _literal_or_none(node: ast.expr) -> ast.expr:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.copy_location(ast.Constant(None), node)
    return node


def _run(node: ast.stmt, path: str, namespace: dict) -> None:
    module = ast.Module(body=[node], type_ignores=[])
    try:
        exec(compile(module, path, "exec"), namespace)
    except ImportError as exc:
        raise UsageError(f"{path}:{node.lineno}: {exc}") from None


def find_function(namespace: dict, name: str, path: str) -> types.FunctionType:
    fn = namespace.get(name)
    if not isinstance(fn, types.FunctionType):
        defined = sorted(
            k for k, v in namespace.items() if isinstance(v, types.FunctionType) and k[0] != "_"
        )
        listed = ", ".join(defined) if defined else "none"
        raise UsageError(
            f"{path}: no top-level function named {name!r} (functions defined there: {listed})"
        )
    return fn


# -- dump ------------------------------------------------------------------------------------


def _wrt(text: str | None):
    if text is None:
        return 0
    names = [n.strip() for n in text.split(",")]
    if not all(n.isidentifier() for n in names):
        raise UsageError(f"--wrt expects NAME[,NAME...], got {text!r}")
    return tuple(names) if len(names) > 1 else names[0]


def transformed_source(fn, args) -> str:
    """The source `dump` prints: reverse mode (`--order` times) or forward mode."""
    import s2sgrad as sg

    wrt = _wrt(args.wrt)
    if args.order < 1:
        raise UsageError(f"--order must be at least 1, got {args.order}")
    if args.mode == "forward":
        if args.order != 1:
            raise UsageError("--order above 1 is only available with --mode reverse")
        from s2sgrad.forward_api import forward_transform

        names = (wrt,) if isinstance(wrt, str) else wrt
        if names == 0:
            names = (fn.__code__.co_varnames[0],) if fn.__code__.co_argcount else ()
        return forward_transform(fn, tuple(names)).generic().source
    if args.order > 1 and isinstance(wrt, tuple):
        raise UsageError("--order above 1 needs a single --wrt argument (a scalar function)")
    options = {"optimize": not args.no_optimize, "simplify": args.simplify}
    transformed = sg.grad(fn, wrt=wrt, **options)
    for _ in range(args.order - 1):
        transformed = sg.grad(transformed, wrt=wrt, **options)
    if args.order == 1:
        return sg.source(transformed)
    # a derivative of generated code is specialized: for a scalar function, Python numbers,
    # which its entry checks (called with an array, it returned a wrong number, silently)
    from .standalone import _generated_entry, _kinds, with_kind_check

    example = (1.0,) * fn.__code__.co_argcount
    text = sg.source(transformed, *example)
    entry = _generated_entry(transformed, example).__name__
    return with_kind_check(text, entry, _kinds(transformed, example))


def uncached_source(fn, args) -> str:
    """Like `transformed_source`, but every pass runs (no in-memory or on-disk cache may skip
    them), so that `--dump-after` sees them."""
    from s2sgrad.transform_api import _normalize_wrt
    from s2sgrad.transforms.pipeline import GradSpec, analyze, generate_gradient

    if args.order != 1:
        raise UsageError("--dump-after shows one transform: use it without --order")
    names, is_tuple = _normalize_wrt(fn, _wrt(args.wrt))
    spec = GradSpec(
        wrt=names,
        wrt_is_tuple=is_tuple,
        optimize=not args.no_optimize,
        simplify=args.simplify,
        mode=args.mode,
    )
    return generate_gradient(analyze(fn, spec)).source


def _highlight(text: str) -> str:
    from pygments import highlight
    from pygments.formatters import TerminalFormatter
    from pygments.lexers import PythonLexer

    return highlight(text, PythonLexer(), TerminalFormatter())


def dump(args) -> int:
    path, name = split_target(args.target)
    fn = find_function(static_load(path), name, path)
    from s2sgrad.transforms import pipeline

    seen: dict[str, str] = {}

    def record(stage: str, text: str) -> None:
        seen.setdefault(stage, text)

    if args.dump_after:
        pipeline.pass_hooks.append(record)
    try:
        text = uncached_source(fn, args) if args.dump_after else transformed_source(fn, args)
    finally:
        if args.dump_after:
            pipeline.pass_hooks.remove(record)
    if args.dump_after:
        if args.dump_after not in seen:
            ran = ", ".join(seen) or "none"
            raise UsageError(f"--dump-after {args.dump_after}: no such pass ran (passes: {ran})")
        text = seen[args.dump_after]
    if not text.endswith("\n"):
        text += "\n"
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as handle:
                handle.write(text)
        except OSError as exc:
            raise UsageError(f"{args.output}: cannot write: {exc.strerror}") from None
        return 0
    sys.stdout.write(_highlight(text) if sys.stdout.isatty() else text)
    return 0


# -- check -----------------------------------------------------------------------------------


def import_file(path: str) -> dict:
    """Import `path` as a module (this runs it) and return its namespace."""
    _read(path)
    module_name = "_s2sgrad_check_" + "".join(c if c.isalnum() else "_" for c in path)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)  # its imports of its neighbours work, as under `python FILE.py`
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise UsageError(
            f"{path}:{exc.lineno}:{exc.offset or 0}: syntax error: {exc.msg}"
        ) from None
    except Exception as exc:
        raise UsageError(f"{path}: raised {type(exc).__name__} on import: {exc}") from None
    finally:
        sys.path.remove(folder)
    return vars(module)


def parse_at(items: list[str], fn) -> dict:
    """``NAME=VALUE`` pairs (VALUE a Python literal) to argument values."""
    import numpy as np

    params = fn.__code__.co_varnames[: fn.__code__.co_argcount + fn.__code__.co_kwonlyargcount]
    values: dict = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise UsageError(f"--at expects NAME=VALUE, got {item!r}")
        if name not in params:
            raise UsageError(f"--at {name}: {fn.__name__} has no parameter {name!r}")
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise UsageError(f"--at {name}: {text!r} is not a number or a nested list") from None
        if isinstance(value, bool) or not isinstance(value, (int, float, list, tuple)):
            raise UsageError(f"--at {name}: {text!r} is not a number or a nested list")
        values[name] = float(value) if isinstance(value, int) else value
        if isinstance(value, (list, tuple)):
            try:
                values[name] = np.asarray(value, dtype=float)
            except ValueError:
                raise UsageError(f"--at {name}: {text!r} is not a rectangular list") from None
    return values


def _arguments(fn, values: dict) -> tuple[tuple, tuple[str, ...]]:
    """Positional arguments for `fn` from `values` and its defaults; the names given."""
    code = fn.__code__
    params = code.co_varnames[: code.co_argcount]
    given = fn.__defaults__ or ()
    defaults = dict(zip(params[len(params) - len(given) :], given, strict=True))
    missing = [p for p in params if p not in values and p not in defaults]
    if missing:
        raise UsageError(f"--at is missing a value for {', '.join(missing)}")
    args = tuple(values[p] if p in values else defaults[p] for p in params)
    return args, tuple(p for p in params if p in values)


def _finite_differences(fn, args: tuple, index: int, step: float = 1e-6):
    """Central differences of sum(fn(...)) in each element of argument `index`."""
    import numpy as np

    def total(value):
        changed = (*args[:index], value, *args[index + 1 :])
        return float(np.sum(fn(*changed)))

    x = args[index]
    if isinstance(x, float):
        h = step * max(1.0, abs(x))
        return (total(x + h) - total(x - h)) / (2 * h)
    out = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        h = step * max(1.0, abs(float(x[i])))
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        out[i] = (total(up) - total(down)) / (2 * h)
    return out


def _table_rows(name, compiled, numeric, rows: list) -> bool:
    import numpy as np

    compiled, numeric = np.asarray(compiled, dtype=float), np.asarray(numeric, dtype=float)
    if compiled.shape != numeric.shape:
        rows.append((name, f"shape {compiled.shape}", f"shape {numeric.shape}", "", "MISMATCH"))
        return False
    all_ok = True
    for i in np.ndindex(compiled.shape):
        label = name + (str(list(i)) if i else "")
        c, n = float(compiled[i]), float(numeric[i])
        ok = abs(c - n) <= 1e-5 + 1e-4 * abs(n)
        all_ok = all_ok and ok
        rows.append(
            (label, f"{c:.10g}", f"{n:.10g}", f"{abs(c - n):.2e}", "ok" if ok else "MISMATCH")
        )
    return all_ok


def check(args) -> int:
    import s2sgrad as sg

    path, name = split_target(args.target)
    fn = find_function(import_file(path), name, path)
    call_args, names = _arguments(fn, parse_at(args.at or [], fn))
    if not names:
        raise UsageError("give at least one argument to differentiate with --at NAME=VALUE")
    params = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    compiled = sg.grad(fn, wrt=names)(*call_args)
    rows = [("d/d", "compiled", "finite diff.", "abs. error", "")]
    ok = True
    for wrt_name, gradient in zip(names, compiled, strict=True):
        numeric = _finite_differences(fn, call_args, params.index(wrt_name))
        ok = _table_rows(wrt_name, gradient, numeric, rows) and ok
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    from s2sgrad.checks import check_grads

    what = "first derivatives" if args.order == 1 else f"derivatives up to order {args.order}"
    try:
        check_grads(fn, call_args, order=args.order, wrt=names)
    except AssertionError as exc:
        print(f"sg.check_grads, {what}, forward and reverse mode: MISMATCH\n{exc}")
        ok = False
    else:
        print(f"sg.check_grads, {what}, forward and reverse mode: ok")
    print("ok" if ok else "MISMATCH: compiled derivatives disagree with finite differences")
    return 0 if ok else 1


# -- cache -----------------------------------------------------------------------------------


def _size(count: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def cache(args) -> int:
    from s2sgrad import cache_files

    try:
        if args.action == "clear":
            root = cache_files.directory()
            removed = cache_files.clear()
        else:
            found = cache_files.info()
            root = found.directory
    except cache_files.CacheError as exc:
        raise UsageError(f"cache: {exc}") from None
    if root is None:
        variable = cache_files.ENVIRONMENT_VARIABLE
        print(f"the disk cache is off ({variable}={os.environ.get(variable, '')!r})")
        return 0
    if args.action == "clear":
        print(f"removed {removed} entries from {root}")
        return 0
    state = "" if os.path.isdir(root) else " (not created yet)"
    print(f"directory: {root}{state}")
    print(f"entries: {found.entries}")
    print(f"size: {found.bytes} bytes ({_size(found.bytes)})")
    print(f"bound: {_size(found.max_bytes)} ({cache_files.SIZE_VARIABLE})")
    return 0


# -- the parser -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="s2sgrad",
        description="Source-to-source automatic differentiation for Python and NumPy.",
    )
    parser.add_argument("--version", action="version", version=f"s2sgrad {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    dump_parser = commands.add_parser(
        "dump",
        help="print the generated derivative of a function (reads the file without running it)",
        description="Print the generated derivative of FUNC in FILE.py. The file is read, not "
        "run: only its imports of numpy, math and scipy and its function definitions are used.",
    )
    dump_parser.add_argument("target", metavar="FILE.py:FUNC")
    dump_parser.add_argument("--mode", choices=("reverse", "forward"), default="reverse")
    dump_parser.add_argument(
        "--wrt", metavar="NAME[,NAME]", help="the argument(s) to differentiate (default: first)"
    )
    dump_parser.add_argument(
        "--order",
        type=int,
        default=1,
        metavar="N",
        help="differentiate a scalar function N times (reverse mode; above 1, the code "
        "specialized for Python numbers)",
    )
    dump_parser.add_argument("--no-optimize", action="store_true", help="skip the optimizer")
    dump_parser.add_argument(
        "--simplify", action="store_true", help="simplify the generated code with sympy"
    )
    dump_parser.add_argument("-o", "--output", metavar="OUT.py", help="write to a file")
    dump_parser.add_argument(
        "--dump-after", metavar="PASS", help="print the program after compiler pass PASS instead"
    )
    check_parser = commands.add_parser(
        "check",
        help="compare compiled derivatives with finite differences (imports, i.e. runs, FILE)",
        description="Imports FILE.py (this runs it), differentiates FUNC at the given point and "
        "prints compiled against finite-difference derivatives; exit status 1 on a mismatch.",
    )
    check_parser.add_argument("target", metavar="FILE.py:FUNC")
    check_parser.add_argument(
        "--at",
        action="append",
        metavar="NAME=VALUE",
        help="an argument's value, a Python literal (number or nested list); repeat per argument",
    )
    check_parser.add_argument(
        "--order",
        type=int,
        default=1,
        choices=(1, 2),
        help="2: also check second derivatives (sg.check_grads differentiates the generated "
        "code again)",
    )
    cache_parser = commands.add_parser(
        "cache",
        help="show or empty the disk cache of generated code",
        description="The disk cache of generated code: 'info' shows its directory, entries and "
        "size, 'clear' removes its entries. S2SGRAD_CACHE_DIR sets the directory (off turns "
        "the cache off), S2SGRAD_CACHE_MAX_SIZE its bound (such as 500M; default 100M).",
    )
    cache_parser.add_argument("action", choices=("info", "clear"))
    rules_parser = commands.add_parser(
        "rules",
        help="list the functions s2sgrad differentiates, with their modes",
        description="List every function with a derivative rule (or a definition s2sgrad "
        "differentiates), and whether reverse and forward mode support it.",
    )
    rules_parser.add_argument("pattern", nargs="?", help="only names containing PATTERN")
    rules_parser.add_argument(
        "--markdown", action="store_true", help="print docs/rules.md (the full list, Markdown)"
    )
    return parser


def rules(args) -> int:
    from s2sgrad import rule_listing

    print(rule_listing.markdown() if args.markdown else rule_listing.text(args.pattern), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from s2sgrad.transforms.errors import TransformError

    try:
        return {"dump": dump, "check": check, "cache": cache, "rules": rules}[args.command](args)
    except UsageError as exc:
        message = str(exc)
    except TransformError as exc:
        message = str(exc).splitlines()[0]
    except (LookupError, TypeError, ValueError, NotImplementedError) as exc:
        message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    print(f"s2sgrad: error: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
