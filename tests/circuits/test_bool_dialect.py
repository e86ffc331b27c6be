"""The `bool` dialect (compiler/dialects/boolean.py) and its conversions to and from the netlist
(compiler/circuits/bool_conversion.py): the round trip netlist -> bool -> netlist is exact
(the same nodes, so the same gate counts, and the same function: exhaustively on small
circuits, on random inputs for wide ones), every op of the dialect reads back with its
meaning, an FHEW cover written as `bool.linear`/`bool.mux` cells computes its circuit, both
text forms read back, and every verifier message has a negative test."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import numpy as np
import pytest
from xdsl.dialects import test
from xdsl.dialects.builtin import ModuleOp, i1, i64
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from compiler.circuits import generators as gen
from compiler.circuits.bool_conversion import (
    bool_to_circuit,
    circuit_to_bool,
    cover_to_bool,
    default_type,
)
from compiler.circuits.fhew_model import all_combinations
from compiler.circuits.metrics import fhew_cover, gate_counts
from compiler.circuits.netlist import Circuit
from compiler.dialects import boolean
from compiler.errors import UserError
from compiler.ir_text import print_ir
from dsl.checker import check
from dsl.circuit import lower_circuit
from dsl.parser import parse_program
from targets.mlir.form import from_mlir, to_mlir
from tests.circuits.random_circuits import random_circuit


def structure(c: Circuit) -> tuple[object, ...]:
    """Everything that makes two netlists the same: nodes, words, signedness."""
    return (
        [(n.kind, n.fanins, n.k) for n in c.nodes],
        c.inputs,
        c.outputs,
        c.signed_inputs,
    )


def round_trip(c: Circuit) -> Circuit:
    return bool_to_circuit(circuit_to_bool(c))


def assert_same_function(a: Circuit, b: Circuit, values: dict[str, np.ndarray]) -> None:
    got, want = b.simulate(values), a.simulate(values)
    assert set(got) == set(want)
    for name in want:
        assert np.array_equal(got[name], want[name]), name


def every_input(c: Circuit) -> dict[str, np.ndarray]:
    widths = [len(bits) for bits in c.inputs.values()]
    rows = np.array(list(itertools.product(*(range(1 << w) for w in widths))), dtype=np.uint64)
    return {name: rows[:, i] for i, name in enumerate(c.inputs)}


def random_inputs(c: Circuit, count: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        name: rng.integers(0, 1 << min(len(bits), 63), size=count, dtype=np.uint64)
        for name, bits in c.inputs.items()
    }


# -- the round trip -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_round_trip_of_random_circuits_is_exact(seed: int) -> None:
    """Random circuits through every builder (thresholds of up to five inputs included):
    the same nodes as the cleaned circuit, and every signal's truth table over all inputs."""
    c, tables = random_circuit(seed)
    back = round_trip(c)
    assert structure(back) == structure(c.cleaned())
    assert gate_counts(back) == gate_counts(c)
    got = back.simulate({"x": np.arange(16, dtype=np.uint64)})
    for i, table in enumerate(tables):
        assert [int(v) for v in got[f"s{i}"]] == [(table >> v) & 1 for v in range(16)], i


GENERATED: list[tuple[str, Callable[[], Circuit]]] = [
    ("add8-ripple", lambda: gen.build_adder(8, "ripple")),
    ("add8-sklansky", lambda: gen.build_adder(8, "sklansky")),
    ("mul8-dadda", lambda: gen.build_multiplier(8, "dadda", adder="ripple")),
    ("lt8-tree", lambda: gen.build_comparator(8, structure="tree")),
    ("div8", lambda: gen.build_divider(8)),
    ("popcount8", lambda: gen.build_popcount(8)),
    ("add32", lambda: gen.build_adder(32, "kogge-stone")),
    ("mul16", lambda: gen.build_multiplier(16, "dadda", adder="ripple")),
]


@pytest.mark.parametrize(("name", "build"), GENERATED, ids=[n for n, _ in GENERATED])
def test_round_trip_of_generated_circuits(name: str, build: Callable[[], Circuit]) -> None:
    """Every input pair of the 8-bit generators, 20,000 random pairs of the wide ones."""
    c = build().cleaned()
    back = round_trip(c)
    assert structure(back) == structure(c)
    assert gate_counts(back) == gate_counts(c)
    small = sum(len(bits) for bits in c.inputs.values()) <= 16
    values = every_input(c) if small else random_inputs(c, 20_000, seed=len(name))
    assert_same_function(c, back, values)


def test_program_words_keep_their_names_and_types() -> None:
    text = (
        "param N <= 4\ninput s: secret[N] i8\ninput f: secret[N] bool\ninput w: secret[N] u16\n"
        "reveal lo = min(s, -3)\nreveal flag = f & (w > 1000)\nreveal total = w + 7\n"
    )
    program = lower_circuit(check(parse_program(text, "p.hec")), "words")
    module = circuit_to_bool(program)
    (op,) = boolean.circuits(module)
    assert op.sym_name.data == "words"
    assert [(w.sym_value, w.int_type_value, len(w.bits)) for w in op.inputs()] == [
        ("s", "i8", 8),
        ("f", "bool", 1),
        ("w", "u16", 16),
    ]
    assert [(w.sym_value, w.int_type_value) for w in op.outputs()] == [
        ("lo", "i8"),
        ("flag", "bool"),
        ("total", "u16"),
    ]
    back = bool_to_circuit(module)
    assert back.signed_inputs == {"s"}
    assert gate_counts(back) == gate_counts(program.circuit)
    assert_same_function(program.circuit, back, random_inputs(back, 5000, seed=1))


def test_a_plain_circuit_gets_default_types_and_name() -> None:
    c = Circuit()
    a = c.input("a", 4, signed=True)
    f = c.input("f", 1)
    c.output("y", [c.and_(a[0], f[0]), a[3], c.const(True)])
    (op,) = boolean.circuits(circuit_to_bool(c))
    assert op.sym_name.data == "circuit"
    assert [w.int_type_value for w in op.inputs()] == ["i4", "bool"]
    assert [w.int_type_value for w in op.outputs()] == ["u3"]
    assert default_type(1) == "bool" and default_type(1, signed=True) == "i1"


# -- every op of the dialect reads back with its meaning ---------------------------------------

# op -> its value on three input bits (x, y, z); `None`: built by hand below.
MEANINGS: dict[str, Callable[[int, int, int], int]] = {
    "not": lambda x, y, z: 1 - x,
    "and": lambda x, y, z: x & y,
    "or": lambda x, y, z: x | y,
    "xor": lambda x, y, z: x ^ y,
    "nand": lambda x, y, z: 1 - (x & y),
    "nor": lambda x, y, z: 1 - (x | y),
    "xnor": lambda x, y, z: 1 - (x ^ y),
    "mux": lambda x, y, z: y if x else z,
    "maj": lambda x, y, z: int(x + y + z >= 2),
    "threshold": lambda x, y, z: int(x + y + z + x >= 3),  # k = 3 of (x, y, z, x)
    "constant": lambda x, y, z: 1,
    "linear": lambda x, y, z: int((2 * (x - y + 2 * z) + 5) % 8 < 4),
}


def one_gate_circuit(kind: str) -> ModuleOp:
    circuit = boolean.CircuitOp("gate")
    word = boolean.InputOp("x", "u3", 3)
    circuit.block.add_op(word)
    x, y, z = word.bits
    ops: dict[str, Callable[[], Operation]] = {
        "not": lambda: boolean.NotOp(x),
        "and": lambda: boolean.AndOp(x, y),
        "or": lambda: boolean.OrOp(x, y),
        "xor": lambda: boolean.XorOp(x, y),
        "nand": lambda: boolean.NandOp(x, y),
        "nor": lambda: boolean.NorOp(x, y),
        "xnor": lambda: boolean.XnorOp(x, y),
        "mux": lambda: boolean.MuxOp(x, y, z),
        "maj": lambda: boolean.MajOp(x, y, z),
        "threshold": lambda: boolean.ThresholdOp(3, [x, y, z, x]),
        "constant": lambda: boolean.ConstantOp(True),
        "linear": lambda: boolean.LinearOp([x, y, z], [1, -1, 2], 5),
    }
    gate = ops[kind]()
    circuit.block.add_op(gate)
    circuit.block.add_op(boolean.OutputOp("out", "bool", [gate.results[0]]))
    module = ModuleOp([circuit])
    module.verify()
    return module


@pytest.mark.parametrize("kind", sorted(MEANINGS))
def test_every_op_reads_back_with_its_meaning(kind: str) -> None:
    c = bool_to_circuit(one_gate_circuit(kind))
    got = c.simulate({"x": np.arange(8, dtype=np.uint64)})["out"]
    want = [MEANINGS[kind](v & 1, (v >> 1) & 1, (v >> 2) & 1) for v in range(8)]
    assert [int(v) for v in got] == want


def test_linear_ops_compute_the_gate_models_combinations() -> None:
    """Every three-input combination the FHEW gate model admits, as a `bool.linear`, evaluates
    to the model's truth table and reads back into a netlist with that table."""
    circuit = boolean.CircuitOp("cells")
    word = boolean.InputOp("x", "u3", 3)
    circuit.block.add_op(word)
    tables: list[int] = []
    bits: list[SSAValue] = []
    for table, combinations in sorted(all_combinations(3.0).items()):
        for comb in combinations:
            op = boolean.LinearOp(word.bits, comb.multipliers, comb.constant)
            assert (
                sum(op.evaluate([(x >> i) & 1 for i in range(3)]) << x for x in range(8)) == table
            )
            circuit.block.add_op(op)
            bits.append(op.result)
            tables.append(table)
    for i, bit in enumerate(bits):
        circuit.block.add_op(boolean.OutputOp(f"t{i}", "bool", [bit]))
    c = bool_to_circuit(ModuleOp([circuit]))
    got = c.simulate({"x": np.arange(8, dtype=np.uint64)})
    for i, table in enumerate(tables):
        assert sum(int(v) << x for x, v in enumerate(got[f"t{i}"])) == table


@pytest.mark.parametrize(
    "build",
    [
        lambda: gen.build_adder(8, "ripple"),
        lambda: gen.build_multiplier(8, "dadda", adder="ripple"),
        lambda: gen.build_minmax(8),
    ],
    ids=["add8", "mul8", "minmax8"],
)
def test_an_fhew_cover_as_bool_cells_computes_its_circuit(build: Callable[[], Circuit]) -> None:
    c = build()
    mapped, cover = fhew_cover(c)
    module = cover_to_bool(mapped, cover, "cells")
    (op,) = boolean.circuits(module)
    gates = op.gates()
    linear = sum(1 for cell in cover.cells.values() if cell.combination is not None)
    assert sum(isinstance(g, boolean.LinearOp) for g in gates) == linear
    assert sum(isinstance(g, boolean.MuxOp) for g in gates) == len(cover.cells) - linear
    assert all(isinstance(g, boolean.LinearOp | boolean.MuxOp | boolean.NotOp) for g in gates)
    assert_same_function(c, bool_to_circuit(module), every_input(c))


# -- text forms ---------------------------------------------------------------------------------


def test_both_text_forms_read_back() -> None:
    module = circuit_to_bool(gen.build_adder(8, "ripple"), "add")
    custom = print_ir(module)
    assert 'bool.circuit "add" {' in custom and "bool.maj" in custom
    assert from_mlir(custom, "custom").is_structurally_equivalent(module)
    text = to_mlir(module)
    assert '"func.func"() <{sym_name = "add"' in text and 'hec.op = "bool.circuit"' in text
    back = from_mlir(text, "form")
    assert back.is_structurally_equivalent(module)
    assert to_mlir(back) == text


def test_bool_to_circuit_needs_one_circuit() -> None:
    with pytest.raises(
        UserError, match=re.escape("expected one bool.circuit in the module, found 0")
    ):
        bool_to_circuit(ModuleOp([]))


# -- verifiers: one negative test per message ---------------------------------------------------


def circuit_with(build: Callable[[boolean.CircuitOp, list[SSAValue]], object]) -> ModuleOp:
    """A circuit with input word a (u2), whose body `build` completes."""
    circuit = boolean.CircuitOp("bad")
    word = boolean.InputOp("a", "u2", 2)
    circuit.block.add_op(word)
    build(circuit, list(word.bits))
    return ModuleOp([circuit])


def add(circuit: boolean.CircuitOp, op: Operation, output: bool = True) -> None:
    circuit.block.add_op(op)
    if output and op.results:
        circuit.block.add_op(boolean.OutputOp("out", "bool", [op.results[0]]))


def foreign_value() -> SSAValue:
    return test.TestOp(result_types=[i1]).results[0]


BAD: list[tuple[str, Callable[[boolean.CircuitOp, list[SSAValue]], object], str]] = [
    (
        "input-width",
        lambda c, a: add(c, boolean.InputOp("b", "u8", 4)),
        "bool.input 'b' of type u8 has 4 bits, expected 8",
    ),
    (
        "type-name",
        lambda c, a: add(c, boolean.OutputOp("out", "x8", a)),
        "element type 'x8' is not bool, uN or iN",
    ),
    (
        "output-no-bits",
        lambda c, a: add(c, boolean.OutputOp("out", "bool", [])),
        "bool.output 'out' has no bits",
    ),
    (
        "threshold-arity",
        lambda c, a: add(c, boolean.ThresholdOp(1, a[:1])),
        "bool.threshold needs at least 2 operands, got 1",
    ),
    (
        "threshold-k",
        lambda c, a: add(c, boolean.ThresholdOp(3, a)),
        "bool.threshold of 2 operands needs 1 <= k <= 2, got k = 3",
    ),
    (
        "threshold-k-zero",
        lambda c, a: add(c, boolean.ThresholdOp(0, [*a, a[0]])),
        "needs 1 <= k <= 3, got k = 0",
    ),
    (
        "mux-arity",
        lambda c, a: add(c, boolean.MuxOp.create(operands=a, result_types=[i1])),
        "Expected 3 operands, but got 2",
    ),
    (
        "maj-arity",
        lambda c, a: add(c, boolean.MajOp.create(operands=[*a, *a], result_types=[i1])),
        "Expected 3 operands, but got 4",
    ),
    (
        "linear-arity",
        lambda c, a: add(c, boolean.LinearOp([*a, *a], [1, 1, 1, 1], 7)),
        "bool.linear reads 1 to 3 bits (one bootstrap), got 4",
    ),
    (
        "linear-multipliers",
        lambda c, a: add(c, boolean.LinearOp(a, [1, 1, 1], 7)),
        "bool.linear has 2 operands but 3 multipliers",
    ),
    (
        "linear-constant",
        lambda c, a: add(c, boolean.LinearOp(a, [1, 1], 8)),
        "bool.linear constant must be in [0, 8), got 8",
    ),
    (
        "operand-type",
        lambda c, a: add(c, boolean.AndOp(a[0], test.TestOp(result_types=[i64]).results[0])),
        "Expected attribute i1 but got i64",
    ),
    (
        "result-type",
        lambda c, a: add(c, boolean.XorOp.create(operands=a, result_types=[i64]), output=False),
        "Expected attribute i1 but got i64",
    ),
    ("no-output", lambda c, a: add(c, boolean.AndOp(*a), output=False), "has no bool.output"),
    (
        "input-twice",
        lambda c, a: (add(c, boolean.InputOp("a", "u1", 1)), add(c, boolean.AndOp(*a))),
        "input word 'a' is declared twice",
    ),
    (
        "output-twice",
        lambda c, a: (add(c, boolean.AndOp(*a)), add(c, boolean.XorOp(*a))),
        "output word 'out' is declared twice",
    ),
    (
        "output-undefined",
        lambda c, a: add(c, boolean.OutputOp("out", "bool", [foreign_value()])),
        "bit 0 of output 'out' is not defined inside the circuit",
    ),
    (
        "operand-undefined",
        lambda c, a: add(c, boolean.AndOp(a[0], foreign_value())),
        "operand 1 of bool.and is not defined inside the circuit",
    ),
    (
        "foreign-op",
        lambda c, a: (
            add(c, test.TestOp(result_types=[i1]), output=False),
            add(c, boolean.NotOp(a[0])),
        ),
        "test.op is not a bool op; a circuit holds only those",
    ),
]


@pytest.mark.parametrize(("name", "build", "message"), BAD, ids=[b[0] for b in BAD])
def test_verifier_refuses(
    name: str, build: Callable[[boolean.CircuitOp, list[SSAValue]], object], message: str
) -> None:
    module = circuit_with(build)
    with pytest.raises(VerifyException, match=re.escape(message)):
        module.verify()


def test_words_and_gates_live_only_in_a_circuit() -> None:
    with pytest.raises(
        VerifyException, match=re.escape("'bool.input' expects parent op 'bool.circuit'")
    ):
        ModuleOp([boolean.InputOp("a", "u8", 8)]).verify()


def test_a_verifier_error_in_mlir_text_is_located() -> None:
    text = to_mlir(one_gate_circuit("threshold"))
    bad = text.replace("k = 3 : i64", "k = 5 : i64")
    assert bad != text
    with pytest.raises(UserError, match="got k = 5") as info:
        from_mlir(bad, "bad.mlir")
    location = info.value.location
    assert location is not None and location.file == "bad.mlir"
    assert "bool.threshold" in location.line_text
