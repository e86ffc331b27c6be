"""Manhattan and QQ plots of association p-values (matplotlib, Agg backend: no display needed).

The QQ plot carries the genomic inflation factor λ = median(χ²) / median of χ²(1 df)
(Devlin & Roeder 1999), computed over the SNPs with a statistic.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import numpy.typing as npt
from scipy import stats

Array = npt.NDArray[np.float64]
GENOME_WIDE = 5e-8
CHI2_1_MEDIAN = float(stats.chi2.ppf(0.5, df=1))  # 0.4549364...


def genomic_inflation(chi2: Array) -> float:
    values = chi2[np.isfinite(chi2)]
    if values.size == 0:
        return float("nan")
    return float(np.median(values) / CHI2_1_MEDIAN)


def _top_indices(p: Array, top: int) -> list[int]:
    ok = np.flatnonzero(np.isfinite(p))
    return [int(j) for j in ok[np.argsort(p[ok], kind="stable")][:top]]


def top_hits(p: Array, names: Sequence[str], top: int = 5) -> list[tuple[str, float]]:
    """The `top` SNPs with the smallest P, as (name, P)."""
    return [(names[j], float(p[j])) for j in _top_indices(p, top)]


def _neglog10(p: Array) -> Array:
    return -np.log10(np.clip(p, 1e-300, 1.0))


def manhattan_plot(
    path: Path,
    chrom: Sequence[str],
    bp: Sequence[int],
    p: Array,
    title: str,
    highlight: Sequence[int] = (),
    fmt: str = "png",
    names: Sequence[str] = (),
    top: int = 5,
) -> None:
    """-log10 P by position, chromosomes side by side in alternating colours; the genome-wide
    line labelled; the `top` SNPs with the smallest P named (when `names` are given)."""
    fig, ax = plt.subplots(figsize=(11, 4.2), dpi=110)
    chroms = np.array([int(c) for c in chrom])
    pos = np.asarray(bp, dtype=np.float64)
    ok = np.isfinite(p)
    x = np.zeros_like(pos)
    ticks: list[float] = []
    labels: list[str] = []
    offset = 0.0
    for k, c in enumerate(sorted(set(chroms.tolist()))):
        sel = chroms == c
        lo, hi = float(pos[sel].min()), float(pos[sel].max())
        x[sel] = pos[sel] - lo + offset
        width = max(hi - lo, 1.0)
        ticks.append(offset + width / 2)
        labels.append({23: "X", 24: "Y", 25: "XY", 26: "MT"}.get(c, str(c)))
        colour = "#1f4e79" if k % 2 == 0 else "#7fa7d1"
        mask = sel & ok
        ax.scatter(x[mask], _neglog10(p[mask]), s=4, c=colour, linewidths=0)
        offset += width * 1.02 + 1.0
    hl = [j for j in highlight if ok[j]]
    if hl:
        ax.scatter(
            x[hl],
            _neglog10(p[hl]),
            s=28,
            facecolors="none",
            edgecolors="#c0392b",
            linewidths=1.2,
            label="planted",
        )
    ax.axhline(
        -np.log10(GENOME_WIDE),
        color="#c0392b",
        lw=0.8,
        ls="--",
        label=f"genome-wide significance, P = {GENOME_WIDE:g}",
    )
    if names:
        # Labels step up and right one line each, so that neighbouring hits stay readable.
        for k, j in enumerate(_top_indices(p, top)):
            ax.annotate(
                names[j],
                (x[j], _neglog10(p[j : j + 1])[0]),
                xytext=(4, 3 + 9 * k),
                textcoords="offset points",
                fontsize=7,
                arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "#555555"},
            )
    ax.legend(loc="upper right", fontsize=8)
    ax.set_xticks(ticks, labels)
    ax.set_xlabel("chromosome" if len(ticks) > 1 else f"chromosome {labels[0]}, position")
    ax.set_ylabel(r"$-\log_{10} P$")
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0, top=max(float(np.nanmax(_neglog10(p[ok]), initial=0)), 8.0) * 1.08)
    fig.tight_layout()
    fig.savefig(path, format=fmt)
    plt.close(fig)


def qq_plot(path: Path, chi2: Array, p: Array, title: str, fmt: str = "png") -> float:
    """Observed against expected -log10 P under the null, with λ; returns λ."""
    lam = genomic_inflation(chi2)
    obs = np.sort(_neglog10(p[np.isfinite(p)]))[::-1]
    n = obs.size
    fig, ax = plt.subplots(figsize=(5.5, 5.5), dpi=110)
    if n:
        exp = -np.log10((np.arange(1, n + 1) - 0.5) / n)
        ax.scatter(exp, obs, s=5, c="#1f4e79", linewidths=0)
        top = float(exp.max())
        ax.plot([0, top], [0, top], color="#c0392b", lw=0.8)
    ax.set_xlabel(r"expected $-\log_{10} P$")
    ax.set_ylabel(r"observed $-\log_{10} P$")
    ax.set_title(title.replace(", ", "\n", 1), fontsize=9)
    ax.text(0.04, 0.93, f"genomic inflation λ = {lam:.4f}", transform=ax.transAxes, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, format=fmt)
    plt.close(fig)
    return lam
