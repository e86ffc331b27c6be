"""C++ target: a compiled `ckks` program becomes one C++ file and a Ninja build (DESIGN.md §6).

The C++ file holds the program's description (`ProgramSpec`: parameters, inputs with the
levels and scales the compiler chose, outputs, keys) and its server computation, one call of
the runtime's array layer (`runtime/program/ckks_program.h`) per IR op, with the op printed as
a comment above the call and the program's value names as C++ names. `main` hands both to
`hec::program::run_main`, which provides the party subcommands (keygen, encrypt, compute,
decrypt, info).

Streaming (principle 1 and §6: memory does not grow with N). The leading size parameter of the
largest encrypted input (the individuals N) is the stream dimension. Every value whose leading
axis is that dimension is a *row value*, computed row by row inside `Server::stream`; a `dot` or
`reduce` over axis 0 of row values becomes an accumulator (`DotSink`, `SumSink`) that folds the
rows in; everything else is a *global value* computed once. A row op that needs a global value
derived from a sum over rows (mean/covariance centres the data with the mean) runs in a later
pass over the rows, so the schedule is a sequence of passes: globals of stage 0, pass 0,
globals of stage 1, pass 1, ... Programs whose row values do something the row form cannot
express (a transpose of a streamed axis) are emitted without streaming (every input read whole),
and the generated file says so.

The Ninja file compiles with `-O2 -Wall -Wextra` against the runtime headers and the static
runtime library and links OpenMP and libsodium. Files are rewritten only when their content
changes, so Ninja rebuilds only what changed.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from compiler.analysis.ckks_util import (
    ckks_programs,
    needs_conjugation_key,
    needs_relin_key,
)
from compiler.analysis.counts import coeff_group
from compiler.dialects import ckks
from compiler.errors import UserError
from compiler.ir_text import print_ir
from compiler.owner_expr import Expr, parse
from compiler.types import Domain, FiniteSet, Interval, domain_interval

# Linker flags for the runtime's Debian libraries when pkg-config cannot say (driver/run.py
# asks it).
SYSTEM_LIBS = "-lsodium -lxxhash"

CPP_KEYWORDS = frozenset(
    [
        "alignas",
        "alignof",
        "and",
        "and_eq",
        "asm",
        "auto",
        "bitand",
        "bitor",
        "bool",
        "break",
        "case",
        "catch",
        "char",
        "char8_t",
        "char16_t",
        "char32_t",
        "class",
        "compl",
        "concept",
        "const",
        "consteval",
        "constexpr",
        "constinit",
        "const_cast",
        "continue",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "default",
        "delete",
        "do",
        "double",
        "dynamic_cast",
        "else",
        "enum",
        "explicit",
        "export",
        "extern",
        "false",
        "float",
        "for",
        "friend",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "mutable",
        "namespace",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "nullptr",
        "operator",
        "or",
        "or_eq",
        "private",
        "protected",
        "public",
        "register",
        "reinterpret_cast",
        "requires",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "static_assert",
        "static_cast",
        "struct",
        "switch",
        "template",
        "this",
        "thread_local",
        "throw",
        "true",
        "try",
        "typedef",
        "typeid",
        "typename",
        "union",
        "unsigned",
        "using",
        "virtual",
        "void",
        "volatile",
        "wchar_t",
        "while",
        "xor",
        "xor_eq",
    ]
)
# Names the generated code itself uses.
RESERVED = frozenset(
    {"ops", "server", "slots", "in", "row", "thread", "kSpec", "compute", "main", "std", "hec"}
)


@dataclass
class Emitted:
    """The generated sources of one program."""

    name: str
    cpp: str
    ninja: str
    digest: str
    streaming: bool
    passes: int
    note: str = ""
    stream_dim: str | None = None  # the size parameter whose rows the program streams over


@dataclass
class _Schedule:
    stream_dim: str | None
    row: set[SSAValue] = field(default_factory=set)  # row values
    stage: dict[SSAValue, int] = field(default_factory=dict)  # globals: when available
    row_stage: dict[SSAValue, int] = field(default_factory=dict)  # row values: earliest pass
    sinks: dict[Operation, int] = field(default_factory=dict)  # sink op -> its pass
    collects: dict[ckks.DecryptOp, int] = field(default_factory=dict)  # decrypt of row values
    passes: int = 0
    fallback: str = ""


class _NotStreamableError(Exception):
    pass


def _dims(value: SSAValue) -> tuple[int | str, ...]:
    ty = value.type
    assert isinstance(ty, ckks.CtType | ckks.PtType)
    return ty.dims


def _rowable(ty: ckks.CtType, dim: str) -> bool:
    """A ciphertext array whose leading axis is `dim` and is an array axis (not the slots)."""
    if not ty.dims or ty.dims[0] != dim:
        return False
    return not (ty.layout_name in ckks.SLOT_LAYOUTS and len(ty.dims) == 1)


def _layout_enum(ty: ckks.CtType | ckks.PtType) -> str:
    return {
        ckks.PACKED: "Layout::kPacked",
        ckks.REPLICATED: "Layout::kReplicated",
        ckks.COMPLEX: "Layout::kComplex",
        ckks.COEFF: "Layout::kCoeff",
    }[ty.layout_name]


def _choose_stream_dim(program: ckks.ProgramOp) -> str | None:
    best: tuple[int, str] | None = None
    for enc in program.encrypts():
        ty = ckks.ct_type(enc.result)
        if ty.dims and isinstance(ty.dims[0], str) and _rowable(ty, ty.dims[0]):
            rank = len(ty.dims)
            if best is None or rank > best[0]:
                best = (rank, ty.dims[0])
    return best[1] if best else None


def _schedule(program: ckks.ProgramOp) -> _Schedule:
    dim = _choose_stream_dim(program)
    if dim is None:
        return _global_schedule(program, None, "")
    try:
        return _row_schedule(program, dim)
    except _NotStreamableError as why:
        return _global_schedule(program, None, str(why))


def _global_schedule(program: ckks.ProgramOp, dim: str | None, why: str) -> _Schedule:
    s = _Schedule(dim, fallback=why)
    for op in program.block.ops:
        for r in op.results:
            s.stage[r] = 0
    return s


def _row_schedule(program: ckks.ProgramOp, dim: str) -> _Schedule:
    s = _Schedule(dim)
    for op in program.block.ops:
        if isinstance(op, ckks.EncodeOp | ckks.ParamOp):
            for r in op.results:
                s.stage[r] = 0
            continue
        if isinstance(op, ckks.EncryptOp):
            ty = ckks.ct_type(op.result)
            if _rowable(ty, dim):
                s.row.add(op.result)
                s.row_stage[op.result] = 0
            else:
                s.stage[op.result] = 0
            continue
        ct_operands = [o for o in op.operands if isinstance(o.type, ckks.CtType)]
        rows = [o for o in ct_operands if o in s.row]
        if not rows:
            # A global op, unless it broadcasts a global into a row value.
            stage = max((s.stage.get(o, 0) for o in op.operands), default=0)
            if (
                isinstance(op, ckks.BroadcastOp)
                and _rowable(ckks.ct_type(op.result), dim)
                and 0 not in op.dims_tuple
            ):
                s.row.add(op.result)
                s.row_stage[op.result] = stage
            elif isinstance(op, ckks.DecryptOp):
                pass
            else:
                for r in op.results:
                    s.stage[r] = stage
            continue
        if len(rows) != len(ct_operands):
            raise _NotStreamableError(f"{op.name} mixes row values and global arrays")
        stage = max(
            [s.row_stage[o] for o in rows]
            + [s.stage.get(o, 0) for o in op.operands if o not in s.row]
        )
        if isinstance(op, ckks.ReduceOp | ckks.DotOp) and op.axis_value == 0:
            s.sinks[op] = stage
            s.stage[op.result] = stage + 1
            continue
        if isinstance(op, ckks.DecryptOp):
            s.collects[op] = stage
            continue
        if isinstance(op, ckks.TransposeOp):
            raise _NotStreamableError("a transpose moves the streamed axis")
        if isinstance(op, ckks.BroadcastOp) and op.dims_tuple[:1] != (0,):
            raise _NotStreamableError("a broadcast moves the streamed axis")
        result = ckks.ct_type(op.results[0])
        if not _rowable(result, dim):
            raise _NotStreamableError(f"{op.name} turns a row value into {result.dims}")
        s.row.add(op.results[0])
        s.row_stage[op.results[0]] = stage
    s.passes = 1 + max([*s.sinks.values(), *s.collects.values()], default=-1)
    if s.passes == 0:
        raise _NotStreamableError("no sum over the streamed axis")
    return s


# ------------------------------------------------------------------------------------------
# Names and literals
# ------------------------------------------------------------------------------------------


def _sanitize(name: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not text or text[0].isdigit():
        text = "v" + text
    if text in CPP_KEYWORDS or text in RESERVED or text.startswith("size_"):
        text = "v_" + text
    return text


def _double(x: float) -> str:
    if math.isinf(x) or math.isnan(x):
        raise UserError(f"constant {x} cannot be emitted")
    text = repr(float(x))
    return text if any(c in text for c in ".e") else text + ".0"


def _cpp_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dims_literal(dims: Iterable[int | str]) -> str:
    return "{" + ", ".join(_cpp_string(str(d)) for d in dims) + "}"


class _Names:
    """C++ names for SSA values: the printed IR name without '%', made a valid identifier."""

    def __init__(self, program: ckks.ProgramOp, printed: list[str]):
        self.names: dict[SSAValue, str] = {}
        self.ir_names: dict[SSAValue, str] = {}
        used: set[str] = set()
        for op, line in zip(program.block.ops, printed, strict=True):
            m = re.match(r"\s*(%[A-Za-z0-9_.$-]+)\s*=", line)
            if not op.results or m is None:
                continue
            ir = m.group(1)
            name = _sanitize(ir[1:])
            while name in used:
                name += "_"
            used.add(name)
            self.names[op.results[0]] = name
            self.ir_names[op.results[0]] = ir

    def __getitem__(self, v: SSAValue) -> str:
        return self.names[v]


# ------------------------------------------------------------------------------------------
# Emission
# ------------------------------------------------------------------------------------------


def _program_lines(program: ckks.ProgramOp) -> tuple[str, list[str]]:
    """The module text and one printed line per op of the program body (in order)."""
    text = print_ir(program)
    lines = text.splitlines()
    body = [ln.strip() for ln in lines[1:] if ln.startswith("  ") and not ln.startswith("   ")]
    ops = list(program.block.ops)
    if len(body) != len(ops):
        body = [op.name for op in ops]
    return text, body


def _domain_literal(op: ckks.EncodeOp | ckks.SourceOp) -> str:
    return _domain_of(op.domain_value)


def _domain_of(dom: Domain | None) -> str:
    if isinstance(dom, FiniteSet):
        values = ", ".join(_double(v) for v in dom.values)
        return f"Domain{{{{{values}}}, 0.0, 0.0, true}}"
    if isinstance(dom, Interval):
        return f"Domain{{{{}}, {_double(dom.lo)}, {_double(dom.hi)}, true}}"
    return "Domain{}"


def _coeff_source(v: SSAValue) -> SSAValue:
    """The encrypted coeff array a coeff result sums (through reduce / add / sub / negate)."""
    op = v.owner
    while not isinstance(op, ckks.EncryptOp):
        assert isinstance(op, Operation)
        op = op.operands[0].owner
    return op.result


def _row_function(code: str) -> str:
    """An owner-side value over a whole row: out[j] for the row's columns j < count (a loop the
    C++ compiler vectorizes; one call per row, not per element)."""
    return (
        "[](const OwnerRow& in, std::size_t count, double* out) { "
        f"for (std::size_t j = 0; j < count; ++j) out[j] = {code}; }}"
    )


def _packing_literal(
    enc: ckks.EncodeOp,
    index: dict[str, int],
    domains: dict[str, Domain],
    ranks: dict[str, int],
) -> str:
    """`CoeffPacking{{digits...}, group}`: each digit's owner expression as a C++ row
    function, its radix, its largest per-row value and whether it has one value per row."""
    digits = []
    for text, radix, per_row in zip(
        enc.digit_exprs, enc.radix_values, enc.scalar_digit_flags, strict=True
    ):
        e: Expr = parse(text)
        top = domain_interval(e.domain(domains)).hi
        rank = 1 if per_row else 2
        code = e.cpp(index.__getitem__, lambda x, r=rank: ranks[x] < r)
        digits.append(
            f"{{{_cpp_string(text)}, {_row_function(code)}, {radix}ULL, {int(top)}ULL, "
            f"{'true' if per_row else 'false'}}}"
        )
    return f"CoeffPacking{{{{{', '.join(digits)}}}, {enc.group_value}}}"


def emit(
    module_or_program: ModuleOp | ckks.ProgramOp,
    source: str,
    runtime_dir: Path,
    runtime_lib: Path,
    system_libs: str = SYSTEM_LIBS,
) -> Emitted:
    """Generate the C++ file and the build.ninja of a compiled program."""
    program = (
        next(ckks_programs(module_or_program))
        if isinstance(module_or_program, ModuleOp)
        else module_or_program
    )
    params = program.parameters()
    if params is None:
        raise UserError("the C++ target needs a program with chosen parameters")
    name = _sanitize(program.sym_name.data)
    text, printed = _program_lines(program)
    digest = hashlib.sha256(text.encode()).hexdigest()
    names = _Names(program, printed)
    line_of = dict(zip(program.block.ops, printed, strict=True))
    sched = _schedule(program)

    for op in program.block.ops:
        if isinstance(op, ckks.EncodeOp):
            users = [u.operation for u in op.result.uses]
            if any(not isinstance(u, ckks.EncryptOp) for u in users):
                raise UserError(
                    f"input '{op.sym_value}' is used as a public plaintext; the C++ target "
                    "encrypts every input (public inputs are not supported yet)"
                )
        if isinstance(op, ckks.MulPlainOp | ckks.AddPlainOp):
            raise UserError(f"{op.name} (public plaintext operands) is not supported by C++ yet")

    # --- the program description -----------------------------------------------------------
    spec: list[str] = []
    add = spec.append
    add(f"  s.name = {_cpp_string(program.sym_name.data)};")
    add(f"  s.source = {_cpp_string(source)};")
    add(f"  s.digest = {_cpp_string(digest)};")
    add(f"  s.log_n = {params.log_n};")
    add(f"  s.output_moduli = {{{', '.join(f'{q}ULL' for q in params.output_moduli)}}};")
    add(f"  s.moduli = {{{', '.join(f'{q}ULL' for q in params.moduli)}}};")
    special = params.special_moduli
    add(f"  s.special_moduli = {{{', '.join(f'{q}ULL' for q in special)}}};")
    if not special:
        add(
            "  // no special primes: the program switches no key, so keygen makes no evaluation key"
        )
    dnum = max(params.dnum, 1)
    add(f"  s.dnum = {dnum};")
    add(f"  s.security_bits = {params.security_bits};")
    add(f"  s.insecure = {'true' if params.insecure else 'false'};")
    relin = needs_relin_key(program)
    add(f"  s.relinearizes = {'true' if relin else 'false'};")
    conj = needs_conjugation_key(program)
    add(f"  s.conjugates = {'true' if conj else 'false'};")
    rotations = sorted(program.rotation_keys() or ())
    add(f"  s.rotations = {{{', '.join(str(r) for r in rotations)}}};")
    key_level = program.attributes.get("key_level")
    top = len(params.moduli)
    level_value = getattr(key_level, "value", None)
    add(f"  s.key_level = {level_value.data if level_value is not None else top};")
    for p, bound in program.params().items():
        add(f"  s.params.push_back({{{_cpp_string(p)}, {bound}}});")
    add(f"  s.stream_dim = {_cpp_string(sched.stream_dim or '')};")
    # The owner inputs the encrypt role reads: plain encodes and declared sources.
    sources: dict[str, str] = {}
    source_domains: dict[str, Domain] = {}
    source_ranks: dict[str, int] = {}
    for o in program.block.ops:
        if isinstance(o, ckks.SourceOp):
            sources.setdefault(o.sym_value, f"{_dims_literal(o.dims)}, {_domain_literal(o)}")
            source_domains[o.sym_value] = o.domain_value
            source_ranks[o.sym_value] = len(o.dims)
        elif isinstance(o, ckks.EncodeOp) and o.expr_value is None and not o.digit_exprs:
            dims = ckks.pt_type(o.result).dims
            source_ranks.setdefault(o.sym_value, len(dims))
            sources.setdefault(o.sym_value, f"{_dims_literal(dims)}, {_domain_literal(o)}")
            if o.domain_value is not None:
                source_domains[o.sym_value] = o.domain_value
    for source_name, rest in sources.items():
        add(f"  s.sources.push_back({{{_cpp_string(source_name)}, {rest}}});")
    packings: dict[SSAValue, str] = {}
    for enc in program.encrypts():
        ty = ckks.ct_type(enc.result)
        src = enc.source()
        layout = _layout_enum(ty)
        streamed = "true" if enc.result in sched.row else "false"
        if sched.stream_dim is None and ty.dims and isinstance(ty.dims[0], str):
            streamed = "false"
        add(
            f"  s.inputs.push_back({{{_cpp_string(names[enc.result])}, "
            f"{_cpp_string(src.sym_value)}, {layout}, {_dims_literal(ty.dims)}, "
            f"{ty.level_value}, {_double(ty.scale_bits)}, {streamed}, {_domain_literal(src)}}});"
        )
        owned = src.sources()
        if src.expr_value is None and not src.digit_exprs:
            continue
        index = {name: k for k, name in enumerate(owned)}
        add(f"  s.inputs.back().sources = {{{', '.join(_cpp_string(x) for x in owned)}}};")
        if src.expr_value is not None:
            rank = len(ty.dims)
            code = parse(src.expr_value).cpp(
                index.__getitem__, lambda x, r=rank: source_ranks[x] < r
            )
            add(f"  // owner-side value: {src.expr_value}")
            add(f"  s.inputs.back().value = {_row_function(code)};")
            continue
        var = f"packing_{_sanitize(names[enc.result])}"
        add(
            f"  const CoeffPacking {var} = "
            f"{_packing_literal(src, index, source_domains, source_ranks)};"
        )
        packings[enc.result] = var
        add(f"  s.inputs.back().packing = {var};")
    for dec in program.decrypts():
        ty = ckks.ct_type(dec.input)
        layout = _layout_enum(ty)
        add(
            f"  s.outputs.push_back({{{_cpp_string(dec.sym_value)}, {layout}, "
            f"{_dims_literal(ty.dims)}, {ty.level_value}, {_double(ty.scale_bits)}, "
            f"{ty.degree_value}}});"
        )
        if dec.digit_value is not None:
            enc = _coeff_source(dec.input)
            add(f"  s.outputs.back().result = {_cpp_string(names[dec.input])};")
            add(f"  s.outputs.back().digit = {dec.digit_value};")
            add(f"  s.outputs.back().packing = {packings[enc]};")

    # --- the computation ---------------------------------------------------------------------
    body = _ComputeWriter(program, names, line_of, sched)
    compute = body.write()

    plan = (
        f"streams over the rows of {sched.stream_dim} in {sched.passes} pass(es)"
        if sched.stream_dim
        else "reads every input whole (no streaming"
        + (f": {sched.fallback})" if sched.fallback else ")")
    )
    security = (
        "INSECURE parameters (compiled with --insecure)"
        if params.insecure
        else f"{params.security_bits}-bit secure (HE Standard)"
    )
    header = [
        f"// Program '{program.sym_name.data}', generated by hec from {source}.",
        "// Do not edit: recompile the source instead (hec compile).",
        "//",
        f"// Parameters: n = 2^{params.log_n}, Q_0 = {len(params.output_moduli)} primes, "
        f"{len(params.moduli)} rescale primes, {security}.",
        "// Roles: keygen (coordinator), encrypt (data owner), compute (server: evaluation keys",
        "// only), decrypt (coordinator), info. Run it without arguments for usage.",
        f"// The server computation {plan}.",
        '#include "math/parallel.h"',
        '#include "program/ckks_program.h"',
        "",
        "namespace {",
        "",
        "using namespace hec::program;",
        "",
        "const ProgramSpec kSpec = [] {",
        "  ProgramSpec s;",
        *spec,
        "  return s;",
        "}();",
        "",
        *compute,
        "",
        "}  // namespace",
        "",
        "int main(int argc, char** argv) {",
        "  // Passive OpenMP waiting (DESIGN.md §7): re-executes itself once with the policy set.",
        "  hec::math::reexec_with_passive_openmp_wait(argv);",
        "  return hec::program::run_main(kSpec, compute, argc, argv);",
        "}",
        "",
    ]
    cpp = "\n".join(header)
    ninja = ninja_file(name, runtime_dir, runtime_lib, system_libs)
    return Emitted(
        name=name,
        cpp=cpp,
        ninja=ninja,
        digest=digest,
        streaming=sched.stream_dim is not None,
        passes=sched.passes,
        note=sched.fallback,
        stream_dim=sched.stream_dim,
    )


class _ComputeWriter:
    """Writes `void compute(Server& server)`."""

    def __init__(
        self,
        program: ckks.ProgramOp,
        names: _Names,
        line_of: dict[Operation, str],
        sched: _Schedule,
    ):
        self.program = program
        self.names = names
        self.line_of = line_of
        self.s = sched
        self.sizes_used: set[str] = set()
        self.publics_used: set[SSAValue] = set()
        self.slots_used = False

    # --- helpers ---------------------------------------------------------------------------
    def n(self, v: SSAValue) -> str:
        return self.names[v]

    def pub(self, v: SSAValue) -> str:
        self.publics_used.add(v)
        return self.n(v)

    def size_expr(self, d: int | str) -> str:
        if isinstance(d, int):
            return f"std::size_t{{{d}}}"
        self.sizes_used.add(d)
        return f"size_{d}"

    def shape_expr(self, ty: ckks.CtType, row: bool) -> str:
        dims = ty.dims[1:] if row else ty.dims
        layout = _layout_enum(ty)
        self.slots_used = True
        group = f", {coeff_group(self.program)}" if ty.layout_name == ckks.COEFF else ""
        return (
            f"array_shape({layout}, {{{', '.join(self.size_expr(d) for d in dims)}}}, slots{group})"
        )

    def comment(self, op: Operation, indent: str, suffix: str = "") -> str:
        return f"{indent}// {self.line_of[op]}{suffix}"

    def check(self, value: SSAValue, indent: str) -> str:
        ty = ckks.ct_type(value)
        ir = self.names.ir_names.get(value, self.n(value))
        return (
            f"{indent}expect_type({self.n(value)}, {_cpp_string(ir)}, {ty.level_value}, "
            f"{_double(ty.scale_bits)}, {ty.degree_value});"
        )

    # --- one op ------------------------------------------------------------------------------
    def expression(self, op: Operation, row: bool) -> str:
        """The call computing `op` (row: on row-local arrays)."""
        n = self.n
        shift = 1 if row else 0
        match op:
            case ckks.AddOp():
                return f"add(ops, {n(op.lhs)}, {n(op.rhs)})"
            case ckks.SubOp():
                return f"sub(ops, {n(op.lhs)}, {n(op.rhs)})"
            case ckks.NegateOp():
                return f"negate(ops, {n(op.input)})"
            case ckks.MulOp():
                return f"mul(ops, {n(op.lhs)}, {n(op.rhs)})"
            case ckks.MulConstOp():
                return (
                    f"mul_const(ops, {n(op.input)}, {self.pub(op.value)}, "
                    f"{_double(op.const_scale_bits)})"
                )
            case ckks.AddConstOp():
                if ckks.ct_type(op.input).layout_name == ckks.COMPLEX:
                    return f"add_const_complex(ops, {n(op.input)}, {self.pub(op.value)})"
                return f"add_const(ops, {n(op.input)}, {self.pub(op.value)})"
            case ckks.UnpackComplexOp():
                res = ckks.ct_type(op.result)
                return f"unpack_complex(ops, {n(op.input)}, {self.shape_expr(res, row)})"
            case ckks.RelinearizeOp():
                return f"relinearize(ops, {n(op.input)})"
            case ckks.RescaleOp():
                return f"rescale(ops, {n(op.input)})"
            case ckks.LevelDownOp():
                return f"level_down(ops, {n(op.input)}, {op.to_level})"
            case ckks.RotateOp():
                return f"rotate(ops, {n(op.input)}, {op.offset_value})"
            case ckks.SumSlotsOp():
                return f"sum_slots(ops, {n(op.input)})"
            case ckks.ReduceOp():
                return f"reduce(ops, {n(op.input)}, {op.axis_value - shift})"
            case ckks.DotOp():
                a, b = ckks.ct_type(op.lhs), ckks.ct_type(op.rhs)
                if a.degree_value == 1 and b.degree_value == 1:
                    return f"dot(ops, {n(op.lhs)}, {n(op.rhs)}, {op.axis_value - shift})"
                return f"reduce(ops, mul(ops, {n(op.lhs)}, {n(op.rhs)}), {op.axis_value - shift})"
            case ckks.BroadcastOp():
                src, res = ckks.ct_type(op.input), ckks.ct_type(op.result)
                dims = list(op.dims_tuple)
                if row:
                    if op.input in self.s.row:
                        dims = [d - 1 for d in dims[1:]]
                    else:
                        dims = [d - 1 for d in dims]
                to_packed = (
                    src.layout_name == ckks.REPLICATED and res.layout_name in ckks.SLOT_LAYOUTS
                )
                if to_packed and res.layout_name == ckks.COMPLEX and op.real_factor is None:
                    return (
                        f"broadcast_both_parts(ops, {n(op.input)}, "
                        f"{{{', '.join(str(d) for d in dims)}}}, {self.shape_expr(res, row)})"
                    )
                return (
                    f"broadcast({n(op.input)}, {{{', '.join(str(d) for d in dims)}}}, "
                    f"{self.shape_expr(res, row)}, {'true' if to_packed else 'false'})"
                )
            case ckks.TransposeOp():
                return f"transpose({n(op.input)})"
            case _:
                raise UserError(f"the C++ target does not support {op.name} yet")

    def public_line(self, op: Operation) -> str:
        n = self.n
        match op:
            case ckks.SizeOp():
                size = self.size_expr(op.sym_value)
                return f"const double {n(op.result)} = static_cast<double>({size});"
            case ckks.ConstantOp():
                return f"const double {n(op.result)} = {_double(op.float_value)};"
            case ckks.PublicArithOp():
                sign = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op.kind.data]
                a, b = self.pub(op.lhs), self.pub(op.rhs)
                return f"const double {n(op.result)} = {a} {sign} {b};"
            case _:
                raise AssertionError(op.name)

    # --- the function ------------------------------------------------------------------------
    def write(self) -> list[str]:
        ops = list(self.program.block.ops)
        s = self.s
        out: list[str] = []
        ind = "  "
        row_ops = [op for op in ops if op.results and op.results[0] in s.row]
        emitted_globals: set[Operation] = set()

        def global_ops(stage: int) -> list[str]:
            lines: list[str] = []
            for op in ops:
                if op in emitted_globals or op in s.sinks or op in s.collects:
                    continue
                if isinstance(op, ckks.ParamOp | ckks.EncodeOp | ckks.DecryptOp):
                    continue
                if not op.results or op.results[0] in s.row:
                    continue
                if isinstance(op.results[0].type, ckks.PublicType):
                    continue
                if s.stage.get(op.results[0], 0) != stage:
                    continue
                emitted_globals.add(op)
                lines.append(self.comment(op, ind))
                if isinstance(op, ckks.EncryptOp):
                    src = op.source().sym_value
                    lines.append(f"{ind}// input '{src}', read from the ciphertext directory")
                    lines.append(
                        f"{ind}const CtArray {self.n(op.result)} = "
                        f"server.load({_cpp_string(self.n(op.result))});"
                    )
                else:
                    value = self.expression(op, False)
                    lines.append(f"{ind}const CtArray {self.n(op.results[0])} = {value};")
                lines.append(self.check(op.results[0], ind))
            return lines

        for stage in range(s.passes + 1):
            out += global_ops(stage)
            if stage == s.passes:
                break
            out += self.write_pass(stage, row_ops)
        coeff_done: set[SSAValue] = set()
        for dec in self.program.decrypts():
            if dec in s.collects:
                continue
            factor = self.pub(dec.factor) if dec.factor is not None else "1.0"
            out.append(self.comment(dec, ind))
            if dec.digit_value is not None:  # packed counts: one result file holds them all
                if dec.input in coeff_done:
                    continue
                coeff_done.add(dec.input)
                name = self.n(dec.input)
                out.append(f"{ind}server.output({_cpp_string(name)}, {name}, 1.0);")
                continue
            out.append(
                f"{ind}server.output({_cpp_string(dec.sym_value)}, {self.n(dec.input)}, {factor});"
            )

        # Public scalars and sizes first (only those used).
        prelude: list[str] = []
        needed = set(self.publics_used)
        changed = True
        while changed:
            changed = False
            for op in ops:
                if isinstance(op, ckks.PublicArithOp) and op.result in needed:
                    for o in (op.lhs, op.rhs):
                        if o not in needed:
                            needed.add(o)
                            changed = True
        public_lines: list[str] = []
        for op in ops:
            if op.results and op.results[0] in needed:
                public_lines.append(self.comment(op, ind))
                public_lines.append(ind + self.public_line(op))
        prelude.append(f"{ind}const Ops& ops = server.ops();")
        if self.slots_used:
            prelude.append(f"{ind}const std::size_t slots = ops.slots();")
        for d in sorted(self.sizes_used):
            prelude.append(f"{ind}const std::size_t size_{d} = server.size({_cpp_string(d)});")
        return [
            "// The server computation: one call per ckks op, the op above it as a comment.",
            "void compute(Server& server) {",
            *prelude,
            *public_lines,
            *out,
            "}",
        ]

    def write_pass(self, p: int, row_ops: list[Operation]) -> list[str]:
        s = self.s
        ind = "  "
        sinks = [op for op, q in s.sinks.items() if q == p]
        collects = [op for op, q in s.collects.items() if q == p]
        # Row values the sinks and collectors of this pass need (transitively).
        need: set[SSAValue] = set()
        stack = [o for op in sinks for o in op.operands if o in s.row]
        stack += [op.input for op in collects]
        while stack:
            v = stack.pop()
            if v in need:
                continue
            need.add(v)
            owner = v.owner
            if isinstance(owner, Operation) and not isinstance(owner, ckks.EncryptOp):
                stack += [o for o in owner.operands if o in s.row]
        inputs = [
            op.results[0]
            for op in row_ops
            if isinstance(op, ckks.EncryptOp) and op.results[0] in need
        ]
        lines = [
            "",
            f"{ind}// ---- pass {p + 1} of {s.passes} over the rows of {s.stream_dim} "
            f"(reads {', '.join(self.n(v) for v in inputs)}) ----",
        ]
        for op in sinks:
            res = op.results[0]
            operand = op.operands[0]
            if isinstance(op, ckks.DotOp) and all(
                ckks.ct_type(o).degree_value == 1 for o in op.operands
            ):
                lines.append(
                    f"{ind}DotSink {self.n(res)}_sum(ops, {ckks.ct_type(operand).level_value}, "
                    "server.threads());"
                )
            else:
                lines.append(f"{ind}SumSink {self.n(res)}_sum(ops, server.threads());")
        for op in collects:
            lines.append(f"{ind}RowCollector {_sanitize(op.sym_value)}_rows(server.rows());")
        ids = ", ".join(_cpp_string(self.n(v)) for v in inputs)
        lines.append(
            f'{ind}server.stream("compute pass {p + 1}/{s.passes}", {{{ids}}},'
            " [&]([[maybe_unused]] std::size_t row, const std::vector<CtArray>& in,"
            " [[maybe_unused]] int thread) {"
        )
        ii = ind * 2
        for k, v in enumerate(inputs):
            owner = v.owner
            assert isinstance(owner, ckks.EncryptOp)
            lines.append(self.comment(owner, ii))
            lines.append(f"{ii}const CtArray& {self.n(v)} = in[{k}];  // this row, read from disk")
        for op in row_ops:
            res = op.results[0]
            if res not in need or isinstance(op, ckks.EncryptOp):
                continue
            lines.append(self.comment(op, ii))
            lines.append(f"{ii}const CtArray {self.n(res)} = {self.expression(op, True)};")
            lines.append(self.check(res, ii))
        for op in sinks:
            res = op.results[0]
            lines.append(self.comment(op, ii, "  (folded in chunk by chunk of rows)"))
            if isinstance(op, ckks.DotOp):
                a, b = self.n(op.lhs), self.n(op.rhs)
                if all(ckks.ct_type(o).degree_value == 1 for o in op.operands):
                    lines.append(f"{ii}{self.n(res)}_sum.add(thread, {a}, {b});")
                else:
                    lines.append(f"{ii}{self.n(res)}_sum.add(thread, mul(ops, {a}, {b}));")
            else:
                assert isinstance(op, ckks.ReduceOp)
                lines.append(f"{ii}{self.n(res)}_sum.add(thread, {self.n(op.input)});")
        for op in collects:
            lines.append(self.comment(op, ii, "  (one row at a time)"))
            lines.append(f"{ii}{_sanitize(op.sym_value)}_rows.put(row, {self.n(op.input)});")
        folded = ", ".join(f"&{self.n(op.results[0])}_sum" for op in sinks)
        lines.append(f"{ind}}}, {{{folded}}});")
        for op in sinks:
            res = op.results[0]
            lines.append(f"{ind}const CtArray {self.n(res)} = {self.n(res)}_sum.finish();")
            lines.append(self.check(res, ind))
        for op in collects:
            factor = self.pub(op.factor) if op.factor is not None else "1.0"
            lines.append(self.comment(op, ind))
            lines.append(
                f"{ind}server.output({_cpp_string(op.sym_value)}, "
                f"{_sanitize(op.sym_value)}_rows.finish(), {factor});"
            )
        lines.append("")
        return lines


def ninja_file(
    name: str, runtime_dir: Path, runtime_lib: Path, system_libs: str, target: str = "cpp"
) -> str:
    """The Ninja build of one generated program against the runtime library (every target's
    generated C++ builds this way)."""
    return "\n".join(
        [
            f"# Build of program '{name}', generated by hec (targets/{target}). Do not edit.",
            "ninja_required_version = 1.10",
            f"runtime = {runtime_dir}",
            f"runtime_lib = {runtime_lib}",
            "cxx = g++",
            "cxxflags = -std=c++20 -O2 -Wall -Wextra -fopenmp -I$runtime",
            f"libs = $runtime_lib -fopenmp {system_libs}",
            "",
            "rule cxx",
            "  command = $cxx -MMD -MF $out.d $cxxflags -c $in -o $out",
            "  depfile = $out.d",
            "  deps = gcc",
            "  description = CXX $out",
            "",
            "rule link",
            "  command = $cxx $in -o $out $libs",
            "  description = LINK $out",
            "",
            f"build {name}.o: cxx {name}.cpp",
            f"build {name}: link {name}.o | $runtime_lib",
            f"default {name}",
            "",
        ]
    )


def write_if_changed(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it already holds exactly that; True when written."""
    if path.is_file() and path.read_text() == text:
        return False
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return True


def write_project(emitted: Emitted, out_dir: Path) -> list[Path]:
    """Write `<name>.cpp` and `build.ninja` into `out_dir`; returns the files rewritten."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path, text in (
        (out_dir / f"{emitted.name}.cpp", emitted.cpp),
        (out_dir / "build.ninja", emitted.ninja),
    ):
        if write_if_changed(path, text):
            written.append(path)
    return written
