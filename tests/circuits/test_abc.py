"""The ABC flow: AIGER export and read-back, ABC's optimization checked by `cec` for every
generator, the better circuit kept per target, and failures reported, never accepted."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from compiler.circuits import abc
from compiler.circuits import generators as gen
from compiler.circuits.chooser import cost_key
from compiler.circuits.netlist import Circuit
from compiler.errors import UserError


@pytest.fixture(autouse=True, scope="module")
def abc_installed() -> None:
    assert any(shutil.which(n) for n in abc.ABC_NAMES), (
        "ABC is not installed (scripts/setup installs the Debian package berkeley-abc)"
    )


def same_function(x: Circuit, y: Circuit) -> bool:
    """Exhaustive for up to 16 input bits in total, else 4,096 random points."""
    bits = sum(len(w) for w in x.inputs.values())
    rng = np.random.default_rng(5)
    if bits <= 16:
        points = np.arange(1 << bits, dtype=np.int64)
    else:
        points = np.array([int(v) for v in rng.integers(0, 1 << 62, 4096)], dtype=object)
    values: dict[str, np.ndarray] = {}
    shift = 0
    for name, word in x.inputs.items():
        values[name] = np.array(
            [(int(p) >> shift) % (1 << len(word)) for p in points], dtype=object
        )
        shift += len(word)
    a, b = x.simulate(values), y.simulate(values)
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


CIRCUITS: dict[str, Callable[[], Circuit]] = {
    **{f"add-{a}": (lambda a=a: gen.build_adder(8, a)) for a in gen.ADDERS},
    **{
        f"mul-{k}-{'full' if f else 'trunc'}": (
            lambda k=k, f=f: gen.build_multiplier(8, k, f, "sklansky")
        )
        for k in gen.MULTIPLIERS
        for f in (False, True)
    },
    "sum4-csa": lambda: gen.build_multi_adder(4, 4),
    "lt-signed-ripple": lambda: gen.build_comparator(8, "lt", True, "ripple"),
    "lt-tree": lambda: gen.build_comparator(8, "lt", False, "tree"),
    "eq": lambda: gen.build_comparator(8, "eq"),
    "max-tree": lambda: gen.build_minmax(8, "max", False, "tree"),
    "select": lambda: gen.build_select(8),
    "divide": lambda: gen.build_divider(8),
    "divide-non-restoring": lambda: gen.build_divider(8, "ripple", "non-restoring"),
    "popcount": lambda: gen.build_popcount(8),
    "threshold-3-of-5": lambda: threshold_circuit(),
}


def threshold_circuit() -> Circuit:
    c = Circuit()
    x = c.input("x", 5)
    c.output("y", [c.threshold(3, x), c.maj(x[0], x[1], x[2]), c.mux(x[3], x[0], x[4])])
    return c


@pytest.mark.parametrize("name", sorted(CIRCUITS))
def test_aiger_round_trip_without_abc(name: str) -> None:
    c = CIRCUITS[name]()
    back = abc.read_aiger(abc.write_aiger(c), like=c)
    assert same_function(c, back)


def test_read_back_recognises_xor_and_mux() -> None:
    c = gen.build_adder(8, "ripple")
    back = abc.read_aiger(abc.write_aiger(c), like=c)
    from compiler.circuits.metrics import gate_counts

    counts = gate_counts(back)
    assert counts["xor"] == gate_counts(c)["xor"]  # every sum XOR comes back as XOR
    sel = abc.read_aiger(abc.write_aiger(gen.build_select(4)), like=gen.build_select(4))
    assert gate_counts(sel)["mux"] == 4


@pytest.mark.parametrize("name", sorted(CIRCUITS))
def test_abc_result_passes_cec_and_the_kept_circuit_is_right(name: str) -> None:
    c = CIRCUITS[name]()
    for target in ("fhew", "bfv"):
        result = abc.optimize(c, target)
        assert result.verdict.startswith("Networks are equivalent")
        assert same_function(c, result.circuit)
        kept = min(result.before, result.after_abc, key=lambda m: cost_key(m, target))
        assert cost_key(kept, target) == cost_key(
            result.after_abc if result.used_abc else result.before, target
        )


@pytest.mark.slow
@pytest.mark.parametrize("width", [16, 32])
def test_abc_cec_on_wider_circuits(width: int) -> None:
    for c in (
        gen.build_adder(width, "sklansky"),
        gen.build_multiplier(width, "dadda", False, "sklansky"),
    ):
        result = abc.optimize(c, "fhew")
        assert result.verdict.startswith("Networks are equivalent")
        assert same_function(c, result.circuit)


def test_a_wrong_circuit_fails_cec() -> None:
    good = gen.build_adder(8, "ripple")
    bad = gen.build_adder(8, "ripple")
    bad.outputs["c"][3] ^= 1  # one output bit inverted
    with pytest.raises(abc.AbcError, match="NOT equivalent"):
        abc.check_equivalent(good, bad)


def test_a_wrong_abc_result_is_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(c: Circuit, script: str = abc.DEFAULT_SCRIPT) -> Circuit:
        out = abc.read_aiger(abc.write_aiger(c), like=c)
        out.outputs["c"][0] ^= 1
        return out

    monkeypatch.setattr(abc, "abc_optimize_raw", broken)
    with pytest.raises(abc.AbcError, match="NOT equivalent"):
        abc.optimize(gen.build_adder(8, "sklansky"), "fhew")


def test_abc_errors_are_reported(tmp_path: Path) -> None:
    with pytest.raises(abc.AbcError, match="ABC failed"):
        abc.run_abc("frobnicate", tmp_path)
    with pytest.raises(abc.AbcError, match="not a binary AIGER"):
        abc.read_aiger(b"aag 1 1 0 1 0\n2\n2\n", like=gen.build_adder(1))
    with pytest.raises(abc.AbcError, match="does not match"):
        abc.read_aiger(abc.write_aiger(gen.build_adder(4)), like=gen.build_adder(8))


def test_missing_abc_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(abc.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="ABC is not installed"):
        abc.abc_executable()


@pytest.mark.parametrize("seed", range(5))
def test_abc_on_random_circuits(seed: int) -> None:
    from tests.circuits.random_circuits import random_circuit

    c, _ = random_circuit(seed)
    back = abc.read_aiger(abc.write_aiger(c), like=c)
    assert same_function(c, back)
    result = abc.optimize(c, "fhew")
    assert result.verdict.startswith("Networks are equivalent")
    assert same_function(c, result.circuit)
