"""VCF (plain or gzip-compressed, parsed here so every malformed record is reported by file and
line) and BCF (through cyvcf2) genotypes read into a `Fileset`, the way `plink1.9 --vcf
--double-id` imports them.

Each sample's FID and IID are its VCF sample ID; sex is unknown (0) unless `--update-sex` gives
it; the phenotype comes from `--pheno`. A1 is ALT and A2 is REF; the GT field's alleles 0 and
1 are counted (ALT copies), a haploid call (`1`) counts as homozygous (PLINK stores it so), and
a call with a `.` allele is missing. Multi-allelic records, a record whose column count differs
from the header's, a GT allele other than 0, 1 or `.`, and a record without GT are errors
naming the line. The genotypes are converted once, as `plink --vcf` converts to .bed, into an
int8 matrix in an unnamed temporary file (memory-mapped, removed when the run ends), so memory
does not grow with the file.
"""

from __future__ import annotations

import gzip
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError
from gwas.plink import (
    MISSING_INT8,
    Fileset,
    GenotypeReader,
    Sample,
    Variant,
    check_unique_samples,
    chromosome,
)

FIXED = ("#CHROM", "POS", "ID", "REF", "ALT", "QUAL", "FILTER", "INFO", "FORMAT")
GT_CODES: dict[str, int] = {}
for _sep in ("/", "|"):
    for _a in ("0", "1", "."):
        for _b in ("0", "1", "."):
            _gt = f"{_a}{_sep}{_b}"
            GT_CODES[_gt] = MISSING_INT8 if "." in (_a, _b) else (_a == "1") + (_b == "1")
GT_CODES.update({"0": 0, "1": 2, ".": MISSING_INT8})


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as fh:
        magic = fh.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt")
    return path.open()


def _records(path: Path) -> Iterator[tuple[int, str]]:
    with _open_text(path) as fh:
        try:
            yield from enumerate(fh, start=1)
        except (OSError, EOFError, UnicodeDecodeError) as err:
            raise UserError(f"{path}: unreadable ({err})") from err


def _matrix_reader(matrix: npt.NDArray[np.int8], keep: object) -> GenotypeReader:
    """A reader of a variants x samples int8 matrix (`keep` holds the temporary file open)."""

    def read(rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp]) -> npt.NDArray[np.int8]:
        _ = keep
        return np.ascontiguousarray(matrix[np.ix_(cols, rows)].T)

    return read


def open_vcf(path_text: str) -> Fileset:
    path = Path(path_text)
    if not path.is_file():
        raise UserError(f"{path}: no such file (--vcf)")
    samples: list[Sample] | None = None
    variants: list[Variant] = []
    store = tempfile.TemporaryFile(prefix="hec-vcf-")  # noqa: SIM115 (lives with the reader)
    rows_written = 0
    n = 0
    for lineno, line in _records(path):
        if line.startswith("##"):
            continue
        if samples is None:
            fields = line.rstrip("\n").split("\t")
            if fields[0] != "#CHROM" or tuple(fields[:8]) != FIXED[:8]:
                raise UserError(
                    f"{path}:{lineno}: expected the VCF header line "
                    f"'{chr(92)}t'.join({list(FIXED)!r}) + samples, got {line[:80].strip()!r}",
                    hint="is this a VCF file? meta lines start with ## and the header with #CHROM",
                )
            if len(fields) <= 9 or fields[8] != "FORMAT":
                raise UserError(f"{path}:{lineno}: the VCF has no sample columns")
            ids = fields[9:]
            samples = [Sample(i, i, "0", "0", "0", "-9") for i in ids]
            check_unique_samples(samples, path, first_line=lineno)
            n = len(ids)
            continue
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("\t")
        where = f"{path}:{lineno}"
        if len(fields) != 9 + n:
            raise UserError(
                f"{where}: a record has {9 + n} tab-separated columns (9 + {n} samples); this "
                f"one has {len(fields)}",
                hint="fields must be separated by tabs",
            )
        chrom, pos, snp, ref, alt = fields[:5]
        if "," in alt:
            raise UserError(
                f"{where}: variant {snp} at {chrom}:{pos} has {alt.count(',') + 1} ALT alleles "
                f"({alt}); the allelic test needs biallelic variants",
                hint="split or drop multi-allelic records first, e.g. "
                "`bcftools view -m2 -M2 -v snps`",
            )
        if not pos.isdigit():
            raise UserError(f"{where}: variant {snp}: POS {pos!r} is not a position")
        code = chromosome(chrom, where, snp)
        fmt = fields[8].split(":")
        if "GT" not in fmt:
            raise UserError(f"{where}: variant {snp} has no GT in FORMAT ({fields[8]})")
        k = fmt.index("GT")
        raw = fields[9:] if k == 0 and len(fmt) == 1 else [f.split(":")[k] for f in fields[9:]]
        try:
            values = [GT_CODES[g] for g in raw]
        except KeyError:
            bad = next(i for i, g in enumerate(raw) if g not in GT_CODES)
            raise UserError(
                f"{where}: variant {snp}, sample {samples[bad].iid}: genotype {raw[bad]!r} is "
                "not a biallelic call (0, 1 or . alleles, / or | between them)"
            ) from None
        store.write(np.asarray(values, dtype=np.int8).tobytes())
        rows_written += 1
        variants.append(Variant(code, snp, "0", pos, alt, ref, line=lineno))
    if samples is None:
        raise UserError(f"{path}: no #CHROM header line: not a VCF file")
    if not variants:
        raise UserError(f"{path}: the VCF has no variant records")
    store.flush()
    matrix = np.memmap(store, dtype=np.int8, mode="r", shape=(rows_written, n))
    return Fileset(
        str(path),
        path,
        path,
        path,
        samples,
        variants,
        _matrix_reader(matrix, store),
        kind="VCF",
    )


def open_bcf(path_text: str) -> Fileset:
    """A BCF (or VCF) through cyvcf2; errors name the record by chromosome and position."""
    path = Path(path_text)
    if not path.is_file():
        raise UserError(f"{path}: no such file (--bcf)")
    from cyvcf2 import VCF

    try:
        vcf = VCF(str(path), gts012=True, strict_gt=True)
    except Exception as err:
        raise UserError(f"{path}: not a readable BCF/VCF file ({err})") from err
    ids = list(vcf.samples)
    samples = [Sample(i, i, "0", "0", "0", "-9") for i in ids]
    check_unique_samples(samples, path)
    store = tempfile.TemporaryFile(prefix="hec-bcf-")  # noqa: SIM115 (lives with the reader)
    variants: list[Variant] = []
    for number, rec in enumerate(vcf, start=1):
        where = f"{path}: record {number} ({rec.CHROM}:{rec.POS})"
        if len(rec.ALT) > 1:
            raise UserError(f"{where}: {len(rec.ALT)} ALT alleles; biallelic variants only")
        snp = rec.ID or "."
        code = chromosome(rec.CHROM, where, snp)
        # gts012: 0 hom REF, 1 het, 2 hom ALT, 3 unknown; haploid ALT comes back as 2.
        gt = np.asarray(rec.gt_types, dtype=np.int8)
        gt[gt == 3] = MISSING_INT8
        store.write(gt.tobytes())
        variants.append(Variant(code, snp, "0", str(rec.POS), rec.ALT[0] if rec.ALT else ".",
                                rec.REF))  # fmt: skip
    vcf.close()
    if not variants:
        raise UserError(f"{path}: no variant records")
    store.flush()
    matrix = np.memmap(store, dtype=np.int8, mode="r", shape=(len(variants), len(ids)))
    return Fileset(
        str(path), path, path, path, samples, variants, _matrix_reader(matrix, store), kind="BCF"
    )


def write_vcf(path: Path, fileset: Fileset) -> None:
    """Write a fileset's genotypes as VCF 4.2 (ALT = A1, REF = A2; haploid-looking calls are
    written diploid, as `plink1.9 --recode vcf` writes autosomes): how the tests make VCF
    inputs of a cohort."""
    inv = {0: "0/0", 1: "0/1", 2: "1/1", MISSING_INT8: "./."}
    names = {"23": "X", "24": "Y", "25": "XY", "26": "MT"}
    with path.open("w") as fh:
        fh.write("##fileformat=VCFv4.2\n")
        fh.write('##FORMAT=<ID=GT,Number=1,Type=String,Description="Genotype">\n')
        for chrom in dict.fromkeys(names.get(v.chrom, v.chrom) for v in fileset.variants):
            fh.write(f"##contig=<ID={chrom}>\n")
        fh.write("\t".join(FIXED) + "\t" + "\t".join(s.iid for s in fileset.samples) + "\n")
        m = fileset.n_variants
        for start in range(0, m, 1024):
            block = fileset.read_block(start, min(m, start + 1024))
            for j in range(block.shape[1]):
                v = fileset.variants[start + j]
                gts = "\t".join(inv[int(x)] for x in block[:, j])
                chrom = names.get(v.chrom, v.chrom)
                fh.write(f"{chrom}\t{v.bp}\t{v.snp}\t{v.a2}\t{v.a1}\t.\t.\t.\tGT\t{gts}\n")
