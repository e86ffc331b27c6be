"""Size bindings (`--size N=5000,M=16384`) and the bounds the analyses use.

A program declares each size parameter with an upper bound (`param N <= 200000`); compiling
for a size binding tightens that bound to the given size, so parameters are chosen for the
data at hand while the IR stays independent of it.
"""

from __future__ import annotations

from compiler.errors import UserError


def parse_sizes(text: str) -> dict[str, int]:
    """`"N=5000,M=16384"` -> {"N": 5000, "M": 16384}; the empty string gives {}."""
    sizes: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier() or not value.strip().isdigit():
            raise UserError(
                f"bad size binding {item!r}",
                hint="write sizes as NAME=INTEGER, e.g. N=5000,M=16384",
            )
        if int(value) < 1:
            raise UserError(f"size {name.strip()} must be at least 1, got {value.strip()}")
        if name.strip() in sizes:
            raise UserError(
                f"size {name.strip()} is given twice ({name.strip()}={sizes[name.strip()]} and "
                f"{item.strip()})",
                hint="give each size once",
            )
        sizes[name.strip()] = int(value)
    return sizes


def format_sizes(sizes: dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())
