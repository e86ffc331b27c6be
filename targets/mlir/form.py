"""hec IR as MLIR text that MLIR's own tools read, and back (docs/mlir.md).

hec's custom form (`hec ir`, `--print-ir-after`) is for people and for hec; `mlir-opt` cannot
read it, because an op's custom syntax needs C++ parse hooks that a dialect loaded from IRDL
(`--irdl-file`) does not have. The *MLIR form* this module writes and reads is what an
IRDL-loaded dialect accepts, and it is also what `mlir-opt` prints back:

- every hec op in the generic form `"stat.mul"(%a, %b) {...} : (...) -> ...`, with its
  properties in the attribute dictionary (IRDL-defined ops have no properties);
- every hec type and attribute as `!dialect.name<p1, p2, ...>`, one builtin MLIR attribute per
  parameter (`!stat.tensor<["N", 3], "secret">`): xDSL-only data attributes become builtin
  ones (an `IntAttr` is an i64 integer, a `FloatData` an f64 float);
- the region ops, whose blocks have no terminator (IRDL cannot declare `NoTerminator`), as
  upstream containers marked by a `hec.op` attribute: a program (`stat.program`,
  `ckks.program`) is a `func.func` with no arguments and no results, ending in `func.return`;
  the client block is an `scf.execute_region` (run once, on the values above it) ending in
  `scf.yield`.

`to_mlir` and `from_mlir` are inverses on verified modules (golden tests for every example,
tests/mlir). `from_mlir` reports malformed text and IR that does not verify as a `UserError`
at file:line:column.
"""

from __future__ import annotations

import importlib
import io
import pkgutil
import re
from collections.abc import Callable, Iterable, Sequence

from xdsl.context import Context
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import (
    ArrayAttr,
    ArrayOfConstraint,
    Builtin,
    FloatAttr,
    FloatData,
    FunctionType,
    IntAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyOf,
    AttrConstraint,
    BaseAttr,
    IRDLOperation,
    RangeOf,
    VerificationContext,
    irdl_attr_definition,
    irdl_op_definition,
    region_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Span

import compiler.dialects as dialects_package
from compiler.dialects import stat
from compiler.errors import SourceLocation, UserError


def _discover_dialects() -> tuple[Dialect, ...]:
    """Every xDSL dialect defined in compiler/dialects (stat first), so a dialect or an op
    added there is exported, imported and defined in IRDL without a change here."""
    found: dict[str, Dialect] = {}
    for info in sorted(pkgutil.iter_modules(dialects_package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{dialects_package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, Dialect):
                found.setdefault(value.name, value)
    first = [found.pop(stat.Stat.name)]
    return (*first, *found.values())


# The dialects of the hec IR, in the order their definitions are generated (targets/mlir/irdl).
DIALECTS: tuple[Dialect, ...] = _discover_dialects()

# hec's region ops (their blocks have no terminator) and the upstream op that carries each
# in the MLIR form: a named one (a program: `sym_name`) a func.func, any other (the client
# block) an scf.execute_region.
HEC_OP = "hec.op"


def _region_ops() -> dict[str, type[IRDLOperation]]:
    return {
        op.name: op
        for d in DIALECTS
        for op in d.operations
        if issubclass(op, IRDLOperation) and op.get_irdl_definition().regions
    }


REGION_OPS: dict[str, type[IRDLOperation]] = _region_ops()


def _is_program(op_type: type[IRDLOperation]) -> bool:
    return "sym_name" in op_type.get_irdl_definition().properties


# --------------------------------------------------------------------------------------------
# Attribute values: xDSL's data attributes <-> MLIR builtin attributes
# --------------------------------------------------------------------------------------------


def to_builtin(attr: Attribute) -> Attribute:
    """The MLIR builtin attribute that stands for `attr` (an i64 integer for an `IntAttr`, an
    f64 float for a `FloatData`; arrays element by element; anything else unchanged)."""
    if isinstance(attr, IntAttr):
        return IntegerAttr(attr.data, i64)
    if isinstance(attr, FloatData):
        return FloatAttr(attr.data, f64)
    if isinstance(attr, ArrayAttr):
        return ArrayAttr([to_builtin(a) for a in attr.data])
    return attr


def _bases(constr: AttrConstraint) -> list[type[Attribute]]:
    if isinstance(constr, BaseAttr):
        return [constr.attr]
    if isinstance(constr, AnyOf):
        return [b for c in constr.attr_constrs for b in _bases(c)]
    return []


def from_builtin(attr: Attribute, constr: AttrConstraint) -> Attribute:
    """Inverse of `to_builtin`, guided by the constraint the value must meet."""
    if isinstance(constr, ArrayOfConstraint) and isinstance(attr, ArrayAttr):
        inner = constr.elem_range_constraint
        elem = inner.constr if isinstance(inner, RangeOf) else None
        if elem is None:
            return attr
        return ArrayAttr([from_builtin(a, elem) for a in attr.data])
    bases = _bases(constr)
    if IntAttr in bases and isinstance(attr, IntegerAttr):
        return IntAttr(attr.value.data)
    if FloatData in bases and isinstance(attr, FloatAttr | IntegerAttr):
        return FloatData(float(attr.value.data))
    return _real(attr)


def hec_attribute_classes() -> list[type[ParametrizedAttribute]]:
    return [a for d in DIALECTS for a in d.attributes if issubclass(a, ParametrizedAttribute)]


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


class _MlirPrinter(Printer):
    """xDSL's generic printer, with hec's types and attributes in their parameter form."""

    HEC = tuple(hec_attribute_classes())

    def print_attribute(self, attribute: Attribute) -> None:
        if isinstance(attribute, self.HEC):
            self.print_string("!" if isinstance(attribute, TypeAttribute) else "#")
            self.print_string(attribute.name)
            params = attribute.parameters
            if params:
                self.print_string("<")
                self.print_list([to_builtin(p) for p in params], self.print_attribute)
                self.print_string(">")
            return
        super().print_attribute(attribute)


def _to_upstream(op: Operation) -> Operation:
    """The MLIR-form op standing for `op` (a clone; regions are moved, not copied)."""
    if op.name in REGION_OPS:
        body = op.regions[0]
        block = body.detach_block(body.blocks[0]) if body.blocks else Block()
        attrs: dict[str, Attribute] = {HEC_OP: StringAttr(op.name)}
        attrs.update({k: to_builtin(v) for k, v in op.properties.items() if k != "sym_name"})
        attrs.update({k: to_builtin(v) for k, v in op.attributes.items()})
        if _is_program(REGION_OPS[op.name]):
            block.add_op(func.ReturnOp())
            sym = op.properties["sym_name"]
            assert isinstance(sym, StringAttr)
            new: Operation = func.FuncOp(sym.data, FunctionType.from_lists([], []), Region(block))
        else:
            block.add_op(scf.YieldOp())
            new = scf.ExecuteRegionOp([], Region(block))
        new.attributes.update(attrs)
        return new
    # Sorted by name, as mlir-opt prints them: the text is the same whichever tool wrote it.
    merged = {**op.properties, **op.attributes}
    attrs = {k: to_builtin(merged[k]) for k in sorted(merged)}
    op.attributes = attrs
    op.properties = {}
    return op


def to_mlir(module: ModuleOp) -> str:
    """The MLIR form of a verified hec module (stat or ckks): text that `mlir-opt
    --irdl-file=stat.irdl.mlir --irdl-file=ckks.irdl.mlir` parses and verifies."""
    clone = module.clone()
    for top in list(clone.body.block.ops):
        _convert_tree(top, _to_upstream)
    buffer = io.StringIO()
    _MlirPrinter(stream=buffer, print_generic_format=True).print_op(clone)
    return buffer.getvalue() + "\n"


def _convert_tree(op: Operation, convert: Callable[[Operation], Operation]) -> None:
    """Replace `op` and every op nested in it, innermost first, by `convert(op)`."""
    for region in op.regions:
        for block in region.blocks:
            for inner in list(block.ops):
                _convert_tree(inner, convert)
    new = convert(op)
    if new is not op:
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(new, op)
        block.detach_op(op)
        op.erase(safe_erase=False)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


def _mirror_class(base: type[ParametrizedAttribute]) -> type[ParametrizedAttribute]:
    """A stand-in for a hec attribute class, under the same name, that parses the parameter
    form `<attr, attr, ...>` and converts each builtin value to the parameter's own kind
    (`_real` turns it into the hec class once parsed)."""
    definition = base.get_irdl_definition().parameters

    def parse_parameters(cls: type[ParametrizedAttribute], parser: AttrParser) -> list[Attribute]:
        if not definition:
            return []
        start = parser.pos
        values = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parser.parse_attribute)
        if len(values) != len(definition):
            parser.raise_error(
                f"{base.name} has {len(definition)} parameters "
                f"({', '.join(n for n, _ in definition)}), got {len(values)}",
                start,
                parser.pos,
            )
        params = [from_builtin(v, d.constr) for v, (_, d) in zip(values, definition, strict=True)]
        for (name, d), value in zip(definition, params, strict=True):
            try:
                d.constr.verify(value, VerificationContext())
            except VerifyException as err:
                parser.raise_error(f"parameter {name} of {base.name}: {err}", start, parser.pos)
        return params

    namespace: dict[str, object] = {
        "name": base.name,
        "__annotations__": {n: Attribute for n, _ in definition},
        "parse_parameters": classmethod(parse_parameters),
        "__module__": __name__,
    }
    kinds = (
        (ParametrizedAttribute, TypeAttribute)
        if issubclass(base, TypeAttribute)
        else (ParametrizedAttribute,)
    )
    mirror = irdl_attr_definition(type(base.__name__ + "Mirror", kinds, namespace))
    _MIRROR_OF[mirror] = base
    return mirror


_MIRROR_OF: dict[type[Attribute], type[ParametrizedAttribute]] = {}


@irdl_op_definition
class _ExecuteRegionImport(IRDLOperation):
    """`scf.execute_region` as the importer reads it: xDSL 0.74's own op drops the attribute
    dictionary of its custom form, which carries the `hec.op` marker."""

    name = "scf.execute_region"

    outs = var_result_def()
    region = region_def()

    @classmethod
    def parse(cls, parser: Parser) -> _ExecuteRegionImport:
        region = parser.parse_region()
        attrs = parser.parse_optional_attr_dict()
        op = cls.create(regions=[region], attributes=attrs)
        return op


def _import_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(func.Func)
    ctx.load_dialect(Dialect("scf", [_ExecuteRegionImport, scf.YieldOp], []))
    for dialect in DIALECTS:
        attrs = [
            _mirror_class(a) if issubclass(a, ParametrizedAttribute) else a
            for a in dialect.attributes
        ]
        ctx.load_dialect(Dialect(dialect.name, list(dialect.operations), attrs))
    return ctx


class _LocatingParser(Parser):
    """The xDSL parser, remembering where each op starts (to locate verifier errors)."""

    def __init__(self, ctx: Context, text: str, name: str):
        super().__init__(ctx, text, name)
        self.op_spans: dict[int, Span[str]] = {}

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        self.op_spans[id(op)] = span  # pyright: ignore[reportArgumentType]
        return op


def _location(span: Span[str] | Span[bytes], name: str) -> SourceLocation:
    loc = span.get_location()
    text = span.input.content
    start = span.input.get_start_of_line(span.start)
    end = span.input.get_end_of_line(span.start)
    line = text[start:end]
    line_text = line.decode() if isinstance(line, bytes) else line
    return SourceLocation(name, loc.line, loc.col, line_text, max(1, min(span.len, 80)))


def _fix_types(op: Operation) -> None:
    """Import-time subclasses of hec's attributes -> the real classes, everywhere in `op`."""
    for result in op.results:
        result._type = _real(result.type)  # pyright: ignore[reportPrivateUsage]
    for region in op.regions:
        for block in region.blocks:
            for arg in block.args:
                arg._type = _real(arg.type)  # pyright: ignore[reportPrivateUsage]
    for key, value in list(op.properties.items()):
        op.properties[key] = _real(value)
    for key, value in list(op.attributes.items()):
        op.attributes[key] = _real(value)


def _real(attr: Attribute) -> Attribute:
    base = _MIRROR_OF.get(type(attr))
    if base is not None:
        assert isinstance(attr, ParametrizedAttribute)
        return base.new([_real(p) for p in attr.parameters])
    if isinstance(attr, ArrayAttr):
        return ArrayAttr([_real(a) for a in attr.data])
    if isinstance(attr, FunctionType):
        return FunctionType.from_lists(
            [_real(a) for a in attr.inputs.data], [_real(a) for a in attr.outputs.data]
        )
    return attr


def _from_upstream(op: Operation) -> Operation:
    """The hec op an MLIR-form op stands for."""
    _fix_types(op)
    marker = op.attributes.get(HEC_OP)
    if isinstance(marker, StringAttr) and marker.data in REGION_OPS:
        op_type = REGION_OPS[marker.data]
        program = _is_program(op_type)
        if program and not isinstance(op, func.FuncOp):
            raise VerifyException(f"{marker.data} is carried by a func.func, not {op.name}")
        if not program and op.name != scf.ExecuteRegionOp.name:
            raise VerifyException(f"{marker.data} is carried by an scf.execute_region")
        body = op.regions[0]
        if len(body.blocks) != 1:
            raise VerifyException(f"{marker.data} has one block, got {len(body.blocks)}")
        block = body.blocks[0]
        last = block.last_op
        want = func.ReturnOp if program else scf.YieldOp
        if not isinstance(last, want) or last.operands:
            raise VerifyException(f"the body of {marker.data} ends with an empty {want.name}")
        block.erase_op(last)
        body.detach_block(block)
        attrs = {k: v for k, v in op.attributes.items() if k != HEC_OP}
        props = {
            name: from_builtin(attrs.pop(name), prop.constr)
            for name, prop in op_type.get_irdl_definition().properties.items()
            if name in attrs
        }
        if program:
            assert isinstance(op, func.FuncOp)
            props["sym_name"] = StringAttr(op.sym_name.data)
        return op_type.create(properties=props, attributes=attrs, regions=[Region(block)])
    if isinstance(op, IRDLOperation) and op.dialect_name() in {d.name for d in DIALECTS}:
        definition = op.get_irdl_definition()
        # Properties in definition order (as hec's builders create them), whatever the order
        # of the attribute dictionary.
        op.properties = {
            name: from_builtin(op.properties[name], prop.constr)
            for name, prop in definition.properties.items()
            if name in op.properties
        }
        for name, attr in definition.attributes.items():
            if name in op.attributes:
                op.attributes[name] = from_builtin(op.attributes[name], attr.constr)
    return op


_FORM_HINT = (
    "hec reads its MLIR form (`hec ir --generic`, and what mlir-opt prints from it) and its "
    "custom form (`hec ir`); see docs/mlir.md"
)


def from_mlir(text: str, name: str = "<input>") -> ModuleOp:
    """Read hec IR in the MLIR form (or hec's custom form) into a verified module.

    Malformed text and IR that does not verify raise a `UserError` located at the line and
    column of the token or op at fault."""
    if _is_custom_form(text):
        return _from_custom(text, name)
    parser = _LocatingParser(_import_context(), text, name)
    try:
        module = parser.parse_module()
    except ParseError as err:
        raise UserError(err.msg, _location(err.span, name), _FORM_HINT) from None
    spans = parser.op_spans

    def convert(op: Operation) -> Operation:
        new = _from_upstream(op)
        if new is not op and id(op) in spans:
            spans[id(new)] = spans[id(op)]
        return new

    try:
        for top in list(module.body.block.ops):
            _convert_tree(top, convert)
    except VerifyException as err:
        raise UserError(str(err), None, _FORM_HINT) from None
    _verify_located(module, spans, name)
    return module


def _verify_located(module: ModuleOp, spans: dict[int, Span[str]], name: str) -> None:
    """Verify op by op, innermost first, and locate the first op that fails."""
    for op in _postorder(module):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as err:
            span = spans.get(id(op))
            loc = _location(span, name) if span is not None else None
            raise UserError(f"{op.name}: {err}", loc, _FORM_HINT) from None
    try:
        module.verify()
    except VerifyException as err:
        raise UserError(str(err), None, _FORM_HINT) from None


def _postorder(op: Operation) -> Iterable[Operation]:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.ops:
                yield from _postorder(inner)
    yield op


# hec's custom form has its program ops by name (the MLIR form carries them in func.func).
_CUSTOM_PROGRAM = re.compile(
    r"^\s*(" + "|".join(re.escape(n) for n, t in REGION_OPS.items() if _is_program(t)) + r")\s",
    re.MULTILINE,
)


def _is_custom_form(text: str) -> bool:
    return _CUSTOM_PROGRAM.search(text) is not None


def _from_custom(text: str, name: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, *DIALECTS):
        ctx.load_dialect(dialect)
    parser = _LocatingParser(ctx, text, name)
    try:
        module = parser.parse_module()
    except ParseError as err:
        raise UserError(err.msg, _location(err.span, name), _FORM_HINT) from None
    for op in module.walk():
        if op.name in REGION_OPS:
            for region in op.regions:
                if not region.blocks:  # an empty `{}` region parses without its block
                    region.add_block(Block())
    _verify_located(module, parser.op_spans, name)
    return module


def dialect_names() -> Sequence[str]:
    return [d.name for d in DIALECTS]
