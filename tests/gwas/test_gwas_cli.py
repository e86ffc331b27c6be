"""`hec gwas chisq` and `hec demo` from the command line; the .assoc format written and read
back; the compiled-program cache; the backend labels on every output."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from gwas_fixtures import PlinkCohort

from gwas import BACKEND_NAMES, DEFAULT_BACKEND
from gwas.assoc import AssocRow, format_number, read_assoc, snp_column_width, write_assoc
from gwas.backend import BACKENDS
from gwas.demo import run_demo
from hec.cli import main

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_gwas_chisq_command_encrypted_by_default(
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "res"
    args = ["gwas", "chisq", "--bfile", str(complete_cohort.prefix), "--out", str(out),
            "--cache-dir", str(program_cache), "--no-progress"]  # fmt: skip
    assert main(args) == 0
    stdout = capsys.readouterr().out
    assert "hec gwas chisq: --backend encrypted (encrypted)" in stdout
    assert "SIMULATION" not in stdout
    for suffix in (".assoc", ".manhattan.png", ".qq.png", ".log"):
        assert (tmp_path / f"res{suffix}").is_file(), suffix
    for png in ("res.manhattan.png", "res.qq.png"):
        assert (tmp_path / png).read_bytes()[:8] == PNG_MAGIC
    log = (tmp_path / "res.log").read_text()
    assert "backend: --backend encrypted (encrypted)" in log
    assert "compute (server: evaluation keys only" in log
    assert "security: 128-bit" in log
    assert "revealed to the coordinator (decrypted): n11, c1, cases: the allele counts" in log
    assert "decrypted counts are exact integers" in log
    for phase in ("read", "scan", "compile", "keygen", "encrypt", "compute", "decrypt", "client"):
        assert f"\n  {phase:<10} " in log, phase
    assert "(the role's process)" in log
    assert "ciphertext files in " in log and "GiB per block" in log
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    # A second run finds the compiled program (IR and C++ build) in the cache; HEC_SCRATCH
    # moves the ciphertext files, which are gone afterwards.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("HEC_SCRATCH", str(scratch))
    assert main(args) == 0
    log = (tmp_path / "res.log").read_text()
    assert "(hit)" in log
    assert f"ciphertext files in {scratch} (HEC_SCRATCH" in log
    assert list(scratch.iterdir()) == []


def test_gwas_chisq_sim_backend_is_labeled_a_simulation(
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "res"
    args = ["gwas", "chisq", "--bfile", str(complete_cohort.prefix), "--out", str(out),
            "--cache-dir", str(program_cache), "--no-progress", "--backend", "sim"]  # fmt: skip
    assert main(args) == 0
    stdout = capsys.readouterr().out
    assert "--backend sim (SIMULATION, not encrypted)" in stdout
    assert "nothing was encrypted" in stdout
    log = (tmp_path / "res.log").read_text()
    assert "backend: --backend sim (SIMULATION, not encrypted)" in log
    assert "no security claim applies to this run" in log
    assert "\n  simulate " in log and "\n  encrypt " not in log
    assert (tmp_path / "res.qq.png").read_bytes()[:8] == PNG_MAGIC


def test_gwas_error_confidence_reaches_the_compiler_and_the_log(
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--error-confidence on `hec gwas` (issue 19): the compiled program's error bounds fail
    with the probability asked for (its cache entry is another one), and the .log says so; a
    probability out of range is refused by the option itself."""
    args = ["gwas", "linear", "--bfile", str(complete_cohort.prefix), "--cache-dir",
            str(program_cache), "--no-progress", "--backend", "sim", "--no-plots"]  # fmt: skip
    assert main([*args, "--out", str(tmp_path / "a"), "--error-confidence", "2^-40"]) == 0
    assert "fails with probability at most 2^-40 per value" in (tmp_path / "a.log").read_text()
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    assert "fails with probability at most 2^-32 per value" in (tmp_path / "b.log").read_text()
    failures = {
        float(line.split("error_failure_log2 = ")[1].split(" ")[0])
        for f in program_cache.glob("*/program.mlir")
        for line in f.read_text().splitlines()
        if "error_failure_log2 = " in line
    }
    assert {-40.0, -32.0} <= failures
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main([*args, "--out", str(tmp_path / "c"), "--error-confidence", "0.5"])
    assert refused.value.code == 2
    assert "--error-confidence" in capsys.readouterr().err
    assert not (tmp_path / "c.assoc").exists()


def test_gwas_chisq_covar_is_ignored_with_a_warning_or_refused_when_missing(
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--covar` on chisq was dropped by the command line before it reached the test: neither
    plink1.9's warning nor the check of the file happened (found by the logistic22 helper)."""
    args = ["gwas", "chisq", "--bfile", str(complete_cohort.prefix), "--cache-dir",
            str(program_cache), "--no-progress", "--backend", "sim", "--no-plots"]  # fmt: skip
    code = main([*args, "--out", str(tmp_path / "a"), "--covar", str(tmp_path / "none.covar")])
    assert code == 1
    assert "none.covar: no such file (--covar)" in capsys.readouterr().err
    assert not (tmp_path / "a.assoc").exists()
    covar = tmp_path / "c.covar"
    fam = Path(str(complete_cohort.prefix) + ".fam").read_text().splitlines()
    covar.write_text("".join(f"{line.split()[0]} {line.split()[1]} 1.5\n" for line in fam))
    assert main([*args, "--out", str(tmp_path / "b"), "--covar", str(covar)]) == 0
    assert "Warning: ignoring --covar" in (tmp_path / "b.log").read_text()


def test_gwas_chisq_user_error_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["gwas", "chisq", "--bfile", str(tmp_path / "none"), "--out", str(tmp_path / "o")])
    assert code == 1
    assert "none.fam: no such file" in capsys.readouterr().err


def test_backend_names_match_the_registry() -> None:
    assert set(BACKEND_NAMES) == set(BACKENDS)
    assert DEFAULT_BACKEND in BACKENDS
    for name, make in BACKENDS.items():
        backend = make()
        assert backend.name == name
        if not backend.encrypts:
            assert (
                "SIMULATION" in backend.description
                and "Nothing is encrypted" in backend.description
            )


def test_assoc_written_and_read_back(tmp_path: Path) -> None:
    rows = [
        AssocRow("1", "rs1", "100", "A", None, None, "G", 3.4644781, 0.06270028, 0.5643564),
        AssocRow("22", "a_much_longer_name", "5", "T", 0.25, 0.125, "C", None, None, None),
        AssocRow("1", "x", "7", "C", None, None, "A", 0.0, 1.0, None),
        AssocRow("3", "y", "9", "G", None, None, "T", 1234.5678901, 1.23456789e-300, 12.5),
    ]
    path = tmp_path / "r.assoc"
    write_assoc(path, rows)
    back = read_assoc(path)
    for a, b in zip(rows, back, strict=True):
        for col in ("chrom", "snp", "bp", "a1", "a2"):
            assert getattr(a, col) == getattr(b, col)
        for col in ("f_a", "f_u", "chisq", "p", "odds"):
            x, y = getattr(a, col), getattr(b, col)
            if x is None or y is None:
                assert x is None and y is None, col
            else:
                assert math.isclose(x, y, rel_tol=1e-6), col
    lines = path.read_text().splitlines()
    assert lines[0].split() == ["CHR", "SNP", "BP", "A1", "F_A", "F_U", "A2", "CHISQ", "P", "OR"]
    # At least 6 significant digits.
    assert "3.464478" in lines[1] and "1234.568" in lines[4] and "1.234568e-300" in lines[4]
    assert all(len(line) == len(lines[0]) for line in lines)  # space-padded columns


def test_snp_column_width_follows_plink() -> None:
    assert snp_column_width(["s0", "s1"]) == 4
    assert snp_column_width(["null_0", "disease_2"]) == 11
    assert snp_column_width(["snp_long_name_0"]) == 17
    assert format_number(None) == "NA" and format_number(float("nan")) == "NA"
    assert format_number(0.0) == "0"


def test_read_assoc_refuses_other_files(tmp_path: Path) -> None:
    from compiler.errors import UserError

    path = tmp_path / "x.assoc"
    path.write_text("CHR SNP BP A1 A2 P\n")
    with pytest.raises(UserError, match="not an --assoc file"):
        read_assoc(path)
    path.write_text(" CHR SNP BP A1 F_A F_U A2 CHISQ P OR\n 1 s 1 A NA NA C oops 1 1\n")
    with pytest.raises(UserError, match=r"x\.assoc:2: column CHISQ holds 'oops'"):
        read_assoc(path)


def test_demo_finds_planted_associations(tmp_path: Path) -> None:
    demo = run_demo(tmp_path / "d", n=1500, m=2000, n_causal=4, seed=8, progress=False,
                    cache_dir=tmp_path / "cache", backend="sim")  # fmt: skip
    assert demo.result.program.name == "chisq.hec"
    assert demo.max_rel_error <= 1e-4 and demo.max_abs_error_small <= 1e-6
    top = set(np.argsort(demo.result.p)[:10].tolist())
    assert len(top & set(demo.cohort.causal.tolist())) >= 3
    assert "--backend sim (SIMULATION, not encrypted)" in demo.text
    assert "top 15 SNPs by P (* = planted)" in demo.text
    for name in ("demo.assoc", "demo.manhattan.png", "demo.qq.png", "demo.log", "cohort.bed"):
        assert (tmp_path / "d" / name).is_file()


def test_demo_with_missing_calls_uses_the_missing_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["demo", "--dir", str(tmp_path / "d"), "--n", "300", "--m", "1500",
                 "--causal", "3", "--missing-rate", "0.03", "--no-progress", "--backend", "sim",
                 "--cache-dir", str(tmp_path / "cache")])  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "program: chisq_missing.hec" in text
    assert "--backend sim (SIMULATION, not encrypted)" in text


@pytest.mark.slow
def test_demo_encrypted_default_size(tmp_path: Path) -> None:
    """`hec demo` as scripts/demo runs it: 2,000 x 20,000, encrypted."""
    demo = run_demo(tmp_path / "d", progress=False, cache_dir=tmp_path / "cache")
    assert demo.result.backend.encrypts
    assert demo.max_rel_error <= 1e-4 and demo.max_abs_error_small <= 1e-6
    top = set(np.argsort(demo.result.p)[:15].tolist())
    assert len(top & set(demo.cohort.causal.tolist())) >= 6


def test_program_cache_key_covers_the_runtime_sources(tmp_path: Path) -> None:
    """A cached gwas program binary was served after the runtime it links had changed (its
    container format, stop 36): the key's digest now covers the runtime's sources too."""
    from gwas.backend import tree_digest

    (tmp_path / "compiler").mkdir()
    (tmp_path / "compiler" / "a.py").write_text("x = 1\n")
    (tmp_path / "runtime" / "core").mkdir(parents=True)
    header = tmp_path / "runtime" / "core" / "serialize.h"
    header.write_text("constexpr int kFormatVersion = 3;\n")
    before = tree_digest(tmp_path)
    header.write_text("constexpr int kFormatVersion = 4;\n")
    after = tree_digest(tmp_path)
    assert after != before
    (tmp_path / "runtime" / "core" / "notes.txt").write_text("not a source\n")
    assert tree_digest(tmp_path) == after
