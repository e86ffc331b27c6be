"""Size bindings (`--size N=5000,M=16384`) and the bounds the analyses use.

A program declares each size parameter with an upper bound (`param N <= 200000`); compiling
for a size binding tightens that bound to the given size, so parameters are chosen for the
data at hand while the IR stays independent of it.

`Sizes` is the typed value the command line parses once (`Sizes.parse`) and the driver passes
down; its text form (`str(sizes)`) is what the textual pass options take.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

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


def format_sizes(sizes: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


@dataclass(frozen=True)
class Sizes(Mapping[str, int]):
    """A size binding, in the order given: an immutable mapping name -> size (>= 1)."""

    items_: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def parse(text: str) -> Sizes:
        """`Sizes.parse("N=5000,M=16384")`; the errors of `parse_sizes`."""
        return Sizes(tuple(parse_sizes(text).items()))

    @staticmethod
    def of(sizes: Mapping[str, int]) -> Sizes:
        return Sizes(tuple((k, int(v)) for k, v in sizes.items()))

    def __getitem__(self, name: str) -> int:
        for k, v in self.items_:
            if k == name:
                return v
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def __str__(self) -> str:
        return format_sizes(dict(self.items_))
