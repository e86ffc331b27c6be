"""The multi-site logistic GWAS (issue 22): the walkthrough of docs/multisite.md's logistic
section, run command by command (three sites, one server, one coordinator, on one machine),
must end with the STAT of `hec gwas logistic` on the pooled data (R^2 >= 0.999, the same top
hits) and of the plaintext `semi_parallel`; and every error of the rounds (out of order, a
missing site, a stale theta, another key, a value outside the declared range, ...) names the
round, the site or the file and line, and leaves nothing that looks complete."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from compiler.errors import UserError
from gwas import multisite, multisite_logistic
from gwas.chisq import ChisqOptions
from gwas.demo_logistic import read_logistic
from gwas.logistic import r_squared, semi_parallel
from gwas.plink import open_fileset

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "multisite.md"
SECTION = "\n## Logistic regression with covariates over sites"


def walkthrough_commands() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", DOC.read_text().split(SECTION)[1], re.S)


def _env(program_cache: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),  # this checkout's hec, not the one the venv was installed from
        "HEC_CACHE_DIR": str(program_cache),
    }


@pytest.fixture(scope="module")
def walked(tmp_path_factory: pytest.TempPathFactory, program_cache: Path) -> Path:
    assert shutil.which("plink1.9"), "plink1.9 is not installed (scripts/setup installs it)"
    directory = tmp_path_factory.mktemp("multisite-logistic")
    script = "set -euo pipefail\n" + "\n".join(walkthrough_commands())
    result = subprocess.run(
        ["bash", "-c", script], cwd=directory, env=_env(program_cache), capture_output=True,
        text=True, check=False, timeout=1200,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (directory / "walkthrough.out").write_text(result.stdout)
    return directory


def _stat(path: Path) -> tuple[list[str], np.ndarray, list[str]]:
    rows = read_logistic(path)
    return list(rows), np.array([r[1] for r in rows.values()]), [r[0] for r in rows.values()]


def _top(names: list[str], stat: np.ndarray, k: int = 10) -> set[str]:
    order = np.argsort(-np.nan_to_num(np.abs(stat), nan=-1.0))
    return {names[int(j)] for j in order[:k]}


def test_walkthrough_equals_the_one_machine_run(walked: Path) -> None:
    """Against `hec gwas logistic` on the pooled fileset and covariates (encrypted): the same
    SNPs and A1, R^2 of STAT >= 0.999 and the same top 10 hits; measured: every printed digit
    equal (largest |difference| 0, which the doc's last block prints)."""
    ours_names, ours, ours_a1 = _stat(walked / "gwas.assoc.logistic")
    one_names, one, one_a1 = _stat(walked / "onemachine.assoc.logistic")
    assert ours_names == one_names and ours_a1 == one_a1
    assert r_squared(ours, one) >= 0.999
    assert _top(ours_names, ours) == _top(one_names, one)
    ok = np.isfinite(ours) & np.isfinite(one)
    assert np.array_equal(np.isfinite(ours), np.isfinite(one))
    largest = float(np.max(np.abs(ours[ok] - one[ok])))
    assert largest <= 1e-3  # 4 significant digits printed; measured 0
    assert "largest |STAT difference|: 0\n" in (walked / "walkthrough.out").read_text()
    log = (walked / "gwas.log").read_text()
    assert "pooled logistic regression over 3 sites" in log and "128-bit security" in log
    assert "no site's own sums" in log and "theta final at round" in log
    for suffix in (".manhattan.png", ".qq.png"):
        assert (walked / f"gwas{suffix}").is_file()


def test_walkthrough_agrees_with_the_plaintext_semi_parallel(
    walked: Path, tmp_path: Path, program_cache: Path
) -> None:
    """The coordinator's unrounded STAT (finish again on the walkthrough's results) against the
    float64 statistic on the pooled plaintext (covariates standardized, as one machine does):
    R^2 >= 0.999, the same top 10, |difference| <= 1e-6 (measured about 1e-11)."""
    again = multisite_logistic.finish(walked / "study", walked / "results", tmp_path / "again",
                                      plots=False, cache_dir=program_cache)  # fmt: skip
    fileset = open_fileset(str(walked / "pooled"))
    lines = (walked / "pooled.covar").read_text().splitlines()[1:]
    cov = np.array([[float(v) for v in line.split()[2:]] for line in lines])
    y = np.array([float(s.phenotype) - 1.0 for s in fileset.samples])
    g = fileset.read_block(0, fileset.n_variants).astype(np.float64)
    swap = np.array([a != v.a1 for a, v in zip(again.a1, fileset.variants, strict=True)])
    s = np.where(swap, 2.0 - g, g)
    x = np.column_stack([np.ones(len(y)), (cov - cov.mean(0)) / cov.std(0)])
    want = semi_parallel(x, y, s)["STAT"]
    assert r_squared(again.stat, want) >= 0.999
    assert _top(again.snps, again.stat) == _top(again.snps, want)
    assert np.array_equal(np.isfinite(again.stat), np.isfinite(want))
    ok = np.isfinite(want)
    largest = float(np.max(np.abs(again.stat[ok] - want[ok])))
    print(f"largest |STAT - float64 STAT|: {largest:.3g}")
    assert largest <= 1e-6
    assert again.log_text.count("written:") == 1


def test_rounds_and_uploads_are_as_documented(walked: Path) -> None:
    study = multisite.load_study(walked / "study")
    rounds = study.rounds()
    assert [r["round"] for r in rounds] == list(range(len(rounds)))
    assert rounds[-1]["final"] and not any(r["final"] for r in rounds[:-1])
    assert rounds[-1]["theta"] == rounds[-2]["theta"]  # the final theta is the last round's
    assert rounds[-1]["last_step"] <= rounds[-1]["tolerance"]
    fit = json.loads((walked / "upload-A" / "site.json").read_text())
    assert fit["kind"] == "snps" and fit["round"] == rounds[-1]["round"]
    assert set(fit["keys_sha256"]) == {"keys", "qc-keys"}
    c = json.loads((walked / "upload-C" / "site.json").read_text())
    assert c["alignment"]["swapped"] == 200  # site C's allele order undone
    names = {p.suffix for p in (walked / "fit-A-0" / "ciphertexts").iterdir()}
    assert names <= {".cts", ".meta"}  # nothing but ciphertexts and the summary leave a site


# --- errors: one negative test per message -------------------------------------------------


def _opts(walked: Path, site: str, covar: Path | None = None, bfile: Path | None = None):
    return ChisqOptions(bfile=str(bfile or walked / f"site{site}"), out="unused",
                        covar=str(covar or walked / f"site{site}.covar"), progress=False,
                        plots=False)  # fmt: skip


@pytest.fixture(scope="module")
def open_study(walked: Path, program_cache: Path, tmp_path_factory: pytest.TempPathFactory):
    """A second study of the walkthrough's data stepped once: round 1 is open, the sums and
    uploads of round 0 are stale."""
    d = tmp_path_factory.mktemp("open-study")
    sites, ranges = ["A=110", "B=110", "C=110"], ["pc=-5:5", "age=0:120"]
    multisite_logistic.setup(d / "study", walked / "pooled.bim", sites, ["pc", "age"], ranges,
                             cache_dir=program_cache)  # fmt: skip
    for s in "ABC":
        multisite_logistic.fit_round(d / "study", s, _opts(walked, s), d / f"fit-{s}-0",
                                     program_cache)  # fmt: skip
    uploads = [d / f"fit-{s}-0" for s in "ABC"]
    multisite.compute(d / "study", uploads, d / "res-0", program_cache)
    multisite_logistic.step(d / "study", d / "res-0", program_cache)
    return d


def test_a_round_run_out_of_order(open_study: Path, program_cache: Path) -> None:
    with pytest.raises(UserError, match=r"res-0: the sums of round 0, the study's current round "
                       r"is 1 \(run out of order"):  # fmt: skip
        multisite_logistic.step(open_study / "study", open_study / "res-0", program_cache)


def test_a_sites_theta_from_a_stale_round(open_study: Path, tmp_path: Path) -> None:
    uploads = [open_study / f"fit-{s}-0" for s in "ABC"]
    with pytest.raises(UserError, match=r"site A: .*fit-A-0 was made at round 0's theta, the "
                       r"study's current round is 1"):  # fmt: skip
        multisite.compute(open_study / "study", uploads, tmp_path / "res", None)
    assert not (tmp_path / "res").exists()


def test_a_missing_sites_upload(open_study: Path, tmp_path: Path) -> None:
    uploads = [open_study / f"fit-{s}-0" for s in "AB"]
    with pytest.raises(UserError, match=r"no upload from site\(s\) C"):
        multisite.compute(open_study / "study", uploads, tmp_path / "res", None)


def test_uploads_of_two_rounds(open_study: Path, tmp_path: Path) -> None:
    for s in "BC":
        shutil.copytree(open_study / f"fit-{s}-0", tmp_path / f"fit-{s}")
        meta = json.loads((tmp_path / f"fit-{s}" / "site.json").read_text())
        (tmp_path / f"fit-{s}" / "site.json").write_text(json.dumps({**meta, "round": 1}))
    uploads = [open_study / "fit-A-0", tmp_path / "fit-B", tmp_path / "fit-C"]
    with pytest.raises(UserError, match=r"site B: .*fit-B is the covariate fit's round 1, site "
                       r"A's .*fit-A-0 is the covariate fit's round 0"):  # fmt: skip
        multisite.compute(open_study / "study", uploads, tmp_path / "res", None)


def test_an_upload_under_another_key(open_study: Path, tmp_path: Path) -> None:
    shutil.copytree(open_study / "fit-B-0", tmp_path / "fit-B")
    meta = json.loads((tmp_path / "fit-B" / "site.json").read_text())
    meta["keys_sha256"] = {"fit-keys": "0" * 64}
    (tmp_path / "fit-B" / "site.json").write_text(json.dumps(meta))
    uploads = [open_study / "fit-A-0", tmp_path / "fit-B", open_study / "fit-C-0"]
    with pytest.raises(UserError, match=r"site B: .*fit-B was encrypted with another public key "
                       r"than this study's fit-keys"):  # fmt: skip
        multisite.compute(open_study / "study", uploads, tmp_path / "res", None)


def test_a_site_holding_another_studys_key(open_study: Path, walked: Path, tmp_path: Path) -> None:
    """The site's copy of the study has the walkthrough study's public key in fit-keys."""
    copy = tmp_path / "study"
    shutil.copytree(open_study / "study", copy)
    shutil.rmtree(copy / "fit-keys" / "public", ignore_errors=True)
    (copy / "fit-keys" / "public").unlink(missing_ok=True)
    src = walked / "study" / "fit-keys" / "public"
    (shutil.copytree if src.is_dir() else shutil.copy)(src, copy / "fit-keys" / "public")
    with pytest.raises(UserError, match=r"site A: .*fit-keys/public is not the public key of "
                       r"this study"):  # fmt: skip
        multisite_logistic.fit_round(copy, "A", _opts(walked, "A"), tmp_path / "up")
    assert not (tmp_path / "up").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".up.")]


def test_prepare_before_the_fit_converged(open_study: Path, walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"site A: the covariate fit has not converged \(round 1 "
                       r"is open\)"):  # fmt: skip
        multisite_logistic.prepare(open_study / "study", "A", _opts(walked, "A"), tmp_path / "u")


def test_fit_after_the_fit_converged(walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"site A: the covariate fit converged \(round \d+ is "
                       r"final\)"):  # fmt: skip
        multisite_logistic.fit_round(walked / "study", "A", _opts(walked, "A"), tmp_path / "u")
    with pytest.raises(UserError, match=r"the covariate fit already converged"):
        multisite_logistic.step(walked / "study", walked / "fit-results-0")


def test_finish_on_a_rounds_results(walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"fit-results-0: the server's results of a round of "
                       r"the covariate fit, not of the per-SNP inputs"):  # fmt: skip
        multisite_logistic.finish(walked / "study", walked / "fit-results-0", tmp_path / "g")
    assert not (tmp_path / "g.assoc.logistic").exists()
    assert "RUN FAILED" in (tmp_path / "g.log").read_text()


def test_a_covariate_outside_its_declared_range(
    open_study: Path, walked: Path, tmp_path: Path
) -> None:
    lines = (walked / "siteA.covar").read_text().splitlines()
    fields = lines[4].split()
    lines[4] = " ".join([*fields[:3], "130"])
    bad = tmp_path / "bad.covar"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(UserError, match=rf"bad\.covar:5: site A: age = 130 \(sample "
                       rf"{fields[0]} {fields[1]}\) is outside the study's declared range "
                       r"\[0, 120\]"):  # fmt: skip
        multisite_logistic.fit_round(open_study / "study", "A", _opts(walked, "A", bad),
                                     tmp_path / "up")  # fmt: skip
    assert not (tmp_path / "up").exists()


def test_a_site_without_covariates(open_study: Path, walked: Path, tmp_path: Path) -> None:
    opts = _opts(walked, "A")
    opts.covar = None
    with pytest.raises(UserError, match=r"site A: a logistic study needs --covar FILE"):
        multisite_logistic.fit_round(open_study / "study", "A", opts, tmp_path / "up")


def test_a_missing_genotype_call_names_the_site_and_snp(walked: Path, tmp_path: Path) -> None:
    from bed_reader import open_bed, to_bed

    with open_bed(walked / "siteB.bed") as bed:
        g = bed.read(dtype="float64")
        props = bed.properties
    g[3, 7] = np.nan
    to_bed(tmp_path / "siteB.bed", g, properties=props)
    snp = props["sid"][7]
    with pytest.raises(UserError, match=rf"site B: .*missing genotype calls in 1 shared SNP\(s\) "
                       rf"\({snp}\)"):  # fmt: skip
        opts = _opts(walked, "B", bfile=tmp_path / "siteB")
        multisite_logistic.prepare(walked / "study", "B", opts, tmp_path / "up")
    assert not (tmp_path / "up").exists()


def test_finish_refuses_a_site_whose_samples_changed(walked: Path, tmp_path: Path) -> None:
    shutil.copytree(walked / "results", tmp_path / "results")
    meta = json.loads((tmp_path / "results" / "uploads.json").read_text())
    meta["B"]["samples_analysed"] -= 1
    (tmp_path / "results" / "uploads.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match=r"site B: 99 analysed samples in the per-SNP upload, "
                       r"100 in the covariate fit"):  # fmt: skip
        multisite_logistic.finish(walked / "study", tmp_path / "results", tmp_path / "g")
    assert not (tmp_path / "g.assoc.logistic").exists()


def test_newton_step_tolerance_and_refusals() -> None:
    """The coordinator's step on plaintext sums: a step below max(1e-10, 4 x its error bound)
    is final; a singular information, one class only, and no convergence in 50 rounds are
    refused with the round."""
    info = np.array([[50.0, 5.0], [5.0, 20.0]])
    theta = np.zeros(2)
    small = np.array([1e-6, -1e-6])
    assert not multisite_logistic.newton_step(3, theta, small, info, (0.0, 0.0), ["pc"]).final
    noisy = multisite_logistic.newton_step(3, theta, small, info, (1e-6, 1e-6), ["pc"])
    assert noisy.final and noisy.tolerance > 1e-10
    with pytest.raises(UserError, match=r"round 3: the pooled information X'WX is singular"):
        multisite_logistic.newton_step(3, theta, small, np.ones((2, 2)), (0.0, 0.0), ["pc"])
    with pytest.raises(UserError, match=r"300 cases and 0 controls; the case/control test needs"):
        at_zero = np.array([[75.0, 0.0], [0.0, 20.0]])  # n = 4 x 75, cases = 150 + 150
        multisite_logistic.newton_step(0, theta, np.array([150.0, 0.0]), at_zero, (0.0, 0.0),
                                       ["pc"])  # fmt: skip
    with pytest.raises(UserError, match=r"does not converge in 50 Newton rounds \(a covariate "
                       r"separates cases from controls\)"):  # fmt: skip
        multisite_logistic.newton_step(49, theta, np.array([1.0, 1.0]), info, (0.0, 0.0), ["pc"])


@pytest.mark.parametrize(
    ("names", "ranges", "message"),
    [
        ([], [], r"needs --covar-name"),
        (["pc", "pc"], ["pc=-5:5"], r"--covar-name pc,pc: a name appears twice"),
        (["pc", "age"], ["pc=-5:5"], r"no --covar-range for age"),
        (["pc"], ["pc=5"], r"--covar-range 'pc=5': expected NAME=LO:HI"),
        (["pc"], ["pc=5:-5"], r"--covar-range 'pc=5:-5': LO must be below HI"),
        (["pc"], ["pc=-5:5", "bmi=10:60"], r"bmi is not in --covar-name pc"),
        (["pc"], ["pc=-5:5", "pc=-1:1"], r"--covar-range pc is given twice"),
        (["a", "b", "c", "d", "e", "f"], [], r"6 covariates; the program takes at most 5"),
    ],
)
def test_setup_refuses_bad_covariate_declarations(
    names: list[str], ranges: list[str], message: str, walked: Path, tmp_path: Path
) -> None:
    with pytest.raises(UserError, match=message):
        multisite_logistic.setup(tmp_path / "s", walked / "pooled.bim", ["A=10"], names, ranges)
    assert not (tmp_path / "s").exists()


def test_cli_refuses_chisq_options_on_a_logistic_study(
    walked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hec.cli import main

    code = main(["site", "finish", "--study", str(walked / "study"), "--results",
                 str(walked / "results"), "--out", str(tmp_path / "g"), "--adjust"])  # fmt: skip
    assert code == 1
    assert "--adjust, --ci and --counts belong to the chi-square test" in capsys.readouterr().err


@pytest.fixture(scope="module")
def chisq_study(walked: Path, program_cache: Path, tmp_path_factory: pytest.TempPathFactory):
    """A chi-square study of the same SNP list and rows."""
    d = tmp_path_factory.mktemp("chisq-study")
    multisite.setup(d / "study", walked / "pooled.bim", ["A=110", "B=110", "C=110"],
                    cache_dir=program_cache)  # fmt: skip
    return d / "study"


def test_logistic_steps_on_a_chisq_study(chisq_study: Path, walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"a chisq study \(set up without --test logistic\)"):
        multisite_logistic.fit_round(chisq_study, "A", _opts(walked, "A"), tmp_path / "up")
    uploads = [walked / f"fit-{s}-0" for s in "ABC"]
    with pytest.raises(UserError, match=r"a chi-square study has no covariate fit"):
        multisite.compute(chisq_study, uploads, tmp_path / "res", None)


def test_setup_refuses_an_unknown_test(walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--test linear: choose chisq or logistic"):
        multisite.setup(tmp_path / "s", walked / "pooled.bim", ["A=10"], test="linear")
    assert not (tmp_path / "s").exists()


def test_compute_refuses_forged_rounds(walked: Path, tmp_path: Path) -> None:
    final = multisite.load_study(walked / "study").rounds()[-1]["round"]
    (tmp_path / "f").mkdir()
    fits = []
    for s in "ABC":
        dst = tmp_path / "f" / f"fit-{s}"
        shutil.copytree(walked / f"fit-{s}-0", dst)
        meta = json.loads((dst / "site.json").read_text())
        (dst / "site.json").write_text(json.dumps({**meta, "round": final}))
        fits.append(dst)
    with pytest.raises(UserError, match=rf"the covariate fit converged at round {final}"):
        multisite.compute(walked / "study", fits, tmp_path / "res", None)
    with pytest.raises(UserError, match=r"--out .*: directory .*nowhere does not exist"):
        multisite.compute(walked / "study", [walked / f"upload-{s}" for s in "ABC"],
                          tmp_path / "nowhere" / "res", None)  # fmt: skip


def test_per_snp_inputs_before_the_fit_converged(
    open_study: Path, walked: Path, tmp_path: Path
) -> None:
    ups = []
    for s in "ABC":
        dst = tmp_path / f"upload-{s}"
        shutil.copytree(walked / f"upload-{s}", dst)
        meta = json.loads((dst / "site.json").read_text())
        meta["round"] = 1
        meta["keys_sha256"] = {}
        (dst / "site.json").write_text(json.dumps(meta))
        ups.append(dst)
    with pytest.raises(UserError, match=r"site A: per-SNP inputs before the covariate fit "
                       r"converged"):  # fmt: skip
        multisite.compute(open_study / "study", ups, tmp_path / "res", None)


def test_finish_before_the_fit_converged_and_on_stale_inputs(
    open_study: Path, walked: Path, tmp_path: Path
) -> None:
    with pytest.raises(UserError, match=r"the covariate fit has not converged \(round 1 is open"):
        multisite_logistic.finish(open_study / "study", walked / "results", tmp_path / "g")
    shutil.copytree(walked / "results", tmp_path / "results")
    meta = json.loads((tmp_path / "results" / "uploads.json").read_text())
    for site in meta.values():
        site["round"] = 2
    (tmp_path / "results" / "uploads.json").write_text(json.dumps(meta))
    with pytest.raises(UserError, match=r"results: the sites' inputs at round 2's theta, the "
                       r"final round is \d+"):  # fmt: skip
        multisite_logistic.finish(walked / "study", tmp_path / "results", tmp_path / "g")
    with pytest.raises(UserError, match=r"not the server's results \(no uploads.json"):
        multisite_logistic.step(open_study / "study", walked / "upload-A")


def test_site_errors_before_encrypting(open_study: Path, walked: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"site A: 300 samples, more than the 110 rows"):
        multisite_logistic.fit_round(open_study / "study", "A",
                                     _opts(walked, "A", walked / "pooled.covar",
                                           walked / "pooled"), tmp_path / "up")  # fmt: skip
    opts = _opts(walked, "A")
    opts.selection.maf = 0.05
    with pytest.raises(UserError, match=r"site A: --geno, --maf and --hwe need the pooled"):
        multisite_logistic.fit_round(open_study / "study", "A", opts, tmp_path / "up")
    assert not (tmp_path / "up").exists()


def test_cli_refuses_covariates_on_a_chisq_setup(
    walked: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hec.cli import main

    code = main(["site", "setup", "--study", str(tmp_path / "s"), "--snps",
                 str(walked / "pooled.bim"), "--site", "A=10", "--covar-name", "pc"])  # fmt: skip
    assert code == 1
    assert "--covar-name and --covar-range belong to --test logistic" in capsys.readouterr().err


def test_a_study_whose_setup_did_not_finish(walked: Path, tmp_path: Path) -> None:
    shutil.copytree(walked / "study", tmp_path / "study")
    shutil.rmtree(tmp_path / "study" / "rounds")
    with pytest.raises(UserError, match=r"study: no round of the covariate fit in .*rounds \(its "
                       r"setup did not finish\)"):  # fmt: skip
        multisite_logistic.fit_round(tmp_path / "study", "A", _opts(walked, "A"), tmp_path / "u")
