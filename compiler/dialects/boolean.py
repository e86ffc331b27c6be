"""The `bool` dialect: per-element Boolean circuits (issue #23), the IR of integer and Boolean
programs between the language's circuit lowering and the FHEW gate program (docs/circuits.md,
"The bool dialect").

Every value is an `i1` (MLIR's builtin one-bit integer): one bit of one element. A word is a
list of bits, least significant first, and is named only at the circuit's boundary.

Ops
---
- `bool.circuit "name" { ... }`: one per-element circuit, one block, no terminator. Holds, in
  order, its `bool.input` ops, its gates and its `bool.output` ops. Verified: at least one
  output, input names and output names each unique, and every bit an output reads defined
  inside the circuit. `.inputs()`, `.outputs()`, `.gates()`.
- `%b0, ..., %b7 = bool.input "a" "u8" : i1, ...`: an input word (`sym`, its element type
  `int_type`: `bool`, `uN` or `iN`, whose width is the number of results).
- `bool.output "c" "u8" %b0, ..., %b7`: an output word, the same attributes; the operands are
  its bits.
- `%t = bool.constant true`: a constant bit.
- `bool.not`; `bool.and`, `bool.or`, `bool.xor`, `bool.nand`, `bool.nor`, `bool.xnor` (two
  operands); `bool.mux %s, %t, %f` (s ? t : f).
- `bool.maj %x, %y, %z`: the majority of three (a full adder's carry);
  `bool.threshold %x0, ..., %xn-1 {k}`: 1 when at least k of its n >= 2 operands are 1
  (1 <= k <= n; an operand listed twice counts twice). The netlist's THRESHOLD kind
  (compiler/circuits/netlist.py) is `bool.maj` for k = 2 of 3 and `bool.threshold` otherwise.
- `bool.linear %x0, ... {multipliers, constant}`: one FHEW bootstrap over 1 to 3 bits, a
  one-bootstrap cell of the FHEW gate model (compiler/circuits/fhew_model.py): 1 exactly when
  (2 * sum_i m_i x_i + c) mod 8 < 4, one multiplier m_i per operand and 0 <= c < 8.

The netlist's NOT is an edge attribute; here it is the `bool.not` op (free in both targets).
compiler/circuits/bool_conversion.py converts netlists to this dialect and back.
"""

from __future__ import annotations

import re
from abc import ABC
from collections.abc import Sequence

from xdsl.dialects.builtin import (
    I64,
    BoolAttr,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    StringAttr,
    i1,
    i64,
)
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, Pure
from xdsl.utils.exceptions import VerifyException

from compiler.dialects.region_op import NamedRegionOp

_INT_TYPE = re.compile(r"(bool|[ui]([1-9][0-9]*))\Z")


def type_width(int_type: str) -> int:
    """The width in bits of an element type name (`bool` 1, `u8` 8, `i16` 16)."""
    m = _INT_TYPE.match(int_type)
    if m is None:
        raise VerifyException(
            f"element type {int_type!r} is not bool, uN or iN (N >= 1, e.g. u8, i16)"
        )
    return 1 if m.group(1) == "bool" else int(m.group(2))


def _verify_word(op: Operation, sym: str, int_type: str, bits: int) -> None:
    if bits < 1:
        raise VerifyException(f"{op.name} '{sym}' has no bits")
    width = type_width(int_type)
    if width != bits:
        raise VerifyException(
            f"{op.name} '{sym}' of type {int_type} has {bits} bits, expected {width}"
        )


class _Word(IRDLOperation, ABC):
    """A named word at the circuit's boundary: `sym` and its element type `int_type`."""

    sym = prop_def(StringAttr)
    int_type = prop_def(StringAttr)

    irdl_options = (ParsePropInAttrDict(),)

    @property
    def sym_value(self) -> str:
        return self.sym.data

    @property
    def int_type_value(self) -> str:
        return self.int_type.data

    @property
    def signed(self) -> bool:
        return self.int_type_value.startswith("i")


@irdl_op_definition
class InputOp(_Word):
    """An input word; its results are the bits, least significant first."""

    name = "bool.input"

    bits = var_result_def(i1)

    assembly_format = "$sym $int_type attr-dict `:` type($bits)"
    traits = lazy_traits_def(lambda: (HasParent(CircuitOp),))

    def __init__(self, sym: str, int_type: str, width: int):
        super().__init__(
            result_types=[[i1] * width],
            properties={"sym": StringAttr(sym), "int_type": StringAttr(int_type)},
        )

    def verify_(self) -> None:
        _verify_word(self, self.sym_value, self.int_type_value, len(self.bits))


@irdl_op_definition
class OutputOp(_Word):
    """An output word; its operands are the bits, least significant first."""

    name = "bool.output"

    bits = var_operand_def(i1)

    assembly_format = "$sym $int_type $bits attr-dict"
    traits = lazy_traits_def(lambda: (HasParent(CircuitOp),))

    def __init__(self, sym: str, int_type: str, bits: Sequence[SSAValue]):
        super().__init__(
            operands=[list(bits)],
            properties={"sym": StringAttr(sym), "int_type": StringAttr(int_type)},
        )

    def verify_(self) -> None:
        _verify_word(self, self.sym_value, self.int_type_value, len(self.bits))


@irdl_op_definition
class ConstantOp(IRDLOperation):
    name = "bool.constant"

    value = prop_def(BoolAttr)
    result = result_def(i1)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$value attr-dict"
    traits = traits_def(Pure())

    def __init__(self, value: bool):
        super().__init__(
            result_types=[i1], properties={"value": IntegerAttr(int(value), IntegerType(1))}
        )

    @property
    def bit(self) -> bool:
        return bool(self.value.value.data)


@irdl_op_definition
class NotOp(IRDLOperation):
    name = "bool.not"

    input = operand_def(i1)
    result = result_def(i1)

    assembly_format = "$input attr-dict"
    traits = traits_def(Pure())

    def __init__(self, operand: SSAValue):
        super().__init__(operands=[operand], result_types=[i1])


class _TwoInput(IRDLOperation, ABC):
    lhs = operand_def(i1)
    rhs = operand_def(i1)
    result = result_def(i1)

    assembly_format = "$lhs `,` $rhs attr-dict"
    traits = traits_def(Pure())

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[i1])


@irdl_op_definition
class AndOp(_TwoInput):
    name = "bool.and"


@irdl_op_definition
class OrOp(_TwoInput):
    name = "bool.or"


@irdl_op_definition
class XorOp(_TwoInput):
    name = "bool.xor"


@irdl_op_definition
class NandOp(_TwoInput):
    name = "bool.nand"


@irdl_op_definition
class NorOp(_TwoInput):
    name = "bool.nor"


@irdl_op_definition
class XnorOp(_TwoInput):
    name = "bool.xnor"


@irdl_op_definition
class MuxOp(IRDLOperation):
    """sel ? if_true : if_false."""

    name = "bool.mux"

    sel = operand_def(i1)
    if_true = operand_def(i1)
    if_false = operand_def(i1)
    result = result_def(i1)

    assembly_format = "$sel `,` $if_true `,` $if_false attr-dict"
    traits = traits_def(Pure())

    def __init__(self, sel: SSAValue, if_true: SSAValue, if_false: SSAValue):
        super().__init__(operands=[sel, if_true, if_false], result_types=[i1])


@irdl_op_definition
class MajOp(IRDLOperation):
    """The majority of three bits."""

    name = "bool.maj"

    x = operand_def(i1)
    y = operand_def(i1)
    z = operand_def(i1)
    result = result_def(i1)

    assembly_format = "$x `,` $y `,` $z attr-dict"
    traits = traits_def(Pure())

    def __init__(self, x: SSAValue, y: SSAValue, z: SSAValue):
        super().__init__(operands=[x, y, z], result_types=[i1])


@irdl_op_definition
class ThresholdOp(IRDLOperation):
    """1 when at least k of the n >= 2 operands are 1 (1 <= k <= n)."""

    name = "bool.threshold"

    ins = var_operand_def(i1)
    k = prop_def(IntegerAttr[I64])
    result = result_def(i1)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$ins attr-dict"
    traits = traits_def(Pure())

    def __init__(self, k: int, ins: Sequence[SSAValue]):
        super().__init__(
            operands=[list(ins)], result_types=[i1], properties={"k": IntegerAttr(k, i64)}
        )

    @property
    def k_value(self) -> int:
        return self.k.value.data

    def verify_(self) -> None:
        n = len(self.ins)
        if n < 2:
            raise VerifyException(f"bool.threshold needs at least 2 operands, got {n}")
        if not 1 <= self.k_value <= n:
            raise VerifyException(
                f"bool.threshold of {n} operands needs 1 <= k <= {n}, got k = {self.k_value}"
            )


# The FHEW phase is taken modulo 8 (units of q/8; fhew_model.py).
LINEAR_MODULUS = 8
MAX_LINEAR_INPUTS = 3


@irdl_op_definition
class LinearOp(IRDLOperation):
    """One FHEW bootstrap: 1 exactly when (2 * sum_i m_i x_i + c) mod 8 < 4."""

    name = "bool.linear"

    ins = var_operand_def(i1)
    multipliers = prop_def(DenseArrayBase[I64])
    constant = prop_def(IntegerAttr[I64])
    result = result_def(i1)

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$ins attr-dict"
    traits = traits_def(Pure())

    def __init__(self, ins: Sequence[SSAValue], multipliers: Sequence[int], constant: int):
        super().__init__(
            operands=[list(ins)],
            result_types=[i1],
            properties={
                "multipliers": DenseArrayBase.from_list(i64, [int(m) for m in multipliers]),
                "constant": IntegerAttr(constant, i64),
            },
        )

    @property
    def multiplier_values(self) -> tuple[int, ...]:
        return tuple(int(m) for m in self.multipliers.get_values())

    @property
    def constant_value(self) -> int:
        return self.constant.value.data

    def evaluate(self, bits: Sequence[int]) -> int:
        """The output on input bits `bits` (one per operand)."""
        m = self.multiplier_values
        phase = 2 * sum(mi * b for mi, b in zip(m, bits, strict=True)) + self.constant_value
        return int(phase % LINEAR_MODULUS < LINEAR_MODULUS // 2)

    def verify_(self) -> None:
        n = len(self.ins)
        if not 1 <= n <= MAX_LINEAR_INPUTS:
            raise VerifyException(
                f"bool.linear reads 1 to {MAX_LINEAR_INPUTS} bits (one bootstrap), got {n}"
            )
        if len(self.multiplier_values) != n:
            raise VerifyException(
                f"bool.linear has {n} operands but {len(self.multiplier_values)} multipliers"
            )
        if not 0 <= self.constant_value < LINEAR_MODULUS:
            raise VerifyException(
                f"bool.linear constant must be in [0, {LINEAR_MODULUS}), got {self.constant_value}"
            )


GATE_OPS: tuple[type[IRDLOperation], ...] = (
    ConstantOp,
    NotOp,
    AndOp,
    OrOp,
    XorOp,
    NandOp,
    NorOp,
    XnorOp,
    MuxOp,
    MajOp,
    ThresholdOp,
    LinearOp,
)


@irdl_op_definition
class CircuitOp(NamedRegionOp):
    """One per-element Boolean circuit; see the module docstring."""

    name = "bool.circuit"

    def inputs(self) -> list[InputOp]:
        return [op for op in self._ops() if isinstance(op, InputOp)]

    def outputs(self) -> list[OutputOp]:
        return [op for op in self._ops() if isinstance(op, OutputOp)]

    def gates(self) -> list[Operation]:
        return [op for op in self._ops() if not isinstance(op, InputOp | OutputOp)]

    def verify_(self) -> None:
        for kind, words in (("input", self.inputs()), ("output", self.outputs())):
            seen: set[str] = set()
            for word in words:
                if word.sym_value in seen:
                    raise VerifyException(f"{kind} word '{word.sym_value}' is declared twice")
                seen.add(word.sym_value)
        outputs = self.outputs()
        if not outputs:
            raise VerifyException(f"circuit '{self.sym_name.data}' has no bool.output")
        inside = {id(op) for op in self._ops()}
        for op in self._ops():
            if not isinstance(op, (InputOp, OutputOp, *GATE_OPS)):
                raise VerifyException(f"{op.name} is not a bool op; a circuit holds only those")
            for i, operand in enumerate(op.operands):
                owner = operand.owner
                if not isinstance(owner, Operation) or id(owner) not in inside:
                    what = (
                        f"bit {i} of output '{op.sym_value}'"
                        if isinstance(op, OutputOp)
                        else f"operand {i} of {op.name}"
                    )
                    raise VerifyException(f"{what} is not defined inside the circuit")


def circuits(module: Operation) -> list[CircuitOp]:
    """The `bool.circuit` ops directly inside `module`."""
    return [
        op
        for region in module.regions
        for block in region.blocks
        for op in block.ops
        if isinstance(op, CircuitOp)
    ]


Bool = Dialect(
    "bool",
    [CircuitOp, InputOp, OutputOp, *GATE_OPS],
    [],
)
