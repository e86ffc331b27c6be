"""`hec gwas chisq`: the allelic chi-square association test and odds ratio of PLINK 1.9's
`--assoc`, computed by a compiled hec program (Blatt et al., PNAS 2020, Alg. 1-2) on a PLINK 1
or PLINK 2 fileset or a VCF/BCF, with PLINK's options and output files.

Steps:
 (1) read the genotypes and the phenotypes (PhenoSpec: --pheno, --pheno-name, --mpheno, --1,
     --allow-no-sex), apply the sample and SNP filters and the quality control in PLINK's order
     (gwas/filters.py); individuals with a missing phenotype are left out;
 (2) data-holder scan (plaintext, before encryption): choose A1 as PLINK 1.9 does (the allele
     with the lower count over the founders' calls; ties keep the .bim order), find whether any
     analysed individual has a missing call, and flag the SNPs whose table is degenerate
     (monomorphic or no calls among the analysed individuals; or called individuals all cases
     or all controls), for which PLINK prints NA (or CHISQ 0, P 1);
 (3) compile gwas/programs/chisq.hec, or chisq_missing.hec when calls are missing, or
     chisq_alleles.hec (the 2 x 2 table's counts revealed) when haploid calls count one allele
     (X in males, Y, MT) or `counts`/`--ci` need the table (cached);
 (4) run the program with the chosen backend over blocks of `slots` SNPs; the coordinator
     gets the four revealed values per SNP and runs the program's client block;
 (5) write PREFIX.assoc (and PREFIX.assoc.adjusted with --adjust), PREFIX.manhattan.png,
     PREFIX.qq.png and PREFIX.log under temporary names, and rename them only when everything
     succeeded; a failed run removes them and writes PREFIX.log saying what was done and
     ending with the error.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import math
import os
import platform
import shlex
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from compiler.analysis.noise import DEFAULT_FAILURE_LOG2
from compiler.errors import InternalError, UserError
from driver import MAX_PRECISION_BITS, __version__
from driver.interrupt import interrupted
from gwas import DEFAULT_BACKEND, DEFAULT_PRECISION_BITS
from gwas.adjust import adjust, write_adjusted
from gwas.assoc import rows_from_arrays, write_assoc
from gwas.backend import BACKENDS, Backend, Block, CompiledProgram, EncryptedBackend
from gwas.chromosomes import Ploidy, ploidy
from gwas.exact import TableCounts, assoc_columns, ci_column_names, frequencies, plink_rules
from gwas.filters import FilterLog, Selection, allele_coding, quality_control, select
from gwas.memory import PhaseMeter
from gwas.plink import Fileset, PhenoSpec, open_fileset, sample_phenotypes, update_sex
from gwas.plots import manhattan_plot, qq_plot, top_hits
from gwas.progress import Progress
from gwas.qc import run_qc
from gwas.scaleout import ScaleOut, ScaleOutBackend

Array = npt.NDArray[np.float64]
# The programs gwas runs ship with it (package data; examples/gwas/ links to them).
PROGRAM_DIR = Path(__file__).resolve().parent / "programs"
PROGRAM_COMPLETE = PROGRAM_DIR / "chisq.hec"
PROGRAM_MISSING = PROGRAM_DIR / "chisq_missing.hec"
PROGRAM_ALLELES = PROGRAM_DIR / "chisq_alleles.hec"
SCAN_BLOCK = 4096
# Revealed values that are integers by construction are rounded to the nearest integer when
# the promised absolute error is below this (then rounding gives the exact integer).
ROUNDING_ERROR_LIMIT = 0.25
LIST_LIMIT = 10


@dataclass
class ChisqOptions:
    bfile: str | None
    out: str
    pheno: str | None = None
    pfile: str | None = None  # PLINK 2 fileset prefix
    vcf: str | None = None
    bcf: str | None = None
    pheno_name: str | None = None
    mpheno: int | None = None
    one_based: bool = False  # --1
    allow_no_sex: bool = False
    update_sex: str | None = None
    covar: str | None = None  # accepted and ignored, as plink1.9 --assoc ignores it
    selection: Selection = field(default_factory=Selection)
    counts: bool = False  # --assoc counts: C_A C_U for F_A F_U
    ci: float | None = None  # --ci LEVEL: SE and confidence limits of OR
    adjust: bool = False  # --adjust: PREFIX.assoc.adjusted
    backend: str = DEFAULT_BACKEND
    threads: int = 0  # HEC_THREADS of the generated program (0: the runtime's default)
    precision_bits: float = DEFAULT_PRECISION_BITS
    # log2 of each revealed value's error-bound failure probability (--error-confidence)
    error_confidence: float = DEFAULT_FAILURE_LOG2
    cache_dir: Path | None = None
    progress: bool = True
    plots: bool = True
    seed: int = 0
    command_line: str = ""
    highlight: Sequence[int] = ()  # SNP indices marked on the Manhattan plot (the demo's)
    scale: ScaleOut = field(default_factory=ScaleOut)  # --block, --keys, --resume, Dask


@dataclass
class Scan:
    """What the data holder computes on plaintext before encryption (step 2)."""

    swap: npt.NDArray[np.bool_]  # A1 is the .bim A2
    counts: TableCounts  # used only for the degenerate-SNP flags, never written out
    any_missing: bool
    any_haploid: bool  # some analysed call carries one allele (X in males, Y, MT)


@dataclass
class ChisqResult:
    chisq: Array
    p: Array
    odds: Array
    a1: list[str]
    a2: list[str]
    lam: float
    program: Path
    compiled: CompiledProgram
    backend: Backend
    meter: PhaseMeter
    files: list[Path]
    log_text: str
    n_included: int
    n_cases: int
    n_controls: int
    notes: list[str] = field(default_factory=list)
    f_a: Array | None = None
    f_u: Array | None = None
    columns: dict[str, Array] = field(default_factory=dict)
    fileset: Fileset | None = None
    filter_log: FilterLog | None = None


def open_input(opts: ChisqOptions) -> Fileset:
    """The genotype input named by exactly one of --bfile, --pfile, --vcf, --bcf."""
    given = [
        (flag, value)
        for flag, value in (
            ("--bfile", opts.bfile),
            ("--pfile", opts.pfile),
            ("--vcf", opts.vcf),
            ("--bcf", opts.bcf),
        )
        if value
    ]
    if len(given) != 1:
        raise UserError(
            "give the genotypes with exactly one of --bfile, --pfile, --vcf, --bcf"
            + (f" (got {', '.join(f for f, _ in given)})" if given else "")
        )
    flag, value = given[0]
    if flag == "--bfile":
        fileset = open_fileset(value)
    elif flag == "--pfile":
        from gwas.pgen import open_pfile

        fileset = open_pfile(value)
    elif flag == "--vcf":
        from gwas.vcf import open_vcf

        fileset = open_vcf(value)
    else:
        from gwas.vcf import open_bcf

        fileset = open_bcf(value)
    if opts.update_sex:
        fileset = update_sex(fileset, Path(opts.update_sex))
    return fileset


def table_from_reveals(
    compiled: CompiledProgram, revealed: dict[str, Array], n_inc: int, m: int, notes: list[str]
) -> TableCounts | None:
    """The 2 x 2 allele table of every SNP from what the program revealed, whichever counts it
    reveals: n11, c1, r1, d (chisq_alleles.hec); n11, c1 and the called cases and individuals
    (ncase, called); n11, c1 and the number of cases (no missing call). None when the program
    reveals no counts (numerators and denominators only). Counts are integers by construction:
    rounded when the promised error allows it, else an error."""
    if "n11" not in revealed or "c1" not in revealed:
        return None
    exact = set(compiled.report.get("exact_outputs", []))
    for name, value in list(revealed.items()):
        if name in exact:  # packed counts: decrypted as the exact integers they are
            revealed[name] = np.rint(value) + 0.0
            continue
        err = compiled.revealed_abs_error(name)
        if err >= ROUNDING_ERROR_LIMIT:
            raise UserError(
                f"revealed count {name}: promised absolute error {err:.3g} is too large to "
                "round to the integer it is",
                hint="raise --precision-bits",
            )
        revealed[name] = np.rint(value) + 0.0  # + 0.0: a -0.0 (noise below 0) becomes 0.0
    approximate = [n for n in revealed if n not in exact]
    if approximate:
        notes.append(
            "the revealed counts ("
            + ", ".join(f"{n}: error <= {compiled.revealed_abs_error(n):.3g}" for n in approximate)
            + f") are integers by construction: rounded to the nearest integer (exact, each "
            f"error < {ROUNDING_ERROR_LIMIT})"
        )
    n11, c1 = revealed["n11"], revealed["c1"]
    if "r1" in revealed and "d" in revealed:
        return TableCounts(n11, c1, revealed["r1"], revealed["d"])
    if "ncase" in revealed and "called" in revealed:
        return TableCounts(n11, c1, 2.0 * revealed["ncase"], 2.0 * revealed["called"])
    if "cases" in revealed:
        return TableCounts(
            n11, c1, np.full(m, 2.0 * float(revealed["cases"])), np.full(m, 2.0 * n_inc)
        )
    raise UserError(
        "the program reveals n11 and c1 but not the allele totals (r1 and d, ncase and called, "
        "or cases)"
    )


def ignore_covar(opts: ChisqOptions, log: FilterLog) -> None:
    """PLINK 1.9 ignores --covar for --assoc ("no commands reference the covariates"); so do
    we, after checking the file is there, and say so on stderr and in the .log."""
    if opts.covar is None:
        return
    if not Path(opts.covar).is_file():
        raise UserError(f"{opts.covar}: no such file (--covar)")
    text = (
        f"Warning: ignoring --covar {opts.covar}: the --assoc tests use no covariate "
        "(plink1.9 ignores it too)"
    )
    print(text, file=sys.stderr)
    log.lines.append(text)


def statistics_from_counts(
    compiled: CompiledProgram,
    sizes: dict[str, int],
    revealed: dict[str, Array],
    notes: list[str] | None = None,
) -> tuple[TableCounts, Array, Array, Array, Array, Array]:
    """The 2 x 2 tables from the decrypted allele counts of chisq.hec (n11, c1, cases),
    chisq_missing.hec (n11, c1, ncase, called) or chisq_alleles.hec (n11, c1, r1, d); CHISQ, P
    and OR from the program's client block with PLINK's rules for degenerate SNPs; F_A, F_U."""
    table = table_from_reveals(compiled, revealed, sizes["N"], sizes["M"], notes or [])
    if table is None:
        raise InternalError(f"{compiled.source.name} reveals no allele counts")
    client = compiled.client(sizes, revealed)
    or_den_zero = (table.c1 - table.n11) * (table.r1 - table.n11) == 0
    chisq, p, odds = plink_rules(table, client["chi2"], client["p"], client["odds"], or_den_zero)
    f_a, f_u = frequencies(table)
    return table, chisq, p, odds, f_a, f_u


def pheno_spec(opts: ChisqOptions) -> PhenoSpec:
    return PhenoSpec(opts.pheno, opts.pheno_name, opts.mpheno, opts.one_based, opts.allow_no_sex)


def scan(fileset: Fileset, y_all: Array, included: npt.NDArray[np.bool_]) -> Scan:
    """Step (2): A1 choice over founders, missingness and per-SNP table counts of the
    analysed individuals, with alleles counted per chromosome as PLINK counts them."""
    founders = np.array([s.is_founder for s in fileset.samples])
    male = np.array([s.is_male for s in fileset.samples])
    ploidies = [ploidy(v.chrom) for v in fileset.variants]
    y = y_all[included]
    m = fileset.n_variants
    swap = np.zeros(m, dtype=bool)
    n11, c1, r1, d = (np.zeros(m) for _ in range(4))
    any_missing = False
    any_haploid = False
    for start in range(0, m, SCAN_BLOCK):
        stop = min(start + SCAN_BLOCK, m)
        g = fileset.read_block(start, stop)
        # A1: the minor allele by PLINK's allele frequencies (MT counted diploid there).
        f1, fa = allele_coding(g, ploidies[start:stop], male, mt_haploid=False)
        a1_count = f1[founders].sum(axis=0)
        a2_count = fa[founders].sum(axis=0) - a1_count
        a1, alleles = allele_coding(g, ploidies[start:stop], male)
        sw = a1_count > a2_count
        swap[start:stop] = sw
        ai = alleles[included]
        si = np.where(sw, ai - a1[included], a1[included])
        any_missing = any_missing or bool((ai == 0).any())
        any_haploid = any_haploid or bool((ai == 1).any())
        n11[start:stop] = y @ si
        c1[start:stop] = si.sum(axis=0)
        r1[start:stop] = y @ ai
        d[start:stop] = ai.sum(axis=0)
    return Scan(swap, TableCounts(n11, c1, r1, d), any_missing, any_haploid)


def blocks(
    fileset: Fileset,
    y: Array,
    included: npt.NDArray[np.bool_],
    swap: npt.NDArray[np.bool_],
    width: int,
    program: Path,
    meter: PhaseMeter,
    ranges: Sequence[tuple[int, int, int]] | None = None,
) -> Iterator[Block]:
    """Step (4)'s inputs: y and the minor-allele counts S (0 where missing) of the analysed
    individuals, and the called indicator C (chisq_missing.hec) or the called alleles A
    (chisq_alleles.hec) when the program takes it. `ranges`: the blocks (index, start, stop)
    to read, by default every block of `width` SNPs."""
    m = fileset.n_variants
    male = np.array([s.is_male for s in fileset.samples])[included]
    ploidies = [ploidy(v.chrom) for v in fileset.variants]
    if ranges is None:
        ranges = [(i, start, min(start + width, m)) for i, start in enumerate(range(0, m, width))]
    for index, start, stop in ranges:
        with meter.phase("inputs"):
            g = fileset.read_block(start, stop)[included]
            a1, alleles = allele_coding(g, ploidies[start:stop], male)
            S = np.where(swap[start:stop], alleles - a1, a1)
            inputs = {"y": y, "S": S}
            if program == PROGRAM_MISSING:
                inputs["C"] = alleles / 2.0
            elif program == PROGRAM_ALLELES:
                inputs["A"] = alleles
        yield Block(index, start, stop, inputs, shared=frozenset({"y"}))


def _names(indices: npt.NDArray[np.intp], fileset: Fileset) -> str:
    names = [fileset.variants[int(j)].snp for j in indices[:LIST_LIMIT]]
    more = f" and {len(indices) - LIST_LIMIT} more" if len(indices) > LIST_LIMIT else ""
    return ", ".join(names) + more


def _fmt_bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _temp_path(final: Path) -> Path:
    return final.with_name(f".{final.name}.tmp-{os.getpid()}")


def check_options(opts: ChisqOptions) -> None:
    """Every option, before any work: a bad one is refused in one line naming it."""
    bits = opts.precision_bits
    if not math.isfinite(bits) or bits <= 0 or bits > MAX_PRECISION_BITS:
        raise UserError(
            f"--precision-bits {bits:g}: must be a number in (0, {MAX_PRECISION_BITS:g}]",
            hint=f"bits of precision of every revealed value, e.g. {DEFAULT_PRECISION_BITS:g}",
        )
    if opts.threads < 0:
        raise UserError(f"--threads {opts.threads}: must be a positive number (0: all cores)")


def check_output_directory(out: Path, need_bytes: int) -> None:
    """The output directory exists, is writable (tried with a file, as root ignores the mode
    bits) and has room for `need_bytes`: refused before the first encryption, not after."""
    directory = out.parent
    if not directory.is_dir():
        raise UserError(f"--out {out}: directory {directory} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{out.name}.probe-", dir=directory)
        os.close(fd)
        Path(probe).unlink()
    except OSError as err:
        raise UserError(
            f"--out {out}: cannot write in {directory} ({err.strerror or err})"
        ) from err
    free = shutil.disk_usage(directory).free
    if free < need_bytes:
        raise UserError(
            f"--out {out}: {directory} has {free / 2**20:.1f} MiB free, the outputs need about "
            f"{need_bytes / 2**20:.1f} MiB"
        )


def check_variants(fileset: Fileset) -> list[str]:
    """The .bim columns used later, before any work: BP must be a non-negative integer (the
    plots and the .assoc use it). Returns warnings (SNP IDs that appear more than once)."""
    counts: dict[str, int] = {}
    where = getattr(fileset, "bim", fileset.prefix)
    for j, v in enumerate(fileset.variants):
        if not v.bp.isdigit():
            raise UserError(
                f"{where}: SNP {v.snp} (variant {j + 1}) has base-pair position "
                f"{v.bp!r}, not a non-negative integer"
            )
        counts[v.snp] = counts.get(v.snp, 0) + 1
    dups = [name for name, k in counts.items() if k > 1]
    if not dups:
        return []
    shown = ", ".join(dups[:LIST_LIMIT]) + (
        f" and {len(dups) - LIST_LIMIT} more" if len(dups) > LIST_LIMIT else ""
    )
    return [
        f"{where}: {len(dups)} SNP ID(s) appear more than once ({shown}); each is "
        "tested as its own variant, as PLINK 1.9 does"
    ]


def snp_list_digest(fileset: Fileset, a1: Sequence[str], a2: Sequence[str]) -> str:
    """SHA-256 of the SNP list with the tested alleles: what the run's manifest is bound to."""
    h = hashlib.sha256()
    for v, x, y in zip(fileset.variants, a1, a2, strict=True):
        h.update(f"{v.chrom}\t{v.snp}\t{v.bp}\t{x}\t{y}\n".encode())
    return h.hexdigest()


def output_bytes_estimate(m: int, plots: bool) -> int:
    """What PREFIX.assoc, the plots and the log take, roughly (a row is under 128 bytes)."""
    return 128 * m + (4 << 20 if plots else 0) + (64 << 10)


def _finals(out: Path, adjust_file: bool) -> dict[str, Path]:
    finals = {"assoc": out.with_name(out.name + ".assoc")}
    if adjust_file:
        finals["adjusted"] = out.with_name(out.name + ".assoc.adjusted")
    finals["manhattan"] = out.with_name(out.name + ".manhattan.png")
    finals["qq"] = out.with_name(out.name + ".qq.png")
    finals["log"] = out.with_name(out.name + ".log")
    return finals


def write_failure_log(
    path: Path, title: str, command_line: str, started: datetime.datetime, done: list[str],
    err: BaseException,
) -> None:  # fmt: skip
    """The .log of a run that failed: what it did, and the error as its last line. No other
    output of the run is left behind. An interrupted run leaves no log at all, even when the
    signal came back as another exception (driver/interrupt.py)."""
    if interrupted():
        return
    lines = [
        f"hec {__version__} {title}  (Python {platform.python_version()})",
        f"command: {command_line or ' '.join(shlex.quote(a) for a in sys.argv)}",
        f"started: {started.isoformat(timespec='seconds')}",
        "",
        *done,
        "",
        "RUN FAILED: no result file was written.",
        f"error: {err}" if str(err) else f"error: {type(err).__name__}",
    ]
    tmp = _temp_path(path)
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


def run_chisq(opts: ChisqOptions) -> ChisqResult:
    out = Path(opts.out)
    if not out.parent.is_dir():
        raise UserError(f"--out {opts.out}: directory {out.parent} does not exist")
    started = datetime.datetime.now(datetime.UTC)
    done: list[str] = []
    try:
        with contextlib.ExitStack() as cleanup:  # a Dask cluster started for the run
            return _run_chisq(opts, out, started, done, cleanup)
    except (Exception, KeyboardInterrupt) as err:
        # An unwritable output directory cannot take the failure log either: the error that
        # says so is the one to report.
        with contextlib.suppress(OSError):
            write_failure_log(
                _finals(out, opts.adjust)["log"], "gwas chisq", opts.command_line, started, done,
                err,
            )  # fmt: skip
        raise


def start_backend(opts: ChisqOptions, out: Path, cleanup: contextlib.ExitStack) -> Backend:
    """The backend the options ask for (`hec gwas chisq` and `linear`), set up for the run: a
    scale-out run's engine started now (a cluster starts while the inputs are read) and
    stopped by `cleanup`."""
    opts.scale.check(opts.backend)
    backend = ScaleOutBackend(opts.scale, out) if opts.scale.active else BACKENDS[opts.backend]()
    if isinstance(backend, ScaleOutBackend):
        cleanup.callback(backend.close)
        backend.start_engine()
    backend.seed = opts.seed
    backend.error_confidence = opts.error_confidence
    if isinstance(backend, EncryptedBackend):
        backend.threads = opts.threads
    return backend


def one_block_note(opts: ChisqOptions, out: Path) -> str:
    """What a `--block k/n` run did and what comes next (it merges nothing)."""
    assert opts.scale.block is not None
    k, n = opts.scale.block
    where = opts.scale.store or f"{out.name}.blocks/"
    return (
        f"block {k}/{n} stored in {where}; after the other blocks, run again "
        "with --resume (and without --block) to merge them into the results"
    )


def _run_chisq(
    opts: ChisqOptions,
    out: Path,
    started: datetime.datetime,
    done: list[str],
    cleanup: contextlib.ExitStack,
) -> ChisqResult:
    check_options(opts)
    if opts.ci is not None and not 0.0 < opts.ci < 1.0:
        raise UserError(f"--ci {opts.ci}: the confidence level is between 0 and 1 (e.g. 0.95)")
    backend = start_backend(opts, out, cleanup)
    meter = PhaseMeter()
    progress = Progress(enabled=opts.progress, seconds=lambda ph: meter.seconds.get(ph, 0.0))
    filter_log = FilterLog()
    ignore_covar(opts, filter_log)

    # Step (1).
    progress.start("read")
    with meter.phase("read"):
        fileset = open_input(opts)
        done.append(
            f"read {fileset.kind} {fileset.prefix}: {fileset.n_samples} samples, "
            f"{fileset.n_variants} SNPs"
        )
        spec = pheno_spec(opts)
        # Phenotypes are read against every sample of the file (an ID --keep drops is
        # still a sample of the fileset), then follow the selection.
        y_file = sample_phenotypes(fileset, spec, binary=True)
        fileset = select(fileset, opts.selection, filter_log)
        assert fileset.sample_rows is not None
        y_all = y_file[fileset.sample_rows]
        qc = quality_control(fileset, y_all, True, opts.selection, filter_log)
        fileset, y_all = qc.fileset, qc.pheno
        fileset = run_qc(fileset, y_all, True, opts.selection, filter_log, backend, meter,
                         progress, opts.precision_bits, opts.cache_dir)  # fmt: skip
        done.extend(filter_log.lines)
    progress.finish("read")
    input_warnings = check_variants(fileset)
    check_output_directory(out, output_bytes_estimate(fileset.n_variants, opts.plots))
    included = ~np.isnan(y_all)
    y = y_all[included]
    n_inc = int(included.sum())
    n_cases = int(y.sum())
    n_controls = n_inc - n_cases
    source = spec.describe(fileset)
    if n_cases == 0 or n_controls == 0:
        ambiguous = sum(not s.sex_known for s in fileset.samples)
        hint = (
            "phenotypes: 0 = control, 1 = case (--1), -9/NA = missing"
            if opts.one_based
            else "phenotypes: 1 = control, 2 = case, -9/0/NA = missing (0/1 coding: --1)"
        )
        if ambiguous and not opts.allow_no_sex:
            hint += (
                f"; {ambiguous} samples of unknown sex have their phenotype ignored, as in "
                "PLINK 1.9 (--allow-no-sex keeps them)"
            )
        raise UserError(
            f"{opts.pheno or fileset.fam}: {n_cases} cases and {n_controls} controls with a "
            f"phenotype ({source}); the case/control test needs both",
            hint=hint,
        )
    done.append(f"phenotype from {source}: {n_cases} cases, {n_controls} controls")

    # Step (2).
    progress.start("scan")
    with meter.phase("scan"):
        sc = scan(fileset, y_all, included)
    progress.finish("scan")
    # Every program reveals the 2 x 2 table (issue 20); haploid calls need the called alleles.
    if sc.any_haploid:
        program = PROGRAM_ALLELES
    elif sc.any_missing:
        program = PROGRAM_MISSING
    else:
        program = PROGRAM_COMPLETE

    # Step (3).
    bim = fileset.variants
    a1 = [v.a2 if s else v.a1 for v, s in zip(bim, sc.swap, strict=True)]
    a2 = [v.a1 if s else v.a2 for v, s in zip(bim, sc.swap, strict=True)]
    backend.bindings["snps_sha256"] = snp_list_digest(fileset, a1, a2)
    backend.bindings["individuals"] = str(n_inc)
    sizes = {"N": n_inc, "M": fileset.n_variants}
    progress.start("compile")
    with meter.phase("compile"):
        compiled = backend.compile(program, sizes, opts.precision_bits, opts.cache_dir)
    progress.finish("compile")
    done.append(f"compiled {program.name} for N={n_inc} M={fileset.n_variants}")
    width = compiled.block_width(n_inc, fileset.n_variants)

    # Step (4).
    n_blocks = -(-fileset.n_variants // width)
    m = fileset.n_variants
    names = [r.sym_value for r in compiled.stat_program.reveals()]
    revealed: dict[str, Array] = {}
    selected = None
    if isinstance(backend, ScaleOutBackend):  # blocks that can run apart (gwas/scaleout.py)
        chosen = backend.plan(compiled, m, n_blocks)
        assert backend.ranges is not None
        n_blocks = len(backend.ranges)
        width = max(stop - start for start, stop in backend.ranges)
        selected = [(i, *backend.ranges[i]) for i in chosen]
    block_iter = blocks(fileset, y, included, sc.swap, width, program, meter, selected)
    for block, values in backend.run(compiled, block_iter, n_blocks, meter, progress):
        for name in names:
            value = np.asarray(values[name], dtype=np.float64)
            if value.ndim == 0:  # a count over individuals only (the cases): one per block
                if name in revealed and revealed[name] != value:
                    raise InternalError(f"{name} differs between SNP blocks")
                revealed[name] = value
                continue
            revealed.setdefault(name, np.zeros(m))[block.start : block.stop] = value
    done.append(f"ran {n_blocks} block(s) with {backend_label(backend)}")
    if opts.scale.block:  # one block of a run split by hand: stored, nothing merged yet
        return _one_block_result(opts, out, program, compiled, backend, meter, n_inc, n_cases)

    with meter.phase("client"):
        notes: list[str] = list(input_warnings)
        exact = compiled.report.get("exact_outputs", [])
        notes.append(
            "decrypted counts are exact integers (packed counts, coefficient encoding: "
            + ", ".join(exact)
            + ")"
            if exact
            else "decrypted counts are CKKS approximations"
        )
        table, chisq, p, odds, _, _ = statistics_from_counts(compiled, sizes, revealed, notes)
        columns = assoc_columns(table, odds, opts.ci)
        f_a, f_u = columns["F_A"], columns["F_U"]

    # Step (5).
    rows = rows_from_arrays(
        [(v.chrom, v.snp, v.bp, a1[j], a2[j]) for j, v in enumerate(bim)],
        f_a,
        f_u,
        chisq,
        p,
        odds,
    )
    ci_names = ci_column_names(opts.ci) if opts.ci is not None else ()
    if columns:
        for j, row in enumerate(rows):
            row.extra = {"C_A": float(columns["C_A"][j]), "C_U": float(columns["C_U"][j])}
            for name in ci_names:
                row.extra[name] = None if columns["_ci_na"][j] else float(columns[name][j])
    finals = _finals(out, opts.adjust)
    temps = {k: _temp_path(v) for k, v in finals.items()}
    adjusted = adjust(chisq, p) if opts.adjust else None
    try:
        progress.start("write")
        with meter.phase("write"):
            write_assoc(temps["assoc"], rows, counts=opts.counts, ci_columns=ci_names)
            if adjusted is not None:
                write_adjusted(
                    temps["adjusted"], [v.chrom for v in bim], [v.snp for v in bim], adjusted
                )
            lam = float("nan")
            from gwas.plots import genomic_inflation

            lam = genomic_inflation(chisq)
            if opts.plots:
                kind = "encrypted" if backend.encrypts else "SIMULATION of encryption"
                title = (
                    f"{out.name}: allelic chi-square (PLINK --assoc), {kind}; "
                    f"N = {n_inc} ({n_cases} cases, {n_controls} controls), M = {m} SNPs, "
                    f"λ = {lam:.3f}"
                )
                manhattan_plot(
                    temps["manhattan"],
                    [v.chrom for v in bim],
                    [int(v.bp) for v in bim],
                    p,
                    title,
                    opts.highlight,
                    names=[v.snp for v in bim],
                )
                qq_plot(temps["qq"], chisq, p, title)
        progress.finish("write")
        log_text = render_log(
            opts,
            fileset,
            backend,
            compiled,
            program,
            sc,
            meter,
            notes,
            started,
            n_inc,
            n_cases,
            n_controls,
            source,
            n_blocks,
            width,
            lam,
            finals,
            filter_log,
            adjusted.lam if adjusted is not None else None,
            top_hits(p, [v.snp for v in bim]),
        )
        temps["log"].write_text(log_text)
        produced = [k for k in finals if temps[k].exists()]
        for k in produced:
            temps[k].replace(finals[k])
        if isinstance(backend, ScaleOutBackend):
            backend.finish()
    except BaseException:
        for t in temps.values():
            t.unlink(missing_ok=True)
        raise
    return ChisqResult(
        chisq,
        p,
        odds,
        a1,
        a2,
        lam,
        program,
        compiled,
        backend,
        meter,
        [finals[k] for k in produced],
        log_text,
        n_inc,
        n_cases,
        n_controls,
        notes,
        f_a,
        f_u,
        columns,
        fileset,
        filter_log,
    )


def _one_block_result(
    opts: ChisqOptions,
    out: Path,
    program: Path,
    compiled: CompiledProgram,
    backend: Backend,
    meter: PhaseMeter,
    n_inc: int,
    n_cases: int,
) -> ChisqResult:
    """`--block k/n`: block k is stored in PREFIX.blocks/; the .assoc is written by a run
    with --resume once every block is there."""
    empty = np.zeros(0)
    note = one_block_note(opts, out)
    return ChisqResult(
        empty, empty, empty, [], [], float("nan"), program, compiled, backend, meter, [], "",
        n_inc, n_cases, n_inc - n_cases, [note],
    )  # fmt: skip


def backend_label(backend: Backend) -> str:
    if backend.encrypts:
        return f"--backend {backend.name} (encrypted)"
    return f"--backend {backend.name} (SIMULATION, not encrypted)"


def render_log(
    opts: ChisqOptions,
    fileset: Fileset,
    backend: Backend,
    compiled: CompiledProgram,
    program: Path,
    sc: Scan,
    meter: PhaseMeter,
    notes: list[str],
    started: datetime.datetime,
    n_inc: int,
    n_cases: int,
    n_controls: int,
    pheno_source: str,
    n_blocks: int,
    width: int,
    lam: float,
    finals: dict[str, Path],
    filter_log: FilterLog | None = None,
    plink_lambda: float | None = None,
    hits: Sequence[tuple[str, float]] = (),
) -> str:
    rep = compiled.report
    params = rep["params"]
    t = sc.counts
    mono = np.flatnonzero(t.monomorphic & (t.d > 0))
    no_calls = np.flatnonzero(t.d == 0)
    one_sided = np.flatnonzero(t.one_sided)
    n_missing_calls = round(float(((n_inc * 2) - t.d).sum() / 2))
    L: list[str] = []
    w = L.append
    w(f"hec {__version__} gwas chisq  (Python {platform.python_version()})")
    w(f"command: {opts.command_line or ' '.join(shlex.quote(a) for a in sys.argv)}")
    w(f"started: {started.isoformat(timespec='seconds')}")
    w("")
    w(f"backend: {backend_label(backend)}")
    w(f"  {backend.description}")
    if not backend.encrypts:
        w("  The figures below are those of the simulation; no key was generated, nothing was")
        w("  encrypted or decrypted, and no security claim applies to this run.")
    else:
        w("  Keys and ciphertexts were kept in a temporary directory, removed at the end.")
    for note in backend.notes:
        w(f"  {note}")
    w("")
    w("input:")
    w(
        f"  {fileset.kind} {fileset.prefix}: {fileset.n_samples} samples, "
        f"{fileset.n_variants} SNPs after the filters"
    )
    if filter_log is not None and filter_log.lines:
        w("  filters and quality control, in PLINK 1.9's order (computed by the data holder on")
        w("  its plaintext genotypes):")
        for line in filter_log.lines:
            w(f"    {line}")
        for option, names in [
            *filter_log.removed_samples.items(),
            *filter_log.removed_snps.items(),
        ]:
            if names:
                shown = ", ".join(names[:LIST_LIMIT])
                more = f" and {len(names) - LIST_LIMIT} more" if len(names) > LIST_LIMIT else ""
                w(f"    removed by {option}: {shown}{more}")
    chroms = sorted({v.chrom for v in fileset.variants}, key=int)
    haploid = [c for c in chroms if ploidy(c) is not Ploidy.DIPLOID]
    w(
        f"  chromosomes {', '.join(chroms)}"
        + (
            f"; {', '.join(haploid)} count haploid calls as one allele (X: males; Y: males "
            "only; MT: everyone), heterozygous haploid calls missing, as PLINK 1.9"
            if haploid
            else ""
        )
    )
    w(
        f"  phenotype from {pheno_source}: {n_cases} cases, {n_controls} controls, "
        f"{fileset.n_samples - n_inc} with a missing phenotype (left out)"
    )
    founders = sum(s.is_founder for s in fileset.samples)
    w(
        f"  A1 = minor allele over the {founders} founders' calls (PLINK 1.9 rule; ties keep the "
        f".bim order): {int(sc.swap.sum())} SNPs have A1 = the .bim A2"
    )
    w(f"  missing genotype calls among the analysed samples: {n_missing_calls}")
    w("")
    w("program:")
    if program == PROGRAM_ALLELES:
        why = (
            "haploid calls count one allele: the called alleles per individual and SNP are an input"
        )
    elif sc.any_missing:
        why = (
            "calls are missing: per-SNP counts of the called individuals (PLINK --assoc's "
            "per-SNP exclusion)"
        )
    else:
        why = "no call is missing: the cheaper program with d = 2N"
    w(f"  {program.name} ({why})")
    w(f"  source sha256 {compiled.source_sha256}")
    w(f"  sizes N={compiled.sizes['N']} M={compiled.sizes['M']}, {compiled.promise_text()}")
    w(
        f"  compiled program cache {compiled.cache_key} "
        f"({'hit' if compiled.cache_hit else 'compiled now'})"
    )
    w(
        f"  parameters: ring dimension 2^{params['log_n']}, moduli bits {params['moduli_bits']}, "
        f"special moduli bits {params['special_moduli_bits']}"
    )
    insecure = " (INSECURE override)" if params.get("insecure") else ""
    w(f"  security: {params['security_bits']}-bit (HE Standard table, ternary secret){insecure}")
    for o in rep["outputs"]:
        err = compiled.revealed_abs_error(o["name"])
        w(
            f"  output {o['name']:<9} depth {o['depth']} precision {o['precision_bits']} bits "
            f"(absolute error <= {err:.3g})"
        )
    packing = (
        "two slot sets per ciphertext, in the real and imaginary parts of the slots"
        if compiled.complex_packed
        else "real values in the slots"
    )
    w(
        f"  {n_blocks} block(s) of up to {width} SNPs "
        f"({-(-width // compiled.columns_per_ciphertext)} ciphertext(s) of {compiled.slots} "
        f"slots per individual and genotype input: {packing}); "
        f"{rep['sizes']['upload_per_individual'] / 2**20:.2f} MiB uploaded per individual at "
        f"M = {compiled.sizes['M']}"
    )
    w("")
    w(
        "revealed to the coordinator (decrypted): "
        + ", ".join(r["name"] for r in rep["reveals"])
        + ": the allele counts of each SNP's 2 x 2 table (the chi-square statistic, odds ratio, "
        "F_A and F_U are computed from them by the coordinator); the chi-square numerator and "
        "denominator with the sample and case counts would determine the same table "
        "(docs/gwas.md)"
    )
    w(
        "computed on plaintext by the data holder before encryption: the A1/A2 coding (founder "
        "allele counts), y * S (and y * C or y * A) for its own rows (owner-side), and the "
        "packing of the counts into one integer per coefficient"
    )
    w(
        "columns: F_A, F_U (and C_A, C_U, SE and the confidence limits of OR when asked) come "
        "from the revealed 2 x 2 table of each SNP"
    )
    for note in notes:
        w(f"  {note}")
    w("degenerate SNPs, printed as PLINK 1.9 --assoc prints them:")
    w(
        f"  no call among the analysed samples (CHISQ, P, OR = NA): {len(no_calls)}"
        + (f" [{_names(no_calls, fileset)}]" if len(no_calls) else "")
    )
    w(
        f"  monomorphic among the called samples (CHISQ, P, OR = NA): {len(mono)}"
        + (f" [{_names(mono, fileset)}]" if len(mono) else "")
    )
    w(
        f"  called samples all cases or all controls (CHISQ 0, P 1, OR NA): {len(one_sided)}"
        + (f" [{_names(one_sided, fileset)}]" if len(one_sided) else "")
    )
    w("")
    w(f"genomic inflation lambda: {lam:.6f} (median chi-square / 0.4549364)")
    if plink_lambda is not None:
        w(
            f"--adjust: genomic inflation est. lambda (based on median chisq) = {plink_lambda:g} "
            "(PLINK 1.9's: median / 0.456, at least 1; used for the GC column)"
        )
    if hits:
        w("top hits: " + ", ".join(f"{name} (P {pv:.3g})" for name, pv in hits))
    w("")
    peaks = (
        "peak resident set of each phase"
        if meter.per_phase_peaks
        else "peak resident set of the process so far"
    )
    w(f"phases ({peaks}):")
    for name, secs in meter.seconds.items():
        peak = meter.peak_rss.get(name, 0)
        if name in meter.subprocess_phases:
            text = (
                f"{_fmt_bytes(peak)} (the role's process)" if peak else "not reported by the role"
            )
        else:
            text = _fmt_bytes(peak)
        w(f"  {name:<10} {secs:10.3f} s   peak {text}")
    w(
        f"  total      {sum(meter.seconds.values()):10.3f} s   peak "
        f"{_fmt_bytes(meter.overall_peak())}"
    )
    w("")
    w("written:")
    for k, path in finals.items():
        if k in ("manhattan", "qq") and not opts.plots:
            continue
        w(f"  {path}")
    return "\n".join(L) + "\n"


__all__ = ["ChisqOptions", "ChisqResult", "run_chisq"]
