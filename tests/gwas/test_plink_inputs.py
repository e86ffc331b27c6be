"""Issue 28's "Why", kept as regression tests (each named after what broke), and a negative test
for every new user-facing error of the PLINK 2 / VCF readers, the phenotype options and the
filters: each a `UserError` naming the file and line, sample or SNP; nothing left behind that
looks complete (only a .log saying the run failed)."""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import numpy as np
import pytest
from gwas_fixtures import plink, write_fileset

from compiler.errors import UserError
from gwas.adjust import plink_lambda
from gwas.chisq import ChisqOptions, ChisqResult, run_chisq
from gwas.filters import Selection, hwe_exact
from gwas.plink import open_fileset
from gwas.progress import Progress
from hec.cli import build_parser


def small(directory: Path, **kw: object) -> Path:
    rng = np.random.default_rng(5)
    g = rng.integers(0, 3, size=(12, 6)).astype(np.float64)
    pheno = kw.pop("pheno", ["2"] * 6 + ["1"] * 6)
    return write_fileset(directory / "c", g, pheno, **kw)  # type: ignore[arg-type]


def run(tmp_path: Path, **kw: object) -> ChisqResult:
    opts = ChisqOptions(bfile=None, out=str(tmp_path / "out"), cache_dir=tmp_path / "cache",
                        progress=False, plots=False, backend="sim")  # fmt: skip
    for k, v in kw.items():
        setattr(opts, k, v)
    return run_chisq(opts)


def nothing_complete(tmp_path: Path) -> None:
    """No result file; the .log says the run failed and ends with the error."""
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("out", ".out")))
    assert left == ["out.log"], left
    lines = (tmp_path / "out.log").read_text().splitlines()
    at = lines.index("RUN FAILED: no result file was written.")
    assert lines[at + 1].startswith("error: ")


# --- the "Why" -------------------------------------------------------------------------


def test_plink_options_were_unrecognized_arguments() -> None:
    """Every option the geneticist tried failed with "unrecognized arguments"."""
    args = build_parser().parse_args(
        ["gwas", "chisq", "--bfile", "x", "--out", "o", "--allow-no-sex", "--keep", "k",
         "--remove", "r", "--extract", "e", "--exclude", "x", "--chr", "1-22,X", "--maf",
         "0.01", "--geno", "0.1", "--mind", "0.1", "--hwe", "1e-6", "--ci", "0.95", "--adjust",
         "--pheno", "p", "--pheno-name", "P1", "--mpheno", "1", "--1", "--from-bp", "1",
         "--to-bp", "9", "--counts", "--update-sex", "s"]
    )  # fmt: skip
    assert args.one_based and args.allow_no_sex and args.adjust and args.ci == 0.95
    # PLINK's defaults for the QC thresholds given without a value
    args = build_parser().parse_args(
        ["gwas", "chisq", "--bfile", "x", "--out", "o", "--geno", "--mind", "--maf"]
    )
    assert (args.geno, args.mind, args.maf) == (0.1, 0.1, 0.01)


def test_lambda_was_median_over_04549_where_plink_adjust_uses_0456_floored_at_1() -> None:
    """λ 1.0196 (median / 0.4549) against PLINK's 1.01727 (median / 0.456) on one cohort."""
    median = 0.46385
    chi = np.array([0.1, median, 3.0])
    assert plink_lambda(chi) == pytest.approx(median / 0.456)
    assert plink_lambda(np.array([0.1, 0.2, 0.3])) == 1.0  # below 1: PLINK prints 1


def test_two_sample_fileset_failed_parameter_search(tmp_path: Path) -> None:
    """A 2-sample fileset ended in "no CKKS parameters give 40.0 bits"; PLINK prints CHISQ 1.333,
    P 0.2482 for its polymorphic SNP."""
    g = np.array([[0, 1, 2], [1, 1, 0]], dtype=np.float64)
    prefix = write_fileset(tmp_path / "t", g, ["2", "1"])
    plink("--bfile", "t", "--assoc", "--out", "p", cwd=tmp_path)
    result = run(tmp_path, bfile=str(prefix))
    assert f"{result.chisq[0]:.4g}" == "1.333" and f"{result.p[0]:.4g}" == "0.2482"
    theirs = (tmp_path / "p.assoc").read_text().split()
    assert "1.333" in theirs and "0.2482" in theirs


def test_one_sex_chromosome_or_chr_prefix_refused_the_whole_run(tmp_path: Path) -> None:
    prefix = small(tmp_path, chromosome=["chr1", "X", "Y", "MT", "XY", "23"])
    result = run(tmp_path, bfile=str(prefix), allow_no_sex=True)
    assert [v.chrom for v in result.fileset.variants] == ["1", "23", "24", "26", "25", "23"]  # type: ignore[union-attr]
    assert result.program.name == "chisq_alleles.hec"  # haploid calls count one allele


def test_fid_iid_header_in_pheno_read_as_a_sample(tmp_path: Path) -> None:
    """'#FID IID' gave "sample #FID IID is not in ....fam"."""
    prefix = small(tmp_path, pheno=["-9"] * 12)
    pheno = tmp_path / "p.txt"
    pheno.write_text("#FID IID P1\n" + "".join(f"f{i} i{i} {1 + i % 2}\n" for i in range(12)))
    result = run(tmp_path, bfile=str(prefix), pheno=str(pheno))
    assert (result.n_cases, result.n_controls) == (6, 6)


def test_zero_one_phenotype_refused_without_a_hint_to_1(tmp_path: Path) -> None:
    prefix = small(tmp_path, pheno=["1"] * 6 + ["0"] * 6)
    with pytest.raises(UserError) as err:
        run(tmp_path, bfile=str(prefix))
    assert "only 0 and 1" in str(err.value) and "--1" in str(err.value)
    nothing_complete(tmp_path)
    result = run(tmp_path, bfile=str(prefix), one_based=True)
    assert (result.n_cases, result.n_controls) == (6, 6)


def test_phase_times_added_up_across_phases() -> None:
    """ "compute 67.5 s" when compute took 8.3 s: each bar now shows its own phase's time (here
    from a meter), with an ETA, and a phase is announced when it starts."""
    spent = {"encrypt": 60.0, "compute": 8.0}
    out = io.StringIO()
    progress = Progress(stream=out, seconds=lambda ph: spent.get(ph, 0.0))
    progress.start("read")
    progress("encrypt", 1, 2)
    progress("compute", 1, 2)
    text = out.getvalue()
    assert text.splitlines()[0].startswith("read")
    assert re.search(r"encrypt .* 1/2 blocks +60\.0s +ETA +60\.0s", text)
    assert re.search(r"compute .* 1/2 blocks +8\.0s +ETA +8\.0s", text)


def test_hwe_exact_known_values() -> None:
    """Wigginton et al.'s exact test: a balanced sample is in equilibrium; 50 + 50 homozygotes
    and no heterozygote is not."""
    assert hwe_exact(50, 25, 25) == pytest.approx(1.0)
    assert hwe_exact(0, 50, 50) < 1e-25
    assert hwe_exact(0, 0, 0) == 1.0


# --- phenotype options ------------------------------------------------------------------------


def test_unknown_phenotype_name_names_the_file_and_columns(tmp_path: Path) -> None:
    prefix = small(tmp_path)
    pheno = tmp_path / "p.txt"
    pheno.write_text("FID IID BMI T2D\n" + "".join(f"f{i} i{i} 20 2\n" for i in range(12)))
    with pytest.raises(UserError) as err:
        run(tmp_path, bfile=str(prefix), pheno=str(pheno), pheno_name="CAD")
    msg = str(err.value)
    assert f"{pheno}:1: --pheno-name CAD: no such phenotype column" in msg
    assert "BMI, T2D" in msg
    nothing_complete(tmp_path)


def test_pheno_name_needs_a_header(tmp_path: Path) -> None:
    prefix = small(tmp_path)
    pheno = tmp_path / "p.txt"
    pheno.write_text("".join(f"f{i} i{i} 2\n" for i in range(12)))
    with pytest.raises(UserError, match="the file has no header line"):
        run(tmp_path, bfile=str(prefix), pheno=str(pheno), pheno_name="P1")


def test_mpheno_beyond_the_columns_names_the_line(tmp_path: Path) -> None:
    prefix = small(tmp_path)
    pheno = tmp_path / "p.txt"
    pheno.write_text("".join(f"f{i} i{i} 2\n" for i in range(12)))
    with pytest.raises(UserError, match=r"p\.txt:1: a phenotype line needs FID, IID and value "):
        run(tmp_path, bfile=str(prefix), pheno=str(pheno), mpheno=2)


def test_exactly_one_genotype_input(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="exactly one of --bfile, --pfile, --vcf, --bcf"):
        run(tmp_path, bfile="a", vcf="b.vcf")


def test_from_bp_needs_one_chromosome(tmp_path: Path) -> None:
    prefix = small(tmp_path, chromosome=["1", "1", "1", "2", "2", "2"])
    with pytest.raises(UserError, match="--from-bp/--to-bp need the SNPs of one chromosome"):
        run(tmp_path, bfile=str(prefix), selection=Selection(from_bp=1, to_bp=3))


def test_keep_file_with_one_column_names_the_line(tmp_path: Path) -> None:
    prefix = small(tmp_path)
    keep = tmp_path / "k.txt"
    keep.write_text("f0 i0\ni1\n")
    with pytest.raises(UserError, match=r"k\.txt:2: --keep lines hold FID and IID"):
        run(tmp_path, bfile=str(prefix), selection=Selection(keep=str(keep)))


def test_unknown_chr_option(tmp_path: Path) -> None:
    prefix = small(tmp_path)
    with pytest.raises(UserError, match="--chr 1,chrUn: unknown chromosome 'chrUn'"):
        run(tmp_path, bfile=str(prefix), selection=Selection(chrom="1,chrUn"))


# --- VCF, BCF and PLINK 2 inputs --------------------------------------------------------------

HEADER = (
    "##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\tFORMAT\ts1\ts2\ts3\ts4\n"
)
GOOD = "1\t100\trs1\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1|1\t./.\n"


def _vcf(tmp_path: Path, *records: str, gz: bool = False) -> Path:
    text = HEADER + GOOD + "".join(records)
    if gz:
        path = tmp_path / "c.vcf.gz"
        with gzip.open(path, "wt") as fh:
            fh.write(text)
        return path
    path = tmp_path / "c.vcf"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("1\t200\trs2\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\n",
         r"c\.vcf:4: a record has 13 tab-separated columns \(9 \+ 4 samples\); this one has 12"),
        ("1\t200\trs2\tA\tG,T\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t0/2\n",
         r"c\.vcf:4: variant rs2 at 1:200 has 2 ALT alleles \(G,T\)"),
        ("1\t200\trs2\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t2/1\n",
         r"c\.vcf:4: variant rs2, sample s4: genotype '2/1' is not a biallelic call"),
        ("1\t200\trs2\tA\tG\t.\t.\t.\tDP\t3\t4\t5\t6\n", r"c\.vcf:4: variant rs2 has no GT"),
        ("chrUn\t200\trs2\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t0/0\n",
         r"c\.vcf:4: SNP rs2 is on chromosome 'chrUn'"),
        ("1\tx200\trs2\tA\tG\t.\t.\t.\tGT\t0/0\t0/1\t1/1\t0/0\n",
         r"c\.vcf:4: variant rs2: POS 'x200' is not a position"),
    ],
)  # fmt: skip
def test_malformed_vcf_record_names_the_line(tmp_path: Path, record: str, message: str) -> None:
    path = _vcf(tmp_path, record)
    with pytest.raises(UserError, match=message):
        run(tmp_path, vcf=str(path))
    nothing_complete(tmp_path)


def test_vcf_gz_reads_like_vcf(tmp_path: Path) -> None:
    from gwas.vcf import open_vcf

    rec = "X\t300\trs3\tC\tT\t.\t.\t.\tGT:DP\t1:4\t0/1:3\t0:2\t.:1\n"
    plain = open_vcf(str(_vcf(tmp_path, rec)))
    packed = open_vcf(str(_vcf(tmp_path, rec, gz=True)))
    block = plain.read_block(0, 2)
    assert np.array_equal(block, packed.read_block(0, 2))
    # haploid calls count as homozygous (1 -> 2 ALT copies), as plink --vcf stores them
    assert block[:, 1].tolist() == [2, 1, 0, -127] and block[:, 0].tolist() == [0, 1, 2, -127]
    assert [v.chrom for v in plain.variants] == ["1", "23"]


def test_not_a_vcf(tmp_path: Path) -> None:
    path = tmp_path / "c.vcf"
    path.write_text("hello\tworld\n")
    with pytest.raises(UserError, match=r"c\.vcf:1: expected the VCF header line"):
        run(tmp_path, vcf=str(path))


def test_multiallelic_pvar_line_names_the_snp(tmp_path: Path) -> None:
    from gwas.pgen import write_pfile

    prefix = small(tmp_path)
    write_pfile(tmp_path / "p2", open_fileset(str(prefix)))
    pvar = tmp_path / "p2.pvar"
    lines = pvar.read_text().splitlines()
    fields = lines[4].split("\t")
    fields[4] = "A,T"
    lines[4] = "\t".join(fields)
    pvar.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=r"p2\.pvar:5: SNP s2 has 2 ALT alleles"):
        run(tmp_path, pfile=str(tmp_path / "p2"))
    nothing_complete(tmp_path)


def test_pgen_with_other_variant_count(tmp_path: Path) -> None:
    from gwas.pgen import write_pfile

    prefix = small(tmp_path)
    write_pfile(tmp_path / "p2", open_fileset(str(prefix)))
    pvar = tmp_path / "p2.pvar"
    pvar.write_text("".join(pvar.read_text().splitlines(keepends=True)[:-1]))
    with pytest.raises(UserError, match=r"p2\.pgen: holds 6 variants, p2\.pvar lists 5"):
        run(tmp_path, pfile=str(tmp_path / "p2"))


def test_plink2_iid_only_pheno_header(tmp_path: Path) -> None:
    """PLINK 2 writes phenotype files with a `#IID` header and no FID column."""
    prefix = small(tmp_path, pheno=["-9"] * 12)
    pheno = tmp_path / "p.txt"
    pheno.write_text("#IID T2D\n" + "".join(f"i{i} {1 + i % 2}\n" for i in range(12)))
    result = run(tmp_path, bfile=str(prefix), pheno=str(pheno), pheno_name="T2D")
    assert (result.n_cases, result.n_controls) == (6, 6)
    pheno.write_text("#IID T2D\nnobody 2\n")
    with pytest.raises(UserError, match=r"p\.txt:2: sample nobody nobody is not in"):
        run(tmp_path, bfile=str(prefix), pheno=str(pheno))
