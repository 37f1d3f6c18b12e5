"""Benchmarks of s2sgrad's generated gradients against hand-written ones (and other libraries).

Run ``python -m benchmarks`` (``--quick`` for a fast, noisier run). Never part of the test
suite: nothing here asserts a timing. See ``benchmarks/README.md`` for what each column means.
"""
