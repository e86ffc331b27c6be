"""The multi-site workflow: the walkthrough of docs/multisite.md, run command by command as a
user would (three sites, one server, one coordinator, on one machine), must end with the same
.assoc and .assoc.adjusted as `hec gwas chisq` on the pooled fileset; and every error a site or
the server can meet names the site, the file and line, and the SNP, and leaves no upload that
looks complete."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.errors import UserError
from gwas import multisite
from gwas.assoc import compare_with_plink, read_assoc
from gwas.chisq import ChisqOptions

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "multisite.md"


def walkthrough_commands() -> list[str]:
    """The chi-square walkthrough's commands (the logistic one follows it in the doc and has
    its own test, tests/gwas/test_multisite_logistic.py)."""
    chisq = DOC.read_text().split("\n## Logistic regression with covariates over sites")[0]
    return re.findall(r"```sh\n(.*?)```", chisq, re.S)


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory, program_cache: Path) -> Path:
    assert shutil.which("plink1.9"), "plink1.9 is not installed (scripts/setup installs it)"
    directory = tmp_path_factory.mktemp("multisite")
    script = "set -euo pipefail\n" + "\n".join(walkthrough_commands())
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),  # this checkout's hec, not the one the venv was installed from
        "HEC_CACHE_DIR": str(program_cache),
    }
    result = subprocess.run(
        ["bash", "-c", script], cwd=directory, env=env, capture_output=True, text=True,
        check=False, timeout=900,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return directory


def test_walkthrough_equals_the_pooled_one_machine_run(walked: Path) -> None:
    """The doc's last block runs `cmp` itself; this states it again and looks at the log."""
    assert (walked / "gwas.assoc").read_bytes() == (walked / "onemachine.assoc").read_bytes()
    assert (walked / "gwas.assoc.adjusted").read_bytes() == (
        walked / "onemachine.assoc.adjusted"
    ).read_bytes()
    log = (walked / "gwas.log").read_text()
    assert "no site's own counts" in log and "128-bit security" in log
    # the filters removed SNPs, as on one machine
    assert re.search(r"--maf 0.08: [1-9]\d* SNPs removed", log)
    assert re.search(r"--geno 0.015: \d+ SNPs removed", log)
    # ... and the same as plink1.9 on the pooled fileset with the same filters
    subprocess.run(
        ["plink1.9", "--bfile", "pooled", "--assoc", "--ci", "0.95", "--geno", "0.015", "--hwe",
         "0.01", "--maf", "0.08", "--out", "plink"], cwd=walked, capture_output=True, check=True,
    )  # fmt: skip
    ours, theirs = read_assoc(walked / "gwas.assoc"), read_assoc(walked / "plink.assoc")
    agreeing, problems = compare_with_plink(ours, theirs)
    assert len(ours) == len(theirs) == agreeing < 300, problems[:5]
    # site B's flips and site C's swapped allele order were found and undone
    b = (walked / "upload-B" / "site.json").read_text()
    c = (walked / "upload-C" / "site.json").read_text()
    assert '"flipped": 0' not in b and '"swapped": 300' in c
    # nothing but ciphertexts and the summary leave a site
    names = {p.suffix for p in (walked / "upload-A" / "ciphertexts").iterdir()}
    assert names <= {".cts", ".meta"}


def _site_opts(bfile: Path) -> ChisqOptions:
    return ChisqOptions(bfile=str(bfile), out="unused", progress=False, plots=False)


def _copy_site(walked: Path, tmp_path: Path, name: str) -> Path:
    for ext in ("bed", "bim", "fam"):
        shutil.copy(walked / f"{name}.{ext}", tmp_path / f"{name}.{ext}")
    return tmp_path / name


def test_allele_mismatch_names_site_file_line_and_snp(
    walked: Path, tmp_path: Path, program_cache: Path
) -> None:
    prefix = _copy_site(walked, tmp_path, "siteB")
    bim = prefix.with_suffix(".bim")
    lines = bim.read_text().splitlines()
    fields = lines[6].split("\t")
    shared = {
        line.split()[1]: line.split() for line in (walked / "pooled.bim").read_text().splitlines()
    }[fields[1]]
    # an allele pair that is neither the shared pair, its reverse nor a complement of either
    other = next(
        (a, b)
        for a in "ACGT"
        for b in "ACGT"
        if a != b
        and {a, b} != {shared[4], shared[5]}
        and {a, b} != {multisite.COMPLEMENT[shared[4]], multisite.COMPLEMENT[shared[5]]}
    )
    fields[4], fields[5] = other
    lines[6] = "\t".join(fields)
    bim.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError) as err:
        multisite.prepare(walked / "study", "B", _site_opts(prefix), tmp_path / "up",
                          cache_dir=program_cache)  # fmt: skip
    msg = str(err.value)
    assert f"site B: SNP {fields[1]}: alleles {other[0]}/{other[1]} in {bim}:7" in msg
    assert not (tmp_path / "up").exists()


def test_site_missing_shared_snps_is_an_error(
    walked: Path, tmp_path: Path, program_cache: Path
) -> None:
    src = _copy_site(walked, tmp_path, "siteA")
    subprocess.run(
        ["plink1.9", "--bfile", str(src), "--exclude-snp", "null_5", "--make-bed", "--out",
         str(tmp_path / "fewer")], capture_output=True, check=True,
    )  # fmt: skip
    with pytest.raises(UserError) as err:
        multisite.prepare(walked / "study", "A", _site_opts(tmp_path / "fewer"),
                          tmp_path / "up", cache_dir=program_cache)  # fmt: skip
    msg = str(err.value)
    assert "site A: 1 SNP(s) of the shared list are not in" in msg and "null_5" in msg
    assert str(tmp_path / "fewer.bim") in msg
    assert not (tmp_path / "up").exists()


def test_strand_ambiguous_drop_is_counted(
    walked: Path, tmp_path: Path, program_cache: Path
) -> None:
    summary = multisite.prepare(
        walked / "study", "A", _site_opts(walked / "siteA"), tmp_path / "up", "drop",
        program_cache,
    )  # fmt: skip
    assert summary["alignment"]["ambiguous dropped"] == 100
    assert summary["alignment"]["ambiguous"] == 0


def test_site_with_more_samples_than_its_rows(walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"site A: 600 samples, more than the 220 rows"):
        multisite.prepare(walked / "study", "A", _site_opts(walked / "pooled"), tmp_path / "up")


def test_unknown_site_and_missing_upload(walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"site Z is not in the study"):
        multisite.prepare(walked / "study", "Z", _site_opts(walked / "siteA"), tmp_path / "up")
    with pytest.raises(UserError, match=r"no upload from site\(s\) C"):
        multisite.compute(walked / "study", [walked / "upload-A", walked / "upload-B"],
                          tmp_path / "res", None)  # fmt: skip
    assert not (tmp_path / "res").exists()
