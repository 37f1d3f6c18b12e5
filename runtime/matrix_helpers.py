"""(filled by issue 17)"""

__all__: list[str] = []
