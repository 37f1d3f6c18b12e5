"""Rows of the rule table (`tests/rule_table.py` explains a row) for matrix decompositions,
FFT, scipy.linalg and signal processing."""

from __future__ import annotations

MATRIX: list = []
