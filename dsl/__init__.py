"""The hec array language: grammar, parser, checking, lowering to the `stat` dialect.

Imports from `compiler` only (DESIGN.md §2).
"""
