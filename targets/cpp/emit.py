"""C++ target: a compiled `ckks` or `bfv` program becomes one C++ file and a Ninja build
(DESIGN.md §6).

The C++ file holds the program's description (`ProgramSpec`: parameters, inputs with the
levels (and for CKKS the scales) the compiler chose, outputs, keys) and its server computation,
one call of the runtime's array layer per IR op (`runtime/program/ckks_program.h`, or
`runtime/program/bfv_program.h` for BFV), with the op printed as a comment above the call and
the program's value names as C++ names. `main` hands both to the binding's `run_main`, which
provides the party subcommands (keygen, encrypt, compute, decrypt, info).

Scheme-independent parts are written once for both dialects (the bfv ops are the he layer's
rules, compiler/dialects/he.py; the ckks ops their CKKS counterparts): the streaming schedule,
value names, the program description's sizes, sources and owner-side values, and the compute
function's structure (passes, accumulators, collectors, outputs). What differs per scheme is
the parameter block of the description, the input/output entries (levels and scales vs levels),
and one call per op (`_CkksWriter`, `_BfvWriter`).

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

The Ninja file compiles with `-O2 -Wall -Wextra` (`-O0` beyond MAX_OPTIMIZED_LINES of compute
code: the file only calls the library) against the runtime headers and the static
runtime library and links OpenMP, libsodium and OpenSSL's libcrypto. Files are rewritten only
when their content changes, so Ninja rebuilds only what changed.
"""

from __future__ import annotations

import hashlib
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from compiler.analysis.actual_sizes import Promise, output_checks
from compiler.analysis.ckks_util import (
    ckks_programs,
    needs_conjugation_key,
    needs_relin_key,
)
from compiler.analysis.counts import coeff_group
from compiler.analysis.flooding import flooding_cost_bits, flooding_sigma
from compiler.analysis.noise import NoiseModel, output_precision
from compiler.analysis.streaming import Schedule as _Schedule
from compiler.analysis.streaming import schedule as _schedule
from compiler.dialects import bfv, ckks, he
from compiler.errors import InternalError, UserError
from compiler.ir_text import print_ir
from compiler.owner_expr import Expr, parse
from compiler.types import Domain, FiniteSet, Interval, domain_interval

# Linker flags for the runtime's Debian libraries when pkg-config cannot say (driver/run.py
# asks it).
SYSTEM_LIBS = "-lsodium -lcrypto"

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


# The ops and types the scheme-independent parts look for: the HE layer's rules and types,
# which the ops and types of both scheme dialects are (compiler/dialects/he.py).
_CT_TYPES = he.CiphertextType
_PUBLIC_TYPES = he.PublicType
_ENCODE = he.EncodeRule
_ENCRYPT = he.EncryptRule
_DECRYPT = he.DecryptRule
_PARAM = he.ParamRule
_SOURCE = he.SourceRule
_SIZE = he.SizeRule
_CONSTANT = he.ConstantRule
_PUBLIC_ARITH = he.PublicArithRule
_REDUCE = he.ReduceRule
_DOT = he.DotRule

_Program = ckks.ProgramOp | bfv.ProgramOp
_CtType = he.CiphertextType


def _ct_type(value: SSAValue) -> _CtType:
    ty = value.type
    assert isinstance(ty, _CT_TYPES), ty
    return ty


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


def _layout_enum(ty: he.CiphertextType | he.PlaintextType, scheme: str = "ckks") -> str:
    if he.grid_of(ty.layout_name) is not None:
        if scheme != "ckks":
            raise UserError(
                f"the C++ target runs the grid layout ({ty.layout_name}) under CKKS only",
                hint="compile with --grid-rows 1",
            )
        return "Layout::kGrid"
    diagonal = he.diagonal_of(ty.layout_name) is not None
    if diagonal or he.cyclic_of(ty.layout_name) is not None:
        if scheme != "ckks":
            raise UserError(
                f"the C++ target runs the diagonal product's layouts ({ty.layout_name}) under "
                "CKKS only"
            )
        return "Layout::kDiagonal" if diagonal else "Layout::kCyclic"
    return {
        ckks.PACKED: "Layout::kPacked",
        ckks.REPLICATED: "Layout::kReplicated",
        ckks.COMPLEX: "Layout::kComplex",
        ckks.COEFF: "Layout::kCoeff",
    }[ty.layout_name]


_GRID_ROLES = {
    he.ROW: "GridRole::kRow",
    he.COL: "GridRole::kCol",
    he.UNROLLED: "GridRole::kUnrolled",
}


def _grid_literal(grid: he.Grid) -> str:
    """`GridLayout{R, {roles...}}` (runtime/program/spec.h)."""
    roles = ", ".join(_GRID_ROLES[r] for r in grid.roles)
    return f"GridLayout{{{grid.rows}, {{{roles}}}}}"


def _diagonal_literal(diagonal: he.Diagonal) -> str:
    """`DiagonalLayout{P, Q, b}` (runtime/program/spec.h)."""
    return f"DiagonalLayout{{{diagonal.rows}, {diagonal.cols}, {diagonal.baby}}}"


def _grid_line(kind: str, ty: he.CiphertextType | he.PlaintextType) -> list[str]:
    """The description line giving an input's or output's grid, diagonal or cyclic period (none
    for the other layouts)."""
    grid = he.grid_of(ty.layout_name)
    if grid is not None:
        return [f"  s.{kind}.back().grid = {_grid_literal(grid)};"]
    diagonal = he.diagonal_of(ty.layout_name)
    if diagonal is not None:
        if kind != "inputs":
            raise InternalError(f"a diagonal array ({ty.layout_name}) is not decrypted")
        return [f"  s.{kind}.back().diagonal = {_diagonal_literal(diagonal)};"]
    period = he.cyclic_of(ty.layout_name)
    if period is not None:
        return [f"  s.{kind}.back().period = {period};"]
    return []


def _stream_block(program: _Program, sched: _Schedule) -> int:
    """Rows per streamed unit: the grid rows R of the streamed inputs (a block of R rows is one
    ciphertext set), 1 without a grid. Every streamed input must then be a grid array of the
    same R with its rows on the stream axis (what the lowering makes: individuals on the rows)."""
    if sched.stream_dim is None:
        return 1
    rows: set[int] = set()
    plain = False
    for enc in program.encrypts():
        if enc.result not in sched.row:
            continue
        ty = _ct_type(enc.result)
        grid = he.grid_of(ty.layout_name)
        if grid is None:
            plain = True
            continue
        if grid.row_axis != 0:  # the lowering puts the individuals on the rows
            raise InternalError(
                f"input '{enc.source().sym_value}' is streamed over {sched.stream_dim} but its "
                f"grid layout {ty.layout_name} does not put that axis on the grid rows; the C++ "
                "target streams grid arrays a block of rows at a time"
            )
        rows.add(grid.rows)
    if rows and (plain or len(rows) > 1):  # one grid shape per program (the lowering's)
        raise InternalError(
            f"the streamed inputs mix layouts with {sorted(rows)} grid rows"
            + (" and without a grid" if plain else "")
            + "; the C++ target streams one block size"
        )
    return rows.pop() if rows else 1


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

    def __init__(self, program: _Program, printed: list[str]):
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


def _program_lines(program: _Program) -> tuple[str, list[str]]:
    """The module text and one printed line per op of the program body (in order)."""
    text = print_ir(program)
    lines = text.splitlines()
    body = [ln.strip() for ln in lines[1:] if ln.startswith("  ") and not ln.startswith("   ")]
    ops = list(program.block.ops)
    if len(body) != len(ops):
        body = [op.name for op in ops]
    return text, body


def _domain_literal(op: he.EncodeRule | he.SourceRule) -> str:
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


def _find_program(module_or_program: ModuleOp | _Program) -> _Program:
    if not isinstance(module_or_program, ModuleOp):
        return module_or_program
    for op in module_or_program.body.block.ops:
        if isinstance(op, bfv.ProgramOp):
            return op
    return next(ckks_programs(module_or_program))


def sizes_read(program: _Program) -> set[str]:
    """The size parameters the program reads: axes of its values and sizes used as numbers."""
    used: set[str] = set()
    for op in program.block.ops:
        if isinstance(op, he.SizeRule):
            used.add(op.sym_value)
        if isinstance(op, he.SourceRule):  # an owner input declared for owner-side values
            used.update(d for d in op.dims if isinstance(d, str))
        for v in op.results:
            if isinstance(v.type, he.CiphertextType | he.PlaintextType):
                used.update(d for d in v.type.dims if isinstance(d, str))
    return used


def _sources_and_sizes(program: _Program, sched: _Schedule) -> tuple[list[str], dict[str, int]]:
    """The description's size parameters, stream dimension and owner inputs (any scheme), and
    the rank of every owner input."""
    lines: list[str] = []
    add = lines.append
    read = sizes_read(program)  # a size no array and no number uses is not asked for
    for p, bound in program.params().items():
        if p in read:
            add(f"  s.params.push_back({{{_cpp_string(p)}, {bound}}});")
    add(f"  s.stream_dim = {_cpp_string(sched.stream_dim or '')};")
    block = _stream_block(program, sched)
    if block > 1:
        add(f"  s.stream_block = {block};  // grid rows: one ciphertext set per block of rows")
    # The owner inputs the encrypt role reads: plain encodes and declared sources.
    sources: dict[str, str] = {}
    ranks: dict[str, int] = {}
    for o in program.block.ops:
        if isinstance(o, _SOURCE):
            sources.setdefault(o.sym_value, f"{_dims_literal(o.dims)}, {_domain_literal(o)}")
            ranks[o.sym_value] = len(o.dims)
        elif isinstance(o, _ENCODE) and o.expr_value is None and not o.digit_exprs:
            ty = o.result.type
            assert isinstance(ty, he.PlaintextType)
            ranks.setdefault(o.sym_value, len(ty.dims))
            sources.setdefault(o.sym_value, f"{_dims_literal(ty.dims)}, {_domain_literal(o)}")
    for source_name, rest in sources.items():
        add(f"  s.sources.push_back({{{_cpp_string(source_name)}, {rest}}});")
    return lines, ranks


def _source_domains(program: _Program) -> dict[str, Domain]:
    out: dict[str, Domain] = {}
    for o in program.block.ops:
        if isinstance(o, _SOURCE):
            out[o.sym_value] = o.domain_value
            continue
        if not isinstance(o, _ENCODE) or o.expr_value is not None or o.digit_exprs:
            continue
        if o.domain_value is not None:
            out[o.sym_value] = o.domain_value
    return out


def _expr_sources(text: str) -> list[str]:
    """The owner inputs an owner-side expression reads, in order of first use."""
    out: list[str] = []
    for name in parse(text).sources():
        if name not in out:
            out.append(name)
    return out


def _owner_value(enc: he.EncryptRule, ranks: dict[str, int]) -> list[str]:
    """The lines giving an input computed by its owner from several sources (an owner-side
    expression): its sources and its row function."""
    src = enc.source()
    if src.expr_value is None:
        return []
    owned = _expr_sources(src.expr_value)
    index = {name: k for k, name in enumerate(owned)}
    rank = len(_ct_type(enc.result).dims)
    code = parse(src.expr_value).cpp(index.__getitem__, lambda x, r=rank: ranks[x] < r)
    return [
        f"  s.inputs.back().sources = {{{', '.join(_cpp_string(x) for x in owned)}}};",
        f"  // owner-side value: {src.expr_value}",
        f"  s.inputs.back().value = {_row_function(code)};",
    ]


def _streamed(enc: he.EncryptRule, sched: _Schedule) -> str:
    ty = _ct_type(enc.result)
    if sched.stream_dim is None and ty.dims and isinstance(ty.dims[0], str):
        return "false"
    return "true" if enc.result in sched.row else "false"


def emit(
    module_or_program: ModuleOp | _Program,
    source: str,
    runtime_dir: Path,
    runtime_lib: Path,
    system_libs: str = SYSTEM_LIBS,
    promise: Promise | None = None,
) -> Emitted:
    """Generate the C++ file and the build.ninja of a compiled program (ckks or bfv).
    `promise`: the precision the compilation promised (its targets), which the decrypt role
    checks again at the run's actual sizes (compiler/analysis/actual_sizes.py); None: no
    re-check (the program is run at the sizes it was compiled for)."""
    program = _find_program(module_or_program)
    name = _sanitize(program.sym_name.data)
    text, printed = _program_lines(program)
    digest = hashlib.sha256(text.encode()).hexdigest()
    names = _Names(program, printed)
    line_of = dict(zip(program.block.ops, printed, strict=True))
    sched = _schedule(program)

    for op in program.block.ops:
        if isinstance(op, _ENCODE):
            users = [u.operation for u in op.result.uses]
            if any(not isinstance(u, _ENCRYPT) for u in users):
                raise UserError(
                    f"input '{op.sym_value}' is used as a public plaintext; the C++ target "
                    "encrypts every input (public inputs are not supported yet)"
                )
        if isinstance(op, ckks.MulPlainOp | ckks.AddPlainOp):
            raise UserError(f"{op.name} (public plaintext operands) is not supported by C++ yet")

    if isinstance(program, bfv.ProgramOp):
        params_line, spec, body = _bfv_parts(program, source, digest, names, line_of, sched)
        include, namespace = "program/bfv_program.h", "hec::program::bfv_program"
    else:
        params_line, spec, body = _ckks_parts(
            program, source, digest, names, line_of, sched, promise
        )
        include, namespace = "program/ckks_program.h", "hec::program"
    compute = body.write()

    plan = (
        f"streams over the rows of {sched.stream_dim} in {sched.passes} pass(es)"
        if sched.stream_dim
        else "reads every input whole (no streaming"
        + (f": {sched.fallback})" if sched.fallback else ")")
    )
    header = [
        f"// Program '{program.sym_name.data}', generated by hec from {source}.",
        "// Do not edit: recompile the source instead (hec compile).",
        "//",
        params_line,
        "// Roles: keygen (coordinator), encrypt (data owner), compute (server: evaluation keys",
        "// only), decrypt (coordinator), info. Run it without arguments for usage.",
        f"// The server computation {plan}.",
        *_crt_includes(program),
        '#include "math/parallel.h"',
        f'#include "{include}"',
        "",
        "namespace {",
        "",
        f"using namespace {namespace};",
        "",
        "const ProgramSpec kSpec = [] {",
        "  ProgramSpec s;",
        *spec,
        "  return s;",
        "}();",
        "",
        *(_GATHER_HELPER if _has_gather(program) else []),
        *compute,
        "",
        "}  // namespace",
        "",
        *_main_lines(program, namespace),
    ]
    cpp = "\n".join(header)
    ninja = ninja_file(
        name, runtime_dir, runtime_lib, system_libs, optimize=len(compute) <= MAX_OPTIMIZED_LINES
    )
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


def _has_gather(program: _Program) -> bool:
    return any(isinstance(op, he.GatherRule) for op in program.block.ops)


# The gather op (he.GatherRule: det and adj) written once in the generated file, for every
# scheme binding: it moves shared ciphertexts and negates where asked. Its index table was
# made for the compiled sizes, so a run at other sizes is refused here.
_GATHER_HELPER = [
    "// he.gather: result ciphertext e is the operand's ciphertext indices[e] (C order), negated",
    "// where negated[e]; the table was made for the compiled sizes.",
    "CtArray gather(const Ops& ops, const CtArray& a, const std::vector<std::size_t>& indices,",
    "               const std::vector<int>& negated, std::vector<std::size_t> shape) {",
    "  std::size_t total = 1;",
    "  for (std::size_t d : shape) total *= d;",
    "  if (total != indices.size()) {",
    '    throw std::runtime_error("gather: compiled for " + std::to_string(indices.size()) +',
    '                             " elements but the run\'s shape has " + std::to_string(total) +',
    '                             " (recompile for the data\'s sizes)");',
    "  }",
    "  CtArray out;",
    "  out.shape = std::move(shape);",
    "  for (std::size_t e = 0; e < indices.size(); ++e) {",
    "    if (indices[e] >= a.size()) {",
    '      throw std::runtime_error("gather: index beyond the operand (recompile for the data\'s"',
    '                               " sizes)");',
    "    }",
    "    if (negated[e] != 0) {",
    "      CtArray one;",
    "      one.shape = {1};",
    "      one.cts = {a.cts[indices[e]]};",
    "      out.cts.push_back(negate(ops, one).cts[0]);",
    "    } else {",
    "      out.cts.push_back(a.cts[indices[e]]);",
    "    }",
    "  }",
    "  return out;",
    "}",
    "",
]


def _gather_call(writer: _ComputeWriter, op: he.GatherRule) -> str:
    indices = ", ".join(str(i) for i in op.index_values)
    negated = ", ".join(str(int(x)) for x in op.negate_flags)
    shape = ", ".join(writer.size_expr(d) for d in op.shape_tuple)
    return (
        f"gather(ops, {writer.n(op.input)}, {{{indices}}}, {{{negated}}}, "
        f"std::vector<std::size_t>{{{shape}}})"
    )


def _security_text(insecure: bool, bits: int) -> str:
    return (
        "INSECURE parameters (compiled with --insecure)"
        if insecure
        else f"{bits}-bit secure (HE Standard)"
    )


def _ckks_parts(
    program: ckks.ProgramOp,
    source: str,
    digest: str,
    names: _Names,
    line_of: dict[Operation, str],
    sched: _Schedule,
    promise: Promise | None = None,
) -> tuple[str, list[str], _ComputeWriter]:
    """The CKKS description (parameters, levels and scales) and compute writer."""
    params = program.parameters()
    if params is None:
        raise UserError("the C++ target needs a program with chosen parameters")
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
    key_level = params.key_level
    add(f"  s.key_level = {len(params.moduli) if key_level is None else key_level};")
    common, source_ranks = _sources_and_sizes(program, sched)
    spec += common
    source_domains = _source_domains(program)
    packings: dict[SSAValue, str] = {}
    for enc in program.encrypts():
        ty = ckks.ct_type(enc.result)
        src = enc.source()
        layout = _layout_enum(ty)
        add(
            f"  s.inputs.push_back({{{_cpp_string(names[enc.result])}, "
            f"{_cpp_string(src.sym_value)}, {layout}, {_dims_literal(ty.dims)}, "
            f"{ty.level_value}, {_double(ty.scale_bits)}, {_streamed(enc, sched)}, "
            f"{_domain_literal(src)}}});"
        )
        spec += _grid_line("inputs", ty)
        if src.expr_value is None and not src.digit_exprs:
            continue
        if src.expr_value is not None:
            spec += _owner_value(enc, source_ranks)
            continue
        owned = src.sources()
        index = {name: k for k, name in enumerate(owned)}
        add(f"  s.inputs.back().sources = {{{', '.join(_cpp_string(x) for x in owned)}}};")
        var = f"packing_{_sanitize(names[enc.result])}"
        add(
            f"  const CoeffPacking {var} = "
            f"{_packing_literal(src, index, source_domains, source_ranks)};"
        )
        packings[enc.result] = var
        add(f"  s.inputs.back().packing = {var};")
    # The error of each revealed value (noise analysis) sizes the noise the decrypt role floods
    # it with (compiler/analysis/flooding.py); packed counts are exact and not flooded.
    precision = {
        p.name: p
        for p in output_precision(program, program.params(), NoiseModel(params.log_n, dnum))
    }
    # The promise checked again at the run's sizes (compiler/analysis/actual_sizes.py).
    add(f"  s.flooding_cost_bits = {_double(flooding_cost_bits())};")
    checks = (
        {}
        if promise is None
        else {c.name: c for c in output_checks(program, promise, flooding_cost_bits())}
    )
    for dec in program.decrypts():
        ty = ckks.ct_type(dec.input)
        layout = _layout_enum(ty)
        add(
            f"  s.outputs.push_back({{{_cpp_string(dec.sym_value)}, {layout}, "
            f"{_dims_literal(ty.dims)}, {ty.level_value}, {_double(ty.scale_bits)}, "
            f"{ty.degree_value}}});"
        )
        spec += _grid_line("outputs", ty)
        if dec.digit_value is None:
            p = precision[dec.sym_value]
            add(f"  s.outputs.back().flood_sigma = {_double(flooding_sigma(p.sigma))};")
            # -inf: no precision at all; +inf: an exact value (no error to flood)
            bits = min(max(p.flooded_precision_bits(), -1000.0), 1000.0)
            add(f"  s.outputs.back().flooded_precision_bits = {_double(bits)};")
            if (check := checks.get(dec.sym_value)) is not None:
                add(f"  s.outputs.back().promised_bits = {_double(check.promised_bits)};")
                add(f"  s.outputs.back().error_bound = {_double(check.error_bound)};")
                for corner, r in check.rows:
                    at = ", ".join(f"{{{_cpp_string(k)}, {v}}}" for k, v in corner)
                    add(f"  s.outputs.back().range_rows.push_back({{{{{at}}}, {_double(r)}}});")
        if dec.digit_value is not None:
            enc = _coeff_source(dec.input)
            add(f"  s.outputs.back().result = {_cpp_string(names[dec.input])};")
            add(f"  s.outputs.back().digit = {dec.digit_value};")
            add(f"  s.outputs.back().packing = {packings[enc]};")
    params_line = (
        f"// Parameters: n = 2^{params.log_n}, Q_0 = {len(params.output_moduli)} primes, "
        f"{len(params.moduli)} rescale primes, "
        f"{_security_text(params.insecure, params.security_bits)}."
    )
    return params_line, spec, _CkksWriter(program, names, line_of, sched)


def _crt_includes(program: _Program) -> list[str]:
    params = program.parameters() if isinstance(program, bfv.ProgramOp) else None
    return (
        []
        if params is None or params.residues == 1
        else ["#include <cstdio>", "#include <cstdlib>"]
    )


def _main_lines(program: _Program, namespace: str) -> list[str]:
    """main(): the binding's run_main on the description; for a BFV program with several
    plaintext moduli (a CRT), the first two arguments `--residue I` select the residue
    computation modulo t_I (each residue has its own keys, ciphertexts and results)."""
    params = program.parameters() if isinstance(program, bfv.ProgramOp) else None
    head = [
        "int main(int argc, char** argv) {",
        "  // Passive OpenMP waiting (DESIGN.md §7): re-executes itself once with the policy set.",
        "  hec::math::reexec_with_passive_openmp_wait(argv);",
    ]
    if params is None or params.residues == 1:
        return [*head, f"  return {namespace}::run_main(kSpec, compute, argc, argv);", "}", ""]
    moduli = ", ".join(f"{t}ULL" for t in params.plain_moduli)
    k = params.residues
    return [
        *head,
        f"  // CRT over {k} plaintext moduli: the program runs once modulo each (--residue I),",
        "  // the coordinator reconstructs the integers from the decrypted residues.",
        f"  static constexpr std::uint64_t kPlainModuli[{k}] = {{{moduli}}};",
        '  const std::string flag = argc >= 3 ? argv[1] : "";',
        "  char* end = nullptr;",
        '  const long residue = flag == "--residue" ? std::strtol(argv[2], &end, 10) : -1;',
        "  if (flag != \"--residue\" || end == argv[2] || *end != '\\0' || residue < 0 ||",
        f"      residue >= {k}) {{",
        "    std::fprintf(stderr,",
        f'                 "this program runs as {k} residue computations (one per plaintext "',
        f'                 "modulus): give --residue I (0 <= I < {k}) before the role\\n");',
        "    return 2;",
        "  }",
        "  ProgramSpec spec = kSpec;",
        "  spec.plain_modulus = kPlainModuli[residue];",
        "  std::vector<const char*> args = {argv[0]};",
        "  args.insert(args.end(), argv + 3, argv + argc);",
        f"  return {namespace}::run_main(spec, compute, static_cast<int>(args.size()), "
        "args.data());",
        "}",
        "",
    ]


def _bfv_parts(
    program: bfv.ProgramOp,
    source: str,
    digest: str,
    names: _Names,
    line_of: dict[Operation, str],
    sched: _Schedule,
) -> tuple[str, list[str], _ComputeWriter]:
    """The BFV description (parameters with the plaintext modulus, levels, no scales) and
    compute writer."""
    params = program.parameters()
    if params is None:
        raise UserError("the C++ target needs a program with chosen parameters")
    spec: list[str] = []
    add = spec.append
    add(f"  s.name = {_cpp_string(program.sym_name.data)};")
    add(f"  s.source = {_cpp_string(source)};")
    add(f"  s.digest = {_cpp_string(digest)};")
    add(f"  s.log_n = {params.log_n};")
    # One modulus: in the description; several (a CRT): main() sets the one the run selects.
    if params.residues == 1:
        add(f"  s.plain_modulus = {params.plain_moduli[0]}ULL;")
    add(f"  s.moduli = {{{', '.join(f'{q}ULL' for q in params.moduli)}}};")
    add(f"  s.special_moduli = {{{', '.join(f'{q}ULL' for q in params.special_moduli)}}};")
    add(f"  s.dnum = {max(params.dnum, 1)};")
    add(f"  s.security_bits = {params.security_bits};")
    add(f"  s.insecure = {'true' if params.insecure else 'false'};")
    relin = any(isinstance(op, bfv.RelinearizeOp) for op in program.block.ops)
    add(f"  s.relinearizes = {'true' if relin else 'false'};")
    rotations = sorted(program.rotation_keys() or ())
    add(f"  s.rotations = {{{', '.join(str(r) for r in rotations)}}};")
    common, source_ranks = _sources_and_sizes(program, sched)
    spec += common
    for enc in program.encrypts():
        ty = he.ct_type(enc.result)
        src = enc.source()
        if src.digit_exprs or ty.layout_name == he.COEFF:
            raise UserError(f"input '{src.sym_value}': the coeff layout is CKKS-only")
        add(
            f"  s.inputs.push_back({{.id = {_cpp_string(names[enc.result])}, "
            f".source = {_cpp_string(src.sym_value)}, .layout = {_layout_enum(ty, 'bfv')}, "
            f".dims = {_dims_literal(ty.dims)}, .level = {ty.level_value}, "
            f".streamed = {_streamed(enc, sched)}, .domain = {_domain_literal(src)}}});"
        )
        spec += _owner_value(enc, source_ranks)
    for dec in program.decrypts():
        ty = he.ct_type(dec.input)
        add(
            f"  s.outputs.push_back({{.name = {_cpp_string(dec.sym_value)}, "
            f".layout = {_layout_enum(ty, 'bfv')}, .dims = {_dims_literal(ty.dims)}, "
            f".level = {ty.level_value}, .degree = {ty.degree_value}}});"
        )
    params_line = (
        f"// Parameters (BFV): n = 2^{params.log_n}, "
        + (
            f"t = {params.plain_moduli[0]}, "
            if params.residues == 1
            else f"{params.residues} residue computations (CRT) over t = "
            + ", ".join(str(t) for t in params.plain_moduli)
            + ", "
        )
        + f"{len(params.moduli)} primes of Q, "
        f"{_security_text(params.insecure, params.security_bits)}."
    )
    return params_line, spec, _BfvWriter(program, names, line_of, sched)


class _ComputeWriter(ABC):
    """Writes `void compute(Server& server)`: passes over the rows, accumulators, globals and
    outputs, the same for every scheme; a subclass writes one call per op (`expression`), the
    type check of a value (`check`) and a dot-product accumulator's declaration."""

    scheme = ""

    def __init__(
        self,
        program: _Program,
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

    def shape_expr(self, ty: _CtType, row: bool) -> str:
        dims = ty.dims[1:] if row else ty.dims
        layout = _layout_enum(ty, self.scheme)
        self.slots_used = True
        group = f", {self.coeff_group()}" if ty.layout_name == ckks.COEFF else ""
        grid = he.grid_of(ty.layout_name)
        if grid is not None:  # a row-local array: the block's axes after the row axis
            part = he.Grid(grid.rows, grid.roles[1:]) if row else grid
            group = f", 1, {_grid_literal(part)}"
        return (
            f"array_shape({layout}, {{{', '.join(self.size_expr(d) for d in dims)}}}, slots{group})"
        )

    def comment(self, op: Operation, indent: str, suffix: str = "") -> str:
        return f"{indent}// {self.line_of[op]}{suffix}"

    def named(self, op: Operation, call: str, statement: bool = False) -> str:
        """`call` run through the runtime's `run_op`, so an error the runtime raises in it
        (scales, levels, degrees, keys) names the op and its IR value."""
        res = op.results[0]
        label = f"{self.names.ir_names.get(res, self.n(res))} = {op.name}"
        body = f"{call};" if statement else f"return {call};"
        return f"run_op({_cpp_string(label)}, [&] {{ {body} }})"

    def coeff_group(self) -> int:
        raise UserError(f"the coeff layout is not available under {self.scheme}")

    @abstractmethod
    def check(self, value: SSAValue, indent: str) -> str:
        """The scheme's C++ for this (each writer defines it)."""

    @abstractmethod
    def expression(self, op: Operation, row: bool) -> str:
        """The scheme's C++ for this (each writer defines it)."""

    @abstractmethod
    def dot_sink(self, var: str, op: Operation) -> str:
        """The scheme's C++ for this (each writer defines it)."""

    def broadcast_dims(self, op: he.BroadcastRule, row: bool) -> list[int]:
        """The broadcast's operand-to-result axes (row-local inside a pass)."""
        dims = list(op.dims_tuple)
        if row:
            dims = [d - 1 for d in (dims[1:] if op.input in self.s.row else dims)]
        return dims

    def public_line(self, op: Operation) -> str:
        n = self.n
        if isinstance(op, _SIZE):
            size = self.size_expr(op.sym_value)
            return f"const double {n(op.result)} = static_cast<double>({size});"
        if isinstance(op, _CONSTANT):
            return f"const double {n(op.result)} = {_double(op.float_value)};"
        assert isinstance(op, _PUBLIC_ARITH), op.name
        sign = {"add": "+", "sub": "-", "mul": "*", "div": "/"}[op.kind.data]
        a, b = self.pub(op.lhs), self.pub(op.rhs)
        return f"const double {n(op.result)} = {a} {sign} {b};"

    # --- the function ------------------------------------------------------------------------
    def write(self) -> list[str]:
        ops = list(self.program.block.ops)
        s = self.s
        out: list[str] = []
        ind = "  "
        row_ops = [op for op in ops if op.results and op.results[0] in s.row]
        emitted_globals: set[Operation] = set()

        def is_global(op: Operation) -> bool:
            """Whether global_ops writes `op` (in program order, stage by stage)."""
            if op in s.sinks or op in s.collects or isinstance(op, _PARAM | _ENCODE | _DECRYPT):
                return False
            if not op.results or op.results[0] in s.row:
                return False
            return not isinstance(op.results[0].type, _PUBLIC_TYPES)

        # A global array whose every user is a global op is released after the last of them
        # (the one written last: highest stage, then program order), so the server holds only
        # the live arrays, not every intermediate one (a bit-slice multiplier forms thousands).
        order = {op: i for i, op in enumerate(ops)}
        release_after: dict[Operation, list[SSAValue]] = {}
        for op in ops:
            if not is_global(op):
                continue
            res = op.results[0]
            users = [u.operation for u in res.uses]
            if not users or not all(u in order and is_global(u) for u in users):
                continue
            last = max(users, key=lambda u: (s.stage.get(u.results[0], 0), order[u]))
            release_after.setdefault(last, []).append(res)
        released = {v for vs in release_after.values() for v in vs}

        def global_ops(stage: int) -> list[str]:
            lines: list[str] = []
            for op in ops:
                if op in emitted_globals or not is_global(op):
                    continue
                if s.stage.get(op.results[0], 0) != stage:
                    continue
                emitted_globals.add(op)
                const = "" if op.results[0] in released else "const "
                lines.append(self.comment(op, ind))
                if isinstance(op, _ENCRYPT):
                    src = op.source().sym_value
                    lines.append(f"{ind}// input '{src}', read from the ciphertext directory")
                    lines.append(
                        f"{ind}{const}CtArray {self.n(op.result)} = "
                        f"server.load({_cpp_string(self.n(op.result))});"
                    )
                else:
                    value = self.named(op, self.expression(op, False))
                    lines.append(f"{ind}{const}CtArray {self.n(op.results[0])} = {value};")
                lines.append(self.check(op.results[0], ind))
                for v in dict.fromkeys(release_after.get(op, [])):
                    lines.append(f"{ind}{self.n(v)} = CtArray{{}};  // its last use")
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
                if isinstance(op, _PUBLIC_ARITH) and op.result in needed:
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
            f"// The server computation: one call per {self.scheme} op, the op above it as a "
            "comment.",
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
            if isinstance(owner, Operation) and not isinstance(owner, _ENCRYPT):
                stack += [o for o in owner.operands if o in s.row]
        inputs = [
            op.results[0] for op in row_ops if isinstance(op, _ENCRYPT) and op.results[0] in need
        ]
        lines = [
            "",
            f"{ind}// ---- pass {p + 1} of {s.passes} over the rows of {s.stream_dim} "
            f"(reads {', '.join(self.n(v) for v in inputs)}) ----",
        ]
        for op in sinks:
            res = op.results[0]
            if isinstance(op, _DOT) and all(_ct_type(o).degree_value == 1 for o in op.operands):
                lines.append(f"{ind}{self.dot_sink(f'{self.n(res)}_sum', op)}")
            else:
                lines.append(f"{ind}SumSink {self.n(res)}_sum(ops, server.threads());")
        for op in collects:
            lines.append(
                f"{ind}RowCollector {_sanitize(op.sym_value)}_rows(server.stream_units());"
            )
        ids = ", ".join(_cpp_string(self.n(v)) for v in inputs)
        lines.append(
            f'{ind}server.stream("compute pass {p + 1}/{s.passes}", {{{ids}}},'
            " [&]([[maybe_unused]] std::size_t row, const std::vector<CtArray>& in,"
            " [[maybe_unused]] int thread) {"
        )
        ii = ind * 2
        for k, v in enumerate(inputs):
            owner = v.owner
            assert isinstance(owner, _ENCRYPT)
            lines.append(self.comment(owner, ii))
            lines.append(f"{ii}const CtArray& {self.n(v)} = in[{k}];  // this row, read from disk")
        body_ops = [op for op in row_ops if op.results[0] in need and not isinstance(op, _ENCRYPT)]
        # A row value the body forms is dropped after its last use by another op of the body
        # (unless a sink or collector reads it at the end): a grid block's values are large
        # (docs/layout.md), and the body holds one block per thread.
        kept = {o for op in sinks for o in op.operands} | {op.input for op in collects}
        last_use: dict[SSAValue, Operation] = {}
        for op in body_ops:
            for o in op.operands:
                last_use[o] = op
        formed = {op.results[0] for op in body_ops}
        for op in body_ops:
            res = op.results[0]
            lines.append(self.comment(op, ii))
            value = self.named(op, self.expression(op, True))
            const = "const " if res in kept or last_use.get(res) is None else ""
            lines.append(f"{ii}{const}CtArray {self.n(res)} = {value};")
            lines.append(self.check(res, ii))
            for o in dict.fromkeys(op.operands):
                if o in formed and o not in kept and last_use.get(o) is op:
                    lines.append(f"{ii}{self.n(o)} = CtArray{{}};  // its last use")
        for op in sinks:
            res = op.results[0]
            lines.append(self.comment(op, ii, "  (folded in chunk by chunk of rows)"))
            if isinstance(op, _DOT):
                a, b = self.n(op.lhs), self.n(op.rhs)
                if all(_ct_type(o).degree_value == 1 for o in op.operands):
                    call = f"{self.n(res)}_sum.add(thread, {a}, {b})"
                else:
                    call = f"{self.n(res)}_sum.add(thread, mul(ops, {a}, {b}))"
            else:
                assert isinstance(op, _REDUCE | he.SumSlotsRule)
                call = f"{self.n(res)}_sum.add(thread, {self.n(op.input)})"
            lines.append(f"{ii}{self.named(op, call, statement=True)};")
        for op in collects:
            lines.append(self.comment(op, ii, "  (one row at a time)"))
            lines.append(f"{ii}{_sanitize(op.sym_value)}_rows.put(row, {self.n(op.input)});")
        folded = ", ".join(f"&{self.n(op.results[0])}_sum" for op in sinks)
        lines.append(f"{ind}}}, {{{folded}}});")
        for op in sinks:
            res = op.results[0]
            total = f"{self.n(res)}_sum.finish()"
            if isinstance(op, he.SumSlotsRule):
                # A grid row sum: the blocks are summed, then the rows of the total.
                grid = he.grid_of(_ct_type(op.input).layout_name)
                assert grid is not None
                total = f"fold_grid_rows(ops, {total}, {grid.rows})"
            value = self.named(op, total)
            lines.append(f"{ind}const CtArray {self.n(res)} = {value};")
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


class _CkksWriter(_ComputeWriter):
    """One call of runtime/program/ckks_program.h per ckks op."""

    scheme = "ckks"
    program: ckks.ProgramOp

    def coeff_group(self) -> int:
        return coeff_group(self.program)

    def check(self, value: SSAValue, indent: str) -> str:
        ty = ckks.ct_type(value)
        ir = self.names.ir_names.get(value, self.n(value))
        return (
            f"{indent}expect_type({self.n(value)}, {_cpp_string(ir)}, {ty.level_value}, "
            f"{_double(ty.scale_bits)}, {ty.degree_value});"
        )

    def dot_sink(self, var: str, op: Operation) -> str:
        return f"DotSink {var}(ops, {_ct_type(op.operands[0]).level_value}, server.threads());"

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
            case ckks.MulConstOp() if op.is_masked and he.grid_of(
                ckks.ct_type(op.input).layout_name
            ):
                ty = ckks.ct_type(op.input)
                grid = he.grid_of(ty.layout_name)
                assert grid is not None
                dims = ", ".join(self.size_expr(d) for d in ty.dims)
                block = "row" if row else "kWholeArray"
                return (
                    f"mul_mask_grid(ops, {n(op.input)}, {self.pub(op.value)}, "
                    f"{_double(op.const_scale_bits)}, {_grid_literal(grid)}, "
                    f"std::vector<std::size_t>{{{dims}}}, {block})"
                )
            case ckks.MulConstOp() if op.is_masked:
                width = self.size_expr(ckks.ct_type(op.input).dims[-1])
                return (
                    f"mul_mask(ops, {n(op.input)}, {self.pub(op.value)}, "
                    f"{_double(op.const_scale_bits)}, {width})"
                )
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
            case ckks.DiagMatvecOp():
                # Both operands are whole arrays (never streamed: analysis/streaming.py).
                return (
                    f"diag_matvec(ops, {n(op.lhs)}, {n(op.rhs)}, {_diagonal_literal(op.diagonal)})"
                )
            case ckks.ConvertOp():
                period = he.cyclic_of(op.to_layout)
                if period is None:  # cyclic -> packed: the masked vector as it stands
                    return n(op.input)
                return f"replicate_period(ops, {n(op.input)}, {period})"
            case ckks.SumSlotsOp() if op.axis_value is not None:
                grid = he.grid_of(ckks.ct_type(op.input).layout_name)
                if grid is None or op.radix_values is not None:  # rotation_keys: not staged
                    raise InternalError(
                        f"the C++ target sums grid rows by the rotate-and-add tree only; {op.name} "
                        "has radices or no grid operand"
                    )
                return f"sum_grid_rows(ops, {n(op.input)}, {op.axis_value - shift}, {grid.rows})"
            case ckks.SumSlotsOp() if op.radix_values is not None:
                radices = ", ".join(str(r) for r in op.radix_values)
                return f"sum_slots_staged(ops, {n(op.input)}, {{{radices}}})"
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
                dims = self.broadcast_dims(op, row)
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
            case ckks.GatherOp():
                return _gather_call(self, op)
            case _:
                raise UserError(f"the C++ target does not support {op.name} yet")


class _BfvWriter(_ComputeWriter):
    """One call of runtime/program/bfv_program.h per bfv op."""

    scheme = "bfv"

    def check(self, value: SSAValue, indent: str) -> str:
        ty = he.ct_type(value)
        ir = self.names.ir_names.get(value, self.n(value))
        return (
            f"{indent}expect_type({self.n(value)}, {_cpp_string(ir)}, {ty.level_value}, "
            f"{ty.degree_value});"
        )

    def dot_sink(self, var: str, op: Operation) -> str:
        return f"DotSink {var}(ops, server.threads());"

    def expression(self, op: Operation, row: bool) -> str:
        n = self.n
        shift = 1 if row else 0
        match op:
            case bfv.AddOp():
                return f"add(ops, {n(op.lhs)}, {n(op.rhs)})"
            case bfv.SubOp():
                return f"sub(ops, {n(op.lhs)}, {n(op.rhs)})"
            case bfv.NegateOp():
                return f"negate(ops, {n(op.input)})"
            case bfv.MulOp():
                return f"mul(ops, {n(op.lhs)}, {n(op.rhs)})"
            case bfv.MulConstOp():
                return f"mul_const(ops, {n(op.input)}, integer_constant({self.pub(op.value)}))"
            case bfv.AddConstOp():
                return f"add_const(ops, {n(op.input)}, integer_constant({self.pub(op.value)}))"
            case bfv.RelinearizeOp():
                return f"relinearize(ops, {n(op.input)})"
            case bfv.ModSwitchOp():
                return f"mod_switch(ops, {n(op.input)})"
            case bfv.RotateOp():
                return f"rotate(ops, {n(op.input)}, {op.offset_value})"
            case bfv.SumSlotsOp():
                return f"sum_slots(ops, {n(op.input)})"
            case bfv.ReduceOp():
                return f"reduce(ops, {n(op.input)}, {op.axis_value - shift})"
            case bfv.DotOp():
                a, b = he.ct_type(op.lhs), he.ct_type(op.rhs)
                if a.degree_value == 1 and b.degree_value == 1:
                    return f"dot(ops, {n(op.lhs)}, {n(op.rhs)}, {op.axis_value - shift})"
                return f"reduce(ops, mul(ops, {n(op.lhs)}, {n(op.rhs)}), {op.axis_value - shift})"
            case bfv.BroadcastOp():
                src, res = he.ct_type(op.input), he.ct_type(op.result)
                dims = self.broadcast_dims(op, row)
                to_packed = src.layout_name == he.REPLICATED and res.layout_name in he.SLOT_LAYOUTS
                return (
                    f"broadcast({n(op.input)}, {{{', '.join(str(d) for d in dims)}}}, "
                    f"{self.shape_expr(res, row)}, {'true' if to_packed else 'false'})"
                )
            case bfv.TransposeOp():
                return f"transpose({n(op.input)})"
            case bfv.GatherOp():
                return _gather_call(self, op)
            case _:
                raise UserError(f"the C++ target does not support {op.name} yet")


# Above this many lines of compute code the generated file is compiled without optimization:
# it only sequences calls into the runtime library (compiled -O2 on its own), and g++ -O2 (or
# -O1) on one function of tens of thousands of statements runs for many minutes (a 16-bit
# bit-slice multiplier: 30,000 lines, over 15 minutes at -O2, 9 at -O1, 43 s at -O0).
MAX_OPTIMIZED_LINES = 4000


def ninja_file(
    name: str,
    runtime_dir: Path,
    runtime_lib: Path,
    system_libs: str,
    target: str = "cpp",
    optimize: bool = True,
) -> str:
    """The Ninja build of one generated program against the runtime library (every target's
    generated C++ builds this way); `optimize`: -O2, else -O0 (MAX_OPTIMIZED_LINES)."""
    level = "-O2" if optimize else "-O0"
    return "\n".join(
        [
            f"# Build of program '{name}', generated by hec (targets/{target}). Do not edit.",
            "ninja_required_version = 1.10",
            f"runtime = {runtime_dir}",
            f"runtime_lib = {runtime_lib}",
            "cxx = g++",
            f"cxxflags = -std=c++20 {level} -Wall -Wextra -fopenmp -I$runtime",
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
