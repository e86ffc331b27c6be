"""xDSL dialects of the hec IR: `stat` (array level, `stat.py`), the scheme dialects, and `bool`
(the per-element Boolean circuits of integer programs, `boolean.py`).
`compiler/ir_text.py` parses and prints their MLIR text."""
