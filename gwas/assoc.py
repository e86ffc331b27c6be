"""The PLINK 1.9 `--assoc` file: writing it (space-padded columns CHR SNP BP A1 F_A F_U A2 CHISQ
P OR, `NA` where a value is not available) and reading it back.

Column widths follow PLINK 1.9 (the SNP column is as wide as its `calc_plink_maxsnp` rule makes
it); the numbers are printed with 7 significant digits where PLINK prints 4, so the number
columns are wider than PLINK's. Every reader that splits on whitespace reads both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError

COLUMNS = ("CHR", "SNP", "BP", "A1", "F_A", "F_U", "A2", "CHISQ", "P", "OR")
SIGNIFICANT_DIGITS = 7
NUMBER_WIDTH = 14


@dataclass
class AssocRow:
    chrom: str
    snp: str
    bp: str
    a1: str
    f_a: float | None
    f_u: float | None
    a2: str
    chisq: float | None
    p: float | None
    odds: float | None


def snp_column_width(names: Sequence[str]) -> int:
    """PLINK 1.9's width of the SNP column: 4, raised to len + 2 by each longer name."""
    width = 4
    for name in names:
        if len(name) > width:
            width = len(name) + 2
    return width


def format_number(x: float | None, digits: int = SIGNIFICANT_DIGITS) -> str:
    if x is None or not math.isfinite(x):
        return "NA"
    if x == 0.0:
        return "0"
    return f"{x:.{digits}g}"


def _value(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def rows_from_arrays(
    variants: Sequence[tuple[str, str, str, str, str]],
    f_a: npt.NDArray[np.float64],
    f_u: npt.NDArray[np.float64],
    chisq: npt.NDArray[np.float64],
    p: npt.NDArray[np.float64],
    odds: npt.NDArray[np.float64],
) -> list[AssocRow]:
    """Rows from per-SNP arrays (NaN = NA); `variants` holds (chr, snp, bp, a1, a2)."""
    return [
        AssocRow(
            chrom,
            snp,
            bp,
            a1,
            _value(f_a[j]),
            _value(f_u[j]),
            a2,
            _value(chisq[j]),
            _value(p[j]),
            _value(odds[j]),
        )
        for j, (chrom, snp, bp, a1, a2) in enumerate(variants)
    ]


def write_assoc(path: Path, rows: Sequence[AssocRow]) -> None:
    snp_w = snp_column_width([r.snp for r in rows])
    nw = NUMBER_WIDTH
    with path.open("w") as fh:
        fh.write(
            f"{'CHR':>4} {'SNP':>{snp_w}} {'BP':>10} {'A1':>4} {'F_A':>8} {'F_U':>8} {'A2':>4} "
            f"{'CHISQ':>{nw}} {'P':>{nw}} {'OR':>{nw}} \n"
        )
        for r in rows:
            fh.write(
                f"{r.chrom:>4} {r.snp:>{snp_w}} {r.bp:>10} {r.a1:>4} "
                f"{format_number(r.f_a):>8} {format_number(r.f_u):>8} {r.a2:>4} "
                f"{format_number(r.chisq):>{nw}} {format_number(r.p):>{nw}} "
                f"{format_number(r.odds):>{nw}} \n"
            )


def _parse_number(token: str, path: Path, lineno: int, column: str) -> float | None:
    if token == "NA":
        return None
    try:
        return float(token)
    except ValueError:
        raise UserError(
            f"{path}:{lineno}: column {column} holds {token!r}, not a number or NA"
        ) from None


def read_assoc(path: Path) -> list[AssocRow]:
    """Parse a PLINK 1.9 `--assoc` file (ours or PLINK's)."""
    lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
    if not lines or tuple(lines[0]) != COLUMNS:
        head = " ".join(lines[0]) if lines else "(empty file)"
        raise UserError(f"{path}: not an --assoc file: header is {head!r}")
    rows: list[AssocRow] = []
    for lineno, fields in enumerate(lines[1:], start=2):
        if len(fields) != len(COLUMNS):
            raise UserError(f"{path}:{lineno}: {len(fields)} columns, expected {len(COLUMNS)}")
        num = {
            c: _parse_number(fields[i], path, lineno, c)
            for i, c in enumerate(COLUMNS)
            if c in ("F_A", "F_U", "CHISQ", "P", "OR")
        }
        rows.append(
            AssocRow(
                fields[0],
                fields[1],
                fields[2],
                fields[3],
                num["F_A"],
                num["F_U"],
                fields[6],
                num["CHISQ"],
                num["P"],
                num["OR"],
            )
        )
    return rows
