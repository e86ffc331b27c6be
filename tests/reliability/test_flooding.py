"""Noise flooding of revealed CKKS values (issue 25; docs/security.md, "Noise flooding"): the
generated program's decrypt role adds, by default, Gaussian noise of the standard deviation the
compiler wrote into the program (compiler/analysis/flooding.py) to every inexact revealed
value; `--no-flooding` reveals the values unflooded with a warning. The key-recovery attack
itself is runtime/tests/ckks/flooding_test.cpp."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
from reliability_common import ROOT, new_run, ok, reference, refused

from compiler.analysis.flooding import flooding_cost_bits, flooding_factor
from driver.run import Built


def _compiled_sigmas(built: Built) -> dict[str, float]:
    """Each output's flooding sigma as the emitter wrote it into the program's description."""
    text = "\n".join(p.read_text() for p in built.directory.rglob("*.cpp"))
    found = re.findall(
        r's\.outputs\.push_back\(\{"(\w+)".*?\n'
        r"\s*s\.outputs\.back\(\)\.flood_sigma = ([0-9.e+-]+);",
        text,
    )
    return {name: float(sigma) for name, sigma in found}


def _factor(res: Path, name: str) -> float:
    meta = (res / f"{name}.cts.meta").read_text().splitlines()
    return float(next(ln.split()[1] for ln in meta if ln.startswith("factor")))


def test_the_cost_is_the_stated_one() -> None:
    # sigma_f / sigma_e = 2^20 · sqrt(2^23) at s = 40, D = 2^24: 31.5 bits
    assert math.isclose(flooding_factor(), 2.0**20 * 2.0**11.5)
    assert math.isclose(flooding_cost_bits(), 31.5, abs_tol=1e-6)
    assert flooding_cost_bits(30) < flooding_cost_bits(40) < flooding_cost_bits(60)


def _range_bounds(program: str, sizes: str, *extra: str) -> dict[str, dict]:
    """Each output of `hec report --json`: its range (times any public factor) and bits."""
    done = subprocess.run(
        [sys.executable, "-m", "hec", "report", program, "--size", sizes, "--json", *extra],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    return {o["name"]: o for o in json.loads(done.stdout)["outputs"]}


def _measured_bits(got: np.ndarray, want: np.ndarray, rng: list[float]) -> float:
    err = float(np.max(np.abs(got - want)))
    bound = max(abs(rng[0]), abs(rng[1]))
    return math.inf if err == 0 else math.log2(bound) - math.log2(err)


def test_decrypt_floods_with_the_compiled_sigma_and_keeps_the_promise(
    chisq: Built, tmp_path: Path
) -> None:
    """Compiled with flooding budgeted (the default), the flooded values keep the promised 19
    bits relative to their range bounds; flooding makes them measurably noisier than the
    unflooded ones, which keep about 31.5 bits more."""
    sigmas = _compiled_sigmas(chisq)
    assert set(sigmas) == {"chi2_num", "chi2_den", "or_num", "or_den"}
    assert all(s > 0 for s in sigmas.values())
    outputs = _range_bounds("examples/gwas/chisq_numerators.hec", "N=40,M=10")
    for o in outputs.values():
        assert o["flooded_precision_bits"] >= 19.0 - 0.01, o
    run = new_run(chisq.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    ok(chisq.binary, *run.compute_args(ct, res))
    want = reference(run.y, run.S)

    # Unflooded: a warning naming the risk.
    err = ok(chisq.binary, *run.decrypt_args(res, tmp_path / "plain"))
    assert "WARNING: decrypt --no-flooding" in err and "secret key" in err
    # Flooded (the default): no warning, every output within its promise.
    dec = tmp_path / "flooded"
    err = ok(chisq.binary, *run.decrypt_args(res, dec, flooding=True))
    assert "WARNING" not in err
    for name, w in want.items():
        flooded = np.load(dec / f"{name}.npy")
        plain = np.load(tmp_path / "plain" / f"{name}.npy")
        rng = outputs[name]["range"]
        bits = _measured_bits(flooded, w, rng)
        assert bits >= 19.0, (name, bits)
        assert _measured_bits(plain, w, rng) > bits + 20, name  # the noise is there


def test_a_program_compiled_without_flooding_refuses_to_be_flooded(tmp_path: Path) -> None:
    """`hec compile --no-flooding` (single-party use) keeps its promise only unflooded: decrypt
    with flooding would leave noise, so it refuses before decrypting anything, naming the
    output and the ways out."""
    from compiler.analysis.sizes import Sizes
    from driver.pipeline import Options
    from driver.run import compile_cpp

    built = compile_cpp(
        ROOT / "examples/gwas/chisq_numerators.hec",
        tmp_path / "prog",
        Options(sizes=Sizes.parse("N=40,M=10"), flooding=False),
    )
    run = new_run(built.binary, tmp_path / "run")
    ct, res = tmp_path / "ct", tmp_path / "res"
    run.encrypt("A", ct)
    run.encrypt("B", ct)
    ok(built.binary, *run.compute_args(ct, res))
    dec = tmp_path / "flooded"
    line = refused(built.binary, *run.decrypt_args(res, dec, flooding=True))
    assert "noise flooding" in line and "bits of precision" in line, line
    assert "--no-flooding" in line and re.search(
        r"output '(chi2_num|chi2_den|or_num|or_den)'", line
    )
    assert not dec.exists() or not list(dec.glob("*.npy"))
    ok(built.binary, *run.decrypt_args(res, tmp_path / "plain"))  # unflooded it decrypts


def test_no_parameters_keep_the_promise_after_flooding_is_an_error() -> None:
    """When no 128-bit parameter set keeps the promise after flooding, compilation fails
    naming the output, the bits it reaches and what flooding costs; --no-flooding compiles."""
    args = [sys.executable, "-m", "hec", "report", "examples/gwas/chisq_numerators.hec",
            "--size", "N=40,M=10", "--precision-bits", "50"]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "precision promise after noise flooding" in done.stderr
    assert re.search(r"chi2_num reaches at most [0-9.]+ of 50 bits", done.stderr)
    assert "costs 31.5 bits" in done.stderr and "--no-flooding" in done.stderr
    assert subprocess.run([*args, "--no-flooding"], capture_output=True, cwd=ROOT).returncode == 0


def test_no_flooding_compiles_the_parameters_of_before() -> None:
    """--no-flooding (hec run, hec gwas) holds the target without the flooding budget: the
    small parameters, about 19.5 bits; the default buys the 31.5 bits back."""
    plain = _range_bounds("examples/gwas/chisq_numerators.hec", "N=40,M=10", "--no-flooding")
    flooded = _range_bounds("examples/gwas/chisq_numerators.hec", "N=40,M=10")
    for name, o in plain.items():
        assert 19.0 - 0.01 <= o["precision_bits"] < 19.0 + 31.5, o
        assert flooded[name]["precision_bits"] >= 19.0 + 31.5 - 0.01, flooded[name]


def test_the_report_states_the_cost(tmp_path: Path) -> None:
    """`hec report` gives each flooded output's precision after flooding and the cost."""
    done = subprocess.run(
        [sys.executable, "-m", "hec", "report", "examples/gwas/chisq_numerators.hec",
         "--size", "N=40,M=10", "--json"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    report = json.loads(done.stdout)
    jsonschema.validate(report, json.loads((ROOT / "tests/report.schema.json").read_text()))
    flooding = report["flooding"]
    assert flooding["statistical_bits"] == 40 and flooding["reveal_budget_log2"] == 24
    assert flooding["cost_bits"] == 31.5
    assert sorted(flooding["flooded_outputs"]) == ["chi2_den", "chi2_num", "or_den", "or_num"]
    for o in report["outputs"]:
        assert math.isclose(o["flooded_precision_bits"], o["precision_bits"] - 31.5, abs_tol=0.02)
    text = subprocess.run(
        [sys.executable, "-m", "hec", "report", "examples/gwas/chisq_numerators.hec",
         "--size", "N=40,M=10"],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    assert "costing 31.5 bits of precision" in text and "with flooding)" in text
