"""PLINK 1 binary filesets (.bed/.bim/.fam) and phenotype files, read the way PLINK 1.9 reads
them, with a clear `UserError` naming the file and the sample or SNP for every malformed input.

The .fam and .bim text files are parsed here (so a bad line is reported by file and line); the
.bed header and size are checked here too, and the genotype bits are then read block by block
through `bed-reader`. Phenotypes follow PLINK's case/control conventions: 1 = control,
2 = case, -9 or 0 = missing (that individual is left out of the test).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bed_reader import open_bed

from compiler.errors import UserError

BED_MAGIC = bytes([0x6C, 0x1B])
BED_SNP_MAJOR = 0x01
# Chromosome codes whose --assoc counting is diploid, as PLINK 1.9 counts them: 0 (unplaced)
# and the autosomes. X, Y, XY and MT count haploid calls differently and are refused.
AUTOSOMAL_CODES = {str(c) for c in range(23)}
MISSING_PHENOTYPES = {"-9", "0"}


@dataclass(frozen=True)
class Sample:
    fid: str
    iid: str
    father: str
    mother: str
    sex: str
    phenotype: str

    @property
    def is_founder(self) -> bool:
        """PLINK 1.9: a founder has both parental IDs '0' (present in the fileset or not)."""
        return self.father == "0" and self.mother == "0"

    @property
    def label(self) -> str:
        return f"{self.fid} {self.iid}"


@dataclass(frozen=True)
class Variant:
    chrom: str
    snp: str
    cm: str
    bp: str
    a1: str  # .bim column 5: the allele bed-reader counts
    a2: str


@dataclass
class Fileset:
    prefix: str
    bed: Path
    bim: Path
    fam: Path
    samples: list[Sample]
    variants: list[Variant]

    @property
    def n_samples(self) -> int:
        return len(self.samples)

    @property
    def n_variants(self) -> int:
        return len(self.variants)

    def read_block(self, start: int, stop: int) -> npt.NDArray[np.int8]:
        """Counts of the .bim A1 allele for SNPs [start, stop) of every sample, as int8 with
        -127 for a missing call (shape samples x SNPs)."""
        with open_bed(
            self.bed,
            iid_count=self.n_samples,
            sid_count=self.n_variants,
            count_A1=True,
            num_threads=1,
        ) as bed:
            block = bed.read(index=np.s_[:, start:stop], dtype=np.int8, order="C")
        return np.asarray(block, dtype=np.int8)


def _text_lines(path: Path, what: str) -> list[str]:
    """The lines of a text file; bytes that are not UTF-8 are a UserError naming the line
    (was an uncaught UnicodeDecodeError: found by the atheris harness tests/fuzz)."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise UserError(
            f"{path}:{line}: not text (byte 0x{data[err.start]:02x} is not UTF-8) in the {what} "
            "file"
        ) from err


def _split_lines(path: Path, columns: int, what: str) -> list[tuple[int, list[str]]]:
    if not path.is_file():
        raise UserError(f"{path}: no such file", hint=f"a PLINK fileset needs its {what} file")
    rows: list[tuple[int, list[str]]] = []
    for lineno, line in enumerate(_text_lines(path, what), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != columns:
            raise UserError(
                f"{path}:{lineno}: a {what} line has {columns} columns, this one has "
                f"{len(fields)}: {line.strip()!r}"
            )
        rows.append((lineno, fields))
    if not rows:
        raise UserError(f"{path}: the {what} file is empty")
    return rows


def read_fam(path: Path) -> list[Sample]:
    samples = [Sample(*fields) for _, fields in _split_lines(path, 6, ".fam")]
    seen: dict[tuple[str, str], int] = {}
    for i, s in enumerate(samples):
        key = (s.fid, s.iid)
        if key in seen:
            raise UserError(
                f"{path}: sample {s.label} appears twice (lines {seen[key] + 1} and {i + 1})"
            )
        seen[key] = i
    return samples


def read_bim(path: Path) -> list[Variant]:
    variants: list[Variant] = []
    for lineno, fields in _split_lines(path, 6, ".bim"):
        v = Variant(*fields)
        if v.chrom not in AUTOSOMAL_CODES:
            raise UserError(
                f"{path}:{lineno}: SNP {v.snp} is on chromosome {v.chrom}; hec gwas chisq "
                "counts diploid genotypes and supports chromosomes 0-22 only",
                hint="extract the autosomes first, e.g. `plink1.9 --bfile P --autosome "
                "--make-bed --out P_auto`",
            )
        variants.append(v)
    return variants


def check_bed(path: Path, n_samples: int, n_variants: int, fam: Path, bim: Path) -> None:
    """The .bed must start with PLINK's magic number and SNP-major mode byte, and hold exactly
    ceil(samples / 4) bytes per SNP after the 3-byte header."""
    if not path.is_file():
        raise UserError(f"{path}: no such file", hint="a PLINK fileset needs its .bed file")
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(3)
    if len(head) < 3 or head[:2] != BED_MAGIC:
        raise UserError(
            f"{path}: not a PLINK 1 .bed file: it starts with bytes {head.hex(' ') or '(none)'}, "
            "a .bed starts with 6c 1b 01",
            hint="is this an older PLINK 0.99 .bed or another format? re-create it with "
            "`plink1.9 --make-bed`",
        )
    if head[2] != BED_SNP_MAJOR:
        raise UserError(
            f"{path}: the .bed is in individual-major mode (byte 3 is {head[2]:#04x}); only "
            "SNP-major (0x01) is read",
            hint="re-create it with `plink1.9 --bfile P --make-bed --out P2`",
        )
    expected = 3 + n_variants * ((n_samples + 3) // 4)
    if size != expected:
        raise UserError(
            f"{path}: size {size} bytes does not match {bim.name} and {fam.name}: "
            f"{n_variants} SNPs x {n_samples} samples need 3 + {n_variants} x "
            f"{(n_samples + 3) // 4} = {expected} bytes",
            hint="the three files of a fileset must come from the same `plink --make-bed` run",
        )


def open_fileset(prefix: str) -> Fileset:
    """Read and check a fileset given by its prefix (PREFIX.bed, PREFIX.bim, PREFIX.fam)."""
    bed, bim, fam = (Path(f"{prefix}.{ext}") for ext in ("bed", "bim", "fam"))
    samples = read_fam(fam)
    variants = read_bim(bim)
    check_bed(bed, len(samples), len(variants), fam, bim)
    return Fileset(prefix, bed, bim, fam, samples, variants)


def _case_control(value: str, where: str, sample: str) -> float:
    """1 for a case, 0 for a control, NaN for missing; anything else is an error."""
    if value in MISSING_PHENOTYPES:
        return float("nan")
    if value == "1":
        return 0.0
    if value == "2":
        return 1.0
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is not None and number in (1.0, 2.0):
        return number - 1.0
    if number is not None and number in (-9.0, 0.0):
        return float("nan")
    raise UserError(
        f"{where}: sample {sample} has phenotype {value!r}; a case/control phenotype is "
        "1 (control), 2 (case), or -9/0 (missing)",
        hint="hec gwas chisq runs the case/control allelic test; quantitative phenotypes "
        "are not supported",
    )


def fam_phenotypes(fileset: Fileset) -> npt.NDArray[np.float64]:
    """Column 6 of the .fam: 1 = case, 0 = control, NaN = missing, per sample."""
    return np.array(
        [
            _case_control(s.phenotype, f"{fileset.fam}:{i + 1}", s.label)
            for i, s in enumerate(fileset.samples)
        ]
    )


def read_pheno(path: Path, fileset: Fileset) -> npt.NDArray[np.float64]:
    """A PLINK phenotype file (FID IID value, whitespace-separated; an optional header line
    starting with FID IID). Samples of the fileset it does not list are missing, as in PLINK;
    an ID it lists that the .fam does not have is an error."""
    if not path.is_file():
        raise UserError(f"{path}: no such file (--pheno)")
    index = {(s.fid, s.iid): i for i, s in enumerate(fileset.samples)}
    pheno = np.full(fileset.n_samples, np.nan)
    seen: dict[int, int] = {}
    for lineno, line in enumerate(_text_lines(path, "phenotype"), start=1):
        fields = line.split()
        if not fields:
            continue
        if lineno == 1 and fields[:2] == ["FID", "IID"]:
            continue
        if len(fields) < 3:
            raise UserError(
                f"{path}:{lineno}: a phenotype line has FID, IID and a value; this one has "
                f"{len(fields)} column(s): {line.strip()!r}"
            )
        key = (fields[0], fields[1])
        if key not in index:
            raise UserError(
                f"{path}:{lineno}: sample {fields[0]} {fields[1]} is not in {fileset.fam}",
                hint="the phenotype file's FID and IID must name samples of the fileset",
            )
        i = index[key]
        if i in seen:
            raise UserError(
                f"{path}:{lineno}: sample {fields[0]} {fields[1]} already has a phenotype "
                f"(line {seen[i]})"
            )
        seen[i] = lineno
        pheno[i] = _case_control(fields[2], f"{path}:{lineno}", f"{fields[0]} {fields[1]}")
    return pheno
