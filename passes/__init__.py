"""Transformation and checker passes over the hec dialects, one module per pass.

Imports from `compiler` only (DESIGN.md §5).
"""
