"""xDSL dialects of the hec IR: `stat` (array level) and the scheme dialects, and a context
that parses their MLIR text (`stat_context()`)."""
