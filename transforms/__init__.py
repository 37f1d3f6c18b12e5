"""The s2sgrad compiler: one pass per module, driven by `pipeline` (installed as s2sgrad.transforms).

parse -> fence -> resolve -> anf (normalize) -> activity -> shapes -> reverse -> optimize -> codegen
"""
