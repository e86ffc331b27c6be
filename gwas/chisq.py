"""`hec gwas chisq`: the allelic chi-square association test and odds ratio of PLINK 1.9's
`--assoc`, computed by a compiled hec program (Blatt et al., PNAS 2020, Alg. 1-2) on a PLINK 1
binary fileset, with PLINK's output files.

Steps:
 (1) read the fileset and the phenotypes; individuals with a missing phenotype are left out;
 (2) data-holder scan (plaintext, before encryption): choose A1 as PLINK 1.9 does (the allele
     with the lower count over the founders' calls; ties keep the .bim order), find whether any
     analysed individual has a missing call, and flag the SNPs whose table is degenerate
     (monomorphic or no calls among the analysed individuals; or called individuals all cases
     or all controls), for which PLINK prints NA (or CHISQ 0, P 1);
 (3) compile examples/gwas/chisq.hec, or chisq_missing.hec when calls are missing (cached);
 (4) run the program with the chosen backend over blocks of `slots` SNPs; the coordinator
     gets the four revealed values per SNP and runs the program's client block;
 (5) write PREFIX.assoc, PREFIX.manhattan.png, PREFIX.qq.png and PREFIX.log under temporary
     names, and rename them only when everything succeeded.
"""

from __future__ import annotations

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

from compiler.errors import InternalError, UserError
from gwas import DEFAULT_BACKEND, DEFAULT_PRECISION_BITS
from gwas.assoc import rows_from_arrays, write_assoc
from gwas.backend import BACKENDS, Backend, Block, CompiledProgram, EncryptedBackend
from gwas.exact import TableCounts, frequencies, plink_rules
from gwas.memory import PhaseMeter
from gwas.plink import Fileset, fam_phenotypes, open_fileset, read_pheno
from gwas.plots import manhattan_plot, qq_plot
from gwas.progress import Progress
from hec import __version__

Array = npt.NDArray[np.float64]
PROGRAM_DIR = Path(__file__).resolve().parent.parent / "examples" / "gwas"
PROGRAM_COMPLETE = PROGRAM_DIR / "chisq.hec"
PROGRAM_MISSING = PROGRAM_DIR / "chisq_missing.hec"
SCAN_BLOCK = 4096
MISSING_INT8 = -127
# Revealed values that are integers by construction are rounded to the nearest integer when
# the promised absolute error is below this (then rounding gives the exact integer).
LIST_LIMIT = 10
MAX_PRECISION_BITS = 50.0  # beyond the double-precision decoding of a CKKS slot


@dataclass
class ChisqOptions:
    bfile: str
    out: str
    pheno: str | None = None
    backend: str = DEFAULT_BACKEND
    threads: int = 0  # HEC_THREADS of the generated program (0: the runtime's default)
    precision_bits: float = DEFAULT_PRECISION_BITS
    cache_dir: Path | None = None
    progress: bool = True
    plots: bool = True
    seed: int = 0
    command_line: str = ""
    highlight: Sequence[int] = ()  # SNP indices marked on the Manhattan plot (the demo's)


@dataclass
class Scan:
    """What the data holder computes on plaintext before encryption (step 2)."""

    swap: npt.NDArray[np.bool_]  # A1 is the .bim A2
    counts: TableCounts  # used only for the degenerate-SNP flags, never written out
    any_missing: bool


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


def _phenotypes(fileset: Fileset, pheno: str | None) -> Array:
    if pheno is None:
        return fam_phenotypes(fileset)
    return read_pheno(Path(pheno), fileset)


def scan(fileset: Fileset, y_all: Array, included: npt.NDArray[np.bool_]) -> Scan:
    """Step (2): A1 choice over founders, missingness and per-SNP table counts of the
    analysed individuals."""
    founders = np.array([s.is_founder for s in fileset.samples])
    y = y_all[included]
    m = fileset.n_variants
    swap = np.zeros(m, dtype=bool)
    n11, c1, r1, d = (np.zeros(m) for _ in range(4))
    any_missing = False
    for start in range(0, m, SCAN_BLOCK):
        stop = min(start + SCAN_BLOCK, m)
        g = fileset.read_block(start, stop)
        called = g != MISSING_INT8
        gf = np.where(called, g, 0).astype(np.float64)
        a1_count = gf[founders].sum(axis=0)
        a2_count = 2.0 * called[founders].sum(axis=0) - a1_count
        sw = a1_count > a2_count
        swap[start:stop] = sw
        ci = called[included]
        si = np.where(sw, 2.0 * ci - gf[included], gf[included])
        cf = ci.astype(np.float64)
        any_missing = any_missing or not bool(ci.all())
        n11[start:stop] = y @ si
        c1[start:stop] = si.sum(axis=0)
        r1[start:stop] = 2.0 * (y @ cf)
        d[start:stop] = 2.0 * cf.sum(axis=0)
    return Scan(swap, TableCounts(n11, c1, r1, d), any_missing)


def blocks(
    fileset: Fileset,
    y: Array,
    included: npt.NDArray[np.bool_],
    swap: npt.NDArray[np.bool_],
    width: int,
    with_called: bool,
    meter: PhaseMeter,
) -> Iterator[Block]:
    """Step (4)'s inputs: y and the minor-allele counts S (0 where missing) of the analysed
    individuals, and the called indicator C when the program takes it."""
    m = fileset.n_variants
    for index, start in enumerate(range(0, m, width)):
        stop = min(start + width, m)
        with meter.phase("inputs"):
            g = fileset.read_block(start, stop)[included]
            called = g != MISSING_INT8
            gf = np.where(called, g, 0).astype(np.float64)
            S = np.where(swap[start:stop], 2.0 * called - gf, gf)
            inputs = {"y": y, "S": S}
            if with_called:
                inputs["C"] = called.astype(np.float64)
        yield Block(index, start, stop, inputs, shared=frozenset({"y"}))


def statistics_from_counts(
    compiled: CompiledProgram, sizes: dict[str, int], revealed: dict[str, Array]
) -> tuple[TableCounts, Array, Array, Array, Array, Array]:
    """The 2 x 2 tables from the decrypted allele counts of chisq.hec (n11, c1, cases) or
    chisq_missing.hec (n11, c1, ncase, called); CHISQ, P and OR from the program's client
    block with PLINK's rules for degenerate SNPs; F_A and F_U."""
    m = sizes["M"]
    if "called" in revealed:
        counts = TableCounts(
            n11=revealed["n11"],
            c1=revealed["c1"],
            r1=2.0 * revealed["ncase"],
            d=2.0 * revealed["called"],
        )
    else:
        counts = TableCounts(
            n11=revealed["n11"],
            c1=revealed["c1"],
            r1=np.full(m, 2.0 * float(revealed["cases"])),
            d=np.full(m, 2.0 * sizes["N"]),
        )
    client = compiled.client(sizes, revealed)
    n12 = counts.r1 - counts.n11
    n21 = counts.c1 - counts.n11
    chisq, p, odds = plink_rules(
        counts, client["chi2"], client["p"], client["odds"], (n12 * n21) == 0
    )
    f_a, f_u = frequencies(counts)
    return counts, chisq, p, odds, f_a, f_u


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
    if opts.backend not in BACKENDS:
        raise UserError(
            f"--backend {opts.backend}: unknown backend",
            hint="available: " + ", ".join(BACKENDS),
        )
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
    for j, v in enumerate(fileset.variants):
        if not v.bp.isdigit():
            raise UserError(
                f"{fileset.bim}: SNP {v.snp} (variant {j + 1}) has base-pair position "
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
        f"{fileset.bim}: {len(dups)} SNP ID(s) appear more than once ({shown}); each is "
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


def run_chisq(opts: ChisqOptions) -> ChisqResult:
    check_options(opts)
    backend = BACKENDS[opts.backend]()
    backend.seed = opts.seed
    if isinstance(backend, EncryptedBackend):
        backend.threads = opts.threads
    out = Path(opts.out)
    if not out.parent.is_dir():
        raise UserError(f"--out {opts.out}: directory {out.parent} does not exist")
    progress = Progress(enabled=opts.progress)
    meter = PhaseMeter()
    started = datetime.datetime.now(datetime.UTC)

    # Step (1).
    with meter.phase("read"):
        fileset = open_fileset(opts.bfile)
        y_all = _phenotypes(fileset, opts.pheno)
    input_warnings = check_variants(fileset)
    check_output_directory(out, output_bytes_estimate(fileset.n_variants, opts.plots))
    included = ~np.isnan(y_all)
    y = y_all[included]
    n_inc = int(included.sum())
    n_cases = int(y.sum())
    n_controls = n_inc - n_cases
    source = f"--pheno {opts.pheno}" if opts.pheno else f"column 6 of {fileset.fam}"
    if n_cases == 0 or n_controls == 0:
        raise UserError(
            f"{opts.pheno or fileset.fam}: {n_cases} cases and {n_controls} controls with a "
            f"phenotype ({source}); the case/control test needs both",
            hint="phenotypes: 1 = control, 2 = case, -9/0 = missing",
        )

    # Step (2).
    with meter.phase("scan"):
        sc = scan(fileset, y_all, included)
    program = PROGRAM_MISSING if sc.any_missing else PROGRAM_COMPLETE

    # Step (3).
    bim = fileset.variants
    a1 = [v.a2 if s else v.a1 for v, s in zip(bim, sc.swap, strict=True)]
    a2 = [v.a1 if s else v.a2 for v, s in zip(bim, sc.swap, strict=True)]
    backend.bindings["snps_sha256"] = snp_list_digest(fileset, a1, a2)
    backend.bindings["individuals"] = str(n_inc)
    sizes = {"N": n_inc, "M": fileset.n_variants}
    with meter.phase("compile"):
        compiled = backend.compile(program, sizes, opts.precision_bits, opts.cache_dir)
    width = compiled.block_width(n_inc, fileset.n_variants)

    # Step (4).
    n_blocks = -(-fileset.n_variants // width)
    m = fileset.n_variants
    names = [r.sym_value for r in compiled.stat_program.reveals()]
    revealed: dict[str, Array] = {}
    block_iter = blocks(fileset, y, included, sc.swap, width, sc.any_missing, meter)
    for block, values in backend.run(compiled, block_iter, n_blocks, meter, progress):
        for name in names:
            value = np.asarray(values[name], dtype=np.float64)
            if value.ndim == 0:  # a count over individuals only (the cases): one per block
                if name in revealed and revealed[name] != value:
                    raise InternalError(f"{name} differs between SNP blocks")
                revealed[name] = value
                continue
            revealed.setdefault(name, np.zeros(m))[block.start : block.stop] = value

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
        _, chisq, p, odds, f_a, f_u = statistics_from_counts(compiled, sizes, revealed)

    # Step (5).
    rows = rows_from_arrays(
        [(v.chrom, v.snp, v.bp, a1[j], a2[j]) for j, v in enumerate(bim)],
        f_a,
        f_u,
        chisq,
        p,
        odds,
    )
    finals = {
        "assoc": out.with_name(out.name + ".assoc"),
        "manhattan": out.with_name(out.name + ".manhattan.png"),
        "qq": out.with_name(out.name + ".qq.png"),
        "log": out.with_name(out.name + ".log"),
    }
    temps = {k: _temp_path(v) for k, v in finals.items()}
    label = backend_label(backend)
    try:
        with meter.phase("write"):
            write_assoc(temps["assoc"], rows)
            lam = float("nan")
            if opts.plots:
                title = f"{out.name}: allelic chi-square, {label}"
                manhattan_plot(
                    temps["manhattan"],
                    [v.chrom for v in bim],
                    [int(v.bp) for v in bim],
                    p,
                    title,
                    opts.highlight,
                )
                lam = qq_plot(temps["qq"], chisq, p, title)
            else:
                from gwas.plots import genomic_inflation

                lam = genomic_inflation(chisq)
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
        )
        temps["log"].write_text(log_text)
        produced = [k for k in finals if temps[k].exists()]
        for k in produced:
            temps[k].replace(finals[k])
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
    )


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
    w(f"  fileset {fileset.prefix}: {fileset.n_samples} samples, {fileset.n_variants} SNPs")
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
    why = (
        "calls are missing: per-SNP counts of the called individuals (PLINK --assoc's "
        "per-SNP exclusion)"
        if sc.any_missing
        else "no call is missing: the cheaper program with d = 2N"
    )
    w(f"  {program.name} ({why})")
    w(f"  source sha256 {compiled.source_sha256}")
    w(
        f"  sizes N={compiled.sizes['N']} M={compiled.sizes['M']}, precision target "
        f"{compiled.precision_bits:g} bits per revealed value, relative to its range"
    )
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
        "allele counts), y * S (and y * C) for its own rows (owner-side), and the packing of "
        "the counts into one integer per coefficient"
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
    w(f"genomic inflation lambda: {lam:.6f}")
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
