"""Tests of the Boolean circuit layer (compiler/circuits/, issue #23)."""
