"""Sample and SNP selection and quality control as PLINK 1.9 applies them before `--assoc`.

--mind runs here on the data holder's plaintext genotypes (a sample's own calls). --geno, --hwe
and --maf need counts over every sample (of every site): `qc_inputs` codes one owner's calls
for gwas/programs/qc.hec, which aggregates them under encryption (gwas/qc.py runs it), and
`qc_from_counts` applies PLINK's thresholds to the revealed counts.

Order (measured against plink1.9: `--mind` removes samples before `--geno` counts missing calls):
 (1) --keep / --remove (samples), --extract / --exclude / --chr / --from-bp / --to-bp (SNPs);
 (2) --mind: samples with more than the given fraction of missing calls (at the data holder);
 (3) --geno: SNPs with more than the fraction missing among the remaining samples;
 (4) --hwe: SNPs whose Hardy-Weinberg exact test (Wigginton, Cutler and Abecasis, AJHG 2005)
     among founder controls (founders, when the phenotype is not case/control) gives P below
     the threshold; on X non-males only, skipped on Y and MT, as PLINK 1.9 does;
 (5) --maf: SNPs whose minor-allele frequency over the founders' calls is below the threshold.

`allele_coding` turns a block of .bed-style A1 counts into the per-call allele counts PLINK uses
on each chromosome (gwas/chromosomes.py): haploid calls carry one allele, heterozygous haploid
calls are missing, non-males carry nothing on Y.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError
from gwas.chromosomes import ACCEPTED, Ploidy, plink_code, ploidy
from gwas.plink import MISSING_INT8, Fileset, read_id_list, read_snp_list

Array = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
SCAN_BLOCK = 4096


@dataclass
class Selection:
    """The PLINK 1.9 options that choose samples and SNPs."""

    keep: str | None = None
    remove: str | None = None
    extract: str | None = None
    exclude: str | None = None
    chrom: str | None = None  # --chr: comma-separated codes and ranges ("1-4,X,MT")
    from_bp: int | None = None
    to_bp: int | None = None
    mind: float | None = None
    geno: float | None = None
    maf: float | None = None
    hwe: float | None = None

    @property
    def needs_scan(self) -> bool:
        return any(x is not None for x in (self.mind, self.geno, self.maf, self.hwe))


@dataclass
class FilterLog:
    """What each filter removed, for the .log (PLINK prints the same counts)."""

    lines: list[str] = field(default_factory=list)
    removed_samples: dict[str, list[str]] = field(default_factory=dict)
    removed_snps: dict[str, list[str]] = field(default_factory=dict)


def parse_chr(text: str) -> set[str]:
    """--chr "1-4,X,MT" -> PLINK numeric codes; an unknown code is an error."""
    codes: set[str] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        if sep:
            a, b = plink_code(lo), plink_code(hi)
            if a is None or b is None or int(a) > int(b):
                raise UserError(f"--chr {text}: {part!r} is not a range of chromosome codes")
            codes.update(str(c) for c in range(int(a), int(b) + 1))
        else:
            c = plink_code(part)
            if c is None:
                raise UserError(f"--chr {text}: unknown chromosome {part!r}", hint=ACCEPTED)
            codes.add(c)
    return codes


def select(fileset: Fileset, opts: Selection, log: FilterLog) -> Fileset:
    """Step (1): the ID- and position-based filters."""
    samples = np.ones(fileset.n_samples, dtype=bool)
    ids = [(s.fid, s.iid) for s in fileset.samples]
    if opts.keep:
        wanted = read_id_list(Path(opts.keep), "--keep", fileset)
        samples &= np.array([i in wanted for i in ids], dtype=bool)
        log.lines.append(f"--keep {opts.keep}: {int(samples.sum())} samples remaining")
    if opts.remove:
        unwanted = read_id_list(Path(opts.remove), "--remove", fileset)
        before = int(samples.sum())
        samples &= np.array([i not in unwanted for i in ids], dtype=bool)
        log.lines.append(
            f"--remove {opts.remove}: {before - int(samples.sum())} samples removed, "
            f"{int(samples.sum())} remaining"
        )
    snps = np.ones(fileset.n_variants, dtype=bool)
    names = [v.snp for v in fileset.variants]
    if opts.extract:
        wanted_snps = read_snp_list(Path(opts.extract), "--extract")
        snps &= np.array([n in wanted_snps for n in names], dtype=bool)
        log.lines.append(f"--extract {opts.extract}: {int(snps.sum())} SNPs remaining")
    if opts.exclude:
        unwanted_snps = read_snp_list(Path(opts.exclude), "--exclude")
        before = int(snps.sum())
        snps &= np.array([n not in unwanted_snps for n in names], dtype=bool)
        log.lines.append(
            f"--exclude {opts.exclude}: {before - int(snps.sum())} SNPs removed, "
            f"{int(snps.sum())} remaining"
        )
    if opts.chrom:
        codes = parse_chr(opts.chrom)
        snps &= np.array([v.chrom in codes for v in fileset.variants], dtype=bool)
        log.lines.append(f"--chr {opts.chrom}: {int(snps.sum())} SNPs remaining")
    if opts.from_bp is not None or opts.to_bp is not None:
        chroms = {v.chrom for v, k in zip(fileset.variants, snps, strict=True) if k}
        if len(chroms) > 1:
            raise UserError(
                "--from-bp/--to-bp need the SNPs of one chromosome; "
                f"{len(chroms)} remain ({', '.join(sorted(chroms, key=int))})",
                hint="add --chr with one chromosome, as PLINK 1.9 requires",
            )
        lo = opts.from_bp if opts.from_bp is not None else -(2**62)
        hi = opts.to_bp if opts.to_bp is not None else 2**62
        bp = np.array([int(v.bp) for v in fileset.variants])
        snps &= (bp >= lo) & (bp <= hi)
        log.lines.append(
            f"--from-bp/--to-bp {opts.from_bp}..{opts.to_bp}: {int(snps.sum())} SNPs remaining"
        )
    if not samples.any():
        raise UserError("no sample is left after --keep/--remove")
    if not snps.any():
        raise UserError("no SNP is left after --extract/--exclude/--chr/--from-bp/--to-bp")
    return fileset.subset(samples, snps)


def allele_coding(
    g: npt.NDArray[np.int8], ploidies: Sequence[Ploidy], male: Mask, mt_haploid: bool = True
) -> tuple[Array, Array]:
    """(A1 alleles, called alleles) per sample and SNP, as PLINK 1.9 counts them: diploid calls
    0-2 of 2; a haploid call 0 or 1 of 1 (a heterozygous haploid call is missing); non-males
    have no Y alleles. `mt_haploid` False counts MT calls as diploid, as PLINK 1.9's allele
    frequencies (--freq, --maf, the choice of A1) do (measured: NCHROBS of MT SNPs is twice
    the calls, heterozygous ones included), while --assoc counts them haploid."""
    called = g != MISSING_INT8
    a1 = np.where(called, g, 0).astype(np.float64)
    alleles = 2.0 * called
    kinds = np.array([p.value for p in ploidies])
    for kind, who in (
        (Ploidy.X.value, male),
        (Ploidy.Y.value, np.ones_like(male)),
        (Ploidy.HAPLOID.value, np.ones_like(male) if mt_haploid else np.zeros_like(male)),
    ):
        cols = np.flatnonzero(kinds == kind)
        if cols.size == 0:
            continue
        sub = g[:, cols]
        rows = who[:, None]
        het = rows & (sub == 1)
        ok = rows & (sub != MISSING_INT8) & ~het
        a1[:, cols] = np.where(rows, np.where(ok, sub / 2.0, 0.0), a1[:, cols])
        alleles[:, cols] = np.where(rows, ok.astype(np.float64), alleles[:, cols])
        if kind == Ploidy.Y.value:
            a1[:, cols] = np.where(male[:, None], a1[:, cols], 0.0)
            alleles[:, cols] = np.where(male[:, None], alleles[:, cols], 0.0)
    return a1, alleles


def hwe_exact(het: float, hom1: float, hom2: float) -> float:
    """The two-sided Hardy-Weinberg exact test P (Wigginton, Cutler and Abecasis 2005): the sum
    of the probabilities of the heterozygote counts no more likely than the observed one, given
    the allele counts."""
    n_het, n1, n2 = round(het), round(hom1), round(hom2)
    n = n_het + n1 + n2
    if n == 0:
        return 1.0
    rare = 2 * min(n1, n2) + n_het
    common = 2 * n - rare
    probs = np.zeros(rare + 1)
    mid = rare * common // (2 * n)
    if (rare & 1) != (mid & 1):
        mid += 1
    probs[mid] = 1.0
    hom_r = (rare - mid) // 2
    hom_c = n - mid - hom_r
    h, hr, hc = mid, hom_r, hom_c
    while h >= 2:
        probs[h - 2] = probs[h] * h * (h - 1) / (4.0 * (hr + 1) * (hc + 1))
        h -= 2
        hr += 1
        hc += 1
    h, hr, hc = mid, hom_r, hom_c
    while h <= rare - 2:
        probs[h + 2] = probs[h] * 4.0 * hr * hc / ((h + 2) * (h + 1))
        h += 2
        hr -= 1
        hc -= 1
    total = probs.sum()
    observed = probs[n_het]
    p = probs[probs <= observed * (1 + 1e-7)].sum() / total
    return float(min(1.0, p))


@dataclass
class QcResult:
    fileset: Fileset
    pheno: Array


def quality_control(
    fileset: Fileset, pheno: Array, binary: bool, opts: Selection, log: FilterLog
) -> QcResult:
    """Step (2), --mind, on the data holder's plaintext genotypes (steps (3)-(5): gwas/qc.py)."""
    if opts.mind is None:
        return QcResult(fileset, pheno)
    ploidies = [ploidy(v.chrom) for v in fileset.variants]
    male = np.array([s.is_male for s in fileset.samples])
    m = fileset.n_variants
    keep_samples = np.ones(fileset.n_samples, dtype=bool)
    if opts.mind is not None:
        missing = np.zeros(fileset.n_samples)
        counted = np.zeros(fileset.n_samples)
        for start in range(0, m, SCAN_BLOCK):
            stop = min(start + SCAN_BLOCK, m)
            g = fileset.read_block(start, stop)
            ys = np.array([p is Ploidy.Y for p in ploidies[start:stop]])
            relevant = np.where(ys[None, :], male[:, None], True)
            missing += ((g == MISSING_INT8) & relevant).sum(axis=1)
            counted += relevant.sum(axis=1)
        rate = np.divide(missing, counted, out=np.zeros_like(missing), where=counted > 0)
        keep_samples = rate <= opts.mind
        gone = [s.label for s, k in zip(fileset.samples, keep_samples, strict=True) if not k]
        log.removed_samples["--mind"] = gone
        log.lines.append(
            f"--mind {opts.mind:g}: {len(gone)} samples removed due to missing genotype data"
        )
        if not keep_samples.any():
            raise UserError(f"--mind {opts.mind:g} removes every sample")
        fileset = fileset.subset(keep_samples, np.ones(m, dtype=bool))
        pheno = pheno[keep_samples]
        male = male[keep_samples]
    return QcResult(fileset, pheno)


QC_COUNTS = ("maf_a1", "maf_n", "hwe_n", "hwe_g1", "hwe_g2", "geno_miss", "geno_n")


def qc_inputs(
    g: npt.NDArray[np.int8],
    ploidies: Sequence[Ploidy],
    male: Mask,
    founders: Mask,
    hwe_sample: Mask,
) -> dict[str, Array]:
    """One owner's rows of gwas/programs/qc.hec for a block of SNPs: `hwe_sample` marks the
    rows PLINK's --hwe counts (founder controls; founders for a quantitative trait); on X only
    the non-males among them (females and unknown sex: measured against plink1.9 --hardy)."""
    f1, fa = allele_coding(g, ploidies, male, mt_haploid=False)
    called = g != MISSING_INT8
    kinds = list(ploidies)
    y_cols = np.array([k is Ploidy.Y for k in kinds])
    x_cols = np.array([k is Ploidy.X for k in kinds])
    skip_hwe = np.array([k in (Ploidy.Y, Ploidy.HAPLOID) for k in kinds])
    relevant = np.where(y_cols[None, :], male[:, None], True)
    in_hwe = (
        hwe_sample[:, None]
        & called
        & ~skip_hwe[None, :]
        & np.where(x_cols[None, :], ~male[:, None], True)
    )
    return {
        "f": founders.astype(np.float64),
        "F1": f1,
        "FA": fa,
        "G": np.where(in_hwe, g, 0).astype(np.float64),
        "H": in_hwe.astype(np.float64),
        "X": (relevant & ~called).astype(np.float64),
        "R": relevant.astype(np.float64),
    }


@dataclass
class QcCounts:
    """The revealed QC counts of every SNP (gwas/programs/qc.hec)."""

    maf_a1: Array
    maf_n: Array
    hwe_n: Array
    hwe_g1: Array
    hwe_g2: Array
    geno_miss: Array
    geno_n: Array

    @property
    def missing_rate(self) -> Array:
        return np.divide(
            self.geno_miss, self.geno_n, out=np.zeros_like(self.geno_n), where=self.geno_n > 0
        )

    @property
    def maf(self) -> Array:
        freq = np.divide(
            self.maf_a1, self.maf_n, out=np.zeros_like(self.maf_n), where=self.maf_n > 0
        )
        return np.minimum(freq, 1.0 - freq)

    def hwe_p(self) -> Array:
        het = 2.0 * self.hwe_g1 - self.hwe_g2
        hom1 = (self.hwe_g2 - self.hwe_g1) / 2.0
        hom2 = self.hwe_n - het - hom1
        return np.array([hwe_exact(h, a, b) for h, a, b in zip(het, hom1, hom2, strict=True)])


def qc_from_counts(counts: QcCounts, names: Sequence[str], opts: Selection, log: FilterLog) -> Mask:
    """--geno, --hwe, --maf in PLINK's order on the revealed counts: the SNPs that pass."""
    m = len(names)
    keep = np.ones(m, dtype=bool)
    for option, value, fails in (
        ("--geno", opts.geno, lambda t: counts.missing_rate > t),
        ("--hwe", opts.hwe, lambda t: counts.hwe_p() < t),
        ("--maf", opts.maf, lambda t: counts.maf < t),
    ):
        if value is None:
            continue
        out = keep & fails(value)
        log.removed_snps[option] = [names[int(j)] for j in np.flatnonzero(out)]
        what = {
            "--geno": "missing genotype data",
            "--hwe": "Hardy-Weinberg exact test",
            "--maf": "minor allele threshold",
        }[option]
        log.lines.append(
            f"{option} {value:g}: {int(out.sum())} SNPs removed ({what}; from the counts of "
            "examples/gwas/qc.hec, aggregated under encryption)"
        )
        keep &= ~out
    if not keep.any():
        raise UserError("no SNP passes --geno/--hwe/--maf")
    return keep
