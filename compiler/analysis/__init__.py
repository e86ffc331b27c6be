"""Analyses shared by the passes and the targets: value ranges, noise and precision, operation
counts, and the security table with prime generation. They read the IR and never change it."""
