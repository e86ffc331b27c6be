"""Lazy relinearization: a key switch only where one is unavoidable (DESIGN.md §5).

Tensor products leave degree-2 (and higher) ciphertexts; relinearizing after every product is
what a hand-written program does, and each relinearization is a key switch (the costliest
operation of every RLWE scheme, and it needs an evaluation key). Decryption of a degree-d
ciphertext needs only s, s^2, ..., s^d, which the coordinator computes from its secret key,
so nothing forces a relinearization before decryption. The pass runs on the HE layer (`he`
dialect), once the scheme is known: its record (passes/schemes.py) gives the largest degree
it multiplies and decrypts (CKKS 4; BFV 2: its multiply takes degree-1 operands).
Reference: HEIR `optimize-relinearization` (which solves the same placement as an ILP); EVA
relinearizes eagerly after each product.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.dialects import he


@dataclass(frozen=True)
class LazyRelinearizationPass(ModulePass):
    """Insert `he.relinearize` only where a rotation or the degree limit demands one.

    What it does: walks the program in order; before a rotation (`rotate`, `sum_slots`) whose
    operand has degree > 1, and before a product (`mul`, `dot`) whose result would exceed
    `max_degree`, it relinearizes the operand of highest degree, right after that operand is
    defined. Operands are aggregated values (the result of `reduce`/`dot`), so the key switch
    acts on the narrowest array of the chain (one ciphertext per SNP block, not per
    individual). One relinearization per value is shared by all its consumers.
    Assumes: a verified he program. Establishes: every rotation input has degree 1, every
    ciphertext has degree <= max_degree; the module verifies. Options: `max_degree` (default 4:
    a degree-4 ciphertext decrypts with s..s^4, and its rescale error stays far below the
    scales chosen by scale-management).
    Reference: HEIR OptimizeRelinearization.td; Blatt et al. PNAS 2020 (relinearization
    skipped by hand in the chi-square kernel).
    """

    name = "lazy-relinearization"

    max_degree: int = 4

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in list(op.body.block.ops):
            if isinstance(program, he.ProgramOp):
                self.run(program)

    def run(self, program: he.ProgramOp) -> None:
        relinearized: dict[SSAValue, SSAValue] = {}

        def relin(op: Operation, index: int) -> None:
            value = op.operands[index]
            if value not in relinearized:
                new = he.RelinearizeOp(value)
                owner = value.owner
                assert isinstance(owner, Operation)
                block = owner.parent_block()
                assert block is not None
                block.insert_op_after(new, owner)
                relinearized[value] = new.result
            op.operands[index] = relinearized[value]

        for op in list(program.block.ops):
            if isinstance(op, he.RotateOp | he.SumSlotsOp):
                if he.ct_type(op.input).degree_value > 1:
                    relin(op, 0)
            elif isinstance(op, he.DiagMatvecOp):  # rotates both operands' products
                for i, v in enumerate((op.lhs, op.rhs)):
                    if he.ct_type(v).degree_value > 1:
                        relin(op, i)
            elif isinstance(op, he.MulOp | he.DotOp):
                while True:
                    a, b = he.ct_type(op.lhs), he.ct_type(op.rhs)
                    if a.degree_value + b.degree_value <= self.max_degree:
                        break
                    if max(a.degree_value, b.degree_value) == 1:
                        break  # degree 2 is the least a product can have
                    relin(op, 0 if a.degree_value >= b.degree_value else 1)
            he.retype(op)
