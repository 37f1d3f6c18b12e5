"""Reverse rules: linalg (being written)."""
