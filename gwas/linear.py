"""`hec gwas linear`: the quantitative-trait test of PLINK 1.9's `--assoc` (`.qassoc`: NMISS BETA
SE R2 T P of the least-squares line of the phenotype on the minor-allele count), computed by
gwas/programs/linear.hec under encryption on the same inputs, options and filters as
`hec gwas chisq` (gwas/chisq.py).

Steps:
 (1) read the genotypes and the quantitative phenotype, filters and quality control
     (gwas/filters.py; --hwe over all founders, as PLINK does for a quantitative trait);
 (2) data holder: A1 by PLINK's rule (gwas/chisq.py `scan`); the phenotype centred by its mean
     and scaled by its largest deviation into [-1, 1] (the program's declared domain; BETA and
     SE are multiplied back by the scale, R2, T and P do not change); x = the A1 count, a
     haploid call counted 0 or 2 and a heterozygous haploid call missing, as PLINK's .qassoc
     codes them (measured against plink1.9);
 (3) compile and run linear.hec: the coordinator decrypts the per-SNP sums n, Σx, Σx², Σy, Σy²,
     Σxy over the called individuals, the client block finishes the regression, and P is
     2 · t_sf(|T|, n - 2) (scipy: the program's client language has no t distribution);
 (4) write PREFIX.qassoc, plots and PREFIX.log (a failure log when the run fails).

The scale-out options of `hec gwas chisq` (--keys, --block, --blocks, --resume, --workers,
--scheduler, --row-shards, --store, --bank; gwas/scaleout.py) split step (3) the same way.
The sums n, Σx, Σx² are exact integers; Σy, Σy², Σxy are CKKS approximations, so a split run
agrees with the single-process run within the compiled precision, not bit for bit (two
single-process runs differ the same way: fresh encryption noise).
"""

from __future__ import annotations

import contextlib
import datetime
import platform
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import stats

from compiler.errors import UserError
from driver import __version__
from gwas.assoc import format_number, snp_column_width
from gwas.backend import BACKENDS, Block
from gwas.chisq import (
    ROUNDING_ERROR_LIMIT,
    ChisqOptions,
    _temp_path,
    backend_label,
    ignore_covar,
    one_block_note,
    open_input,
    pheno_spec,
    scan,
    snp_list_digest,
    start_backend,
    write_failure_log,
)
from gwas.chromosomes import ploidy
from gwas.filters import FilterLog, allele_coding, quality_control, select
from gwas.memory import PhaseMeter
from gwas.plink import Fileset, sample_phenotypes
from gwas.plots import genomic_inflation, manhattan_plot, qq_plot, top_hits
from gwas.progress import Progress
from gwas.qc import run_qc
from gwas.scaleout import ScaleOutBackend

Array = npt.NDArray[np.float64]
PROGRAM_LINEAR = Path(__file__).resolve().parent / "programs" / "linear.hec"
COLUMNS = ("CHR", "SNP", "BP", "NMISS", "BETA", "SE", "R2", "T", "P")
INTEGER_SUMS = ("n", "sx", "sxx")


@dataclass
class LinearResult:
    nmiss: Array
    beta: Array
    se: Array
    r2: Array
    t: Array
    p: Array
    files: list[Path]
    log_text: str
    n_included: int
    scale: float
    fileset: Fileset
    backend_encrypts: bool
    notes: list[str] = field(default_factory=list)


def regression(sums: dict[str, Array], client: dict[str, Array], scale: float) -> dict[str, Array]:
    """PLINK's .qassoc columns from the decrypted sums and the client block's values: NA
    (NaN) where the SNP is monomorphic among the called individuals or fewer than 3 are
    called."""
    n = sums["n"]
    ok = (n > 2) & (client["vxx"] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        beta = np.where(ok, client["beta"] * scale, np.nan)
        se = np.where(ok, client["se"] * scale, np.nan)
        r2 = np.where(ok, client["r2"], np.nan)
        t = np.where(ok, client["t"], np.nan)
        p = np.where(ok, 2.0 * stats.t.sf(np.abs(t), np.maximum(n - 2, 1)), np.nan)
    return {"NMISS": n, "BETA": beta, "SE": se, "R2": r2, "T": t, "P": p}


def write_qassoc(path: Path, fileset: Fileset, cols: dict[str, Array]) -> None:
    """PLINK 1.9's .qassoc layout (7 significant digits where PLINK prints 4)."""
    snp_w = snp_column_width([v.snp for v in fileset.variants])
    with path.open("w") as fh:
        fh.write(
            f"{'CHR':>4} {'SNP':>{snp_w}} {'BP':>10} {'NMISS':>8} "
            + " ".join(f"{c:>14}" for c in COLUMNS[4:])
            + " \n"
        )
        for j, v in enumerate(fileset.variants):
            nums = " ".join(f"{format_number(float(cols[c][j])):>14}" for c in COLUMNS[4:])
            fh.write(
                f"{v.chrom:>4} {v.snp:>{snp_w}} {v.bp:>10} {int(cols['NMISS'][j]):>8} {nums} \n"
            )


def run_linear(opts: ChisqOptions) -> LinearResult:
    out = Path(opts.out)
    if not out.parent.is_dir():
        raise UserError(f"--out {opts.out}: directory {out.parent} does not exist")
    started = datetime.datetime.now(datetime.UTC)
    done: list[str] = []
    log = out.with_name(out.name + ".log")
    try:
        with contextlib.ExitStack() as cleanup:
            return _run_linear(opts, out, started, done, cleanup)
    except (Exception, KeyboardInterrupt) as err:
        write_failure_log(log, "gwas linear", opts.command_line, started, done, err)
        raise


def _run_linear(
    opts: ChisqOptions,
    out: Path,
    started: datetime.datetime,
    done: list[str],
    cleanup: contextlib.ExitStack,
) -> LinearResult:
    if opts.backend not in BACKENDS:
        raise UserError(f"--backend {opts.backend}: unknown backend")
    backend = start_backend(opts, out, cleanup)
    meter = PhaseMeter()
    progress = Progress(enabled=opts.progress, seconds=lambda ph: meter.seconds.get(ph, 0.0))
    filter_log = FilterLog()
    ignore_covar(opts, filter_log)

    progress.start("read")
    with meter.phase("read"):
        fileset = open_input(opts)
        done.append(f"read {fileset.kind} {fileset.prefix}: {fileset.n_samples} samples")
        spec = pheno_spec(opts)
        # Phenotypes are read against every sample of the file (an ID --keep drops is
        # still a sample of the fileset), then follow the selection.
        y_file = sample_phenotypes(fileset, spec, binary=False)
        fileset = select(fileset, opts.selection, filter_log)
        assert fileset.sample_rows is not None
        y_all = y_file[fileset.sample_rows]
        qc = quality_control(fileset, y_all, False, opts.selection, filter_log)
        fileset, y_all = qc.fileset, qc.pheno
        fileset = run_qc(fileset, y_all, False, opts.selection, filter_log, backend, meter,
                         progress, opts.precision_bits, opts.cache_dir)  # fmt: skip
        done.extend(filter_log.lines)
    progress.finish("read")
    included = ~np.isnan(y_all)
    n_inc = int(included.sum())
    if n_inc < 3:
        raise UserError(
            f"{spec.describe(fileset)}: {n_inc} samples have a quantitative phenotype; the "
            "regression needs at least 3",
            hint="-9 and non-numbers are missing; samples of unknown sex need --allow-no-sex",
        )
    y = y_all[included]
    shift = float(np.mean(y))
    scale = float(np.max(np.abs(y - shift))) or 1.0
    y_scaled = (y - shift) / scale
    done.append(f"phenotype from {spec.describe(fileset)}: {n_inc} samples")

    progress.start("scan")
    with meter.phase("scan"):
        swap = scan(fileset, np.zeros(fileset.n_samples), included).swap
    progress.finish("scan")

    m = fileset.n_variants
    sizes = {"N": n_inc, "M": m}
    bim = fileset.variants
    a1 = [v.a2 if s else v.a1 for v, s in zip(bim, swap, strict=True)]
    a2 = [v.a1 if s else v.a2 for v, s in zip(bim, swap, strict=True)]
    backend.bindings["snps_sha256"] = snp_list_digest(fileset, a1, a2)
    backend.bindings["individuals"] = str(n_inc)
    progress.start("compile")
    with meter.phase("compile"):
        compiled = backend.compile(PROGRAM_LINEAR, sizes, opts.precision_bits, opts.cache_dir)
    progress.finish("compile")
    width = compiled.block_width(n_inc, m)
    n_blocks = -(-m // width)
    ranges = [(i, start, min(start + width, m)) for i, start in enumerate(range(0, m, width))]
    if isinstance(backend, ScaleOutBackend):  # blocks that can run apart (gwas/scaleout.py)
        chosen = backend.plan(compiled, m, n_blocks)
        assert backend.ranges is not None
        n_blocks = len(backend.ranges)
        ranges = [(i, *backend.ranges[i]) for i in chosen]
    male = np.array([s.is_male for s in fileset.samples])[included]
    ploidies = [ploidy(v.chrom) for v in fileset.variants]

    def blocks():
        for index, start, stop in ranges:
            with meter.phase("inputs"):
                g = fileset.read_block(start, stop)[included]
                a1, alleles = allele_coding(g, ploidies[start:stop], male)
                minor = np.where(swap[start:stop], alleles - a1, a1)
                x = np.where(alleles == 1, 2.0 * minor, minor)  # haploid calls as 0 / 2
                called = (alleles > 0).astype(np.float64)
            yield Block(index, start, stop, {"y": y_scaled, "S": x, "C": called},
                        shared=frozenset({"y"}))  # fmt: skip

    names = [r.sym_value for r in compiled.stat_program.reveals()]
    sums: dict[str, Array] = {name: np.zeros(m) for name in names}
    for block, values in backend.run(compiled, blocks(), n_blocks, meter, progress):
        for name in names:
            sums[name][block.start : block.stop] = values[name]
    done.append(f"ran {n_blocks} block(s) with {backend_label(backend)}")
    if opts.scale.block:  # one block of a run split by hand: stored, nothing merged yet
        note = one_block_note(opts, out)
        empty = np.zeros(0)
        return LinearResult(empty, empty, empty, empty, empty, empty, [], "", n_inc, scale,
                            fileset, backend.encrypts, [note])  # fmt: skip

    notes: list[str] = []
    with meter.phase("client"):
        exact = set(compiled.report.get("exact_outputs", []))
        for name in INTEGER_SUMS:
            err = 0.0 if name in exact else compiled.revealed_abs_error(name)
            if err < ROUNDING_ERROR_LIMIT:
                sums[name] = np.rint(sums[name]) + 0.0
                notes.append(f"{name} is an integer (error <= {err:.3g}): rounded")
        with np.errstate(divide="ignore", invalid="ignore"):
            client = compiled.client(sizes, sums)
        cols = regression(sums, client, scale)

    snp_names = [v.snp for v in fileset.variants]
    finals = {
        "qassoc": out.with_name(out.name + ".qassoc"),
        "manhattan": out.with_name(out.name + ".manhattan.png"),
        "qq": out.with_name(out.name + ".qq.png"),
        "log": out.with_name(out.name + ".log"),
    }
    temps = {k: _temp_path(v) for k, v in finals.items()}
    lam = genomic_inflation(cols["T"] ** 2)
    try:
        with meter.phase("write"):
            write_qassoc(temps["qassoc"], fileset, cols)
            if opts.plots:
                kind = "encrypted" if backend.encrypts else "SIMULATION of encryption"
                title = (
                    f"{out.name}: quantitative trait (PLINK --assoc .qassoc), {kind}; "
                    f"N = {n_inc}, M = {m} SNPs, λ = {lam:.3f}"
                )
                manhattan_plot(temps["manhattan"], [v.chrom for v in fileset.variants],
                               [int(v.bp) for v in fileset.variants], cols["P"], title,
                               names=snp_names)  # fmt: skip
                qq_plot(temps["qq"], cols["T"] ** 2, cols["P"], title)
        rep = compiled.report
        lines = [
            f"hec {__version__} gwas linear  (Python {platform.python_version()})",
            f"command: {opts.command_line or ' '.join(shlex.quote(a) for a in sys.argv)}",
            f"started: {started.isoformat(timespec='seconds')}",
            "",
            f"backend: {backend_label(backend)}",
            f"  {backend.description}",
            *(f"  {note}" for note in backend.notes),
            "",
            *done,
            f"security: {rep['params']['security_bits']}-bit, ring dimension "
            f"2^{rep['params']['log_n']}",
            compiled.promise_text(),
            "revealed to the coordinator (decrypted): "
            + ", ".join(r["name"] for r in rep["reveals"])
            + " per SNP (the degree-2 sums of each SNP's regression over its called "
            "individuals); the phenotype's mean and scale (for BETA and SE in the "
            f"phenotype's units: mean {shift:.6g}, scale {scale:.6g}) are the data holder's",
            *(f"  {note}" for note in notes),
            f"genomic inflation lambda (from T^2): {lam:.6f}",
            "top hits: "
            + ", ".join(f"{name} (P {pv:.3g})" for name, pv in top_hits(cols["P"], snp_names)),
            "phases:",
            *(f"  {name:<10} {secs:10.3f} s" for name, secs in meter.seconds.items()),
            "written:",
            *(
                f"  {path}"
                for k, path in finals.items()
                if opts.plots or k not in ("manhattan", "qq")
            ),
        ]
        log_text = "\n".join(lines) + "\n"
        temps["log"].write_text(log_text)
        produced = [k for k in finals if temps[k].exists()]
        for k in produced:
            temps[k].replace(finals[k])
        if isinstance(backend, ScaleOutBackend):
            backend.finish()
    except BaseException:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise
    return LinearResult(
        cols["NMISS"], cols["BETA"], cols["SE"], cols["R2"], cols["T"], cols["P"],
        [finals[k] for k in produced], log_text, n_inc, scale, fileset, backend.encrypts, notes,
    )  # fmt: skip
