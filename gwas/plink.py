"""PLINK 1 binary filesets (.bed/.bim/.fam) and phenotype files, read the way PLINK 1.9 reads
them, with a clear `UserError` naming the file and the sample or SNP for every malformed input.

The .fam and .bim text files are parsed here (so a bad line is reported by file and line); the
.bed header and size are checked here too, and the genotype bits are then read block by block
through `bed-reader`. `Fileset` is also what the PLINK 2 (gwas/pgen.py) and VCF (gwas/vcf.py)
readers produce: samples, variants (chromosome codes as PLINK prints them, gwas/chromosomes.py)
and a reader of A1 counts; `Fileset.subset` keeps the samples and SNPs the filters leave.
Phenotypes follow PLINK's case/control conventions: 1 = control, 2 = case, -9, 0 or a
non-number = missing (that individual is left out of the test); with `--1`, 0 = control and
1 = case.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt
from bed_reader import open_bed

from compiler.errors import UserError
from gwas.chromosomes import ACCEPTED, plink_code

BED_MAGIC = bytes([0x6C, 0x1B])
BED_SNP_MAJOR = 0x01
MISSING_INT8 = -127
MISSING_PHENOTYPES = {"-9", "0"}

# (sample rows, variant columns) of the file -> int8 A1 counts, MISSING_INT8 where not called.
GenotypeReader = Callable[[npt.NDArray[np.intp], npt.NDArray[np.intp]], npt.NDArray[np.int8]]


@dataclass(frozen=True)
class Sample:
    fid: str
    iid: str
    father: str
    mother: str
    sex: str  # "1" male, "2" female, anything else ambiguous
    phenotype: str

    @property
    def is_founder(self) -> bool:
        """PLINK 1.9: a founder has both parental IDs '0' (present in the fileset or not)."""
        return self.father == "0" and self.mother == "0"

    @property
    def is_male(self) -> bool:
        return self.sex == "1"

    @property
    def sex_known(self) -> bool:
        return self.sex in ("1", "2")

    @property
    def label(self) -> str:
        return f"{self.fid} {self.iid}"


@dataclass(frozen=True)
class Variant:
    chrom: str  # PLINK's numeric code (gwas/chromosomes.py)
    snp: str
    cm: str
    bp: str
    a1: str  # the allele the reader counts (.bim column 5; a .pvar's or VCF's ALT)
    a2: str
    line: int = 0  # its line in the variant file (for messages; 0: unknown)


@dataclass
class Fileset:
    prefix: str
    bed: Path  # genotype file (.bed, .pgen, .vcf[.gz], .bcf)
    bim: Path  # variant file (.bim, .pvar, or the VCF itself)
    fam: Path  # sample file (.fam, .psam, or the VCF itself)
    samples: list[Sample]
    variants: list[Variant]
    reader: GenotypeReader | None = None
    kind: str = "PLINK 1 fileset"
    # Rows and columns of the file this view keeps (None: all), after --keep/--remove etc.
    sample_rows: npt.NDArray[np.intp] | None = None
    variant_columns: npt.NDArray[np.intp] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def n_samples(self) -> int:
        return len(self.samples)

    @property
    def n_variants(self) -> int:
        return len(self.variants)

    def read_block(self, start: int, stop: int) -> npt.NDArray[np.int8]:
        """Counts of each variant's A1 for SNPs [start, stop) of the view, every sample of the
        view, as int8 with -127 for a missing call (shape samples x SNPs)."""
        rows = (
            self.sample_rows
            if self.sample_rows is not None
            else np.arange(self.n_samples, dtype=np.intp)
        )
        cols = (
            self.variant_columns[start:stop]
            if self.variant_columns is not None
            else np.arange(start, stop, dtype=np.intp)
        )
        if self.reader is None:
            raise UserError(f"{self.bed}: no genotype reader")
        return self.reader(rows, cols)

    def subset(
        self, keep_samples: npt.NDArray[np.bool_], keep_variants: npt.NDArray[np.bool_]
    ) -> Fileset:
        """The view keeping the samples and variants whose mask is true."""
        rows = (
            self.sample_rows
            if self.sample_rows is not None
            else np.arange(self.n_samples, dtype=np.intp)
        )
        cols = (
            self.variant_columns
            if self.variant_columns is not None
            else np.arange(self.n_variants, dtype=np.intp)
        )
        return replace(
            self,
            samples=[s for s, k in zip(self.samples, keep_samples, strict=True) if k],
            variants=[v for v, k in zip(self.variants, keep_variants, strict=True) if k],
            sample_rows=rows[keep_samples],
            variant_columns=cols[keep_variants],
        )


def _open_text(path: Path) -> io.StringIO:
    """A text file's content; bytes that are not UTF-8 are a UserError naming the line (was an
    uncaught UnicodeDecodeError: found by the atheris harness tests/fuzz)."""
    data = path.read_bytes()
    try:
        return io.StringIO(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise UserError(
            f"{path}:{line}: not text (byte 0x{data[err.start]:02x} is not UTF-8)"
        ) from err


def _split_lines(path: Path, columns: int, what: str) -> list[tuple[int, list[str]]]:
    if not path.is_file():
        raise UserError(f"{path}: no such file", hint=f"a PLINK fileset needs its {what} file")
    rows: list[tuple[int, list[str]]] = []
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
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


def check_unique_samples(samples: Sequence[Sample], path: Path, first_line: int = 1) -> None:
    seen: dict[tuple[str, str], int] = {}
    for i, s in enumerate(samples):
        key = (s.fid, s.iid)
        if key in seen:
            raise UserError(
                f"{path}: sample {s.label} appears twice (lines {seen[key] + first_line} and "
                f"{i + first_line})"
            )
        seen[key] = i


def read_fam(path: Path) -> list[Sample]:
    samples = [Sample(*fields) for _, fields in _split_lines(path, 6, ".fam")]
    check_unique_samples(samples, path)
    return samples


def chromosome(text: str, where: str, snp: str) -> str:
    """PLINK's numeric code of a chromosome name, or an error naming the file, line and SNP."""
    code = plink_code(text)
    if code is None:
        raise UserError(
            f"{where}: SNP {snp} is on chromosome {text!r}, which PLINK 1.9 does not know",
            hint=f"chromosome codes: {ACCEPTED}; drop other contigs first, e.g. "
            "`plink1.9 --bfile P --allow-extra-chr --chr 1-26 --make-bed --out P2`",
        )
    return code


def read_bim(path: Path) -> list[Variant]:
    variants: list[Variant] = []
    for lineno, fields in _split_lines(path, 6, ".bim"):
        code = chromosome(fields[0], f"{path}:{lineno}", fields[1])
        variants.append(Variant(code, *fields[1:], line=lineno))
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


def _bed_reader(bed: Path, n_samples: int, n_variants: int) -> GenotypeReader:
    def read(rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp]) -> npt.NDArray[np.int8]:
        with open_bed(
            bed, iid_count=n_samples, sid_count=n_variants, count_A1=True, num_threads=1
        ) as reader:
            block = reader.read(index=(rows, cols), dtype=np.int8, order="C")
        return np.asarray(block, dtype=np.int8)

    return read


def open_fileset(prefix: str) -> Fileset:
    """Read and check a fileset given by its prefix (PREFIX.bed, PREFIX.bim, PREFIX.fam)."""
    bed, bim, fam = (Path(f"{prefix}.{ext}") for ext in ("bed", "bim", "fam"))
    samples = read_fam(fam)
    variants = read_bim(bim)
    check_bed(bed, len(samples), len(variants), fam, bim)
    return Fileset(
        prefix, bed, bim, fam, samples, variants, _bed_reader(bed, len(samples), len(variants))
    )


# --- phenotypes -------------------------------------------------------------------------------


def case_control(value: str, where: str, sample: str, one_based: bool = False) -> float:
    """1 for a case, 0 for a control, NaN for missing, as PLINK 1.9 reads a case/control value:
    1 = control, 2 = case, -9, 0 or a non-number = missing; with `--1` (`one_based`),
    0 = control, 1 = case, -9 or a non-number = missing. Another number is an error."""
    try:
        number = float(value)
    except ValueError:
        return float("nan")  # PLINK reads a non-number (NA, .) as missing
    if number == -9.0:
        return float("nan")
    if one_based:
        if number in (0.0, 1.0):
            return number
        if number == 2.0:
            return float("nan")  # measured: plink1.9 --1 leaves 2 out
    else:
        if number in (1.0, 2.0):
            return number - 1.0
        if number == 0.0:
            return float("nan")
    coding = "0 (control), 1 (case)" if one_based else "1 (control), 2 (case)"
    raise UserError(
        f"{where}: sample {sample} has phenotype {value!r}; a case/control phenotype is "
        f"{coding}, or -9/0/NA (missing)",
        hint="a quantitative phenotype is tested by `hec gwas linear` (PLINK's .qassoc)",
    )


def quantitative(value: str, where: str, sample: str) -> float:
    """A quantitative value; -9 and non-numbers are missing (PLINK 1.9)."""
    try:
        number = float(value)
    except ValueError:
        return float("nan")
    if number == -9.0 or not np.isfinite(number):
        return float("nan")
    return number


@dataclass(frozen=True)
class PhenoSpec:
    """Where a phenotype comes from and how to read it (PLINK 1.9's options)."""

    path: str | None = None  # --pheno FILE (None: the sample file's phenotype column)
    name: str | None = None  # --pheno-name NAME (the file needs a header line)
    column: int | None = None  # --mpheno N (1-based among the value columns)
    one_based: bool = False  # --1
    allow_no_sex: bool = False  # --allow-no-sex

    def describe(self, fileset: Fileset) -> str:
        if self.path is None:
            return f"the phenotype column of {fileset.fam}"
        which = (
            f" column {self.name}"
            if self.name
            else f" value column {self.column}"
            if self.column
            else ""
        )
        return f"--pheno {self.path}{which}"


def sample_phenotypes(fileset: Fileset, spec: PhenoSpec, binary: bool) -> npt.NDArray[np.float64]:
    """Per sample of the fileset: 1 case / 0 control / NaN missing (`binary`), or the
    quantitative value. Samples of ambiguous sex have a missing phenotype unless
    `allow_no_sex`, as in PLINK 1.9."""
    if spec.path is None:
        if spec.name or spec.column:
            raise UserError("--pheno-name and --mpheno need --pheno FILE")
        values = [
            (s.phenotype, f"{fileset.fam}:{i + 1}", s.label) for i, s in enumerate(fileset.samples)
        ]
        pheno = _convert(values, spec, binary)
    else:
        pheno = read_pheno(Path(spec.path), fileset, spec, binary)
    if not spec.allow_no_sex:
        ambiguous = np.array([not s.sex_known for s in fileset.samples])
        pheno = np.where(ambiguous, np.nan, pheno)
    return pheno


def _convert(
    values: Sequence[tuple[str, str, str]], spec: PhenoSpec, binary: bool
) -> npt.NDArray[np.float64]:
    if not binary:
        return np.array([quantitative(v, w, s) for v, w, s in values])
    if not spec.one_based:
        tokens = {v for v, _, _ in values}
        numbers = set()
        for t in tokens:
            with contextlib.suppress(ValueError):
                numbers.add(float(t))
        if numbers and numbers <= {0.0, 1.0, -9.0} and 1.0 in numbers and 0.0 in numbers:
            raise UserError(
                f"{values[0][1].rsplit(':', 1)[0]}: the case/control phenotype holds only 0 and "
                "1 (and missing); PLINK reads 1 as control, 2 as case and 0 as missing",
                hint="for 0 = control, 1 = case pass --1",
            )
    return np.array([case_control(v, w, s, spec.one_based) for v, w, s in values])


def read_pheno(
    path: Path, fileset: Fileset, spec: PhenoSpec | None = None, binary: bool = True
) -> npt.NDArray[np.float64]:
    """A PLINK phenotype file (FID IID value..., whitespace-separated; an optional header line
    `FID IID NAME...` or `#FID IID NAME...`; PLINK 2's `#IID NAME...` header means one ID
    column, matched against the samples' IIDs). Samples of the fileset it does not list are
    missing, as in PLINK; an ID it lists that the fileset does not have is an error."""
    spec = spec or PhenoSpec(path=str(path))
    if not path.is_file():
        raise UserError(f"{path}: no such file (--pheno)")
    index = {(s.fid, s.iid): i for i, s in enumerate(fileset.samples)}
    lines: list[tuple[int, list[str]]] = []
    header: list[str] | None = None
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields:
                continue
            if (
                not lines
                and header is None
                and fields[0] in ("FID", "#FID")
                and fields[1:2] == ["IID"]
            ):
                header = fields
                continue
            if not lines and header is None and fields[0] == "#IID":
                header = fields
                continue
            lines.append((lineno, fields))
    ids = 1 if header is not None and header[0] == "#IID" else 2
    if ids == 1:
        by_iid: dict[str, int] = {}
        for i, s in enumerate(fileset.samples):
            if s.iid in by_iid:
                raise UserError(
                    f"{path}:1: a #IID header names samples by IID, and IID {s.iid} is not "
                    f"unique in {fileset.fam}",
                    hint="give FID and IID columns (#FID IID ...)",
                )
            by_iid[s.iid] = i
        index = {(s.iid, s.iid): i for s in fileset.samples for i in [by_iid[s.iid]]}
        lines = [(n, [f[0], *f]) for n, f in lines]
        header = ["#FID", *header] if header is not None else None
    value_column = 2
    if spec.name is not None:
        if header is None:
            raise UserError(
                f"{path}: --pheno-name {spec.name}: the file has no header line",
                hint="a header line starts with FID IID (or #FID IID) and names the columns",
            )
        if spec.name not in header[2:]:
            raise UserError(
                f"{path}:1: --pheno-name {spec.name}: no such phenotype column",
                hint="columns: " + ", ".join(header[2:]),
            )
        value_column = header.index(spec.name)
    elif spec.column is not None:
        if spec.column < 1:
            raise UserError(f"--mpheno {spec.column}: columns count from 1")
        value_column = 1 + spec.column
    pheno_values: list[tuple[str, str, str]] = []
    rows: list[int] = []
    seen: dict[int, int] = {}
    for lineno, fields in lines:
        if len(fields) <= value_column:
            raise UserError(
                f"{path}:{lineno}: a phenotype line needs FID, IID and value column "
                f"{value_column - 1}; this one has {len(fields)} column(s): {' '.join(fields)!r}"
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
        rows.append(i)
        pheno_values.append((fields[value_column], f"{path}:{lineno}", f"{fields[0]} {fields[1]}"))
    pheno = np.full(fileset.n_samples, np.nan)
    if rows:
        pheno[np.array(rows)] = _convert(pheno_values, spec, binary)
    return pheno


def fam_phenotypes(fileset: Fileset) -> npt.NDArray[np.float64]:
    """Column 6 of the .fam: 1 = case, 0 = control, NaN = missing, per sample."""
    return sample_phenotypes(fileset, PhenoSpec(allow_no_sex=True), binary=True)


def read_id_list(path: Path, option: str, fileset: Fileset) -> set[tuple[str, str]]:
    """A --keep/--remove file: FID IID per line (further columns ignored, as PLINK does)."""
    if not path.is_file():
        raise UserError(f"{path}: no such file ({option})")
    ids: set[tuple[str, str]] = set()
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) < 2:
                raise UserError(
                    f"{path}:{lineno}: {option} lines hold FID and IID; this one has one column",
                    hint="PLINK 1.9's --keep/--remove files have two ID columns",
                )
            ids.add((fields[0], fields[1]))
    return ids


def read_snp_list(path: Path, option: str) -> set[str]:
    """A --extract/--exclude file: one SNP ID per line (first column)."""
    if not path.is_file():
        raise UserError(f"{path}: no such file ({option})")
    return {line.split()[0] for line in path.read_text().splitlines() if line.split()}


def update_sex(fileset: Fileset, path: Path) -> Fileset:
    """--update-sex FILE: FID IID SEX per line (1 male, 2 female, 0 unknown; M/F too), as
    PLINK 1.9 reads it; an ID the fileset does not have is an error naming the line."""
    if not path.is_file():
        raise UserError(f"{path}: no such file (--update-sex)")
    index = {(s.fid, s.iid): i for i, s in enumerate(fileset.samples)}
    samples = list(fileset.samples)
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if len(fields) < 3:
                raise UserError(f"{path}:{lineno}: --update-sex lines hold FID IID SEX")
            key = (fields[0], fields[1])
            if key not in index:
                raise UserError(
                    f"{path}:{lineno}: sample {fields[0]} {fields[1]} is not in {fileset.fam}"
                )
            sex = {"M": "1", "F": "2", "m": "1", "f": "2"}.get(fields[2], fields[2])
            if sex not in ("0", "1", "2"):
                raise UserError(
                    f"{path}:{lineno}: sex {fields[2]!r}; expected 1 (male), 2 (female) or 0"
                )
            samples[index[key]] = replace(samples[index[key]], sex=sex)
    return replace(fileset, samples=samples)
