"""The s2sgrad compiler, installed as s2sgrad.transforms: one pass per module, run by `pipeline`.

parse -> fence -> resolve -> anf (normalize) -> activity -> shapes -> reverse -> optimize -> codegen
"""
