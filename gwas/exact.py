"""The allelic chi-square test and odds ratio in double precision on plaintext genotypes, with
PLINK 1.9's `--assoc` rules for degenerate SNPs: the oracle that tests and the demo compare the
encrypted (or simulated) results with.

For SNP j, over the individuals called at j: n11 = minor alleles among cases, c1 = minor
alleles in total, r1 = alleles of cases, d = alleles in total. Then
chi2 = d (n11 d - c1 r1)^2 / (c1 (d - c1) r1 (d - r1)) and OR = n11 n22 / (n12 n21). PLINK
prints NA for all three statistics when the SNP is monomorphic among the called individuals
(c1 = 0 or c1 = d, which includes no calls at all), CHISQ 0 and P 1 when the called
individuals are all cases or all controls, and OR NA whenever n12 n21 = 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

Array = npt.NDArray[np.float64]


@dataclass
class TableCounts:
    """Per-SNP allele counts of the 2 x 2 table over the called individuals."""

    n11: Array
    c1: Array
    r1: Array
    d: Array

    @property
    def monomorphic(self) -> npt.NDArray[np.bool_]:
        return (self.c1 == 0) | (self.c1 == self.d)

    @property
    def one_sided(self) -> npt.NDArray[np.bool_]:
        """Called individuals all cases or all controls (and the SNP not monomorphic)."""
        return ~self.monomorphic & ((self.r1 == 0) | (self.r1 == self.d))


def table_counts(S: Array, y: Array) -> TableCounts:
    """S: individuals x SNPs minor-allele counts with NaN for a missing call; y: 1 case, 0
    control."""
    called = ~np.isnan(S)
    S0 = np.where(called, S, 0.0)
    calledf = called.astype(np.float64)
    return TableCounts(
        n11=y @ S0, c1=S0.sum(axis=0), r1=2.0 * (y @ calledf), d=2.0 * calledf.sum(axis=0)
    )


def frequencies(t: TableCounts) -> tuple[Array, Array]:
    """F_A and F_U (minor-allele frequency among cases and among controls; NaN without calls)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        f_a = np.where(t.r1 > 0, t.n11 / t.r1, np.nan)
        f_u = np.where(t.d - t.r1 > 0, (t.c1 - t.n11) / (t.d - t.r1), np.nan)
    return f_a, f_u


def plink_rules(
    t: TableCounts, chi2: Array, p: Array, odds: Array, or_den_zero: npt.NDArray[np.bool_]
) -> tuple[Array, Array, Array]:
    """Apply PLINK 1.9's NA/0/1 rules for degenerate SNPs to computed statistics."""
    mono, one_sided = t.monomorphic, t.one_sided
    chi2 = np.where(mono, np.nan, np.where(one_sided, 0.0, chi2))
    p = np.where(mono, np.nan, np.where(one_sided, 1.0, p))
    odds = np.where(mono | one_sided | or_den_zero, np.nan, odds)
    return chi2, p, odds


def exact_statistics(t: TableCounts) -> tuple[Array, Array, Array]:
    """CHISQ, P, OR in float64 from the counts, with PLINK's rules (NaN = NA)."""
    n11, c1, r1, d = t.n11, t.c1, t.r1, t.d
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = d * (n11 * d - c1 * r1) ** 2 / (c1 * (d - c1) * r1 * (d - r1))
        or_num = n11 * (n11 - r1 - c1 + d)
        or_den = (c1 - n11) * (r1 - n11)
        odds = or_num / or_den
    p = stats.chi2.sf(chi2, df=1)
    return plink_rules(t, chi2, p, odds, or_den == 0)


def ci_column_names(level: float) -> tuple[str, str, str]:
    """PLINK 1.9's names of the --ci columns: SE, L95, U95 for 0.95 (L99 for 0.99, ...)."""
    pct = round(level * 100)
    return ("SE", f"L{pct}", f"U{pct}")


def assoc_columns(
    t: TableCounts, odds: Array, ci: float | None = None
) -> dict[str, npt.NDArray[np.float64]]:
    """The columns of PLINK 1.9's --assoc that come from the 2 x 2 allele table besides CHISQ,
    P and OR: F_A, F_U (NaN = NA), C_A, C_U (minor alleles in cases and controls), and with
    `ci` the standard error of ln OR (Woolf) and the `ci` confidence limits of OR, NaN (NA)
    where OR is NA; where OR is 0, PLINK prints SE inf, L 0, U nan, and so do these."""
    f_a, f_u = frequencies(t)
    cols = {"F_A": f_a, "F_U": f_u, "C_A": t.n11, "C_U": t.c1 - t.n11}
    if ci is not None:
        n11 = t.n11
        n12 = t.r1 - t.n11
        n21 = t.c1 - t.n11
        n22 = t.d - t.r1 - t.c1 + t.n11
        z = float(stats.norm.ppf(0.5 + ci / 2.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            se = np.sqrt(1.0 / n11 + 1.0 / n12 + 1.0 / n21 + 1.0 / n22)
            log_or = np.log(odds)
            lo = np.exp(log_or - z * se)
            hi = np.exp(log_or + z * se)
        na = ~np.isfinite(odds)
        names = ci_column_names(ci)
        for name, value in zip(names, (se, lo, hi), strict=True):
            cols[name] = np.where(na, np.nan, value)
        cols["_ci_na"] = na.astype(np.float64)
    return cols
