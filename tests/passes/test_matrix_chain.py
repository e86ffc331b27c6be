"""Matrix-chain ordering (compiler/analysis/matrix_chain.py, passes/matrix_chain_ordering.py):
the dynamic program equals brute force on random chains, the report shows the chosen and the
source order with their costs, and a reordered program computes the same values (simulator,
plaintext reference, encrypted run)."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.matrix_chain import (
    CIPHERTEXT,
    LAYOUTS,
    PLAINTEXT,
    Factor,
    Model,
    best_order,
    brute_force,
    plan_cost,
)
from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of, simulate_against_reference
from targets.report.report import render_text

CHAINS = Path(__file__).resolve().parent / "chains"


def _random_chain(rng: random.Random) -> tuple[Model, list[Factor]]:
    """A chain of 2..7 factors: random sizes (some above the slot count), a row vector first
    or a column vector last now and then, ciphertext or plaintext factors, transposes,
    unrelinearized products, depths already used, column dimensions and slot counts."""
    n = rng.randint(2, 7)
    names = [f"d{i}" for i in range(n + 1)]
    sizes = {d: rng.choice([1, 3, 16, 64, 300, 5000]) for d in names}
    row, col = rng.random() < 0.3, rng.random() < 0.3
    factors = []
    for i in range(n):
        if i == 0 and row:
            dims: tuple[str, ...] = (names[1],)
        elif i == n - 1 and col and n > 1:
            dims = (names[i],)
        else:
            dims = (names[i], names[i + 1])
        factors.append(
            Factor(
                f"F{i}",
                dims,
                rng.choice([CIPHERTEXT, CIPHERTEXT, PLAINTEXT]),
                depth=rng.randint(0, 2),
                transposed=len(dims) == 2 and rng.random() < 0.2,
                packable=rng.random() < 0.9,
                degree=rng.choice([1, 1, 2]),
                diagonal=len(dims) == 2 and rng.random() < 0.5,
                cyclic=len(dims) == 1 and rng.random() < 0.7,
            )
        )
    columns = frozenset(d for d in names if rng.random() < 0.5)
    model = Model(
        sizes,
        columns,
        slots=rng.choice([1024, 4096]),
        plaintext_operands=rng.random() < 0.7,
    )
    return model, factors


def test_dynamic_program_equals_brute_force_on_100_random_chains() -> None:
    rng = random.Random(21)
    lengths: list[int] = []
    feasible = 0
    for _ in range(100):
        model, factors = _random_chain(rng)
        lengths.append(len(factors))
        for layout in LAYOUTS:
            dp, brute = best_order(model, factors, layout), brute_force(model, factors, layout)
            assert (dp is None) == (brute is None), (factors, layout)
            if dp is None or brute is None:
                continue
            feasible += 1
            assert dp.cost == brute.cost, (factors, layout, dp, brute)
            # The plan the dynamic program returns has the cost it claims.
            assert plan_cost(model, factors, dp.tree) == dp.cost
    assert max(lengths) == 7 and feasible >= 100


def test_depth_is_compared_first() -> None:
    """A chain where the shallower order needs more products: depth wins (within the slack)."""
    model = Model({"n": 8}, frozenset())
    deep = Factor("D", ("n", "n"), depth=3)
    flat = [Factor(f"F{i}", ("n", "n")) for i in range(2)]
    plan = best_order(model, [*flat, deep], "replicated")
    assert plan is not None
    assert plan.tree.text(["F0", "F1", "D"]) == "(F0 @ F1) @ D"
    assert plan.cost.depth == 4


def _report(name: str, sizes: str, staged: bool = True) -> tuple[dict[str, object], str]:
    comp = compile_file(
        CHAINS / name, Options(sizes=Sizes.parse(sizes), staged_sums=staged, flooding=False)
    )
    report = report_of(comp)
    return report, render_text(report)


def test_report_shows_fewer_key_switches_than_the_source_order() -> None:
    report, text = _report("u_av.hec", "R=64,C=64")
    (chain,) = report["matrix_chains"]  # type: ignore[misc]
    assert chain["source_order"] == "u @ (A @ v)"
    assert chain["chosen_order"] == "(u @ A) @ v"
    # Source: 64 relinearizations and 64 rotate-and-add trees of 12 rotations (4096 slots);
    # chosen: one of each.
    assert chain["source_cost"]["key_switches"] == 64 + 64 * 12
    assert chain["chosen_cost"]["key_switches"] == 1 + 12
    assert "chosen  (u @ A) @ v: depth 2, key switches 13," in text
    assert "source  u @ (A @ v): depth 2, key switches 832," in text
    # The model's count is what the compiled program executes with the rotate-and-add tree
    # (the order is chosen before the ring is, so it counts the tree); staged slot sums
    # (passes/rotation_keys.py) then trade rotations for time.
    tree, _ = _report("u_av.hec", "R=64,C=64", staged=False)
    assert tree["counts"]["executed"]["key_switch"] == 13  # type: ignore[index]
    staged = report["keys"]["sum_plan"]["rotations"]  # type: ignore[index]
    assert report["counts"]["executed"]["key_switch"] == 1 + staged  # type: ignore[index]


def test_a_chain_the_source_order_cannot_lower_is_reordered() -> None:
    report, text = _report("u_abv.hec", "R=64,C=64")
    (chain,) = report["matrix_chains"]  # type: ignore[misc]
    assert chain["source_cost"] is None and chain["chosen_cost"] is not None
    assert "source  u @ (A @ (B @ v)): cannot be lowered" in text


@pytest.mark.parametrize("name", ["u_av.hec", "u_abv.hec"])
def test_reordered_chain_agrees_with_the_reference(name: str) -> None:
    comp = compile_file(CHAINS / name, Options(sizes=Sizes.parse("R=16,C=12")))
    check = simulate_against_reference(comp, seed=3)
    for row in check["rows"]:
        assert row["max_rel_error"] < 1e-6, row


def test_reordered_chain_encrypted(tmp_path: Path) -> None:
    """keygen, encrypt, compute, decrypt of the reordered `u @ (A @ (B @ v))` at R = 8,
    C = 6, against numpy."""
    from driver.run import run_encrypted

    rng = np.random.default_rng(21)
    arrays = {
        "u": rng.uniform(-1, 1, 8),
        "A": rng.uniform(-1, 1, (8, 6)),
        "B": rng.uniform(-1, 1, (6, 6)),
        "v": rng.uniform(-1, 1, 6),
    }
    paths = {}
    for k, a in arrays.items():
        paths[k] = tmp_path / f"{k}.npy"
        np.save(paths[k], a)
    result = run_encrypted(CHAINS / "u_abv.hec", paths, tmp_path / "out")
    want = arrays["u"] @ (arrays["A"] @ (arrays["B"] @ arrays["v"]))
    got = float(np.asarray(result.revealed["r"]).reshape(()))
    assert abs(got - want) <= 1e-3 * max(1.0, abs(want)), (got, want)
    assert float(np.asarray(result.client["twice"]).reshape(())) == pytest.approx(2 * got)


def test_a_vector_product_inside_a_chain_stays_one_factor() -> None:
    """Regression: `X @ (A @ (B @ (z @ X)))` flattened to X, A, B, z, X (z in the middle) is not
    a chain; the factors are X, A, B and (z @ X)."""
    from passes.matrix_chain_ordering import chain_decisions, chains

    comp = compile_file(CHAINS / "vector_inside.hec", Options(sizes=Sizes.parse("N=50,K=4")))
    (chain,) = chains(comp.stat_program)
    assert len(chain.leaves) == 4
    (decision,) = chain_decisions(comp.stat_program, {"N": 50, "K": 4})
    assert decision.factors[:3] == ("X", "A", "B")
    check = simulate_against_reference(comp, seed=5)
    for row in check["rows"]:
        assert row["max_rel_error"] < 1e-6, row
