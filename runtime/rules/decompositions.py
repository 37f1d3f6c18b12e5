"""(filled by issue 17)"""
