"""A negative test for every malformed input `hec gwas chisq` refuses: each a `UserError` naming
the file and the sample or SNP; and no result file is left behind by a failed run (only the
.log, which says the run failed and ends with the error)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gwas_fixtures import write_fileset

from compiler.errors import UserError
from gwas import chisq as chisq_module
from gwas.chisq import ChisqOptions, run_chisq


def small_fileset(directory: Path, **kw: object) -> Path:
    rng = np.random.default_rng(3)
    g = rng.integers(0, 3, size=(12, 5)).astype(np.float64)
    pheno = kw.pop("pheno", ["2"] * 6 + ["1"] * 6)
    return write_fileset(directory / "c", g, pheno, **kw)  # type: ignore[arg-type]


def run(prefix: Path, tmp_path: Path, **kw: object) -> chisq_module.ChisqResult:
    opts = ChisqOptions(
        bfile=str(prefix), out=str(tmp_path / "out"), cache_dir=tmp_path / "cache",
        progress=False, plots=False, backend="sim",
    )  # fmt: skip
    for k, v in kw.items():
        setattr(opts, k, v)
    return run_chisq(opts)


def outputs(tmp_path: Path) -> list[str]:
    """The run's files other than its failure log; the log, when there, must say the run failed
    and end with the error."""
    log = tmp_path / "out.log"
    if log.exists():
        lines = log.read_text().splitlines()
        at = lines.index("RUN FAILED: no result file was written.")
        assert lines[at + 1].startswith("error: ")  # the error (and its hint) end the log
    return sorted(
        p.name
        for p in tmp_path.iterdir()
        if p.name.startswith(("out", ".out")) and p.name != "out.log"
    )


def test_bed_size_not_matching_bim_and_fam(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    bed = prefix.with_suffix(".bed")
    bed.write_bytes(bed.read_bytes()[:-2])
    with pytest.raises(UserError) as err:
        run(prefix, tmp_path)
    msg = str(err.value)
    assert str(bed) in msg and "c.bim" in msg and "c.fam" in msg
    assert "5 SNPs x 12 samples" in msg and f"size {3 + 5 * 3 - 2} bytes" in msg
    assert outputs(tmp_path) == []


def test_bad_magic_number(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    bed = prefix.with_suffix(".bed")
    data = bytearray(bed.read_bytes())
    data[0] = 0x00
    bed.write_bytes(bytes(data))
    with pytest.raises(
        UserError, match=r"c\.bed: not a PLINK 1 \.bed file: it starts with bytes 00 1b 01"
    ):
        run(prefix, tmp_path)
    assert outputs(tmp_path) == []


def test_individual_major_bed(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    bed = prefix.with_suffix(".bed")
    data = bytearray(bed.read_bytes())
    data[2] = 0x00
    bed.write_bytes(bytes(data))
    with pytest.raises(UserError, match="individual-major"):
        run(prefix, tmp_path)


def test_phenotype_file_with_unknown_id(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    pheno = tmp_path / "p.txt"
    pheno.write_text("f0 i0 2\nf1 i1 1\nfX iNOPE 2\n")
    with pytest.raises(UserError) as err:
        run(prefix, tmp_path, pheno=str(pheno))
    msg = str(err.value)
    assert f"{pheno}:3" in msg and "fX iNOPE" in msg and "c.fam" in msg
    assert outputs(tmp_path) == []


def test_phenotype_file_with_duplicate_and_short_lines(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    pheno = tmp_path / "p.txt"
    pheno.write_text("f0 i0 2\nf0 i0 1\n")
    with pytest.raises(UserError, match=r"p\.txt:2: sample f0 i0 already has a phenotype"):
        run(prefix, tmp_path, pheno=str(pheno))
    pheno.write_text("f0 i0\n")
    with pytest.raises(
        UserError, match=r"p\.txt:1: a phenotype line needs FID, IID and value column 1"
    ):
        run(prefix, tmp_path, pheno=str(pheno))


def test_quantitative_phenotype_names_the_sample(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path, pheno=["2"] * 6 + ["1"] * 5 + ["3.7"])
    with pytest.raises(UserError, match=r"c\.fam:12: sample f11 i11 has phenotype '3\.7'"):
        run(prefix, tmp_path)


def test_no_controls(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path, pheno=["2"] * 10 + ["-9"] * 2)
    with pytest.raises(UserError, match="10 cases and 0 controls"):
        run(prefix, tmp_path)


def test_unknown_chromosome_names_the_file_line_and_snp(tmp_path: Path) -> None:
    """X, Y, MT and chr prefixes are PLINK's codes now (test_plink_parity.py); a contig PLINK
    1.9 does not know without --allow-extra-chr is refused by line and SNP."""
    prefix = small_fileset(tmp_path, chromosome=["1", "1", "chrUn_gl000220", "1", "1"])
    with pytest.raises(UserError, match=r"c\.bim:3: SNP s2 is on chromosome 'chrUn_gl000220'"):
        run(prefix, tmp_path)
    assert outputs(tmp_path) == []


def test_fam_line_with_wrong_column_count(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    fam = prefix.with_suffix(".fam")
    lines = fam.read_text().splitlines()
    lines[4] = lines[4] + " extra"
    fam.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"c\.fam:5: a \.fam line has 6 columns, this one has 7"):
        run(prefix, tmp_path)


def test_missing_bim(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    prefix.with_suffix(".bim").unlink()
    with pytest.raises(UserError, match=r"c\.bim: no such file"):
        run(prefix, tmp_path)


def test_all_missing_and_monomorphic_snps_are_na_and_named_in_the_log(tmp_path: Path) -> None:
    """PLINK prints NA for these; so do we, and the log names them."""
    rng = np.random.default_rng(4)
    g = rng.integers(0, 3, size=(12, 5)).astype(np.float64)
    g[:, 1] = np.nan
    g[:, 3] = 2.0
    prefix = write_fileset(tmp_path / "c", g, ["2"] * 6 + ["1"] * 6)
    result = run(prefix, tmp_path)
    assert np.isnan(result.chisq[[1, 3]]).all() and np.isfinite(result.chisq[[0, 2, 4]]).all()
    assert "no call among the analysed samples (CHISQ, P, OR = NA): 1 [s1]" in result.log_text
    assert "monomorphic among the called samples (CHISQ, P, OR = NA): 1 [s3]" in result.log_text
    text = (tmp_path / "out.assoc").read_text().splitlines()
    assert text[2].split()[-3:] == ["NA", "NA", "NA"] and text[4].split()[-3:] == ["NA"] * 3


def test_failed_run_leaves_no_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while writing (here: the QQ plot) removes every temporary file and renames
    nothing: no file that looks finished."""
    prefix = small_fileset(tmp_path)

    def broken(*args: object, **kw: object) -> float:
        raise RuntimeError("disk full")

    monkeypatch.setattr(chisq_module, "qq_plot", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        run(prefix, tmp_path, plots=True)
    assert outputs(tmp_path) == []


def test_out_directory_must_exist(tmp_path: Path) -> None:
    prefix = small_fileset(tmp_path)
    opts = ChisqOptions(bfile=str(prefix), out=str(tmp_path / "nope" / "x"), progress=False)
    with pytest.raises(UserError, match="does not exist"):
        run_chisq(opts)
