"""Owner-side precomputation: products the data owner can form before encrypting.

The owner of row i holds every input's row i (`encrypt --rows A:B`): y_i and S_i,: together.
`y @ S` multiplies, on the server, two secrets one party already held side by side; the owner
can form y_i * S_ij in plaintext and encrypt that instead. Every subexpression that depends
only on one row of the owner's inputs, and feeds a sum over the row axis, is therefore moved
to the owner (a `stat.owner_compute`), and the server sees it as an input.

Cost model: a moved expression removes its multiplicative depth (levels, relinearizations and
limbs in every ciphertext) from the server; it can add one uploaded array (S is still needed
for `sum(S)` next to y*S). The pass moves expressions that multiply secrets (the depth they
remove costs a prime in every uploaded ciphertext, at least as many bytes as the new array in
the programs where packed-counts then packs them into one coefficient) and leaves sums of
bare inputs and linear expressions alone (no depth to remove).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, f64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.depth import stat_depth
from compiler.dialects import stat
from compiler.owner_expr import Expr
from compiler.types import Dim, FiniteSet, domain_interval


def row_axis(program: stat.ProgramOp) -> Dim | None:
    """The individuals' axis: the leading axis of the highest-rank secret input."""
    best: tuple[int, Dim] | None = None
    for op in program.inputs():
        ty = stat.tensor_type(op.result)
        if ty.is_secret and ty.dims and (best is None or ty.rank > best[0]):
            best = (ty.rank, ty.dims[0])
    return None if best is None else best[1]


def owner_expression(v: SSAValue, row: Dim) -> tuple[Expr, list[stat.InputOp]] | None:
    """`v` as an owner expression over row inputs (inputs whose leading axis is `row`), or
    None when it uses anything else (a value computed across rows, a public array)."""
    used: list[stat.InputOp] = []

    def go(x: SSAValue) -> Expr | None:
        op = x.owner
        ty = stat.tensor_type(x)
        match op:
            case stat.InputOp():
                if not ty.is_secret or not ty.dims or ty.dims[0] != row:
                    return None
                if op not in used:
                    used.append(op)
                return Expr.source(op.sym_value)
            case stat.ConstantOp():
                return Expr.const(op.float_value)
            case stat.BroadcastOp():
                src = stat.tensor_type(op.input)
                if src.rank == 0 and not src.is_secret:
                    return go(op.input)
                # Row-aligned only: axis 0 stays axis 0 and new axes trail.
                if src.rank and op.dims_tuple == tuple(range(src.rank)):
                    return go(op.input)
                return None
            case stat.AddOp() | stat.SubOp() | stat.MulOp():
                a, b = go(op.lhs), go(op.rhs)
                if a is None or b is None:
                    return None
                kind = {stat.AddOp: "add", stat.SubOp: "sub", stat.MulOp: "mul"}[type(op)]
                return Expr.apply(kind, a, b)
            case stat.NegOp():
                a = go(op.input)
                return None if a is None else Expr.apply("neg", a)
            case stat.PowOp():
                a = go(op.input)
                if a is None or op.exponent_value < 0:
                    return None
                return Expr.apply("pow", a, exponent=op.exponent_value)
            case _:
                return None

    e = go(v)
    return None if e is None or not used else (e, used)


@dataclass(frozen=True)
class OwnerSidePass(ModulePass):
    """Move owner-local products that feed sums over the row axis to the data owners.

    Assumes: a verified stat program with ranges (after range-analysis). Establishes: every
    `stat.sum(e, axis 0)` and `u @ S` (u [N], S [N, M]) whose summand `e` (or u * S) is an
    owner expression that multiplies secrets sums a `stat.owner_compute` instead; dead ops are
    removed; the module verifies (the owner op's verifier refuses any operand that is not one
    of the owner's own input rows). Options: `enabled` (off: `--no-owner-side`).
    """

    name = "owner-side"

    enabled: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.enabled:
            return
        for program in list(op.body.block.ops):
            if not isinstance(program, stat.ProgramOp):
                continue
            moved = program.clone()
            if not self.run(moved) or not self.pays(program, moved):
                moved.erase()
                continue
            op.body.block.insert_op_before(moved, program)
            program.detach()
            program.erase()

    @staticmethod
    def pays(before: stat.ProgramOp, after: stat.ProgramOp) -> bool:
        """The cost model: a move uploads one more array per owner value and removes the
        products it takes off the server. It pays when the server then only adds (packed
        counts fold the owner values into one integer per coefficient: no extra upload) or when
        it lowers the depth of the program (one prime fewer in every uploaded ciphertext and
        every server operation). A move that leaves the depth as it was (chi-square numerators:
        c1 * r1 still multiplies two sums) only adds upload bytes, and is not made."""
        if only_sums(after):
            return True
        return max(stat_depth(after).values(), default=0) < max(
            stat_depth(before).values(), default=0
        )

    def run(self, program: stat.ProgramOp) -> bool:
        """Move every candidate in `program`; True when something moved."""
        row = row_axis(program)
        if row is None:
            return False
        taken = {o.sym_value for o in program.inputs()}
        made: dict[str, stat.OwnerComputeOp] = {}
        for o in list(program.server_ops()):
            summand: SSAValue | None = None
            expr: tuple[Expr, list[stat.InputOp]] | None = None
            if isinstance(o, stat.SumOp) and o.axes_tuple[:1] == (0,):
                summand = o.input
                expr = owner_expression(o.input, row)
            elif isinstance(o, stat.MatmulOp):
                lt, rt = stat.tensor_type(o.lhs), stat.tensor_type(o.rhs)
                if lt.rank == 1 and rt.rank == 2 and lt.dims[0] == row == rt.dims[0]:
                    a, b = owner_expression(o.lhs, row), owner_expression(o.rhs, row)
                    if a is not None and b is not None:
                        srcs = a[1] + [s for s in b[1] if s not in a[1]]
                        expr = (Expr.apply("mul", a[0], b[0]), srcs)
                        summand = o.rhs
            if expr is None or summand is None or not expr[0].is_multiplicative():
                continue
            e, sources = expr
            owner = made.get(e.text())
            if owner is None:
                owner = self.make(program, o, e, sources, summand, taken)
                made[e.text()] = owner
            if isinstance(o, stat.MatmulOp):
                new = stat.SumOp(owner.result, [0])
                program.block.insert_op_before(new, o)
                new.attributes["range"] = o.attributes["range"]
                new.result.name_hint = o.result.name_hint
                o.result.replace_all_uses_with(new.result)
                o.detach()
                o.erase()
            else:
                o.operands[0] = owner.result
        _remove_dead(program)
        return bool(made)

    def make(
        self,
        program: stat.ProgramOp,
        before: Operation,
        e: Expr,
        sources: list[stat.InputOp],
        summand: SSAValue,
        taken: set[str],
    ) -> stat.OwnerComputeOp:
        base = "_".join(s.sym_value for s in sources) + "_own"
        name, k = base, 2
        while name in taken:
            name, k = f"{base}{k}", k + 1
        taken.add(name)
        domains = {}
        for s in sources:
            dom = s.domain_value
            assert dom is not None  # secret inputs have domains (verified)
            domains[s.sym_value] = dom
        domain = e.domain(domains)
        dims = stat.tensor_type(summand).dims
        ty = stat.TensorType.get(dims, True)
        owner = stat.OwnerComputeOp(name, [s.result for s in sources], e.text(), domain, ty)
        owner.result.name_hint = name
        program.block.insert_op_before(owner, before)
        r = domain_interval(domain) if not isinstance(domain, FiniteSet) else domain.interval
        owner.attributes["range"] = DenseArrayBase.from_list(f64, [r.lo, r.hi])
        return owner


def only_sums(program: stat.ProgramOp) -> bool:
    """Whether every reveal is a sum over the row axis of a row input or owner value with a
    non-negative integer domain and the server computes nothing else (packed-counts' test)."""
    row = row_axis(program)
    sums: list[Operation] = []
    for reveal in program.reveals():
        s = reveal.input.owner
        if not isinstance(s, stat.SumOp) or s.axes_tuple != (0,):
            return False
        ty = stat.tensor_type(s.input)
        if not ty.is_secret or ty.dims[0] != row or ty.rank > 2:
            return False
        if count_domain_max(s.input) is None:
            return False
        sums.append(s)
    for o in program.server_ops():
        if not o.results or isinstance(o, stat.InputOp | stat.OwnerComputeOp):
            continue
        if any(stat.tensor_type(r).is_secret for r in o.results) and o not in sums:
            return False
    return bool(sums)


def count_domain_max(v: SSAValue) -> int | None:
    """The largest value of a row input or owner value whose domain is a finite set of
    non-negative integers, else None."""
    op = v.owner
    if isinstance(op, stat.InputOp | stat.OwnerComputeOp):
        dom = op.domain_value
        if isinstance(dom, FiniteSet) and all(x >= 0 and float(x).is_integer() for x in dom.values):
            return int(dom.values[-1])
    return None


def _remove_dead(program: stat.ProgramOp) -> None:
    """Erase server ops without uses (inputs stay: they are the program's interface)."""
    changed = True
    while changed:
        changed = False
        for o in reversed(list(program.server_ops())):
            if isinstance(o, stat.InputOp | stat.ParamOp | stat.RevealOp) or not o.results:
                continue
            if all(not r.uses for r in o.results):
                o.detach()
                o.erase()
                changed = True
