"""--geno, --hwe and --maf under encryption: examples/gwas/qc.hec aggregates the counts these
filters need over every sample (gwas/filters.py `qc_inputs` codes each owner's calls), the
coordinator decrypts them (declared reveals: the report and the .log list them) and applies
PLINK's thresholds (`qc_from_counts`); the association test then runs on the SNPs that pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError
from gwas.backend import Backend, Block, CompiledProgram
from gwas.chromosomes import ploidy
from gwas.filters import QC_COUNTS, FilterLog, QcCounts, Selection, qc_from_counts, qc_inputs
from gwas.memory import PhaseMeter
from gwas.plink import Fileset

Array = npt.NDArray[np.float64]
PROGRAM_QC = Path(__file__).resolve().parent / "programs" / "qc.hec"
ROUNDING_ERROR_LIMIT = 0.25


def hwe_sample(fileset: Fileset, pheno: Array, binary: bool) -> npt.NDArray[np.bool_]:
    """The rows PLINK's --hwe counts: founder controls (case/control), founders otherwise."""
    founders = np.array([s.is_founder for s in fileset.samples])
    return founders & (pheno == 0) if binary else founders


def qc_blocks(
    fileset: Fileset, sample: npt.NDArray[np.bool_], width: int, meter: PhaseMeter
) -> Iterator[Block]:
    m = fileset.n_variants
    male = np.array([s.is_male for s in fileset.samples])
    founders = np.array([s.is_founder for s in fileset.samples])
    ploidies = [ploidy(v.chrom) for v in fileset.variants]
    for index, start in enumerate(range(0, m, width)):
        stop = min(start + width, m)
        with meter.phase("inputs"):
            g = fileset.read_block(start, stop)
            inputs = qc_inputs(g, ploidies[start:stop], male, founders, sample)
        yield Block(index, start, stop, inputs, shared=frozenset({"f"}))


def counts_from_reveals(compiled: CompiledProgram, revealed: dict[str, Array]) -> QcCounts:
    """The QC counts, rounded to the integers they are (an error if the promise is too weak)."""
    out = {}
    exact = set(compiled.report.get("exact_outputs", []))
    for name in QC_COUNTS:
        if name in exact:  # packed counts: decrypted as the exact integers they are
            out[name] = np.rint(revealed[name]) + 0.0
            continue
        err = compiled.revealed_abs_error(name)
        if err >= ROUNDING_ERROR_LIMIT:
            raise UserError(
                f"QC count {name}: promised absolute error {err:.3g} is too large to round",
                hint="raise --precision-bits",
            )
        out[name] = np.rint(revealed[name]) + 0.0
    return QcCounts(**out)


def run_qc(
    fileset: Fileset,
    pheno: Array,
    binary: bool,
    opts: Selection,
    log: FilterLog,
    backend: Backend,
    meter: PhaseMeter,
    progress: Callable[..., None],
    precision_bits: float,
    cache_dir: Path | None,
) -> Fileset:
    """Steps (3)-(5) of gwas/filters.py: the view keeping the SNPs that pass."""
    if opts.geno is None and opts.maf is None and opts.hwe is None:
        return fileset
    n, m = fileset.n_samples, fileset.n_variants
    sizes = {"N": n, "M": m}
    with meter.phase("compile"):
        compiled = backend.compile(PROGRAM_QC, sizes, precision_bits, cache_dir)
    width = compiled.block_width(n, m)
    n_blocks = -(-m // width)
    revealed: dict[str, Array] = {name: np.zeros(m) for name in QC_COUNTS}
    blocks = qc_blocks(fileset, hwe_sample(fileset, pheno, binary), width, meter)
    for block, values in backend.run(compiled, blocks, n_blocks, meter, progress):
        for name in QC_COUNTS:
            revealed[name][block.start : block.stop] = values[name]
    counts = counts_from_reveals(compiled, revealed)
    log.lines.append(
        "QC counts revealed to the coordinator (examples/gwas/qc.hec, "
        f"{'encrypted' if backend.encrypts else 'SIMULATION'}): " + ", ".join(QC_COUNTS)
    )
    keep = qc_from_counts(counts, [v.snp for v in fileset.variants], opts, log)
    log.lines.append(f"{int(keep.sum())} SNPs and {n} samples pass filters and QC")
    return fileset.subset(np.ones(n, dtype=bool), keep)
