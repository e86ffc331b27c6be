"""IRDL definitions of hec's dialects, generated from their xDSL definitions (docs/mlir.md).

The xDSL classes in compiler/dialects are the one source of truth; this module walks their
IRDL definitions (operands, results, properties and attributes with their constraints, type
and attribute parameters) and writes the same dialect in MLIR's IRDL dialect, so that
`mlir-opt-19 --irdl-file=targets/mlir/irdl/hec.irdl.mlir` parses and verifies hec's MLIR form
(targets/mlir/form.py) without `--allow-unregistered-dialect`. The generated files are
committed; `python -m targets.mlir.irdl --write` regenerates them and `--check` (run by the
tests) fails when they are stale.

What MLIR 19's IRDL can check, and so what `mlir-opt` verifies: op names, operand and result
counts (single, optional, variadic) and types, required attributes and their kinds, type and
attribute parameters and their kinds. What it cannot express stays in hec's verifier (which
`hec ir` and the importer run): optional attributes (IRDL 19 has none: such properties are
listed in a comment and not checked), the elements of an array, traits (`Pure`, `HasParent`,
`NoTerminator`: the region ops are carried by upstream containers, see form.py), and every
rule written in `verify_()` (shapes, secrecy, levels, scales, degrees).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from xdsl.dialects.builtin import (
    ArrayAttr,
    ArrayOfConstraint,
    DenseArrayBase,
    FloatAttr,
    FloatData,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    AnyAttr,
    AnyOf,
    AttrConstraint,
    BaseAttr,
    EqAttrConstraint,
    IRDLOperation,
    OptOperandDef,
    OptPropertyDef,
    OptResultDef,
    ParamAttrConstraint,
    RangeConstraint,
    RangeLengthConstraint,
    RangeOf,
    VarOperandDef,
    VarResultDef,
)

from targets.mlir.form import DIALECTS, REGION_OPS, to_builtin

IRDL_DIR = Path(__file__).resolve().parent / "irdl"
IRDL_FILE = IRDL_DIR / "hec.irdl.mlir"

# xDSL's data attributes are written as the builtin MLIR attribute that carries them in the
# MLIR form (form.to_builtin); builtin attributes by their MLIR names.
_BUILTIN_NAMES: dict[type[Attribute], str] = {
    IntAttr: "#builtin.integer",
    IntegerAttr: "#builtin.integer",
    FloatData: "#builtin.float",
    FloatAttr: "#builtin.float",
    StringAttr: "#builtin.string",
    UnitAttr: "#builtin.unit",
    ArrayAttr: "#builtin.array",
    DenseArrayBase: "#builtin.dense_array",
}


class UnsupportedConstraintError(Exception):
    """A constraint of an xDSL definition this generator cannot write (our bug: extend it)."""


class _Writer:
    """Emits the body of one IRDL definition: constraint ops, then the op that uses them."""

    def __init__(self, indent: str):
        self.indent = indent
        self.lines: list[str] = []
        self.count = 0

    def _value(self, text: str) -> str:
        name = f"%{self.count}"
        self.count += 1
        self.lines.append(f"{self.indent}{name} = {text}")
        return name

    def constraint(self, constr: AttrConstraint) -> str:
        """An SSA value for `constr` (a fresh one per use: IRDL unifies a reused value)."""
        if isinstance(constr, AnyAttr):
            return self._value("irdl.any")
        if isinstance(constr, EqAttrConstraint):
            return self._value(f"irdl.is {_attribute_text(constr.attr)}")
        if isinstance(constr, BaseAttr) and _abstract(constr.attr):
            # An HE-layer type class (he.CiphertextType): any of the dialects' types under it.
            parts = [self._value(f"irdl.base {_base_reference(c)}") for c in _abstract(constr.attr)]
            return self._value(f"irdl.any_of({', '.join(parts)})")
        if isinstance(constr, BaseAttr):
            return self._value(f"irdl.base {_base_reference(constr.attr)}")
        if isinstance(constr, ArrayOfConstraint):
            return self._value('irdl.base "#builtin.array"')
        if isinstance(constr, ParamAttrConstraint):
            return self._value(f"irdl.base {_base_reference(constr.base_attr)}")
        if isinstance(constr, AnyOf):
            parts = [self.constraint(c) for c in constr.attr_constrs]
            return self._value(f"irdl.any_of({', '.join(parts)})")
        raise UnsupportedConstraintError(f"no IRDL form for {constr!r}")

    def range_constraint(self, constr: RangeConstraint) -> str:
        if isinstance(constr, RangeLengthConstraint):
            return self.range_constraint(constr.constraint)
        if isinstance(constr, RangeOf):
            return self.constraint(constr.constr)
        raise UnsupportedConstraintError(f"no IRDL form for {constr!r}")

    def emit(self, text: str) -> None:
        self.lines.append(f"{self.indent}{text}")


def _attribute_text(attr: Attribute) -> str:
    from io import StringIO

    from xdsl.printer import Printer

    buffer = StringIO()
    Printer(stream=buffer).print_attribute(to_builtin(attr))
    return buffer.getvalue()


def _abstract(cls: type[Attribute]) -> list[type[Attribute]]:
    """The registered attributes under `cls` when `cls` itself is not one (an abstract class
    of the HE layer that several dialects' types implement); [] otherwise."""
    if any(cls in d.attributes for d in DIALECTS):
        return []
    return [a for d in DIALECTS for a in d.attributes if issubclass(a, cls) and a is not cls]


def _base_reference(cls: type[Attribute]) -> str:
    """`@dialect::@name` for one of hec's attributes, the quoted MLIR name of a builtin."""
    for dialect in DIALECTS:
        if cls in dialect.attributes:
            assert issubclass(cls, ParametrizedAttribute)
            return f"@{dialect.name}::@{_short(cls.name)}"
    for known, name in _BUILTIN_NAMES.items():
        if issubclass(cls, known):
            return f'"{name}"'
    raise UnsupportedConstraintError(f"no MLIR name for the attribute class {cls.__name__}")


def _short(name: str) -> str:
    return name.split(".", 1)[1]


def _attribute_definition(cls: type[ParametrizedAttribute]) -> list[str]:
    kind = "type" if issubclass(cls, TypeAttribute) else "attribute"
    writer = _Writer("    ")
    params = [writer.constraint(p.constr) for _, p in cls.get_irdl_definition().parameters]
    names = ", ".join(n for n, _ in cls.get_irdl_definition().parameters)
    header = [f"  // {cls.name}<{names}>" if names else f"  // {cls.name}"]
    if params:
        writer.emit(f"irdl.parameters({', '.join(params)})")
    return [*header, f"  irdl.{kind} @{_short(cls.name)} {{", *writer.lines, "  }"]


def _operation_definition(op: type[IRDLOperation]) -> list[str]:
    definition = op.get_irdl_definition()
    writer = _Writer("    ")
    optional: list[str] = []

    def ranged(defs: list[tuple[str, object]]) -> list[str]:
        out: list[str] = []
        for _, d in defs:
            value = writer.range_constraint(d.constr)  # pyright: ignore[reportAttributeAccessIssue]
            if isinstance(d, OptOperandDef | OptResultDef):
                out.append(f"optional {value}")
            elif isinstance(d, VarOperandDef | VarResultDef):
                out.append(f"variadic {value}")
            else:
                out.append(value)
        return out

    operands = ranged(list(definition.operands))
    results = ranged(list(definition.results))
    attributes: list[str] = []
    for name, prop in [*definition.properties.items(), *definition.attributes.items()]:
        if isinstance(prop, OptPropertyDef) or getattr(prop, "default_value", None) is not None:
            optional.append(name)
            continue
        attributes.append(f'"{name}" = {writer.constraint(prop.constr)}')
    if operands:
        writer.emit(f"irdl.operands({', '.join(operands)})")
    if results:
        writer.emit(f"irdl.results({', '.join(results)})")
    if attributes:
        writer.emit(f"irdl.attributes {{{', '.join(attributes)}}}")
    header = [f"  // {op.name}"]
    if optional:
        header.append(f"  //   optional, not checked by IRDL 19: {', '.join(optional)}")
    return [*header, f"  irdl.operation @{_short(op.name)} {{", *writer.lines, "  }"]


def _dialect_definition(dialect: Dialect) -> Iterator[str]:
    yield f"irdl.dialect @{dialect.name} {{"
    for attr in dialect.attributes:
        if issubclass(attr, ParametrizedAttribute):
            yield from _attribute_definition(attr)
    for op in dialect.operations:
        if op.name in REGION_OPS:
            yield f"  // {op.name}: carried by an upstream container (targets/mlir/form.py)"
            continue
        assert issubclass(op, IRDLOperation)
        yield from _operation_definition(op)
    yield "}"


def generate() -> str:
    """The IRDL text of every hec dialect (one file: ckks refers to stat's domains)."""
    lines = [
        "// IRDL definitions of hec's dialects, GENERATED from compiler/dialects by",
        "// `python -m targets.mlir.irdl --write`; do not edit (docs/mlir.md).",
        "// Use: mlir-opt-19 --irdl-file=targets/mlir/irdl/hec.irdl.mlir --verify-each FILE",
    ]
    for dialect in DIALECTS:
        lines.append("")
        lines.extend(_dialect_definition(dialect))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m targets.mlir.irdl", description="IRDL definitions of hec's dialects"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {IRDL_FILE}")
    mode.add_argument("--check", action="store_true", help="fail if the committed file is stale")
    args = parser.parse_args(argv)
    text = generate()
    if args.write:
        IRDL_DIR.mkdir(exist_ok=True)
        IRDL_FILE.write_text(text)
        print(f"wrote {IRDL_FILE}")
        return 0
    if args.check:
        current = IRDL_FILE.read_text() if IRDL_FILE.is_file() else ""
        if current != text:
            print(
                f"{IRDL_FILE} is stale: run `python -m targets.mlir.irdl --write`", file=sys.stderr
            )
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
