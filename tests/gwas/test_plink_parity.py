"""`hec gwas chisq` run with PLINK 1.9's options against `plink1.9` run with the same options on
the same simulated cohort: every column of `.assoc` (F_A/F_U or C_A/C_U, CHISQ, P, OR, and SE,
L95, U95 with --ci) and of `.assoc.adjusted` to PLINK's printed digits, the same SNPs and the
same numbers of cases and controls surviving every filter; with sex chromosomes (X, Y, XY, MT,
chr prefixes, 0), with and without missing calls, with phenotype files (--pheno-name,
--mpheno, #FID header, --1) and with filters.

Runs use `--backend sim` (the compiled program in the reference simulator with CKKS noise);
the encrypted backend runs the same program in test_encrypted_alleles_program."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from gwas.adjust import plink_lambda
from gwas.chisq import ChisqOptions, ChisqResult, run_chisq
from hec.cli import build_parser

PLINK = "plink1.9"
# The chromosome codes of the cohort, one per group of SNPs, as a user's .bim could spell them.
CHROMOSOMES = ["1", "chr2", "X", "Y", "XY", "MT", "chr5", "0", "6", "chr23", "chrMT", "7"]
PLINK_CODE = {"chr2": "2", "X": "23", "Y": "24", "XY": "25", "MT": "26", "chr5": "5",
              "chr23": "23", "chrMT": "26"}  # fmt: skip


def plink(*args: str, cwd: Path) -> str:
    exe = shutil.which(PLINK)
    assert exe, f"{PLINK} is not installed (scripts/setup installs the Debian package plink1.9)"
    result = subprocess.run(
        [exe, "--threads", "1", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@dataclass(frozen=True)
class Cohort:
    directory: Path
    prefix: Path
    pheno: Path  # FID IID P1 P2 with a "#FID IID" header
    keep: Path
    exclude: Path


def make_cohort(directory: Path, missing: float, seed: int) -> Cohort:
    """plink1.9 --simulate, 150 cases and 150 controls x 240 SNPs, then chromosomes spelled
    as in CHROMOSOMES (20 SNPs each; split codes merged so PLINK sees each chromosome
    contiguous), sexes 1, 2 and some 0 (unknown), a few nonfounders."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sim.txt").write_text(
        "220 null 0.02 0.5 1.00 1.00\n20 disease 0.05 0.5 1.7 mult\n"
    )
    extra = ["--simulate-missing", str(missing)] if missing else []
    plink("--simulate", "sim.txt", "--make-bed", "--out", "raw", "--simulate-ncases", "150",
          "--simulate-ncontrols", "150", "--seed", str(seed), *extra, cwd=directory)  # fmt: skip
    bim = [line.split() for line in (directory / "raw.bim").read_text().splitlines()]
    # X twice (X and chr23) and MT twice (MT and chrMT) would split them: order them together.
    codes = sorted(CHROMOSOMES, key=lambda c: int(PLINK_CODE.get(c, c)))
    per = len(bim) // len(codes)
    lines = []
    for j, row in enumerate(bim):
        row[0] = codes[min(j // per, len(codes) - 1)]
        lines.append("\t".join(row))
    (directory / "cohort.bim").write_text("\n".join(lines) + "\n")
    shutil.copy(directory / "raw.bed", directory / "cohort.bed")
    fam = [line.split() for line in (directory / "raw.fam").read_text().splitlines()]
    rng = np.random.default_rng(seed)
    out = []
    for i, row in enumerate(fam):
        row[4] = "0" if i % 23 == 5 else str(1 + int(rng.integers(0, 2)))
        if i % 37 == 7:  # a nonfounder (parents not in the fileset)
            row[2], row[3] = "dad", "mum"
        out.append(" ".join(row))
    (directory / "cohort.fam").write_text("\n".join(out) + "\n")
    pheno = directory / "pheno.txt"
    with pheno.open("w") as fh:
        fh.write("#FID IID P1 P2\n")
        for i, row in enumerate(fam):
            p2 = "NA" if i % 11 == 0 else str(int(rng.random() < 0.45))
            fh.write(f"{row[0]} {row[1]} {1 + (i % 3 == 0)} {p2}\n")
    keep = directory / "keep.txt"
    keep.write_text("".join(f"{r[0]} {r[1]}\n" for i, r in enumerate(fam) if i % 9 != 4))
    exclude = directory / "exclude.txt"
    exclude.write_text("".join(f"{r[1]}\n" for j, r in enumerate(bim) if j % 17 == 3))
    return Cohort(directory, directory / "cohort", pheno, keep, exclude)


@pytest.fixture(scope="session")
def sex_cohort(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return make_cohort(tmp_path_factory.mktemp("sexchr-missing"), 0.02, 21)


@pytest.fixture(scope="session")
def sex_cohort_complete(tmp_path_factory: pytest.TempPathFactory) -> Cohort:
    return make_cohort(tmp_path_factory.mktemp("sexchr-complete"), 0.0, 22)


def read_table(path: Path, key: str = "SNP") -> tuple[list[str], dict[str, dict[str, str]]]:
    lines = [line.split() for line in path.read_text().splitlines() if line.strip()]
    header = lines[0]
    return header, {
        row[header.index(key)]: dict(zip(header, row, strict=True)) for row in lines[1:]
    }


def agrees(ours: str, theirs: str) -> bool:
    """`ours` (7 significant digits) rounds to PLINK's printed 4; PLINK's 0 is matched by
    |ours| <= 1e-6; NA, inf and nan must be the same word."""
    if theirs in ("NA", "nan", "inf") or ours in ("NA", "nan", "inf"):
        return ours == theirs
    x, y = float(ours), float(theirs)
    if y == 0.0:
        return abs(x) <= 1e-6
    half_unit = 0.5 * 10.0 ** (math.floor(math.log10(abs(y))) - 3)
    return abs(x - y) <= half_unit * (1 + 1e-9) + 1e-12 * abs(y)


def compare_tables(ours: Path, theirs: Path, skip: tuple[str, ...] = ()) -> list[str]:
    h1, a = read_table(ours)
    h2, b = read_table(theirs)
    problems = []
    if h1 != h2:
        problems.append(f"header ours {h1} plink {h2}")
    if set(a) != set(b):
        problems.append(f"SNPs only ours {sorted(set(a) - set(b))[:5]}, "
                        f"only plink {sorted(set(b) - set(a))[:5]}")  # fmt: skip
    for snp in set(a) & set(b):
        for col in h2:
            if col in skip:
                continue
            x, y = a[snp].get(col, "?"), b[snp][col]
            same = x == y if col in ("CHR", "SNP", "BP", "A1", "A2") else agrees(x, y)
            if not same:
                problems.append(f"{snp} {col}: ours {x} plink {y}")
    return problems


def plink_counts(stdout: str) -> tuple[int, int]:
    m = re.search(r"Among remaining phenotypes, (\d+) are cases and (\d+) are controls", stdout)
    assert m, stdout
    return int(m.group(1)), int(m.group(2))


def ours_options(cohort: Cohort, out: Path, cache: Path, args: list[str]) -> ChisqOptions:
    """The ChisqOptions `hec gwas chisq ARGS` parses to (through the real argument parser)."""
    ns = build_parser().parse_args(
        ["gwas", "chisq", "--bfile", str(cohort.prefix), "--out", str(out), *args]
    )
    from hec.cli import _selection_of

    return ChisqOptions(
        bfile=ns.bfile, out=ns.out, pheno=ns.pheno, pheno_name=ns.pheno_name,
        mpheno=ns.mpheno, one_based=ns.one_based, allow_no_sex=ns.allow_no_sex,
        selection=_selection_of(ns), covar=ns.covar, counts=ns.counts, ci=ns.ci, adjust=ns.adjust,
        backend="sim", cache_dir=cache, progress=False, plots=False,
    )  # fmt: skip


def to_plink(args: list[str], cohort: Cohort) -> list[str]:
    """The same options as plink1.9 spells them (`--assoc counts` for `--counts`)."""
    out = ["--assoc", *(["counts"] if "--counts" in args else [])]
    out += [a for a in args if a != "--counts"]
    return out


# Each case: our arguments (files named by placeholders), as plink1.9 gets them too.
CASES = {
    "default": [],
    "allow-no-sex+counts": ["--allow-no-sex", "--counts"],
    "ci+adjust": ["--allow-no-sex", "--ci", "0.95", "--adjust"],
    "ci99": ["--ci", "0.99"],
    "filters": [
        "--allow-no-sex",
        "--keep",
        "{keep}",
        "--exclude",
        "{exclude}",
        "--chr",
        "1-6,X,MT",
        "--mind",
        "0.03",
        "--geno",
        "0.025",
        "--maf",
        "0.05",
        "--hwe",
        "0.2",
        "--adjust",
        "--covar",
        "{covar}",
    ],
    "range": ["--chr", "chr2", "--from-bp", "45", "--to-bp", "58"],
    "pheno-name+1": ["--pheno", "{pheno}", "--pheno-name", "P2", "--1", "--allow-no-sex"],
    "mpheno": ["--pheno", "{pheno}", "--mpheno", "1", "--adjust"],
}


def _expand(args: list[str], cohort: Cohort) -> list[str]:
    files = {"{keep}": cohort.keep, "{exclude}": cohort.exclude, "{pheno}": cohort.pheno,
             "{covar}": cohort.pheno}  # fmt: skip
    return [str(files[a]) if a in files else a for a in args]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("which", ["missing", "complete"])
def test_assoc_equals_plink_with_the_same_options(
    case: str,
    which: str,
    sex_cohort: Cohort,
    sex_cohort_complete: Cohort,
    tmp_path: Path,
    program_cache: Path,
) -> None:
    cohort = sex_cohort if which == "missing" else sex_cohort_complete
    args = _expand(CASES[case], cohort)
    stdout = plink("--bfile", str(cohort.prefix), *to_plink(args, cohort), "--out",
                   str(tmp_path / "plink"), cwd=tmp_path)  # fmt: skip
    result = run_chisq(ours_options(cohort, tmp_path / "ours", program_cache, args))
    assert result.f_a is not None  # every program reveals the table (issue 20)
    problems = compare_tables(tmp_path / "ours.assoc", tmp_path / "plink.assoc")
    assert not problems, "\n".join(problems[:20])
    assert (result.n_cases, result.n_controls) == plink_counts(stdout)
    if "--adjust" in args:
        problems = compare_tables(
            tmp_path / "ours.assoc.adjusted", tmp_path / "plink.assoc.adjusted"
        )
        assert not problems, "\n".join(problems[:20])
        lam = re.search(r"lambda \(based on median chisq\) = ([0-9]+(?:\.[0-9]+)?)", stdout)
        assert lam and abs(plink_lambda(result.chisq) / float(lam.group(1)) - 1) < 1e-5
    if case == "filters":
        removed = {k: len(v) for k, v in (result.filter_log or None).removed_snps.items()}  # type: ignore[union-attr]
        m = re.search(r"(\d+) variants? removed due to missing genotype data", stdout)
        assert removed["--geno"] == (int(m.group(1)) if m else 0)
        m = re.search(r"--hwe: (\d+) variants? removed due to Hardy-Weinberg exact test", stdout)
        assert removed["--hwe"] == (int(m.group(1)) if m else 0) > 0
        m = re.search(r"(\d+) variants? removed due to minor allele threshold", stdout)
        assert removed["--maf"] == (int(m.group(1)) if m else 0)
        m = re.search(r"(\d+) people removed due to missing genotype data", stdout)
        assert len(result.filter_log.removed_samples["--mind"]) == (int(m.group(1)) if m else 0)  # type: ignore[union-attr]


def test_encrypted_alleles_program(sex_cohort: Cohort, tmp_path: Path, program_cache: Path) -> None:
    """The encrypted backend runs chisq_alleles.hec (X, Y, MT calls count one allele) and its
    decrypted table gives PLINK's columns, --counts and --ci included."""
    args = ["--allow-no-sex", "--counts", "--ci", "0.95"]
    plink("--bfile", str(sex_cohort.prefix), *to_plink(args, sex_cohort), "--out",
          str(tmp_path / "plink"), cwd=tmp_path)  # fmt: skip
    opts = ours_options(sex_cohort, tmp_path / "ours", program_cache, args)
    opts.backend = "encrypted"
    result = run_chisq(opts)
    assert result.program.name == "chisq_alleles.hec" and result.backend.encrypts
    problems = compare_tables(tmp_path / "ours.assoc", tmp_path / "plink.assoc")
    assert not problems, "\n".join(problems[:20])


def run_file(tmp_path: Path, cache: Path, **kw: object) -> ChisqResult:
    opts = ChisqOptions(bfile=None, out=str(tmp_path / "o"), backend="sim", cache_dir=cache,
                        progress=False, plots=False)  # fmt: skip
    for k, v in kw.items():
        setattr(opts, k, v)
    return run_chisq(opts)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.array_equal(a, b, equal_nan=True))


def test_plink2_vcf_and_bcf_inputs_equal_the_plink1_fileset(
    sex_cohort: Cohort, tmp_path: Path, program_cache: Path
) -> None:
    """The same cohort as .pgen/.pvar/.psam (pgenlib's writer), as VCF (our writer) and as BCF
    (cyvcf2's writer), with the sexes by --update-sex and the phenotypes by --pheno for the VCF
    and BCF (which carry neither): identical results to the PLINK 1 fileset."""
    from cyvcf2 import VCF, Writer

    from gwas.pgen import write_pfile
    from gwas.plink import open_fileset
    from gwas.vcf import write_vcf

    fs = open_fileset(str(sex_cohort.prefix))
    write_pfile(tmp_path / "p2", fs)
    write_vcf(tmp_path / "c.vcf", fs)
    vcf = VCF(str(tmp_path / "c.vcf"))
    bcf = Writer(str(tmp_path / "c.bcf"), vcf, mode="wb")
    for rec in vcf:
        bcf.write_record(rec)
    bcf.close()
    vcf.close()
    sex = tmp_path / "sex.txt"
    sex.write_text("".join(f"{s.iid} {s.iid} {s.sex}\n" for s in fs.samples))
    pheno = tmp_path / "pheno.txt"
    pheno.write_text("".join(f"{s.iid} {s.iid} {s.phenotype}\n" for s in fs.samples))
    common = {"allow_no_sex": True, "ci": 0.95}
    (tmp_path / "b").mkdir()
    base = run_file(tmp_path / "b", program_cache, bfile=str(sex_cohort.prefix), **common)
    for name, kw in (
        ("pfile", {"pfile": str(tmp_path / "p2")}),
        ("vcf", {"vcf": str(tmp_path / "c.vcf"), "update_sex": str(sex), "pheno": str(pheno)}),
        ("bcf", {"bcf": str(tmp_path / "c.bcf"), "update_sex": str(sex), "pheno": str(pheno)}),
    ):
        (tmp_path / name).mkdir()
        # VCF has no parents: PLINK's founders rule sees every sample as a founder, so the
        # nonfounders of the fileset would change A1; compare on a fileset's founders' terms.
        other = run_file(tmp_path / name, program_cache, **kw, **common)
        assert other.a1 == base.a1 or name != "pfile", name
        same_a1 = np.array([x == y for x, y in zip(other.a1, base.a1, strict=True)])
        for col in ("chisq", "p"):
            assert _same(getattr(other, col), getattr(base, col)), (name, col)
        assert _same(other.odds[same_a1], base.odds[same_a1]), name
        assert (other.n_cases, other.n_controls) == (base.n_cases, base.n_controls), name


LINEAR_CASES = {
    "default": ["--allow-no-sex"],
    "filters": [
        "--keep",
        "{keep}",
        "--exclude",
        "{exclude}",
        "--mind",
        "0.03",
        "--geno",
        "0.025",
        "--maf",
        "0.05",
        "--hwe",
        "0.2",
    ],
}


def _quantitative(cohort: Cohort) -> Path:
    path = cohort.directory / "quant.txt"
    if not path.exists():
        rng = np.random.default_rng(7)
        rows = [line.split() for line in cohort.prefix.with_suffix(".fam").read_text().splitlines()]
        values = rng.normal(25.0, 4.0, size=len(rows))
        values[::13] = -9
        path.write_text(
            "FID IID BMI\n"
            + "".join(f"{r[0]} {r[1]} {v:.4f}\n" for r, v in zip(rows, values, strict=True))
        )
    return path


@pytest.mark.parametrize(
    ("case", "backend"), [("default", "sim"), ("filters", "sim"), ("default", "encrypted")]
)
def test_qassoc_equals_plink(
    case: str, backend: str, sex_cohort: Cohort, tmp_path: Path, program_cache: Path
) -> None:
    """`hec gwas linear` writes plink1.9's .qassoc (NMISS BETA SE R2 T P) for a quantitative
    phenotype, sex chromosomes included (haploid calls coded 0/2 as PLINK codes them)."""
    from gwas.linear import run_linear
    from hec.cli import _gwas_options

    pheno = _quantitative(sex_cohort)
    args = [*_expand(LINEAR_CASES[case], sex_cohort), "--pheno", str(pheno), "--pheno-name", "BMI"]
    plink("--bfile", str(sex_cohort.prefix), "--assoc", *args, "--out", str(tmp_path / "plink"),
          cwd=tmp_path)  # fmt: skip
    ns = build_parser().parse_args(
        ["gwas", "linear", "--bfile", str(sex_cohort.prefix), "--out", str(tmp_path / "ours"),
         "--backend", backend, "--cache-dir", str(program_cache), "--no-progress", "--no-plots",
         *args]
    )  # fmt: skip
    result = run_linear(_gwas_options(ns))
    assert result.backend_encrypts == (backend == "encrypted")
    problems = compare_tables(tmp_path / "ours.qassoc", tmp_path / "plink.qassoc")
    assert not problems, "\n".join(problems[:20])
