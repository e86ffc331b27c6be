"""Packed counts end to end (issue 20): chisq.hec and chisq_missing.hec compiled to the coeff
layout, run through the four roles of the generated program, give exactly the integer counts
numpy gives (three ways: plaintext reference, simulator exact and noisy, encrypted run); two
data owners encrypting their own rows give the same counts; the encrypt role writes the bytes
the report states; an owner who forgets an input the packed value needs is told which."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from cpp_target_common import ROOT

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from driver.run import Built, compile_cpp
from targets.sim.simulator import simulate

CASES = [
    # One prime at n = 2^12, two SNPs per coefficient (small N leaves room).
    ("examples/gwas/chisq.hec", "N=40,M=300", False),
    # Four counts per SNP, the called indicator.
    ("examples/gwas/chisq_missing.hec", "N=60,M=5000", True),
]


def cohort(n: int, m: int, missing: bool, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    S = rng.binomial(2, rng.uniform(0.05, 0.5, m), size=(n, m)).astype(np.uint8)
    y = (rng.random(n) < 0.5).astype(np.uint8)
    out = {"y": y, "S": S}
    if missing:
        C = (rng.random((n, m)) >= 0.1).astype(np.uint8)
        out["S"] = S * C
        out["C"] = C
    return out


def expected(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    y = data["y"].astype(np.float64)
    S = data["S"].astype(np.float64)
    want = {"n11": y @ S, "c1": S.sum(axis=0)}
    if "C" in data:
        C = data["C"].astype(np.float64)
        want |= {"ncase": y @ C, "called": C.sum(axis=0)}
    else:
        want["cases"] = np.asarray(y.sum())
    return want


def run(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Built]:
    base = tmp_path_factory.mktemp("packed")
    return {
        path: compile_cpp(ROOT / path, base / Path(path).stem, Options(sizes=Sizes.parse(sizes)))
        for path, sizes, _ in CASES
    }


@pytest.mark.parametrize(("path", "sizes", "missing"), CASES, ids=[c[0] for c in CASES])
def test_counts_are_exact_three_ways(
    built: dict[str, Built], path: str, sizes: str, missing: bool, tmp_path: Path
) -> None:
    n, m = (int(kv.split("=")[1]) for kv in sizes.split(","))
    data = cohort(n, m, missing, seed=5)
    want = expected(data)
    comp = compile_file(ROOT / path, Options(sizes=Sizes.parse(sizes)))
    for noisy in (False, True):
        sim = simulate(comp.program, {"N": n, "M": m}, data, noisy=noisy, seed=3).outputs
        for name, w in want.items():
            assert np.array_equal(sim[name], w), (name, noisy)
    binary = built[path].binary
    files = {}
    for name, value in data.items():
        files[name] = tmp_path / f"{name}.npy"
        np.save(files[name], value)
    assert run(binary, "keygen", "--out", str(tmp_path / "k")).returncode == 0
    # Two data owners, each encrypting its own rows.
    half = n // 2
    for a, b in ((0, half), (half, n)):
        part = {}
        for name, value in data.items():
            part[name] = tmp_path / f"{name}-{a}.npy"
            np.save(part[name], value[a:b])
        args = [x for k, f in part.items() for x in ("--input", f"{k}={f}")]
        done = run(binary, "encrypt", "--pk", str(tmp_path / "k" / "public"), *args,
                   "--rows", f"{a}:{b}", "--out", str(tmp_path / "ct"))  # fmt: skip
        assert done.returncode == 0, done.stderr
    written = sum(f.stat().st_size for f in (tmp_path / "ct").glob("*.cts"))
    report = report_of(comp)
    assert abs(written - report["sizes"]["upload_per_individual"] * n) <= 0.01 * written
    # No key switch: keygen writes no evaluation key, only the key-set description (and the
    # server's copy of the run manifest).
    assert report["keys"]["eval_key_bytes"] == 0
    assert sorted(f.name for f in (tmp_path / "k" / "eval").iterdir()) == ["keyset", "manifest"]
    done = run(binary, "compute", "--eval", str(tmp_path / "k" / "eval"), "--in",
               str(tmp_path / "ct"), "--out", str(tmp_path / "res"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "res").glob("*.cts"))) == 1  # one result holds every count
    done = run(binary, "decrypt", "--sk", str(tmp_path / "k" / "secret"), "--in",
               str(tmp_path / "res"), "--out", str(tmp_path / "dec"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name, w in want.items():
        got = np.load(tmp_path / "dec" / f"{name}.npy")
        assert got.shape == w.shape and np.array_equal(got, w), name


def test_owner_must_give_every_input_of_a_packed_value(
    built: dict[str, Built], tmp_path: Path
) -> None:
    path, _, _ = CASES[0]
    binary = built[path].binary
    assert run(binary, "keygen", "--out", str(tmp_path / "k")).returncode == 0
    data = cohort(40, 300, False, seed=1)
    np.save(tmp_path / "S.npy", data["S"])
    done = run(binary, "encrypt", "--pk", str(tmp_path / "k" / "public"), "--input",
               f"S={tmp_path / 'S.npy'}", "--out", str(tmp_path / "ct"))  # fmt: skip
    assert done.returncode == 2
    assert "give --input for y as well" in done.stderr
    assert not (tmp_path / "ct").exists()


def test_a_count_outside_its_domain_is_refused(built: dict[str, Built], tmp_path: Path) -> None:
    path, _, _ = CASES[0]
    binary = built[path].binary
    assert run(binary, "keygen", "--out", str(tmp_path / "k")).returncode == 0
    data = cohort(40, 300, False, seed=1)
    data["S"][3, 7] = 3  # not a minor-allele count: the radix would no longer be proven
    args = []
    for name, value in data.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    done = run(binary, "encrypt", "--pk", str(tmp_path / "k" / "public"), *args,
               "--out", str(tmp_path / "ct"))  # fmt: skip
    assert done.returncode == 1
    assert "element 907 is 3, outside its declared domain {0, 1, 2}" in done.stderr
    assert not (tmp_path / "ct").exists()
