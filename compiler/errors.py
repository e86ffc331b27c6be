"""The two error families (STYLE.md): `UserError` for what the user can fix, everything else
is our bug.

A `UserError` carries a message with the numbers involved and a next step; when it comes from
source text it also carries a `SourceLocation`, and `str()` renders the located form

    file.hec:3:9: error: <message>
      n11 = y @ Q
                ^
    <hint>
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation, SSAValue


@dataclass(frozen=True)
class SourceLocation:
    """A position in a source file: 1-based line and column, and the line's text."""

    file: str
    line: int
    column: int
    line_text: str = ""
    length: int = 1

    def render(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class UserError(Exception):
    """A problem in the user's program, data, keys or parameters (not a bug in hec)."""

    def __init__(self, message: str, location: SourceLocation | None = None, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.location = location
        self.hint = hint

    def __str__(self) -> str:
        if self.location is None:
            text = f"error: {self.message}"
        else:
            loc = self.location
            text = f"{loc.render()}: error: {self.message}"
            if loc.line_text:
                caret = " " * (loc.column - 1) + "^" * max(1, loc.length)
                text += f"\n  {loc.line_text}\n  {caret}"
        if self.hint:
            text += f"\n{self.hint}"
        return text


def op_location(at: Operation | SSAValue | None) -> SourceLocation | None:
    """The source location an op (or the op defining a value) was lowered from: dsl/lower.py
    sets it on every `stat` op as its MLIR location and the lowering passes carry it to the
    ops they make. The line text is filled in by the driver, which holds the source."""
    op = at.owner if isinstance(at, SSAValue) else at
    loc = op.location if isinstance(op, Operation) else None
    if isinstance(loc, FileLineColLoc):
        return SourceLocation(loc.filename.data, loc.line.data, loc.column.data)
    return None


class InternalError(Exception):
    """A broken invariant inside hec: always our bug, never the user's."""
