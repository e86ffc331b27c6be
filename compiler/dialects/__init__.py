"""xDSL dialects of the hec IR: `stat` (array level, `stat.py`) and the scheme dialects.
`compiler/ir_text.py` parses and prints their MLIR text."""
