"""The IR core: dialects (stat, ckks, bfv, bool), types, attributes and analyses.

The bottom of the Python import graph: imports no other hec package (DESIGN.md §2).
"""
