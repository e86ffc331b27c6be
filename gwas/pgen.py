"""PLINK 2 filesets (.pgen/.pvar/.psam) read into a `Fileset`, with the genotypes through
pgenlib (the PLINK 2 authors' Python reader) and the text files parsed here, so a bad line is
reported by file and line.

A .pvar is either PLINK 2's (`##` meta lines, then `#CHROM POS ID REF ALT ...`) or a .bim in
disguise (no header: CHROM ID CM POS ALT REF). A .psam is PLINK 2's (`#FID IID ...` or
`#IID ...`, columns found by name: SID, PAT, MAT, SEX, then phenotypes) or a .fam. As
`plink2 --make-bed` writes them, A1 is ALT and A2 is REF: the reader counts ALT alleles.
Multi-allelic variants are refused with the line (PLINK 1.9's --assoc cannot test them).
"""

from __future__ import annotations

from pathlib import Path

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
    read_fam,
)

PGEN_MISSING = -9


def read_psam(path: Path) -> list[Sample]:
    if not path.is_file():
        raise UserError(f"{path}: no such file", hint="a PLINK 2 fileset needs its .psam file")
    with path.open() as fh:
        first = fh.readline().split()
    if not first or not first[0].startswith("#"):
        return read_fam(path)
    header = [first[0][1:], *first[1:]]
    if "IID" not in header:
        raise UserError(f"{path}:1: a .psam header names an IID column: {' '.join(first)!r}")
    col = {name: i for i, name in enumerate(header)}
    pheno_cols = [
        i for i, name in enumerate(header) if name not in ("FID", "IID", "SID", "PAT", "MAT", "SEX")
    ]
    samples: list[Sample] = []
    with path.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            fields = line.split()
            if lineno == 1 or not fields:
                continue
            if len(fields) != len(header):
                raise UserError(
                    f"{path}:{lineno}: the header has {len(header)} columns, this line "
                    f"{len(fields)}: {line.strip()!r}"
                )

            def get(name: str, default: str, fields: list[str] = fields) -> str:
                return fields[col[name]] if name in col else default

            sex = get("SEX", "0")
            sex = {"M": "1", "F": "2", "m": "1", "f": "2"}.get(sex, sex)
            samples.append(
                Sample(
                    get("FID", get("IID", "")),
                    get("IID", ""),
                    get("PAT", "0"),
                    get("MAT", "0"),
                    sex if sex in ("1", "2") else "0",
                    fields[pheno_cols[0]] if pheno_cols else "-9",
                )
            )
    if not samples:
        raise UserError(f"{path}: the .psam file lists no sample")
    check_unique_samples(samples, path, first_line=2)
    return samples


def read_pvar(path: Path) -> list[Variant]:
    if not path.is_file():
        raise UserError(f"{path}: no such file", hint="a PLINK 2 fileset needs its .pvar file")
    variants: list[Variant] = []
    header: dict[str, int] | None = None
    with path.open() as fh:
        for lineno, line in enumerate(fh, start=1):
            if line.startswith("##"):
                continue
            fields = line.split()
            if not fields:
                continue
            if fields[0] == "#CHROM":
                header = {name: i for i, name in enumerate(fields)}
                missing = [c for c in ("#CHROM", "POS", "ID", "REF", "ALT") if c not in header]
                if missing:
                    raise UserError(f"{path}:{lineno}: the header lacks {', '.join(missing)}")
                continue
            where = f"{path}:{lineno}"
            if header is None:
                if len(fields) != 6:
                    raise UserError(
                        f"{where}: a header-less .pvar line has the 6 columns of a .bim, this "
                        f"one {len(fields)}: {line.strip()!r}"
                    )
                chrom, snp, cm, bp, alt, ref = fields
            else:
                if len(fields) != len(header):
                    raise UserError(
                        f"{where}: the header has {len(header)} columns, this line "
                        f"{len(fields)}: {line.strip()!r}"
                    )
                chrom = fields[header["#CHROM"]]
                snp = fields[header["ID"]]
                bp = fields[header["POS"]]
                ref = fields[header["REF"]]
                alt = fields[header["ALT"]]
                cm = fields[header["CM"]] if "CM" in header else "0"
            if "," in alt:
                raise UserError(
                    f"{where}: SNP {snp} has {alt.count(',') + 1} ALT alleles ({alt}); the "
                    "allelic test needs biallelic variants",
                    hint="split or drop multi-allelic variants first, e.g. "
                    "`plink2 --pfile P --max-alleles 2 --make-pgen --out P2`",
                )
            code = chromosome(chrom, where, snp)
            variants.append(Variant(code, snp, cm, bp, alt, ref, line=lineno))
    if not variants:
        raise UserError(f"{path}: the .pvar file lists no variant")
    return variants


def _pgen_reader(pgen: Path, n_samples: int, n_variants: int) -> GenotypeReader:
    import pgenlib

    def read(rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp]) -> npt.NDArray[np.int8]:
        subset = np.ascontiguousarray(rows, dtype=np.uint32)
        full = len(subset) == n_samples
        reader = pgenlib.PgenReader(
            bytes(pgen),
            raw_sample_ct=n_samples,
            sample_subset=None if full else subset,
        )
        try:
            out = np.empty((len(cols), len(subset)), dtype=np.int8)
            if len(cols):
                reader.read_list(np.ascontiguousarray(cols, dtype=np.uint32), out)
        finally:
            reader.close()
        out[out == PGEN_MISSING] = MISSING_INT8
        return np.ascontiguousarray(out.T)

    return read


def open_pfile(prefix: str) -> Fileset:
    """Read and check PREFIX.pgen, PREFIX.pvar, PREFIX.psam."""
    pgen, pvar, psam = (Path(f"{prefix}.{ext}") for ext in ("pgen", "pvar", "psam"))
    samples = read_psam(psam)
    variants = read_pvar(pvar)
    if not pgen.is_file():
        raise UserError(f"{pgen}: no such file", hint="a PLINK 2 fileset needs its .pgen file")
    import pgenlib

    try:
        reader = pgenlib.PgenReader(bytes(pgen), raw_sample_ct=len(samples))
    except Exception as err:
        raise UserError(f"{pgen}: not a readable .pgen file ({err})") from err
    try:
        if reader.get_variant_ct() != len(variants):
            raise UserError(
                f"{pgen}: holds {reader.get_variant_ct()} variants, {pvar.name} lists "
                f"{len(variants)}",
                hint="the three files of a fileset must come from the same run",
            )
    finally:
        reader.close()
    return Fileset(
        prefix,
        pgen,
        pvar,
        psam,
        samples,
        variants,
        _pgen_reader(pgen, len(samples), len(variants)),
        kind="PLINK 2 fileset",
    )


def write_pfile(prefix: Path, fileset: Fileset) -> None:
    """Write a fileset as PLINK 2 files (.pgen through pgenlib's writer, .pvar, .psam with
    PLINK 2's headers): how the tests make PLINK 2 inputs of a cohort."""
    import pgenlib

    n, m = fileset.n_samples, fileset.n_variants
    with Path(f"{prefix}.psam").open("w") as fh:
        fh.write("#FID\tIID\tPAT\tMAT\tSEX\tPHENO1\n")
        for s in fileset.samples:
            sex = s.sex if s.sex in ("1", "2") else "NA"
            fh.write(f"{s.fid}\t{s.iid}\t{s.father}\t{s.mother}\t{sex}\t{s.phenotype}\n")
    with Path(f"{prefix}.pvar").open("w") as fh:
        fh.write("##fileformat=PVARv1.0\n#CHROM\tPOS\tID\tREF\tALT\tCM\n")
        for v in fileset.variants:
            fh.write(f"{v.chrom}\t{v.bp}\t{v.snp}\t{v.a2}\t{v.a1}\t{v.cm}\n")
    writer = pgenlib.PgenWriter(bytes(Path(f"{prefix}.pgen")), n, m, False)
    try:
        for start in range(0, m, 1024):
            block = fileset.read_block(start, min(m, start + 1024))
            for j in range(block.shape[1]):
                col = block[:, j].astype(np.int8)
                col[col == MISSING_INT8] = PGEN_MISSING
                writer.append_biallelic(np.ascontiguousarray(col))
    finally:
        writer.close()
