"""Slot sums in doubly hoisted stages (compiler/analysis/rotations.py, passes/rotation_keys.py,
runtime `Evaluator::rotate_sum_hoisted`): every staging covers every offset once, the choice
is the fewest keys within the time tolerance, a key-memory budget is kept or refused with the
key size, the counts follow the plan, and a staged sum decrypts to the same values as numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.cost import Units
from compiler.analysis.rotations import (
    TIME_TOLERANCE,
    SumPlan,
    candidate_radices,
    choose,
    plan_seconds,
    tree,
)
from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver.pipeline import Options, compile_file, report_of, simulate_against_reference

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "rotation-keys.hec"  # reveal score = G @ b: one slot sum per row


@pytest.mark.parametrize("slots", [2, 64, 4096])
def test_every_staging_sums_every_offset_once(slots: int) -> None:
    for radices in candidate_radices(slots):
        assert int(np.prod(radices)) == slots
        plan = SumPlan(radices, 0.0)
        # The offsets a staged sum adds: every sum of one term per stage, each exactly once.
        reached = {0}
        stride = 1
        for r in radices:
            reached = {x + t * stride for x in reached for t in range(r)}
            stride *= r
        assert reached == set(range(slots))
        assert plan.keys == plan.key_switches == sum(r - 1 for r in radices)


def test_choice_is_fewest_keys_within_tolerance_of_fastest() -> None:
    u = Units(13)
    seconds = {r: plan_seconds(u, 3, 1, 3, r) for r in candidate_radices(4096)}
    chosen = choose(4096, seconds)
    fastest = min(seconds.values())
    assert seconds[chosen] <= (1 + TIME_TOLERANCE) * fastest
    within = [r for r in seconds if seconds[r] <= (1 + TIME_TOLERANCE) * fastest]
    assert SumPlan(chosen, 0).keys == min(SumPlan(r, 0).keys for r in within)
    # The tree has the fewest keys of all; a budget of that many keys leaves only the tree.
    assert choose(4096, seconds, allowed_keys=12) == tree(4096)


def test_plan_in_report_and_counts() -> None:
    comp = compile_file(PROGRAM, Options(sizes=Sizes.parse("N=100,M=300"), flooding=False))
    report = report_of(comp)
    plan = report["keys"]["sum_plan"]
    assert plan["radices"] == [2, 2, 4, 4, 4, 4, 4]
    assert plan["seconds"] < plan["tree_seconds"]
    # One relinearization and the plan's rotations per row.
    assert report["counts"]["executed"]["rotate"] == 100 * plan["rotations"]
    assert report["counts"]["executed"]["key_switch"] == 100 * (1 + plan["rotations"])
    assert report["keys"]["eval_key_bytes"] == (1 + plan["keys"]) * plan["key_bytes_each"]


def test_key_memory_budget_picks_a_plan_that_fits() -> None:
    free = report_of(
        compile_file(PROGRAM, Options(sizes=Sizes.parse("N=100,M=300"), flooding=False))
    )
    each = free["keys"]["sum_plan"]["key_bytes_each"]
    budget = 14 * each / 2**20  # relinearization + 13 rotation keys
    report = report_of(
        compile_file(
            PROGRAM,
            Options(sizes=Sizes.parse("N=100,M=300"), key_memory_mib=budget, flooding=False),
        )
    )
    assert report["keys"]["eval_key_bytes"] <= budget * 2**20
    assert report["keys"]["sum_plan"]["keys"] <= 13


def test_key_memory_budget_below_the_tree_is_refused_with_the_key_size() -> None:
    with pytest.raises(UserError) as e:
        compile_file(
            PROGRAM, Options(sizes=Sizes.parse("N=100,M=300"), key_memory_mib=4, flooding=False)
        )
    message = str(e.value)
    assert "at least 12 keys of 0.75 MiB each" in message
    assert "above the key-memory budget of 4 MiB" in message
    assert "rotation-keys.hec:11:16" in message
    assert "raise --key-memory to at least" in message


def test_staged_sum_agrees_with_the_reference() -> None:
    """The simulator follows the stages: exact mode gives the same values; noisy mode (each
    rotation's key-switch error injected) errs no more than the rotate-and-add tree's."""
    worst = {}
    for staged in (True, False):
        sizes = Sizes.parse("N=20,M=300")
        comp = compile_file(PROGRAM, Options(sizes=sizes, staged_sums=staged, flooding=False))
        assert staged == any(getattr(o, "radix_values", None) for o in comp.program.block.ops)
        for row in simulate_against_reference(comp, seed=4, noisy=True)["rows"]:
            if row["mode"] == "exact":
                assert row["max_rel_error"] < 1e-9, row
            else:
                worst[staged] = row["max_rel_error"]
    assert worst[True] <= 2 * worst[False], worst


def test_staged_sum_encrypted(tmp_path: Path) -> None:
    """keygen, encrypt, compute, decrypt: G @ b with the staged slot sum, against numpy, and no
    less precise than the rotate-and-add tree on the same data."""
    from driver.run import run_encrypted

    rng = np.random.default_rng(8)
    g, b = rng.integers(0, 3, (6, 300)).astype(np.float64), rng.uniform(-1, 1, 300)
    np.save(tmp_path / "G.npy", g)
    np.save(tmp_path / "b.npy", b)
    inputs = {"G": tmp_path / "G.npy", "b": tmp_path / "b.npy"}
    errors = {}
    for staged in (True, False):
        out = run_encrypted(PROGRAM, inputs, tmp_path / f"out{staged}", Options(staged_sums=staged))
        errors[staged] = float(np.max(np.abs(np.asarray(out.revealed["score"]) - g @ b)))
    assert errors[True] < 1e-3, errors
    assert errors[True] <= 4 * errors[False] + 1e-9, errors
