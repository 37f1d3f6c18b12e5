"""Source text in and out without libcst: a function's definition lines, and generated module
text compiled into live functions.

`parse` and `codegen` do the same as part of the compiler; these copies exist so that a
process finding its transforms in the on-disk cache (`s2sgrad.disk_cache`) never imports
libcst or the passes. (`parse` and `codegen` import these from here.)
"""

from __future__ import annotations

import itertools
import linecache
import types
from collections.abc import Mapping


def source_lines(code: types.CodeType) -> tuple[list[str], int]:
    """The lines of the definition `code` was compiled from, and the number of the first.

    Like `inspect.getsourcelines`, but without its search through every loaded module and its
    pure-Python tokenizer: the block ends at the last line the code (or code nested in it)
    executes, extended over the lines that continue it (more indented, or closing brackets).

    Raises:
        OSError: the file's lines cannot be read.
    """
    lines = linecache.getlines(code.co_filename)
    if not lines:
        raise OSError(f"no source for {code.co_filename}")
    start = code.co_firstlineno - 1
    end = max(_last_line(code), start + 1)
    indent = len(lines[start]) - len(lines[start].lstrip())
    while end < len(lines):
        text = lines[end]
        stripped = text.strip()
        deeper = len(text) - len(text.lstrip()) > indent
        if stripped and not deeper and not stripped.startswith((")", "]", "}")):
            break
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return lines[start:end], start + 1


def _last_line(code: types.CodeType) -> int:
    last = max((line for _, _, line in code.co_lines() if line is not None), default=0)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            last = max(last, _last_line(const))
    return last


_counter = itertools.count(1)


def run_module(
    source: str, entries: list[str], constants: Mapping[str, object], origin: str = ""
) -> list[types.FunctionType]:
    """Compile generated module text, register it with `linecache` (tracebacks and pdb show
    its lines), run it in a namespace holding `constants`; return the functions `entries`.

    The first entry carries the text as ``__s2sgrad_source__``
    (what `sg.source` and `sg.export` read). `origin` goes into the file name shown in
    tracebacks, e.g. ``" (from the disk cache)"``.
    """
    entry = entries[0]
    filename = f"<s2sgrad {entry}{origin} #{next(_counter)}>"
    code = compile(source, filename, "exec")
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace: dict[str, object] = {"__name__": f"s2sgrad.generated.{entry}", **constants}
    exec(code, namespace)
    functions = [namespace[name] for name in entries]
    functions[0].__s2sgrad_source__ = source
    return functions
