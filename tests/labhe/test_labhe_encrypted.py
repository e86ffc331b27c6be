"""The labeled target end to end (issue 24): generated programs built and run by every role on
encrypted data, three ways (plaintext reference, the plan's exact integer reference, encrypted
run), with many providers; results independent of the upload order; and the refusals: a
wrong label set, another provider's key, a result decrypted by another labeled program."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from compiler.labhe_plan import evaluate_plain
from driver.labhe import BuiltLabhe, build_labhe, compile_labhe_file, run_labhe_roles
from driver.pipeline import Options
from hec.cli import main

ROOT = Path(__file__).resolve().parents[2]
MEANCOV = ROOT / "examples/stats/meancov.hec"
GRS = ROOT / "examples/stats/grs.hec"
CHISQ = ROOT / "examples/stats/chisq_numerators.hec"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")


def _built(path: Path, sizes: str, where: Path) -> BuiltLabhe:
    return build_labhe(
        compile_labhe_file(path, Options(sizes=Sizes.parse(sizes), scheme="labhe")), where
    )


@pytest.fixture(scope="module")
def meancov(tmp_path_factory: pytest.TempPathFactory) -> BuiltLabhe:
    return _built(MEANCOV, "N=24,D=3", tmp_path_factory.mktemp("meancov"))


def _x() -> np.ndarray:
    return np.random.default_rng(11).integers(-10, 11, (24, 3)).astype(float)


def test_meancov_three_ways_exact_and_order_free(meancov: BuiltLabhe, tmp_path: Path) -> None:
    x = _x()
    xc = x - x.mean(axis=0)
    plain = {"means": x.mean(axis=0), "scatter": xc.T @ xc, "sumsq": np.sum(xc**2, axis=0)}
    exact = evaluate_plain(meancov.comp.plan, {"X": x})
    first, logs = run_labhe_roles(meancov.binary, meancov.comp, {"X": x}, tmp_path / "a", 3)
    again, _ = run_labhe_roles(
        meancov.binary, meancov.comp, {"X": x}, tmp_path / "b", 3, upload_order=[2, 0, 1]
    )
    for name, want in plain.items():
        np.testing.assert_array_equal(first[name], exact[name])
        np.testing.assert_allclose(first[name], want, rtol=1e-15, atol=1e-12)
        np.testing.assert_array_equal(again[name], first[name])
    assert "128-bit security" in logs["setup"]
    assert "result 4632 bytes" in logs["evaluate"] or "result" in logs["evaluate"]


def test_grs_three_ways_with_a_model_owner(tmp_path: Path) -> None:
    built = _built(GRS, "N=6,M=4", tmp_path / "build")
    rng = np.random.default_rng(12)
    data = {
        "G": rng.integers(0, 3, (6, 4)).astype(float),
        "a": rng.uniform(-1, 1, 4),
        "b": rng.uniform(-1, 1, 4),
        "c": np.array(0.75),
    }
    got, _ = run_labhe_roles(
        built.binary, built.comp, data, tmp_path, 3, owners={"a": 3, "b": 3, "c": 3}
    )
    exact = evaluate_plain(built.comp.plan, data)
    np.testing.assert_array_equal(got["score"], exact["score"])
    want = (data["G"] ** 2) @ data["a"] + data["G"] @ data["b"] + data["c"]
    assert np.max(np.abs(got["score"] - want)) < 4 * 4 * 2.0**-19 + 2.0**-15


def test_chisq_numerators_one_provider_per_individual(tmp_path: Path) -> None:
    n, m = 12, 3
    built = _built(CHISQ, f"N={n},M={m}", tmp_path / "build")
    rng = np.random.default_rng(13)
    y = rng.integers(0, 2, n).astype(float)
    s = rng.integers(0, 3, (n, m)).astype(float)
    got, _ = run_labhe_roles(built.binary, built.comp, {"y": y, "S": s}, tmp_path, n)
    d = 2 * n
    np.testing.assert_array_equal(got["t"], (y @ s) * d - s.sum(axis=0) * 2 * y.sum())
    np.testing.assert_array_equal(got["c1"], s.sum(axis=0))
    np.testing.assert_array_equal(got["r1"], 2 * y.sum())


def test_hec_run_scheme_labhe(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    x = _x()
    np.save(tmp_path / "X.npy", x)
    for extra in ([], ["--sim"]):
        out = tmp_path / f"out{len(extra)}"
        args = ["run", "--scheme", "labhe", str(MEANCOV), "--input", f"X={tmp_path / 'X.npy'}"]
        assert main([*args, "--out", str(out), "--providers", "2", *extra]) == 0
        xc = x - x.mean(axis=0)
        np.testing.assert_allclose(np.load(out / "cov.npy"), xc.T @ xc / 23, rtol=1e-14)
    assert "labhe-exact-integer-reference" in capsys.readouterr().out


def _roles(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)


def test_refusals(meancov: BuiltLabhe, tmp_path: Path) -> None:
    b = meancov.binary
    keys, work = tmp_path / "keys", tmp_path / "work"
    work.mkdir()
    assert _roles(b, "setup", "--out", str(keys), "--providers", "2").returncode == 0
    pk = ["--pk", str(keys / "public.key")]
    # Another provider's key.
    bad = _roles(
        b,
        "encrypt-offline",
        *pk,
        "--key",
        str(keys / "provider-1.key"),
        "--provider",
        "0",
        "--out",
        str(work / "o0"),
    )
    assert bad.returncode == 1 and "key of provider 1, not of provider 0" in bad.stderr
    assert not (work / "o0").exists()
    # A wrong label set: provider 0 owns rows 0:12, the file has 11.
    ok = _roles(
        b,
        "encrypt-offline",
        *pk,
        "--key",
        str(keys / "provider-0.key"),
        "--provider",
        "0",
        "--out",
        str(work / "o0"),
    )
    assert ok.returncode == 0, ok.stderr
    np.save(work / "x0.npy", _x()[:11])
    wrong = _roles(
        b,
        "encrypt-online",
        *pk,
        "--key",
        str(keys / "provider-0.key"),
        "--provider",
        "0",
        "--offline",
        str(work / "o0"),
        "--input",
        f"X={work / 'x0.npy'}",
        "--out",
        str(work / "u" / "p0.upload"),
    )
    assert wrong.returncode == 1 and "owns rows 0:12 of 'X'" in wrong.stderr
    # The server refuses an incomplete label set.
    np.save(work / "x0.npy", _x()[:12])
    (work / "u").mkdir()
    ok = _roles(
        b,
        "encrypt-online",
        *pk,
        "--key",
        str(keys / "provider-0.key"),
        "--provider",
        "0",
        "--offline",
        str(work / "o0"),
        "--input",
        f"X={work / 'x0.npy'}",
        "--out",
        str(work / "u" / "p0.upload"),
    )
    assert ok.returncode == 0, ok.stderr
    missing = _roles(b, "evaluate", *pk, "--in", str(work / "u"), "--out", str(work / "r"))
    assert missing.returncode == 1 and "no upload from provider 1" in missing.stderr
    assert not (work / "r").exists()


def test_another_labeled_program_cannot_decrypt(meancov: BuiltLabhe, tmp_path: Path) -> None:
    other = _built(MEANCOV, "N=24,D=2", tmp_path / "other")
    run_labhe_roles(meancov.binary, meancov.comp, {"X": _x()}, tmp_path / "run", 2)
    keys, work = tmp_path / "run" / "keys", tmp_path / "run" / "work"
    done = _roles(
        other.binary,
        "decrypt-online",
        "--pk",
        str(keys / "public.key"),
        "--sk",
        str(keys / "receiver.secret"),
        "--masks",
        str(work / "masks.bin"),
        "--in",
        str(work / "result.bin"),
        "--out",
        str(tmp_path / "dec"),
    )
    assert done.returncode == 1
    assert "made for another labeled program" in done.stderr
    assert not (tmp_path / "dec").exists()


def test_paillier_variant(tmp_path: Path) -> None:
    comp = compile_labhe_file(
        MEANCOV, Options(sizes=Sizes.parse("N=6,D=2"), scheme="labhe", labhe_linear="paillier")
    )
    built = build_labhe(comp, tmp_path / "build")
    x = np.random.default_rng(14).integers(-10, 11, (6, 2)).astype(float)
    got, logs = run_labhe_roles(built.binary, comp, {"X": x}, tmp_path, 2)
    xc = x - x.mean(axis=0)
    np.testing.assert_allclose(got["scatter"], xc.T @ xc, rtol=1e-15, atol=1e-12)
    assert "paillier" in logs["setup"]


def test_compile_writes_the_plan_and_refuses_size_mismatch(tmp_path: Path) -> None:
    out = tmp_path / "prog"
    args = ["compile", "--scheme", "labhe", str(MEANCOV), "--size", "N=5,D=2", "-o", str(out)]
    assert main([*args, "--no-build"]) == 0
    cpp = (out / "meancov.cpp").read_text()
    assert "hec-labhe-plan 1" in cpp and "program_main" in cpp
    np.save(tmp_path / "X.npy", np.zeros((4, 2)))
    with pytest.raises(Exception, match="exact sizes"):
        from driver.labhe import run_labhe

        run_labhe(
            MEANCOV,
            {"X": tmp_path / "X.npy"},
            tmp_path / "o",
            Options(sizes=Sizes.parse("N=5"), scheme="labhe"),
            sim=True,
        )
