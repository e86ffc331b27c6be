"""The PLINK 1.9 `--assoc` file: writing it (space-padded columns CHR SNP BP A1 F_A F_U A2 CHISQ
P OR, `NA` where a value is not available; `counts` mode writes C_A C_U for F_A F_U, `--ci`
adds SE L95 U95) and reading it back.

Column widths follow PLINK 1.9 (the SNP column is as wide as its `calc_plink_maxsnp` rule makes
it); the numbers are printed with 7 significant digits where PLINK prints 4, so the number
columns are wider than PLINK's. Every reader that splits on whitespace reads both.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
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
    extra: dict[str, float | None] = field(default_factory=dict)  # C_A C_U SE L95 U95 ...


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


def format_ci(x: float | None) -> str:
    """A --ci column: NA for None; inf and nan as PLINK prints them (SE and U95 of an OR of
    0)."""
    if x is not None and math.isnan(x):
        return "nan"
    if x is not None and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return format_number(x)


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


def write_assoc(
    path: Path,
    rows: Sequence[AssocRow],
    counts: bool = False,
    ci_columns: Sequence[str] = (),
) -> None:
    """PLINK 1.9's layout; `counts`: C_A C_U (from `extra`) in place of F_A F_U; `ci_columns`
    (SE, L95, U95 under the names of the level) after OR."""
    snp_w = snp_column_width([r.snp for r in rows])
    nw = NUMBER_WIDTH
    fa, fu = ("C_A", "C_U") if counts else ("F_A", "F_U")
    tail = "".join(f"{c:>{nw}} " for c in ci_columns)
    with path.open("w") as fh:
        fh.write(
            f"{'CHR':>4} {'SNP':>{snp_w}} {'BP':>10} {'A1':>4} {fa:>8} {fu:>8} {'A2':>4} "
            f"{'CHISQ':>{nw}} {'P':>{nw}} {'OR':>{nw}} {tail}\n"
        )
        for r in rows:
            a, u = (r.extra.get("C_A"), r.extra.get("C_U")) if counts else (r.f_a, r.f_u)
            more = "".join(f"{format_ci(r.extra.get(c)):>{nw}} " for c in ci_columns)
            fh.write(
                f"{r.chrom:>4} {r.snp:>{snp_w}} {r.bp:>10} {r.a1:>4} "
                f"{format_number(a):>8} {format_number(u):>8} {r.a2:>4} "
                f"{format_number(r.chisq):>{nw}} {format_number(r.p):>{nw}} "
                f"{format_number(r.odds):>{nw}} {more}\n"
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
    """Parse a PLINK 1.9 `--assoc` file (ours or PLINK's; counts mode and --ci columns are kept
    in `extra`)."""
    lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
    head = tuple(lines[0]) if lines else ()
    counts = head[4:6] == ("C_A", "C_U")
    base = (*COLUMNS[:4], "C_A", "C_U", *COLUMNS[6:]) if counts else COLUMNS
    if head[: len(COLUMNS)] != base:
        text = " ".join(head) if lines else "(empty file)"
        raise UserError(f"{path}: not an --assoc file: header is {text!r}")
    rows: list[AssocRow] = []
    for lineno, fields in enumerate(lines[1:], start=2):
        if len(fields) != len(head):
            raise UserError(f"{path}:{lineno}: {len(fields)} columns, expected {len(head)}")
        num = {
            c: _parse_number(fields[i], path, lineno, c)
            for i, c in enumerate(head)
            if i >= 4 and c not in ("A2",)
        }
        extra = {c: v for c, v in num.items() if c not in ("F_A", "F_U", "CHISQ", "P", "OR")}
        rows.append(
            AssocRow(
                fields[0],
                fields[1],
                fields[2],
                fields[3],
                num.get("F_A"),
                num.get("F_U"),
                fields[6],
                num["CHISQ"],
                num["P"],
                num["OR"],
                extra,
            )
        )
    return rows


def agrees_to_printed_digits(ours: float | None, plink: float | None, digits: int = 4) -> bool:
    """`ours` rounds to PLINK's printed value (`digits` significant digits); NA matches NA and
    PLINK's 0 is matched by |ours| <= 1e-6."""
    if plink is None or ours is None:
        return plink is None and ours is None
    if plink == 0.0:
        return abs(ours) <= 1e-6
    exponent = math.floor(math.log10(abs(plink)))
    half_unit = 0.5 * 10.0 ** (exponent - digits + 1)
    return abs(ours - plink) <= half_unit * (1 + 1e-9) + 1e-12 * abs(plink)


def compare_with_plink(
    ours: Sequence[AssocRow], theirs: Sequence[AssocRow]
) -> tuple[int, list[str]]:
    """(SNPs whose every column agrees, descriptions of the disagreements) of two --assoc
    files of the same SNPs: allele codes exactly, numbers to PLINK's printed digits (F_A and
    F_U only where ours has them: a program that reveals no counts prints NA)."""
    problems: list[str] = []
    agreeing = 0
    by_snp = {r.snp: r for r in ours}
    for b in theirs:
        a = by_snp.get(b.snp)
        if a is None:
            problems.append(f"{b.snp}: not in ours")
            continue
        bad = [c for c in ("chrom", "bp", "a1", "a2") if getattr(a, c) != getattr(b, c)]
        bad += [
            c
            for c in ("f_a", "f_u", "chisq", "p", "odds")
            if not (c in ("f_a", "f_u") and getattr(a, c) is None)
            and not agrees_to_printed_digits(getattr(a, c), getattr(b, c))
        ]
        if bad:
            problems.append(
                f"{b.snp}: "
                + ", ".join(f"{c} ours {getattr(a, c)} plink {getattr(b, c)}" for c in bad)
            )
        else:
            agreeing += 1
    return agreeing, problems
