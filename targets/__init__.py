"""Back ends: the C++ program target, reports, the reference simulator and MLIR text.

Imports from `compiler` only (DESIGN.md §6).
"""
