"""Reverse rules: shape (being written)."""
