"""Reverse rules: reductions (being written)."""
