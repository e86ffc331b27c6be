"""hec: the command-line interface, at the top of the import graph (the driver is driver/)."""

from driver import __version__

__all__ = ["__version__"]
