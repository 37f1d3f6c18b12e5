"""Tracebacks that end at the user's code, not thirty frames inside the compiler.

An error raised through `sg.grad(f)`, `sg.jvp`, a tape's `gradient` and the other entry points
is about the user's program: a `TransformError` at their line, a `LookupError` for a function
without a rule, a `TypeError` for an argument. The frames of s2sgrad's own passes between the
user's call and the `raise` say nothing to the user. So each entry point is an *API boundary*
(JAX's ``traceback_util.api_boundary``): an exception leaving it keeps the frames of the
user's code and of generated code (``<s2sgrad ...>`` files, which stand for the user's code),
and drops the frames of s2sgrad's own files (`s2sgrad/`, `transforms/`, `runtime/`) and of the
libraries those frames called on s2sgrad's behalf (libcst visiting a tree, `inspect` binding
arguments, NumPy inside a runtime helper). A library frame called by the user's code or by
generated code stays: the user wrote that call.

``S2SGRAD_TRACEBACK=full`` in the environment (read when the error happens, so it can be set
in a running notebook) keeps every frame: for bug reports and for tools that classify errors
by the compiler's frames (the fuzzer). An exception whose frames were dropped carries a note
(PEP 678) saying so.

The boundary costs one ``try`` per call of an entry point, nothing on the code `sg.grad`
returns once it is specialized (that is generated code calling generated code), and the
filtering runs only when an exception passes.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import site
import sysconfig
import types

ENVIRONMENT = "S2SGRAD_TRACEBACK"
NOTE = (
    f"(s2sgrad hid the frames of its own code from this traceback; set {ENVIRONMENT}=full "
    f"to show them)"
)
_GENERATED = "<s2sgrad"  # how the file names of generated code start
_FILTERED = "__s2sgrad_filtered__"  # set on an exception once its traceback is filtered


def api_boundary(function):
    """Decorate a function users call: exceptions leaving it show the user's frames only.

    The exception is the same object with a shorter traceback, re-raised with a bare
    ``raise``, which (Python 3.11+) takes the traceback from the exception, so this frame
    is not added back. Nested boundaries (`sg.hessian` calling `sg.grad`) each filter what
    passed through them; filtering is idempotent.
    """

    @functools.wraps(function)
    def boundary(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as error:
            if os.environ.get(ENVIRONMENT, "").lower() != "full":
                _filter_exception(error)
            raise

    return boundary


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` without s2sgrad's frames and the library frames they called (see the module)."""
    kept = []
    hidden_caller = False  # the last frame seen was dropped
    while tb is not None:
        kind = frame_kind(tb.tb_frame.f_code.co_filename)
        if kind == "internal" or (kind == "library" and hidden_caller):
            hidden_caller = True
        else:
            kept.append(tb)
            hidden_caller = False
        tb = tb.tb_next
    filtered = None
    for entry in reversed(kept):
        filtered = types.TracebackType(filtered, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return filtered


def _filter_exception(error: BaseException) -> None:
    """Filter the traceback of `error` and of the exceptions it was raised from or while
    handling (their frames are the compiler's too), once each."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        pending += [current.__cause__, current.__context__]
        tb = current.__traceback__
        filtered = filter_traceback(tb)
        if _length(filtered) == _length(tb):
            continue
        current.with_traceback(filtered)
        if not getattr(current, _FILTERED, False):
            setattr(current, _FILTERED, True)
            current.add_note(NOTE)


def _length(tb: types.TracebackType | None) -> int:
    count = 0
    while tb is not None:
        count += 1
        tb = tb.tb_next
    return count


@functools.lru_cache(maxsize=1024)
def frame_kind(filename: str) -> str:
    """What wrote the code of `filename`: "internal" (s2sgrad's own files), "library" (the
    standard library, installed packages, frozen modules), or "user" (anything else: the
    user's files, generated code, ``<stdin>``, a notebook cell)."""
    if filename.startswith(_GENERATED):
        return "user"
    if filename.startswith("<frozen "):
        return "library"
    if filename.startswith("<"):
        return "user"
    path = os.path.realpath(filename)
    internal, libraries = _directories()
    if path.startswith(internal):
        return "internal"
    if path.startswith(libraries):
        return "library"
    return "user"


@functools.cache
def _directories() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The folders of s2sgrad's own code, and those of the standard library and installed
    packages. s2sgrad's come from the import system (not imported: `transforms` loads libcst),
    since an editable install keeps `transforms/` and `runtime/` beside `s2sgrad/`."""
    internal = []
    for package in ("s2sgrad", "s2sgrad.transforms", "s2sgrad.runtime"):
        spec = importlib.util.find_spec(package)
        internal += list(spec.submodule_search_locations or ()) if spec else []
    paths = sysconfig.get_paths()
    libraries = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    libraries += [*site.getsitepackages(), site.getusersitepackages()]
    return _folders(internal), _folders(libraries)


def _folders(paths: list[str]) -> tuple[str, ...]:
    return tuple(sorted({os.path.join(os.path.realpath(p), "") for p in paths if p}))
