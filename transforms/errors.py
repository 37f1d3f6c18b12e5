"""The one exception the compiler raises for code it cannot transform."""

from __future__ import annotations


class TransformError(SyntaxError):
    """A construct s2sgrad cannot differentiate, located in the user's source.

    A `SyntaxError` subclass, so a traceback shows the offending line with a caret.
    ``filename``, ``lineno`` and ``offset`` (1-based column) point into the user's file and the
    message starts with ``FILE:LINE:COL:``.
    """

    def __init__(self, message: str, filename: str, lineno: int, col: int, text: str | None = None):
        full = f"{filename}:{lineno}:{col + 1}: {message}"
        super().__init__(full, (filename, lineno, col + 1, text, lineno, col + 2))
        self.reason = message

    def __str__(self) -> str:  # SyntaxError's default adds "(file, line N)"; ours is already there
        return self.msg
