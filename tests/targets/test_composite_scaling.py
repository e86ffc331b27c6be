"""Composite scaling (docs/precision.md, "Composite scaling"): when no plan with one rescale
prime per level keeps the precision promise, each multiplicative level spans two primes.

The fact behind it (issue 21): `hec report examples/gwas/lra.hec --size N=5000,M=16384,K=4`
failed with "no CKKS parameters keep the precision promise after noise flooding: z_num reaches
at most 5.98 of 19 bits": one prime of at most 60 bits holds a scale of at most 2^60, and
depth 13 with decrypt's 31.5-bit flooding needs about 2^75."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.scales import ScalePlan
from compiler.analysis.security import composite_primes, ntt_primes
from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from compiler.stat_numpy import run_client
from driver.pipeline import Compilation, Options, compile_file, report_of
from driver.run import run_encrypted
from dsl.reference import evaluate
from targets.sim.simulator import simulate
from tests.conftest import ROOT
from tests.dsl.test_reference import lra_data

LRA = ROOT / "examples" / "gwas" / "lra.hec"

DEEP = """param N <= 64
input x: secret[N] in [-1.0, 1.0]
input y: secret[N] in [0.0, 2.0]
a = x * x * x + 0.5 * y
b = a * a - x
c = b * b * b + y
d = c * c - 0.25 * b
reveal s = sum(d * y)
reveal t = d * x
"""


def _exact_scales(input_scale: float, primes: list[int], group: int) -> list[float]:
    """log2 of the scale at every multiplicative level, top down (primes in chain order)."""
    scale, out = input_scale, [input_scale]
    for top in range(len(primes), 0, -group):
        scale = 2.0 * scale - sum(math.log2(q) for q in primes[top - group : top])
        out.append(scale)
    return out


def test_a_plan_of_two_primes_per_level_keeps_its_scale() -> None:
    scales = ScalePlan(80.0, (40.0,) * 8, 2).level_scales()
    assert [scales[level].bits for level in (8, 6, 4, 2, 0)] == [80.0] * 5
    assert scales[7].bits == 120.0  # a product on its way down: S^2 / q
    with pytest.raises(Exception, match="whole groups"):
        ScalePlan(80.0, (40.0,) * 7, 2).level_scales()


def test_composite_primes_keep_the_exact_scale_nominal_where_alternating_primes_drift() -> None:
    """37-bit primes at n = 2^16 lie 2^-10 of their size apart; the exact scale's deviation
    doubles at every level, so primes merely alternating around 2^37 drift by bits over 12
    levels, and the groups chosen against the scale stay within 10^-3 bits."""
    chosen = composite_primes(37.0, 16, 24, 2, 74.0)
    assert len(set(chosen)) == 24 and all(q % (2 << 16) == 1 for q in chosen)
    drift = max(abs(s - 74.0) for s in _exact_scales(74.0, chosen, 2))
    assert drift < 1e-3, drift
    naive = max(abs(s - 74.0) for s in _exact_scales(74.0, ntt_primes(37.0, 16, 24), 2))
    assert naive > 100 * drift, (naive, drift)


@pytest.fixture(scope="module")
def lra_flooded() -> Compilation:
    """lra.hec with decrypt's noise flooding budgeted (the default): composite scaling."""
    return compile_file(LRA, Options(sizes=Sizes.parse("N=120,M=16,K=3")))


def test_lra_with_flooding_compiles_by_composite_scaling(lra_flooded: Compilation) -> None:
    assert lra_flooded.program.primes_per_level_value() == 2
    report = report_of(lra_flooded)
    assert report["params"]["primes_per_level"] == 2
    assert report["params"]["security_bits"] == 128 and not report["params"]["insecure"]
    for out in report["outputs"]:
        assert out["levels"] <= 12, out
        assert out["flooded_precision_bits"] >= 19.0, out


def test_lra_with_flooding_in_the_simulator_agrees_with_its_plaintext_reference(
    lra_flooded: Compilation,
) -> None:
    sizes = {"N": 120, "M": 16, "K": 3}
    data = lra_data(np.random.default_rng(5), sizes["N"], sizes["M"], sizes["K"])
    want = evaluate(lra_flooded.checked, sizes, data).client["z"]
    out = simulate(lra_flooded.program, sizes, data, noisy=False, seed=1).outputs
    z = run_client(lra_flooded.stat_program, sizes, out)["z"]
    assert np.max(np.abs(z - want)) <= 1e-9 * np.max(np.abs(want))


def test_a_composite_program_runs_encrypted_within_its_bound(tmp_path: Path) -> None:
    """50 bits at depth 7 need more than one prime's scale: the runtime rescales twice per
    level and the scale-exact level drops multiply by their constants (n = 2^15)."""
    source = tmp_path / "deep.hec"
    source.write_text(DEEP)
    options = Options(sizes=Sizes.parse("N=16"), precision_bits=50.0, flooding=False)
    comp = compile_file(source, options)
    assert comp.program.primes_per_level_value() == 2
    report = report_of(comp)
    rng = np.random.default_rng(1)
    x, y = rng.uniform(-1.0, 1.0, 16), rng.uniform(0.0, 2.0, 16)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    enc = run_encrypted(
        source, {"x": tmp_path / "x.npy", "y": tmp_path / "y.npy"}, tmp_path / "enc", options
    )
    a = x**3 + 0.5 * y
    b = a * a - x
    c = b**3 + y
    d = c * c - 0.25 * b
    want = {"s": np.sum(d * y), "t": d * x}
    bounds = {o["name"]: o["error_bound"] for o in report["outputs"]}
    for name, value in want.items():
        err = float(np.max(np.abs(enc.revealed[name] - value)))
        assert err <= bounds[name], (name, err, bounds[name])


@pytest.mark.slow
def test_lra_report_at_the_acceptance_sizes_with_flooding() -> None:
    """Issue 21: `hec report examples/gwas/lra.hec --size N=5000,M=16384,K=4` (flooding on):
    at most 12 levels, 128-bit parameters, the same rotations at N = 1000 and N = 5000."""
    rotations = []
    for n in (1000, 5000):
        report = report_of(compile_file(LRA, Options(sizes=Sizes.parse(f"N={n},M=16384,K=4"))))
        assert report["params"]["security_bits"] == 128
        for out in report["outputs"]:
            assert out["levels"] <= 12 and out["flooded_precision_bits"] >= 19.0, out
        rotations.append(report["counts"]["executed"]["rotate"])
    assert rotations[0] == rotations[1]


@pytest.mark.slow
def test_lra_grid_rotations_per_snp_block_do_not_depend_on_n() -> None:
    """Issue 21 with the command's default (`--grid-rows auto`): the program compiled for
    N = 5000 (the grid the cost model picks) executes the same rotations per SNP block at
    N = 1000 as at N = 5000 (a compiled program serves every N up to its bound), and each grid
    shape weighed costs the same rotations at both sizes (the choice of R differs: a larger N
    favours more rows per ciphertext)."""
    from compiler.analysis.counts import executed_counts

    comp = compile_file(LRA, Options(sizes=Sizes.parse("N=5000,M=16384,K=4"), grid_rows=0))
    assert comp.grids and comp.grids[0].rows > 1
    params = comp.program.parameters()
    assert params is not None and params.security_bits == 128
    per_block = [
        executed_counts(comp.program, {"N": n, "M": 16384, "K": 4}, params.slots)["rotate"]
        for n in (1000, 5000)
    ]
    assert per_block[0] == per_block[1] > 0
    small = compile_file(LRA, Options(sizes=Sizes.parse("N=1000,M=16384,K=4"), grid_rows=0))
    by_rows = [
        {r: c.rotations for r, c in g.grids[0].candidates if not isinstance(c, str)}
        for g in (small, comp)
    ]
    shared = set(by_rows[0]) & set(by_rows[1])
    assert len(shared) >= 8
    assert all(by_rows[0][r] == by_rows[1][r] for r in shared)


def test_a_composite_search_over_growing_scales_fails_located(tmp_path: Path) -> None:
    """Found by the property test: during the composite search, a plan whose scales grow
    level by level asked a scale-exact drop for a constant below 1 (`const_scale must be >=
    1`, a traceback); the drop now keeps the excess and the search ends in the located
    refusal."""
    source = tmp_path / "grow.hec"
    source.write_text(
        "param N <= 64\n"
        "input s1: secret[N] in [-100000000000.0, 100000000000.0]\n"
        "t0 = (((s1 * s1) + (64 * s1)) * -poly(s1, [0.1, 0.001, 0.0001]))\n"
        "reveal r0 = (0.005 + 100.0 * t0 + 0.02 * t0^2 + 0.1 * t0^3 + 0.0005 * t0^4"
        " + 0.02 * t0^5 + -1.5 * t0^6)\n"
    )
    with pytest.raises(UserError) as info:
        compile_file(source, Options())
    assert info.value.location is not None
    assert "precision promise" in str(info.value)
