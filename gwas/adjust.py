"""Multiple-testing corrections of PLINK 1.9's `--adjust`, and the `.assoc.adjusted` file.

Over the SNPs with a P value (m of them), sorted by P: genomic control (GC: the statistic
divided by λ, λ = median χ² / 0.456 floored at 1, as PLINK 1.9 computes it; Devlin and Roeder
1999), Bonferroni, Holm's step-down, Šidák single-step and step-down, Benjamini-Hochberg and
Benjamini-Yekutieli false discovery rates. Every adjusted P is capped at 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import stats

from gwas.assoc import format_number, snp_column_width

Array = npt.NDArray[np.float64]
PLINK_CHI2_MEDIAN = 0.456  # PLINK 1.9's rounded median of χ²(1)
COLUMNS = ("CHR", "SNP", "UNADJ", "GC", "BONF", "HOLM", "SIDAK_SS", "SIDAK_SD", "FDR_BH", "FDR_BY")


def plink_lambda(chisq: Array) -> float:
    """λ as PLINK 1.9's --adjust reports it: median χ² / 0.456, and 1 when that is below 1."""
    values = chisq[np.isfinite(chisq)]
    if values.size == 0:
        return 1.0
    return max(1.0, float(np.median(values)) / PLINK_CHI2_MEDIAN)


@dataclass
class Adjusted:
    order: npt.NDArray[np.intp]  # SNP indices with a P, by ascending P
    lam: float
    columns: dict[str, Array]  # UNADJ ... FDR_BY, in `order`


def adjust(chisq: Array, p: Array) -> Adjusted:
    with np.errstate(divide="ignore"):
        return _adjust(chisq, p)


def _adjust(chisq: Array, p: Array) -> Adjusted:
    ok = np.flatnonzero(np.isfinite(p) & np.isfinite(chisq))
    order = ok[np.argsort(p[ok], kind="stable")]
    ps = p[order]
    m = len(order)
    log_keep = np.log1p(-np.minimum(ps, 1.0)) if m else ps  # log(1 - p); -inf at p = 1
    lam = plink_lambda(chisq[ok])
    gc = stats.chi2.sf(chisq[order] / lam, df=1)
    bonf = np.minimum(1.0, ps * m)
    rank = np.arange(m)
    holm = np.minimum(1.0, np.maximum.accumulate((m - rank) * ps)) if m else ps
    sidak_ss = -np.expm1(m * log_keep) if m else ps
    sidak_sd = np.maximum.accumulate(-np.expm1((m - rank) * log_keep)) if m else ps
    bh = np.minimum(1.0, np.minimum.accumulate((ps * m / (rank + 1))[::-1])[::-1]) if m else ps
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1))) if m else 1.0
    by = (
        np.minimum(1.0, np.minimum.accumulate((ps * m * harmonic / (rank + 1))[::-1])[::-1])
        if m
        else ps
    )
    return Adjusted(
        order,
        lam,
        {
            "UNADJ": ps,
            "GC": gc,
            "BONF": bonf,
            "HOLM": holm,
            "SIDAK_SS": sidak_ss,
            "SIDAK_SD": sidak_sd,
            "FDR_BH": bh,
            "FDR_BY": by,
        },
    )


def write_adjusted(path: Path, chrom: Sequence[str], snp: Sequence[str], adj: Adjusted) -> None:
    """`.assoc.adjusted` in PLINK 1.9's layout (7 significant digits where PLINK prints 4)."""
    snp_w = snp_column_width(list(snp))
    with path.open("w") as fh:
        fh.write(f"{'CHR':>4} {'SNP':>{snp_w}} " + " ".join(f"{c:>12}" for c in COLUMNS[2:]) + "\n")
        for k, j in enumerate(adj.order):
            values = " ".join(f"{format_number(float(adj.columns[c][k])):>12}" for c in COLUMNS[2:])
            fh.write(f"{chrom[j]:>4} {snp[j]:>{snp_w}} {values} \n")


def read_adjusted(path: Path) -> dict[str, dict[str, float | None]]:
    """SNP -> column -> value of an `.assoc.adjusted` file (ours or PLINK's)."""
    lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
    header = lines[0]
    out: dict[str, dict[str, float | None]] = {}
    for fields in lines[1:]:
        row = dict(zip(header, fields, strict=True))
        out[row["SNP"]] = {
            c: (None if row[c] == "NA" else float(row[c])) for c in COLUMNS[2:] if c in row
        }
    return out
