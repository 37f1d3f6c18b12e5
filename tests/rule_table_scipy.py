"""Rows of the rule table (`tests/rule_table.py` explains a row) for scipy.special and
scipy.stats, with their sympy formulas and the SciPy functions that carry no derivative."""

from __future__ import annotations

SCIPY: list = []
SCIPY_SYMBOLIC: list = []
SCIPY_NONDIFFERENTIABLE: list = []
