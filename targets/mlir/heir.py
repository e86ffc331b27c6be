"""Export of a compiled `ckks` program to HEIR's `ckks` and `lwe` dialects (docs/mlir.md).

HEIR (heir.dev; `heir-opt` ships in the `heir-py` wheel) works on single ciphertexts and on
tensors of them; hec's values are arrays of ciphertexts with symbolic shapes. The export binds
the sizes and writes one `func.func` for the server's part:

- each encrypted input is an argument `tensor<d0 x ... x !ct>` (a packed array of shape
  [.., M] holds ceil(M / slots) ciphertexts per row; a replicated one a ciphertext per
  element), each decrypted value a result (a `hec.decrypt_factors` attribute keeps the public
  factor the coordinator applies after decryption);
- a ciphertext type per (level, scale, degree): `!lwe.lwe_ciphertext` whose modulus chain is
  hec's primes (Q_0's primes, then q_1..q_L; `current` is the last prime at that level), whose
  ciphertext space has degree + 1 polynomials and whose encoding's `scaling_factor` is log2 of
  hec's scale, rounded to an integer (HEIR counts scales in whole bits);
- add, sub, negate, mul, relinearize, rescale, level_down, rotate act elementwise on those
  tensors; a public scalar (sizes and constants folded: they are public) is an
  `lwe.rlwe_encode`d splat at the operand's level and the constant's scale, used by
  `ckks.mul_plain`/`ckks.add_plain`; reduce and dot over an array axis are `scf.for` loops
  over `tensor.extract_slice`s; sum_slots adds the column blocks, then rotates and adds
  log2(slots) times; broadcast and transpose are `tensor.generate`s choosing ciphertexts.

Complex packing (conjugation) has no HEIR op: such programs are refused (compile the export
without it: `hec ir --heir` does). The module carries HEIR's `ckks.schemeParam` with hec's
chosen ring, primes and special primes.
"""

from __future__ import annotations

import importlib.metadata
import math
import re
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.counts import coeff_group, executed_counts
from compiler.dialects import ckks
from compiler.errors import InternalError, UserError, op_location
from targets.mlir import tools
from targets.mlir.upstream import bind_sizes, lower_to_upstream


@dataclass
class HeirExport:
    text: str
    name: str
    inputs: list[str]
    outputs: list[str]


def _float(value: float) -> str:
    text = repr(float(value))
    return text if "." in text or "e" in text else text + ".0"


@dataclass
class _Export:
    params: ckks.Parameters
    sizes: dict[str, int]
    lines: list[str] = field(default_factory=list)
    names: dict[SSAValue, str] = field(default_factory=dict)
    public: dict[SSAValue, float] = field(default_factory=dict)
    coeff_group: int = 1
    ct_aliases: dict[tuple[int, int, int, bool], str] = field(default_factory=dict)
    pt_aliases: dict[tuple[int, int], str] = field(default_factory=dict)
    count: int = 0
    indent: str = "    "

    @property
    def slots(self) -> int:
        return self.params.slots

    @property
    def primes(self) -> tuple[int, ...]:
        return self.params.output_moduli + self.params.moduli

    def fresh(self, hint: str = "v") -> str:
        self.count += 1
        return f"%{hint}{self.count}"

    def emit(self, text: str) -> None:
        self.lines.append(self.indent + text)

    # -- types --------------------------------------------------------------------------------

    def current(self, level: int) -> int:
        return len(self.params.output_moduli) + level - 1

    def ct(self, ty: ckks.CtType) -> str:
        if ty.layout_name == ckks.COMPLEX:
            raise UserError(
                "HEIR has no conjugation: a complex-packed program cannot be exported",
                hint="compile without complex packing (hec ir --heir does)",
            )
        coeff = ty.layout_name == ckks.COEFF
        key = (ty.level_value, round(ty.scale_bits), ty.degree_value, coeff)
        if key not in self.ct_aliases:
            suffix = "_coeff" if coeff else ""
            self.ct_aliases[key] = f"!ct_L{key[0]}_S{key[1]}_D{key[2]}{suffix}"
        return self.ct_aliases[key]

    def pt(self, level: int, scale_bits: float) -> str:
        key = (level, round(scale_bits))
        if key not in self.pt_aliases:
            self.pt_aliases[key] = f"!pt_L{key[0]}_S{key[1]}"
        return self.pt_aliases[key]

    def ct_shape(self, ty: ckks.CtType | ckks.PtType) -> tuple[int, ...]:
        dims = tuple(d if isinstance(d, int) else self.sizes[d] for d in ty.dims)
        if ty.layout_name == ckks.REPLICATED:
            return dims
        if ty.layout_name == ckks.COEFF:
            # `coeff_group` columns per coefficient, n = 2 slots coefficients per ciphertext
            coefficients = math.ceil(dims[-1] / self.coeff_group)
            return (*dims[:-1], math.ceil(coefficients / (2 * self.slots)))
        return (*dims[:-1], math.ceil(dims[-1] / self.slots))

    def tensor(self, ty: ckks.CtType) -> str:
        shape = self.ct_shape(ty)
        return "tensor<" + "".join(f"{d}x" for d in shape) + self.ct(ty) + ">"

    def pt_tensor(self, ty: ckks.PtType) -> str:
        shape = self.ct_shape(ty)
        alias = self.pt(ty.level_value, ty.scale_bits)
        return "tensor<" + "".join(f"{d}x" for d in shape) + alias + ">"

    def preamble(self) -> list[str]:
        n = 1 << self.params.log_n
        lines: list[str] = []
        for i, q in enumerate(self.primes):
            lines.append(f"!Z{i} = !mod_arith.int<{q} : i64>")
        lines.append("#key = #lwe.key<>")
        lines.append(
            f"#ring_f64 = #polynomial.ring<coefficientType = f64, polynomialModulus = <1 + x**{n}>>"
        )
        chain = ", ".join(f"{q} : i64" for q in self.primes)
        levels = sorted({k[0] for k in self.ct_aliases} | {k[0] for k in self.pt_aliases})
        for level in levels:
            count = self.current(level) + 1
            rns = ", ".join(f"!Z{i}" for i in range(count))
            lines.append(f"!rns_L{level} = !rns.rns<{rns}>")
            lines.append(
                f"#ring_L{level} = #polynomial.ring<coefficientType = !rns_L{level}, "
                f"polynomialModulus = <1 + x**{n}>>"
            )
            lines.append(
                f"#chain_L{level} = #lwe.modulus_chain<elements = <{chain}>, "
                f"current = {self.current(level)}>"
            )
        scales = sorted({k[1] for k in self.ct_aliases} | {k[1] for k in self.pt_aliases})
        for s in scales:
            lines.append(f"#enc_S{s} = #lwe.inverse_canonical_encoding<scaling_factor = {s}>")
        for s in sorted({k[1] for k in self.ct_aliases if k[3]}):
            lines.append(f"#coeff_S{s} = #lwe.coefficient_encoding<scaling_factor = {s}>")
        for (level, s, degree, coeff), alias in sorted(self.ct_aliases.items()):
            encoding = f"#coeff_S{s}" if coeff else f"#enc_S{s}"
            lines.append(
                f"{alias} = !lwe.lwe_ciphertext<plaintext_space = <ring = #ring_f64, encoding = "
                f"{encoding}>, ciphertext_space = <ring = #ring_L{level}, encryption_type = mix, "
                f"size = {degree + 1}>, key = #key, modulus_chain = #chain_L{level}>"
            )
        for (_, s), alias in sorted(self.pt_aliases.items()):
            lines.append(
                f"{alias} = !lwe.lwe_plaintext<plaintext_space = <ring = #ring_f64, encoding = "
                f"#enc_S{s}>>"
            )
        return lines

    # -- ops ----------------------------------------------------------------------------------

    def elementwise(
        self, op: str, operands: Sequence[str], in_types: Sequence[str], out: str, attrs: str = ""
    ) -> str:
        name = self.fresh()
        self.emit(
            f'{name} = "{op}"({", ".join(operands)}){attrs} : ({", ".join(in_types)}) -> {out}'
        )
        return name

    def plain_splat(
        self, value: float, level: int, scale_bits: float, shape: Sequence[int]
    ) -> tuple[str, str]:
        """A public scalar encoded in every slot, splatted to `shape`: (SSA name, type)."""
        cst, pt, splat = self.fresh("c"), self.fresh("p"), self.fresh("p")
        alias = self.pt(level, scale_bits)
        self.emit(f"{cst} = arith.constant dense<{_float(value)}> : tensor<{self.slots}xf64>")
        self.emit(
            f'{pt} = "lwe.rlwe_encode"({cst}) <{{encoding = #enc_S{round(scale_bits)}, '
            f"ring = #ring_f64, level = {self.current(level)} : i64, scale = "
            f"{round(scale_bits)} : i64}}> : (tensor<{self.slots}xf64>) -> {alias}"
        )
        ty = "tensor<" + "".join(f"{d}x" for d in shape) + alias + ">"
        self.emit(f"{splat} = tensor.splat {pt} : {ty}")
        return splat, ty

    def slice(
        self, value: str, shape: Sequence[int], axis: int, index: str, elem: str
    ) -> tuple[str, str]:
        rest = [d for i, d in enumerate(shape) if i != axis]
        out_ty = "tensor<" + "".join(f"{d}x" for d in rest) + elem + ">"
        in_ty = "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"
        offsets = ", ".join(index if i == axis else "0" for i in range(len(shape)))
        sizes = ", ".join("1" if i == axis else str(d) for i, d in enumerate(shape))
        strides = ", ".join("1" for _ in shape)
        name = self.fresh("s")
        self.emit(
            f"{name} = tensor.extract_slice {value}[{offsets}] [{sizes}] [{strides}] : "
            f"{in_ty} to {out_ty}"
        )
        return name, out_ty

    def index(self, value: int) -> str:
        name = self.fresh("i")
        self.emit(f"{name} = arith.constant {value} : index")
        return name

    def fold_axis(
        self,
        src: ckks.CtType,
        axis: int,
        operands: Sequence[str],
        result: ckks.CtType,
        product: bool,
        operand_types: Sequence[ckks.CtType] = (),
    ) -> str:
        """Sum over ciphertext axis `axis` (of products of `operands` when `product`; their
        types `operand_types` when they differ from `src`, e.g. in degree)."""
        shape = self.ct_shape(src)
        elem = self.ct(src)
        elems = [self.ct(t) for t in operand_types] or [elem] * len(operands)
        out_elem = self.ct(result) if product else elem
        zero = self.index(0)
        firsts = [self.slice(v, shape, axis, zero, e) for v, e in zip(operands, elems, strict=True)]
        slice_ty = firsts[0][1]
        slice_types = [f[1] for f in firsts]
        out_ty = slice_ty.replace(elem + ">", out_elem + ">")
        if product:
            acc0 = self.elementwise("ckks.mul", [f[0] for f in firsts], slice_types, out_ty)
        else:
            acc0 = firsts[0][0]
        if shape[axis] == 1:
            return acc0
        one, end = self.index(1), self.index(shape[axis])
        i, acc, result_name = self.fresh("i"), self.fresh("acc"), self.fresh("v")
        self.emit(
            f"{result_name} = scf.for {i} = {one} to {end} step {one} iter_args({acc} = {acc0}) "
            f"-> ({out_ty}) {{"
        )
        outer = self.indent
        self.indent += "  "
        slices = [self.slice(v, shape, axis, i, e)[0] for v, e in zip(operands, elems, strict=True)]
        term = self.elementwise("ckks.mul", slices, slice_types, out_ty) if product else slices[0]
        total = self.elementwise("ckks.add", [acc, term], [out_ty, out_ty], out_ty)
        self.emit(f"scf.yield {total} : {out_ty}")
        self.indent = outer
        self.emit("}")
        return result_name

    def generate(
        self,
        src: str,
        src_ty: str,
        out_shape: Sequence[int],
        elem: str,
        source_index: Sequence[str | int],
    ) -> str:
        """A tensor.generate whose element at (r_0, ...) is src[source_index], an entry being
        a result axis ("r<k>") or a constant index."""
        out_ty = "tensor<" + "".join(f"{d}x" for d in out_shape) + elem + ">"
        name = self.fresh("v")
        self.emit(f"{name} = tensor.generate {{")
        args = [self.fresh("r") for _ in out_shape]
        self.lines.append(f"{self.indent}^bb0({', '.join(f'{a}: index' for a in args)}):")
        outer = self.indent
        self.indent += "  "
        idx: list[str] = []
        for entry in source_index:
            if isinstance(entry, int):
                idx.append(self.index(entry))
            else:
                idx.append(args[int(entry[1:])])
        value = self.fresh("x")
        self.emit(f"{value} = tensor.extract {src}[{', '.join(idx)}] : {src_ty}")
        self.emit(f"tensor.yield {value} : {elem}")
        self.indent = outer
        self.emit(f"}} : {out_ty}")
        return name


def _lower(ex: _Export, op: Operation) -> None:
    match op:
        case (
            ckks.ParamOp() | ckks.SourceOp() | ckks.EncodeOp() | ckks.EncryptOp() | ckks.DecryptOp()
        ):
            return
        case ckks.SizeOp():
            ex.public[op.result] = float(ex.sizes[op.sym_value])
            return
        case ckks.ConstantOp():
            ex.public[op.result] = op.float_value
            return
        case ckks.PublicArithOp():
            a, b = ex.public[op.lhs], ex.public[op.rhs]
            kind = op.kind.data
            ex.public[op.result] = (
                {"add": a + b, "sub": a - b, "mul": a * b}.get(kind, 0.0)
                if kind != "div"
                else a / b
            )
            return
        case _:
            pass
    result = op.results[0]
    out_ty = ckks.ct_type(result)
    out = ex.tensor(out_ty)
    name: str
    match op:
        case ckks.AddOp() | ckks.SubOp() | ckks.MulOp():
            lt, rt = ckks.ct_type(op.lhs), ckks.ct_type(op.rhs)
            name = ex.elementwise(
                op.name, [ex.names[op.lhs], ex.names[op.rhs]], [ex.tensor(lt), ex.tensor(rt)], out
            )
        case ckks.NegateOp():
            name = ex.elementwise(
                "ckks.negate", [ex.names[op.input]], [ex.tensor(ckks.ct_type(op.input))], out
            )
        case ckks.RelinearizeOp():
            src = ckks.ct_type(op.input)
            basis = ", ".join(str(i) for i in range(src.degree_value + 1))
            name = ex.fresh()
            ex.emit(
                f"{name} = ckks.relinearize {ex.names[op.input]} <from_basis = [{basis}], "
                f"to_basis = [0, 1]> : ({ex.tensor(src)}) -> {out}"
            )
        case ckks.RescaleOp():
            src = ckks.ct_type(op.input)
            name = ex.fresh()
            ex.emit(
                f"{name} = ckks.rescale {ex.names[op.input]} "
                f"<to_ring = #ring_L{out_ty.level_value}> : {ex.tensor(src)} -> {out}"
            )
        case ckks.LevelDownOp():
            src = ckks.ct_type(op.input)
            drop = src.level_value - op.to_level
            name = ex.elementwise(
                "ckks.level_reduce",
                [ex.names[op.input]],
                [ex.tensor(src)],
                out,
                f" <{{levelToDrop = {drop} : i64}}>",
            )
        case ckks.RotateOp():
            name = ex.fresh()
            ex.emit(
                f"{name} = ckks.rotate {ex.names[op.input]} "
                f"<static_shift = {op.offset_value} : index> : {out}"
            )
        case ckks.MulConstOp() | ckks.AddConstOp():
            src = ckks.ct_type(op.input)
            if isinstance(op, ckks.MulConstOp) and op.is_masked:
                raise UserError(
                    "a masked constant (zeroing the padding slots before a slot sum) is not "
                    "exported to HEIR yet"
                )
            if src.layout_name == ckks.COEFF:
                raise UserError(
                    f"{op.name} on a coefficient-encoded array is not exported to HEIR "
                    "(a constant there is a polynomial, not a slot vector)"
                )
            value = ex.public[op.value]
            scale = op.const_scale_bits if isinstance(op, ckks.MulConstOp) else src.scale_bits
            plain, plain_ty = ex.plain_splat(value, src.level_value, scale, ex.ct_shape(src))
            kind = "ckks.mul_plain" if isinstance(op, ckks.MulConstOp) else "ckks.add_plain"
            name = ex.elementwise(
                kind, [ex.names[op.input], plain], [ex.tensor(src), plain_ty], out
            )
        case ckks.MulPlainOp() | ckks.AddPlainOp():
            src = ckks.ct_type(op.input)
            kind = "ckks.mul_plain" if isinstance(op, ckks.MulPlainOp) else "ckks.add_plain"
            name = ex.elementwise(
                kind,
                [ex.names[op.input], ex.names[op.plain]],
                [ex.tensor(src), ex.pt_tensor(ckks.pt_type(op.plain))],
                out,
            )
        case ckks.ReduceOp():
            src = ckks.ct_type(op.input)
            name = ex.fold_axis(src, op.axis_value, [ex.names[op.input]], out_ty, product=False)
        case ckks.DotOp():
            src = ckks.ct_type(op.lhs)
            name = ex.fold_axis(
                src,
                op.axis_value,
                [ex.names[op.lhs], ex.names[op.rhs]],
                out_ty,
                product=True,
                operand_types=[src, ckks.ct_type(op.rhs)],
            )
        case ckks.SumSlotsOp():
            src = ckks.ct_type(op.input)
            shape = ex.ct_shape(src)
            blocks = ex.fold_axis(src, len(shape) - 1, [ex.names[op.input]], src, product=False)
            ty = ex.tensor(out_ty)
            name = blocks
            step = 1
            while step < ex.slots:
                rotated = ex.fresh()
                ex.emit(f"{rotated} = ckks.rotate {name} <static_shift = {step} : index> : {ty}")
                name = ex.elementwise("ckks.add", [name, rotated], [ty, ty], ty)
                step *= 2
        case ckks.BroadcastOp():
            src = ckks.ct_type(op.input)
            if ckks.COMPLEX in (src.layout_name, out_ty.layout_name):
                ex.ct(out_ty.with_(layout=ckks.COMPLEX))  # raises the complex-packing error
            src_dims = tuple(d if isinstance(d, int) else ex.sizes[d] for d in src.dims)
            res_dims = tuple(d if isinstance(d, int) else ex.sizes[d] for d in out_ty.dims)
            last = len(res_dims) - 1
            index: list[str | int] = []
            for axis, res_axis in enumerate(op.dims_tuple):
                slot_axis = src.layout_name == ckks.PACKED and axis == len(src_dims) - 1
                if slot_axis:
                    index.append(f"r{last}")  # packed -> packed: the block index
                elif res_axis == last and out_ty.layout_name == ckks.PACKED:
                    index.append(0)  # the value in every slot of each block
                elif src_dims[axis] == res_dims[res_axis]:
                    index.append(f"r{res_axis}")
                else:
                    index.append(0)  # a stretched axis of size 1
            name = ex.generate(
                ex.names[op.input], ex.tensor(src), ex.ct_shape(out_ty), ex.ct(out_ty), index
            )
        case ckks.TransposeOp():
            src = ckks.ct_type(op.input)
            name = ex.generate(
                ex.names[op.input], ex.tensor(src), ex.ct_shape(out_ty), ex.ct(out_ty), ["r1", "r0"]
            )
        case ckks.GatherOp():
            # Each picked ciphertext extracted (from the negated operand where asked), then
            # assembled in C order.
            src = ckks.ct_type(op.input)
            src_shape, src_ty = ex.ct_shape(src), ex.tensor(src)
            negated = ""
            if any(op.negate_flags):
                negated = ex.elementwise("ckks.negate", [ex.names[op.input]], [src_ty], src_ty)
            elements: list[str] = []
            for flat, neg in zip(op.index_values, op.negate_flags, strict=True):
                position = [int(i) for i in np.unravel_index(flat, src_shape)] if src_shape else []
                value = ex.fresh("x")
                idx = ", ".join(ex.index(i) for i in position)
                ex.emit(
                    f"{value} = tensor.extract {negated if neg else ex.names[op.input]}[{idx}] "
                    f": {src_ty}"
                )
                elements.append(value)
            name = ex.fresh()
            ex.emit(f"{name} = tensor.from_elements {', '.join(elements)} : {out}")
        case ckks.UnpackComplexOp():
            ex.ct(ckks.ct_type(op.input))
            raise InternalError("unreachable: complex arrays are refused above")
        case ckks.DiagMatvecOp() | ckks.ConvertOp():
            raise UserError(
                f"{op.name} (the diagonal matrix-vector product and its layout conversions, "
                "docs/layout.md) is not exported to HEIR yet",
                op_location(op),
            )
        case _:
            raise InternalError(f"no HEIR export for {op.name}")
    ex.names[result] = name


def _strings(names: Sequence[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def export_heir(module: ModuleOp, sizes: Mapping[str, int] | None = None) -> HeirExport:
    """The ckks program of `module` in HEIR's dialects at the given sizes (bounds otherwise)."""
    programs = list(ckks_programs(module))
    if not programs:
        raise UserError("--heir exports a compiled ckks program (--layer scheme)")
    program = programs[0]
    params = program.parameters()
    if params is None:
        raise UserError("the ckks program has no parameters yet (run parameter-selection)")
    bound = bind_sizes(program.params(), dict(sizes or {}))
    ex = _Export(params, bound, coeff_group=coeff_group(program))
    args: list[str] = []
    inputs: list[str] = []
    used: set[str] = set()

    def arg_name(sym: str) -> str:
        # An input encrypted in two layouts is two arguments: %X, %X_1.
        base = f"%{sym}" if sym.isidentifier() else "%in"
        name, k = base, 0
        while name in used:
            k += 1
            name = f"{base}_{k}"
        used.add(name)
        return name

    for op in program.block.ops:
        if isinstance(op, ckks.EncryptOp):
            sym = op.source().sym_value
            name = arg_name(sym)
            ex.names[op.result] = name
            args.append(f"{name}: {ex.tensor(ckks.ct_type(op.result))}")
            inputs.append(sym)
        elif isinstance(op, ckks.EncodeOp) and not any(
            isinstance(u.operation, ckks.EncryptOp) for u in op.result.uses
        ):
            name = arg_name(op.sym_value + "_pt")
            ex.names[op.result] = name
            args.append(f"{name}: {ex.pt_tensor(ckks.pt_type(op.result))}")
            inputs.append(op.sym_value)
    for op in program.block.ops:
        _lower(ex, op)
    results: list[str] = []
    types: list[str] = []
    outputs: list[str] = []
    factors: list[str] = []
    digits: list[str] = []
    for op in program.decrypts():
        digit = op.properties.get("digit")
        digits.append(str(digit.value.data) if isinstance(digit, IntegerAttr) else "-1")
        results.append(ex.names[op.input])
        types.append(ex.tensor(ckks.ct_type(op.input)))
        outputs.append(op.sym_value)
        factors.append(_float(ex.public[op.factor]) if op.factor is not None else "1.0")
    sym = program.sym_name.data
    q = ", ".join(str(p) for p in ex.primes)
    p = ", ".join(str(v) for v in params.special_moduli)
    scale = max((round(ckks.ct_type(e.result).scale_bits) for e in program.encrypts()), default=0)
    header = [
        f"// Program {sym} exported to HEIR's ckks/lwe dialects at sizes "
        + ", ".join(f"{k}={v}" for k, v in bound.items()),
        "// (hec ir --heir; heir-opt parses and verifies it: docs/mlir.md)",
        *ex.preamble(),
        f"module attributes {{ckks.schemeParam = #ckks.scheme_param<logN = {params.log_n}, "
        f"Q = [{q}], P = [{p}], logDefaultScale = {scale}>}} {{",
        f"  func.func @{sym}({', '.join(args)}) -> ({', '.join(types)})",
        f"      attributes {{hec.inputs = [{_strings(inputs)}], "
        f"hec.outputs = [{_strings(outputs)}], "
        f"hec.decrypt_factors = [{', '.join(factors)}], "
        f"hec.decrypt_digits = [{', '.join(digits)}]}} {{",
    ]
    body = [*ex.lines, f"    return {', '.join(results)} : {', '.join(types)}", "  }", "}"]
    return HeirExport("\n".join(header + body) + "\n", sym, inputs, outputs)


# --------------------------------------------------------------------------------------------
# Op counts: hec's compilation next to HEIR's own compilation of the same program
# --------------------------------------------------------------------------------------------


def compare_with_heir(
    program: ckks.ProgramOp,
    stat_module: ModuleOp,
    sizes: Mapping[str, int],
    timeout: float = 600,
) -> dict[str, Any]:
    """hec's compilation of a program (`program`, at `sizes`) next to HEIR's compilation of
    the same program (`heir-opt --mlir-to-ckks` on the HEIR form of its stat program:
    targets/mlir/upstream.py), as the report's `heir_comparison` (tests/report.schema.json):
    executed ciphertext ops, ring and levels of each. When HEIR cannot compile the program,
    `heir.error` is the first line of heir-opt's diagnostics (or why hec built no HEIR form)."""
    params = program.parameters()
    if params is None:
        raise InternalError("the comparison needs a compiled program with parameters")
    ours = executed_counts(program, sizes, params.slots)
    ours["pt_mul"] = ours.get("pt_mul", 0) + ours.get("const_mul", 0)
    result: dict[str, Any] = {
        "sizes": dict(sizes),
        "heir_version": _heir_version(),
        "hec": {
            "log_n": params.log_n,
            "levels": len(params.moduli),
            "counts": {key: ours.get(key, 0) for key in COMPARED},
        },
    }
    try:
        form = lower_to_upstream(stat_module, sizes, client=False, mark_secret=True)
    except UserError as err:
        result["heir"] = {"compiled": False, "by": "hec", "error": err.message}
        return result
    tool = tools.heir_opt()
    if tool is None:
        raise UserError("heir-opt is not installed", hint="scripts/setup installs heir-py")
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [tool, "--mlir-to-ckks"],
            input=form.text,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        error = f"heir-opt --mlir-to-ckks did not finish in {timeout:g} s"
        result["heir"] = {"compiled": False, "by": "heir-opt", "error": error}
        return result
    except OSError as err:  # not executable, a broken install
        raise UserError(
            f"cannot run {tool}: {err.strerror or err}",
            hint="reinstall heir-py (scripts/setup), or put a working heir-opt on PATH",
        ) from err
    seconds = round(time.perf_counter() - started, 2)
    if proc.returncode != 0:
        result["heir"] = {
            "compiled": False,
            "by": "heir-opt",
            "error": _first_error(proc.stderr, proc.returncode),
        }
        return result
    scheme = _HEIR_SCHEME.search(proc.stdout)
    if scheme is None:
        raise InternalError("heir-opt's --mlir-to-ckks output has no ckks.scheme_param")
    primes = [q for q in scheme.group(2).split(",") if q.strip()]
    result["heir"] = {
        "compiled": True,
        "log_n": int(scheme.group(1)),
        "levels": len(primes) - 1,
        "counts": count_heir_server_ops(proc.stdout),
        "seconds": seconds,
    }
    return result


def _heir_version() -> str:
    try:
        return importlib.metadata.version("heir-py")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (heir-opt from PATH)"


def _first_error(stderr: str, returncode: int) -> str:
    """The first line of heir-opt's diagnostics: its first `error:` line without the
    `<stdin>:line:col: ` prefix (the line of hec's HEIR form, meaningless to a reader), or how
    it crashed."""
    for line in stderr.splitlines():
        if "error:" in line:
            return line[line.index("error:") :].strip()
    if returncode < 0:
        return f"heir-opt crashed (signal {-returncode})"
    first = next((line for line in stderr.splitlines() if line.strip()), "")
    return f"heir-opt failed (exit {returncode}): {first.strip()}"


_HEIR_SCHEME = re.compile(r"scheme_param<logN = (\d+), Q = \[([\d, ]*)\]")

# HEIR's ckks ops by the report's cost categories (compiler/analysis/counts.COUNT_KEYS).
HEIR_CATEGORIES: dict[str, str] = {
    "ckks.mul": "ct_mul",
    "ckks.mul_plain": "pt_mul",
    "ckks.relinearize": "relin",
    "ckks.rotate": "rotate",
    "ckks.rescale": "rescale",
    "ckks.add": "add",
    "ckks.sub": "add",
    "ckks.add_plain": "add",
    "ckks.sub_plain": "add",
    "ckks.negate": "negate",
    "ckks.level_reduce": "level_reduce",
    "ckks.bootstrap": "bootstrap",
}
COMPARED = ("ct_mul", "pt_mul", "relin", "rotate", "rescale", "add", "bootstrap")


def count_heir_server_ops(text: str) -> dict[str, int]:
    """Executed counts of HEIR's ckks ops in the server's functions (role server.*) of
    heir-opt's `--mlir-to-ckks` output, by category. HEIR applies an op to each ciphertext of
    a tensor in an `affine.for` (or `scf.for`) loop with constant bounds, so each op counts
    once per iteration of its enclosing loops."""
    counts: dict[str, int] = dict.fromkeys(COMPARED, 0)
    server = False
    index_constants: dict[str, int] = {}
    loops: list[tuple[int, int]] = []  # (brace depth inside the loop, trip count)
    depth = 0
    for line in text.splitlines():
        stripped = line.strip()
        opened = depth
        depth += _braces(stripped)
        while loops and depth < loops[-1][0]:
            loops.pop()
        if stripped.startswith("func.func"):
            server = "server." in stripped
            continue
        if not server:
            continue
        if (constant := _INDEX_CONSTANT.match(stripped)) is not None:
            index_constants[constant.group(1)] = int(constant.group(2))
            continue
        if (loop := _LOOP.search(stripped)) is not None:
            if depth != opened + 1:
                raise InternalError(f"unexpected loop line in HEIR's output: {stripped[:200]}")
            lo, hi, step = (_bound(loop.group(i), index_constants) for i in (1, 2, 3))
            loops.append((depth, max(0, -(-(hi - lo) // step))))
            continue
        match = _HEIR_OP.search(stripped)
        if match and match.group(1) in HEIR_CATEGORIES:
            key = HEIR_CATEGORIES[match.group(1)]
            counts[key] = counts.get(key, 0) + math.prod(trips for _, trips in loops)
    return counts


def _braces(line: str) -> int:
    """Net region braces opened on a line of MLIR (strings, such as HEIR's layouts, and
    attribute dictionaries balance within their line)."""
    unquoted = re.sub(r'"(?:[^"\\]|\\.)*"', "", line)
    return unquoted.count("{") - unquoted.count("}")


def _bound(token: str | None, constants: Mapping[str, int]) -> int:
    if token is None:
        return 1
    if token.lstrip("-").isdigit():
        return int(token)
    if token in constants:
        return constants[token]
    raise InternalError(f"HEIR's loop bound {token} is not a constant")


_HEIR_OP = re.compile(r"^(?:%[\w#:]+(?:, %[\w#:]+)* = )?\"?(ckks\.[a-z_]+)")
_INDEX_CONSTANT = re.compile(r"^(%[\w]+) = arith\.constant (-?\d+) : index$")
_LOOP = re.compile(
    r"(?:affine|scf)\.for %[\w]+ = (-?\d+|%[\w]+) to (-?\d+|%[\w]+)(?: step (-?\d+|%[\w]+))?"
)
