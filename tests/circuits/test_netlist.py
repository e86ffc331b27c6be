"""The netlist IR: constant folding, structural hashing and canonical forms on construction,
and the packed simulator against a direct evaluation of every gate kind."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from compiler.circuits.metrics import gate_counts, lower_thresholds
from compiler.circuits.netlist import FALSE, TRUE, Circuit, negate
from compiler.errors import UserError
from tests.circuits.random_circuits import random_circuit


def three() -> tuple[Circuit, int, int, int]:
    c = Circuit()
    a, b, d = c.input("x", 3)
    return c, a, b, d


def test_and_folds_constants_and_trivial_identities() -> None:
    c, a, _b, _ = three()
    assert c.and_(a, FALSE) == FALSE
    assert c.and_(TRUE, a) == a
    assert c.and_(a, a) == a
    assert c.and_(a, negate(a)) == FALSE
    assert len(c.nodes) == 4  # constant + three inputs: nothing was built


def test_structural_hashing_shares_and_or_nand_through_de_morgan() -> None:
    c, a, b, _ = three()
    x = c.and_(a, b)
    assert c.and_(b, a) == x
    assert c.nand(a, b) == negate(x)
    assert c.or_(negate(a), negate(b)) == negate(x)
    assert c.nor(negate(a), negate(b)) == x
    assert len(c.nodes) == 5


def test_xor_pushes_complements_out_and_folds() -> None:
    c, a, b, _ = three()
    x = c.xor(a, b)
    assert c.xor(negate(a), b) == negate(x)
    assert c.xor(negate(a), negate(b)) == x
    assert c.xnor(a, b) == negate(x)
    assert c.xor(a, a) == FALSE
    assert c.xor(a, negate(a)) == TRUE
    assert c.xor(a, TRUE) == negate(a)
    assert len(c.nodes) == 5


def test_mux_folds_to_simpler_gates() -> None:
    c, s, t, f = three()
    assert c.mux(TRUE, t, f) == t
    assert c.mux(FALSE, t, f) == f
    assert c.mux(s, t, t) == t
    assert c.mux(s, TRUE, FALSE) == s
    assert c.mux(s, FALSE, TRUE) == negate(s)
    assert c.mux(s, t, FALSE) == c.and_(s, t)
    assert c.mux(s, TRUE, f) == c.or_(s, f)
    assert c.mux(s, t, negate(t)) == c.xnor(s, t)
    m = c.mux(s, t, f)
    assert c.mux(negate(s), f, t) == m
    assert c.mux(s, negate(t), negate(f)) == negate(m)


def test_threshold_folds_and_is_self_dual() -> None:
    c, a, b, d = three()
    assert c.threshold(0, [a, b]) == TRUE
    assert c.threshold(3, [a, b]) == FALSE
    assert c.threshold(2, [a, b]) == c.and_(a, b)
    assert c.threshold(1, [a, b]) == c.or_(a, b)
    assert c.maj(a, b, TRUE) == c.or_(a, b)
    assert c.maj(a, b, FALSE) == c.and_(a, b)
    assert c.maj(a, a, b) == a
    assert c.maj(a, a, a) == a
    assert c.threshold(2, [negate(a)] * 3) == negate(a)
    assert c.maj(a, negate(a), b) == b
    m = c.maj(a, b, d)
    assert c.maj(d, a, b) == m
    assert c.maj(negate(a), negate(b), negate(d)) == negate(m)


def test_widths_names_and_literals_are_checked() -> None:
    c = Circuit()
    with pytest.raises(UserError, match="width 0"):
        c.input("a", 0)
    c.input("a", 2)
    with pytest.raises(UserError, match="declared twice"):
        c.input("a", 2)
    with pytest.raises(ValueError, match="not a signal"):
        c.and_(2, 99)
    with pytest.raises(UserError, match="no bits"):
        c.output("c", [])


def test_simulate_reports_missing_unknown_and_mismatched_inputs() -> None:
    c = Circuit()
    a = c.input("a", 2)
    b = c.input("b", 2)
    c.output("c", [c.and_(a[0], b[0])])
    with pytest.raises(UserError, match="no values"):
        c.simulate({"a": [1]})
    with pytest.raises(UserError, match="unknown"):
        c.simulate({"a": [1], "b": [1], "z": [0]})
    with pytest.raises(UserError, match="different shapes"):
        c.simulate({"a": [1, 2], "b": [1]})


def test_every_gate_kind_simulates_as_its_truth_table() -> None:
    c = Circuit()
    x = c.input("x", 5)
    gates = {
        "and": (c.and_(x[0], negate(x[1])), lambda v: v[0] & (1 - v[1])),
        "or": (c.or_(x[0], x[1]), lambda v: v[0] | v[1]),
        "xor": (c.xor(x[2], negate(x[3])), lambda v: v[2] ^ (1 - v[3])),
        "mux": (c.mux(x[0], x[1], negate(x[2])), lambda v: v[1] if v[0] else 1 - v[2]),
        "maj": (c.maj(x[0], negate(x[1]), x[4]), lambda v: int(v[0] + 1 - v[1] + v[4] >= 2)),
        "t3of5": (c.threshold(3, x), lambda v: int(sum(v) >= 3)),
        "t2of5": (
            c.threshold(2, [*x[:4], negate(x[4])]),
            lambda v: int(sum(v[:4]) + 1 - v[4] >= 2),
        ),
    }
    for name, (lit, _) in gates.items():
        c.output(name, [lit])
    values = np.arange(32)
    got = c.simulate({"x": values})
    lowered = lower_thresholds(c).simulate({"x": values})
    for name, (_, ref) in gates.items():
        want = [ref([(v >> i) & 1 for i in range(5)]) for v in range(32)]
        assert got[name].tolist() == want, name
        assert lowered[name].tolist() == want, name


def test_simulation_is_exact_for_wide_and_negative_values() -> None:
    c = Circuit()
    a = c.input("a", 70)
    c.output("same", a)
    c.output("low", a[:64])
    values = np.array([2**69 + 5, -1, 0], dtype=object)
    got = c.simulate({"a": values})
    assert got["same"].tolist() == [2**69 + 5, 2**70 - 1, 0]
    assert got["low"].tolist() == [5, 2**64 - 1, 0]
    assert got["low"].dtype == np.uint64
    d = Circuit()
    d.output("x", d.input("x", 8))
    assert d.simulate({"x": np.array([-1, -128], dtype=np.int64)})["x"].tolist() == [255, 128]


def test_cleaned_drops_dead_gates_and_rehashes() -> None:
    c, a, b, d = three()
    c.and_(a, d)  # dead
    c.output("c", [c.xor(c.and_(a, b), d)])
    clean = c.cleaned()
    assert gate_counts(clean)["and"] == 1
    assert len(clean.live_nodes()) == 2
    for bits in itertools.product([0, 1], repeat=3):
        v = bits[0] | bits[1] << 1 | bits[2] << 2
        assert clean.simulate({"x": [v]})["c"][0] == (bits[0] & bits[1]) ^ bits[2]


@pytest.mark.parametrize("seed", range(20))
def test_random_circuits_match_a_naive_evaluation(seed: int) -> None:
    """Random gate sequences (with constants, repeated and complemented operands, so that
    every folding rule fires) against truth tables computed directly from the definitions."""
    c, signals = random_circuit(seed)
    got = c.simulate({"x": np.arange(16)})
    low = lower_thresholds(c).simulate({"x": np.arange(16)})
    for i, table in enumerate(signals):
        want = [(table >> v) & 1 for v in range(16)]
        assert got[f"s{i}"].tolist() == want, i
        assert low[f"s{i}"].tolist() == want, i
