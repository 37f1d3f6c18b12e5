"""Where the user's code recorded each tape operation, so that tape errors name that line.

A tape's `gradient` compiles the *lowered* recording, a function in generated code
(``<s2sgrad recorded #3>``, one line per operation), so an error the compiler raises about an
operation (`LookupError: no gradient registered for numpy.i0 (used at <s2sgrad recorded
#3>:7:10)`) names a line the user never wrote. Here:

- `here()`, called as an operation is recorded the usual way, finds the first frame of the
  user's code above it (skipping s2sgrad, and NumPy calling back into a Tensor) and keeps its
  code object and instruction: no strings, no frame kept alive. A replayed step (the third and
  later of a training loop, `replay`) records no locations: its structure is compiled already,
  so the compiler cannot fail on it, and a replay must stay as cheap as the code it checks.
- `register` ties each line of a lowered function (and of the backward sweep compiled from it,
  whose comments name those lines: ``# adjoint of line 7: ...``) to the locations of its
  operations.
- `naming_recorded_lines` decorates the tape's entry points: an exception leaving them has
  every ``<s2sgrad recorded #N>:LINE:COL`` in its message replaced by the user's
  ``FILE:LINE:COL`` (a `TransformError` is moved to that line), and a note quoting the user's
  line. An error raised while the backward sweep runs (a rule registered with
  `sg.register_vjp` that fails, say) gets a note naming the operation whose adjoint raised it.

A structure compiled once serves later recordings of the same operations; their lines are the
ones of the recording that compiled it (in a training loop, the same lines).
"""

from __future__ import annotations

import functools
import itertools
import linecache
import re
import sys
import types

from .traceback_filter import frame_kind

_getframe = sys._getframe
_user_files: dict[str, bool] = {}  # file name -> whether its frames are the user's
# generated file name -> (first line of the operations, their locations), for lowered code;
# -> the lowered code's file name, for a backward sweep compiled from it
_lowered: dict[str, tuple[int, list]] = {}
_adjoints: dict[str, str] = {}
_GENERATED_POSITION = re.compile(r"(<s2sgrad [^>]*>):(\d+)(?::(\d+))?")
_ADJOINT_COMMENT = re.compile(r"#\s*(?:adjoint of )?line (\d+):")


def here():
    """The location of the user's code that is recording an operation: ``(code, lasti)`` of
    the first user frame above the recording function, or None. Opaque: `position` reads it.

    The walk starts two frames up: the recording function (`GradientTape._record`,
    `Recording.add`) is called by s2sgrad's own code (a Tensor operator, `tensor.unary`,
    `tensor.offer`, `GradientTape._diverged`), so the user's frame is at least three frames up.
    Each frame looked at costs a frame object (about 0.1 us): an operator like ``a * b`` is
    found at the first."""
    try:
        frame = _getframe(3)
    except ValueError:  # a shallower stack than any recording path has: no location
        return None
    files = _user_files
    while frame is not None:
        code = frame.f_code
        user = files.get(code.co_filename)
        if user is None:
            user = files[code.co_filename] = frame_kind(code.co_filename) == "user"
        if user:
            return code, frame.f_lasti
        frame = frame.f_back
    return None


def position(location) -> tuple[str, int, int] | None:
    """``(file, line, column)`` of a location from `here` (column 1-based), or None."""
    if location is None:
        return None
    code, lasti = location
    found = next(itertools.islice(code.co_positions(), lasti // 2, None), None)
    line, _, column, _ = found if found is not None else (None, None, None, None)
    if line is None:
        return code.co_filename, code.co_firstlineno, 1
    return code.co_filename, line, 1 if column is None else column + 1


def describe(location) -> str:
    """``FILE:LINE:COL`` of a location, for a message."""
    where = position(location)
    return "an unknown line" if where is None else "{}:{}:{}".format(*where)


def register(lowered_file: str, source: str, locations: list) -> None:
    """The lowered function in `lowered_file`, whose text is `source`, has one operation per
    line after its ``def`` line, recorded at `locations` (None where unknown)."""
    lines = source.splitlines()
    header = next(i for i, line in enumerate(lines, 1) if line.startswith("def "))
    _lowered[lowered_file] = (header + 1, locations)


def register_adjoint(adjoint_file: str, lowered_file: str) -> None:
    """The backward sweep in `adjoint_file` was compiled from the lowered `lowered_file`."""
    _adjoints[adjoint_file] = lowered_file


def naming_recorded_lines(method):
    """Decorate a tape method: its errors name the user's lines (see the module)."""

    @functools.wraps(method)
    def naming(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Exception as error:
            _rename(error)
            raise

    return naming


def _location_of(filename: str, line: int):
    first, locations = _lowered.get(filename, (0, ()))
    index = line - first
    return locations[index] if 0 <= index < len(locations) else None


def _rename(error: BaseException) -> None:
    found = []

    def user_position(match: re.Match) -> str:
        location = _location_of(match.group(1), int(match.group(2)))
        if location is None:
            return match.group(0)
        found.append(location)
        return describe(location)

    if isinstance(error, SyntaxError) and error.filename in _lowered:
        where = position(_location_of(error.filename, error.lineno or 0))
        if where is not None:
            error.filename, error.lineno, error.offset = where
            error.end_lineno = error.end_offset = None
            error.text = linecache.getline(where[0], where[1]) or None
    if isinstance(error, SyntaxError) and isinstance(error.msg, str):
        error.msg = _GENERATED_POSITION.sub(user_position, error.msg)
    error.args = tuple(
        _GENERATED_POSITION.sub(user_position, a) if isinstance(a, str) else a for a in error.args
    )
    if found:
        error.add_note(_quoted("recorded at", found[0]))
        return
    location = _raising_operation(error.__traceback__)
    if location is not None:
        error.add_note(_quoted("raised by the adjoint of the operation recorded at", location))


def _raising_operation(tb: types.TracebackType | None):
    """The location of the operation whose lowered line or adjoint raised, from the
    innermost frame of lowered or backward code in `tb`, or None."""
    location = None
    while tb is not None:
        filename, line = tb.tb_frame.f_code.co_filename, tb.tb_lineno
        if filename in _lowered:
            location = _location_of(filename, line) or location
        elif filename in _adjoints:
            lowered_line = _commented_line(filename, line)
            if lowered_line is not None:
                location = _location_of(_adjoints[filename], lowered_line) or location
        tb = tb.tb_next
    return location


def _commented_line(filename: str, line: int) -> int | None:
    """The lowered line the adjoint's statement at `line` comes from: the nearest comment
    ``# adjoint of line N:`` (or ``# line N:``) above it."""
    for number in range(line, 0, -1):
        match = _ADJOINT_COMMENT.search(linecache.getline(filename, number))
        if match:
            return int(match.group(1))
    return None


def _quoted(what: str, location) -> str:
    where = position(location)
    text = linecache.getline(where[0], where[1]).strip() if where else ""
    return f"{what} {describe(location)}" + (f":\n    {text}" if text else "")
