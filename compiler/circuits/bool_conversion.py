"""Conversions between the Boolean netlist (compiler/circuits/netlist.py) and the `bool` dialect
(compiler/dialects/boolean.py).

- `circuit_to_bool` writes the live gates of a netlist, in topological (creation) order, as one
  `bool.circuit`: a node of kind AND, XOR or MUX as the op of that name, a THRESHOLD as
  `bool.maj` (k = 2 of 3) or `bool.threshold`, a complemented edge as one `bool.not` per
  complemented node, the constant node as `bool.constant`. Input and output words keep their
  names and element types (a CircuitProgram's, or `bool`/`uN`/`iN` from the width and
  `Circuit.signed_inputs`).
- `bool_to_circuit` rebuilds a netlist from a `bool.circuit` through the netlist's builders
  (hashed and folded), reading every op of the dialect: or, nand, nor and xnor as the builders
  of those names, `bool.linear` from its truth table. The round trip is exact: on a netlist
  of live gates built inputs first (`Circuit.cleaned`) it gives the same nodes in the same
  order, so the same gate counts and the same FHEW cover.
- `cover_to_bool` writes an FHEW cover (metrics.fhew_cover) as its cells: a one-bootstrap
  cell as `bool.linear` with the combination the gate model chose, a MUX cell as `bool.mux`.
  It is the gate program (targets/fhew/gates.py) in the dialect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from compiler.circuits.fhew_model import FhewCost, cover_cells
from compiler.circuits.netlist import FALSE, TRUE, Circuit, Kind, Lit, negate, node_of
from compiler.dialects import boolean
from compiler.errors import UserError


class _TypeNamed(Protocol):
    @property
    def name(self) -> str: ...


class TypedCircuit(Protocol):
    """A per-element circuit with its words' element types (dsl.circuit.CircuitProgram)."""

    @property
    def name(self) -> str: ...

    @property
    def circuit(self) -> Circuit: ...

    @property
    def inputs(self) -> Mapping[str, tuple[_TypeNamed, object]]: ...

    @property
    def outputs(self) -> Mapping[str, tuple[_TypeNamed, object]]: ...


def default_type(width: int, signed: bool = False) -> str:
    """The element type name of a word without a declared one."""
    if width == 1 and not signed:
        return "bool"
    return f"{'i' if signed else 'u'}{width}"


class _Writer:
    """Appends the ops of one `bool.circuit`, giving each netlist literal an SSA value."""

    def __init__(self, circuit: Circuit, name: str, input_types: Mapping[str, str]):
        self.circuit = circuit
        self.op = boolean.CircuitOp(name)
        self.node_value: dict[int, SSAValue] = {}
        self.negated: dict[int, SSAValue] = {}
        self.constants: dict[bool, SSAValue] = {}
        for word, bits in circuit.inputs.items():
            t = input_types.get(word) or default_type(len(bits), word in circuit.signed_inputs)
            op = self.add(boolean.InputOp(word, t, len(bits)))
            for bit, value in zip(bits, op.results, strict=True):
                self.node_value[node_of(bit)] = value

    def add(self, op: Operation) -> Operation:
        self.op.block.add_op(op)
        return op

    def value(self, lit: Lit) -> SSAValue:
        """The SSA value of a literal (a `bool.not` or `bool.constant` made on first use)."""
        n = node_of(lit)
        if n == 0:
            bit = lit == TRUE
            if bit not in self.constants:
                self.constants[bit] = self.add(boolean.ConstantOp(bit)).results[0]
            return self.constants[bit]
        positive = self.node_value[n]
        if not lit & 1:
            return positive
        if n not in self.negated:
            self.negated[n] = self.add(boolean.NotOp(positive)).results[0]
        return self.negated[n]

    def outputs(self, output_types: Mapping[str, str]) -> ModuleOp:
        for word, bits in self.circuit.outputs.items():
            t = output_types.get(word) or default_type(len(bits))
            self.add(boolean.OutputOp(word, t, [self.value(b) for b in bits]))
        module = ModuleOp([self.op])
        module.verify()
        return module


def circuit_to_bool(
    source: Circuit | TypedCircuit,
    name: str | None = None,
    input_types: Mapping[str, str] | None = None,
    output_types: Mapping[str, str] | None = None,
) -> ModuleOp:
    """A module holding one `bool.circuit` (named `name`, else the program's name, else
    "circuit") with the live gates of `source` (module docstring). `input_types` and
    `output_types` name words' element types, over a CircuitProgram's own; the module
    verifies."""
    if isinstance(source, Circuit):
        circuit, ins, outs, default_name = source, {}, {}, "circuit"
    else:
        circuit = source.circuit
        ins = {w: t.name for w, (t, _) in source.inputs.items()}
        outs = {w: t.name for w, (t, _) in source.outputs.items()}
        default_name = source.name
    writer = _Writer(circuit, name or default_name, {**ins, **(input_types or {})})
    for n in circuit.live_nodes():
        node = circuit.nodes[n]
        ins_ = [writer.value(x) for x in node.fanins]
        if node.kind is Kind.AND:
            op: Operation = boolean.AndOp(*ins_)
        elif node.kind is Kind.XOR:
            op = boolean.XorOp(*ins_)
        elif node.kind is Kind.MUX:
            op = boolean.MuxOp(*ins_)
        elif node.k == 2 and len(ins_) == 3:
            op = boolean.MajOp(*ins_)
        else:
            op = boolean.ThresholdOp(node.k, ins_)
        writer.node_value[n] = writer.add(op).results[0]
    return writer.outputs({**outs, **(output_types or {})})


def cover_to_bool(
    mapped: Circuit,
    cover: FhewCost,
    name: str = "circuit",
    input_types: Mapping[str, str] | None = None,
    output_types: Mapping[str, str] | None = None,
) -> ModuleOp:
    """The cells of `cover`, a cover of `mapped` (metrics.fhew_cover), as one `bool.circuit` of
    `bool.linear` and `bool.mux` ops (module docstring)."""
    writer = _Writer(mapped, name, input_types or {})
    for cell in cover_cells(mapped, cover):
        if cell.mux is not None:
            op: Operation = boolean.MuxOp(*(writer.value(x) for x in cell.mux))
        else:
            leaves = [writer.value(2 * leaf) for leaf in cell.leaves]
            op = boolean.LinearOp(leaves, list(cell.multipliers), cell.constant)
        writer.node_value[cell.root] = writer.add(op).results[0]
    return writer.outputs(output_types or {})


def the_circuit(module: Operation) -> boolean.CircuitOp:
    """The one `bool.circuit` of `module` (UserError when there is none or several)."""
    found = boolean.circuits(module)
    if len(found) != 1:
        raise UserError(f"expected one bool.circuit in the module, found {len(found)}")
    return found[0]


def _from_table(c: Circuit, table: int, lits: Sequence[Lit]) -> Lit:
    """The function with truth table `table` (bit x: the value at the assignment whose bit i is
    lits[i]) by Shannon expansion on the last literal; the builders fold it to simple gates."""
    if not lits:
        return TRUE if table & 1 else FALSE
    half = 1 << (len(lits) - 1)
    low, high = table & ((1 << half) - 1), table >> half
    rest = lits[:-1]
    return c.mux(lits[-1], _from_table(c, high, rest), _from_table(c, low, rest))


def _linear(c: Circuit, op: boolean.LinearOp, ins: list[Lit]) -> Lit:
    table = 0
    for x in range(1 << len(ins)):
        table |= op.evaluate([(x >> i) & 1 for i in range(len(ins))]) << x
    return _from_table(c, table, ins)


def bool_to_circuit(module: Operation) -> Circuit:
    """The netlist of the one `bool.circuit` in `module` (module docstring); `module` must
    verify."""
    circuit_op = the_circuit(module)
    c = Circuit()
    lit: dict[SSAValue, Lit] = {}
    for op in circuit_op.block.ops:
        ins = [lit[v] for v in op.operands]
        match op:
            case boolean.InputOp():
                bits = c.input(op.sym_value, len(op.bits), signed=op.signed)
                lit.update(zip(op.bits, bits, strict=True))
                continue
            case boolean.OutputOp():
                c.output(op.sym_value, ins)
                continue
            case boolean.ConstantOp():
                out = TRUE if op.bit else FALSE
            case boolean.NotOp():
                out = negate(ins[0])
            case boolean.AndOp():
                out = c.and_(*ins)
            case boolean.OrOp():
                out = c.or_(*ins)
            case boolean.XorOp():
                out = c.xor(*ins)
            case boolean.NandOp():
                out = c.nand(*ins)
            case boolean.NorOp():
                out = c.nor(*ins)
            case boolean.XnorOp():
                out = c.xnor(*ins)
            case boolean.MuxOp():
                out = c.mux(*ins)
            case boolean.MajOp():
                out = c.maj(*ins)
            case boolean.ThresholdOp():
                out = c.threshold(op.k_value, ins)
            case boolean.LinearOp():
                out = _linear(c, op, ins)
            case _:
                raise AssertionError(f"{op.name} in a verified bool.circuit")
        lit[op.results[0]] = out
    return c
