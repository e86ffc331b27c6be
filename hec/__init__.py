"""hec: the pipeline driver and the command-line interface (top of the import graph)."""

__version__ = "0.1.0"
