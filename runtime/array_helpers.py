"""Helpers that rule templates of the reductions, shape and linalg families call."""

__all__: list[str] = []
