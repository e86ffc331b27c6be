"""Complex packing: two real column blocks per ciphertext, in the real and imaginary parts of
the slots (DESIGN.md §5, layout-assignment).

CKKS slots hold complex numbers; a real row-packed array leaves every imaginary part at zero,
so half of every ciphertext a data owner uploads carries nothing. A secret input [N, M] whose
row spans two or more slot sets can instead hold column block 2j in the real parts and block
2j + 1 in the imaginary parts of one ciphertext: half the ciphertexts to encrypt, upload, read
and sum (the `complex` layout of the ckks dialect). What acts on real and imaginary parts
alike keeps the layout: sums, differences, negation, multiplication and addition of public
real constants, rescale, level drops, relinearization, sums over rows, and products with a
broadcast replicated value (a real number in every slot, such as a phenotype y_i times the
genotype row S_i). Anything else (a product of two complex values, a rotation, a slot sum,
an add with a real packed array) gets `ckks.unpack_complex` in front of it: one conjugation
(a Galois key switch) per ciphertext, z + z* = 2 Re z and -i (z - z*) = 2 Im z, read at
twice the scale. A decryption needs none: the coordinator splits the decoded complex slots.

Where. An input is packed only if every use of it is a sum over the rows (`reduce` or `dot`
over axis 0, the other factor of the dot a broadcast of a replicated array; level drops
before the sum are allowed): per-row values
stay complex until they are aggregated, so unpacking happens on the aggregate (one ciphertext
per pair of SNP blocks), never per individual. The pass runs after level-assignment, so the
unpacks land right before their consumers, at the lowest level the value reaches: a key
switch there needs keys only over Q_level·P (`key_level`), which keeps the chi-square
program's evaluation keys within the 128-bit bound at n = 2^13.

When. Packing pays only when a row spans at least two slot sets of the ring, and the ring is
chosen later (scale-management, parameter-selection). The pass decides inside the one
compilation, by the cost model: it runs the parameter search as a function (`estimate`: the
coefficient-parameters, scale-management and parameter-selection passes on a clone of the
program, not the pipeline) on each candidate, the program as it is and the program with every
input whose row spans two slot sets of the first candidate's ring packed, and packs when the
packed candidate uploads fewer bytes per individual (`party_sizes`, the upload per row) on a
ring no larger. No search runs when no input could span two slot sets even of the smallest
ring the search may choose. Each estimate's result is kept in a `SearchMemo`: the pipeline
takes the chosen candidate's searched program from it instead of searching again, so a
compilation runs the search once per candidate it compares (once when nothing can be packed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.ckks_util import ckks_programs
from compiler.analysis.counts import party_sizes
from compiler.analysis.packed import is_coefficient_program
from compiler.analysis.scales import apply_plan, remove_lifts, top_level
from compiler.analysis.security import MIN_LOG_N, MIN_SECURE_LOG_N
from compiler.analysis.sizes import parse_sizes
from compiler.dialects import ckks
from compiler.errors import UserError
from compiler.ir_text import print_ir
from passes.coefficient_parameters import CoefficientParametersPass
from passes.parameter_selection import ParameterSelectionPass
from passes.rescale_placement import nominal_plan
from passes.scale_management import ScaleManagementPass

# The passes of the parameter search, in pipeline order (what `estimate` runs on a candidate).
SEARCH_PASSES = (
    CoefficientParametersPass.name,
    ScaleManagementPass.name,
    ParameterSelectionPass.name,
)


def search_passes(
    precision_bits: float,
    precision: str,
    log_n: int,
    insecure: bool,
    failure_log2: float = -32.0,
    flooding_bits: float = 0.0,
) -> tuple[ModulePass, ...]:
    """The parameter search, in pipeline order: the scheme record's passes (passes/schemes.py)
    and complex packing's estimates run these same passes."""
    return (
        CoefficientParametersPass(log_n=log_n, insecure=insecure),
        ScaleManagementPass(
            precision_bits=precision_bits,
            precision=precision,
            log_n=log_n,
            insecure=insecure,
            failure_log2=failure_log2,
            flooding_bits=flooding_bits,
        ),
        ParameterSelectionPass(insecure=insecure),
    )


def program_key(program: ckks.ProgramOp) -> str:
    """A candidate's identity before the search: its IR text."""
    return print_ir(ModuleOp([program.clone()]))


class SearchMemo:
    """The parameter searches run on candidates: per candidate (its IR text before the search),
    the program after each search pass. The pipeline restores the chosen candidate's programs
    instead of running the search on it again (the search is deterministic)."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, ckks.ProgramOp]] = {}

    def record(self, key: str, pass_name: str, program: ckks.ProgramOp) -> None:
        self.entries.setdefault(key, {})[pass_name] = program.clone()

    def key_of(self, module: ModuleOp) -> str | None:
        """The key of the module's one ckks program when a search of it is recorded."""
        programs = list(ckks_programs(module))
        if len(programs) != 1:
            return None
        key = program_key(programs[0])
        return key if key in self.entries else None

    def restore(self, module: ModuleOp, key: str, pass_name: str) -> bool:
        """Replace the module's ckks program by the recorded one after `pass_name`; False when
        none is recorded."""
        recorded = self.entries.get(key, {}).get(pass_name)
        if recorded is None:
            return False
        (old,) = ckks_programs(module)
        block = old.parent_block()
        assert block is not None
        block.insert_op_before(recorded.clone(), old)
        old.detach()
        old.erase()
        return True


# Ops under which the complex layout survives (acting on real and imaginary parts alike).
_LINEAR = (
    ckks.AddOp,
    ckks.SubOp,
    ckks.NegateOp,
    ckks.MulConstOp,
    ckks.AddConstOp,
    ckks.RescaleOp,
    ckks.LevelDownOp,
    ckks.RelinearizeOp,
)


def _is_mask(op: Operation) -> bool:
    return isinstance(op, ckks.MulConstOp) and op.is_masked


def _width(ty: ckks.CtType, sizes: dict[str, int], bounds: dict[str, int]) -> int:
    last = ty.dims[-1]
    if isinstance(last, int):
        return last
    return sizes.get(last, bounds.get(last, 0))


def _row_sum_use(op: Operation, value: SSAValue) -> bool:
    """`op` sums `value` over the rows: reduce over axis 0, or a dot over axis 0 whose other
    factor is a broadcast of a replicated array."""
    if isinstance(op, ckks.LevelDownOp):  # per-row limb drops before the sum
        return all(_row_sum_use(u.operation, op.result) for u in op.result.uses)
    if isinstance(op, ckks.ReduceOp):
        return op.axis_value == 0
    if isinstance(op, ckks.DotOp) and op.axis_value == 0:
        other = op.rhs if op.lhs is value else op.lhs
        return other is not value and ckks.is_real_broadcast(other)
    return False


@dataclass(frozen=True)
class ComplexPackingPass(ModulePass):
    """Pack eligible row-packed secret inputs two column blocks per ciphertext.

    What it does: module docstring. Assumes: levels are assigned (level-assignment). Options:
    `enabled` (False: the pass does nothing), `sizes` (the compiled sizes, "N=..,M=.."), and
    the parameter search's own options for the estimate (`precision_bits`, `precision`,
    `log_n`, `insecure`, as scale-management takes them).
    Establishes: every complex value is either a per-row value feeding a sum over rows or an
    aggregate; `unpack_complex` precedes every consumer that needs real slots; the program
    attribute `key_level` covers the unpacks; scales are re-applied with the nominal plan
    (scale-management sets the exact ones); the module verifies.
    Reference: the complex slots of CKKS (Cheon-Kim-Kim-Song 2017); Kim et al., "Approximate
    homomorphic encryption with reduced slot size" (conjugate-invariant packing) for the
    contrast: they drop the imaginary parts, here they carry data.
    """

    name = "complex-packing"

    enabled: bool = False
    sizes: str = ""
    precision_bits: float = 19.0
    precision: str = ""
    log_n: int = 0
    insecure: bool = False
    memo: SearchMemo | None = field(default=None, compare=False)
    failure_log2: float = -32.0
    flooding_bits: float = 0.0  # scale-management's option of the same name

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.enabled:
            return
        for program in ckks_programs(op):
            width = None if is_coefficient_program(program) else self.packing_width(program)
            if width is not None:
                self.run(program, width)

    def estimate(self, program: ckks.ProgramOp) -> ckks.Parameters | None:
        """The parameters the pipeline's search would choose for `program` as it stands (None
        when it finds none): the search passes run on a clone, the program is untouched."""
        key = program_key(program)
        clone = ModuleOp([program.clone()])
        ctx = Context()
        search = search_passes(
            self.precision_bits,
            self.precision,
            self.log_n,
            self.insecure,
            self.failure_log2,
            self.flooding_bits,
        )
        try:
            for p in search:
                p.apply(ctx, clone)
                clone.verify()
                if self.memo is not None:
                    self.memo.record(key, p.name, next(ckks_programs(clone)))
        except UserError:
            return None  # the pipeline's own search reports it, if this candidate is kept
        return next(ckks_programs(clone)).parameters()

    def smallest_slots(self) -> int:
        """The slots of the smallest ring the search may choose (the forced one, if any)."""
        if self.log_n:
            return 1 << (self.log_n - 1)
        return 1 << ((MIN_LOG_N if self.insecure else MIN_SECURE_LOG_N) - 1)

    def packing_width(self, program: ckks.ProgramOp) -> int | None:
        """The width from which inputs are packed (slots + 1 of the ring the search chooses
        for the program unpacked) when packing them uploads fewer bytes per individual on a
        ring no larger; None when packing does not pay. Without inputs that wide it decides
        after one estimate."""
        if not self.candidates(program, self.smallest_slots() + 1):
            return None  # no row spans two slot sets of any ring: nothing to estimate
        plain = self.estimate(program)
        if plain is None or not self.candidates(program, plain.slots + 1):
            return None
        packed_program = program.clone()
        self.run(packed_program, plain.slots + 1)
        packed = self.estimate(packed_program)
        if packed is None or packed.log_n > plain.log_n:
            return None
        sizes = self.run_sizes(program)
        before = party_sizes(program, plain, sizes).upload_per_individual
        after = party_sizes(packed_program, packed, sizes).upload_per_individual
        return plain.slots + 1 if after < before else None

    def run_sizes(self, program: ckks.ProgramOp) -> Mapping[str, int]:
        """The sizes of the run: the compiled sizes, else each parameter's declared bound."""
        given = parse_sizes(self.sizes)
        return {name: given.get(name, bound) for name, bound in program.params().items()}

    def candidates(self, program: ckks.ProgramOp, min_width: int) -> list[ckks.EncryptOp]:
        """The row-packed secret inputs at least `min_width` wide whose every use is a sum
        over the rows."""
        sizes = parse_sizes(self.sizes)
        bounds = program.params()
        found = []
        for enc in program.encrypts():
            ty = ckks.ct_type(enc.result)
            if ty.layout_name != ckks.PACKED or len(ty.dims) != 2:
                continue
            if _width(ty, sizes, bounds) < min_width:
                continue
            uses = [u.operation for u in enc.result.uses]
            if uses and all(_row_sum_use(u, enc.result) for u in uses):
                found.append(enc)
        return found

    def run(self, program: ckks.ProgramOp, min_width: int | None = None) -> None:
        """Pack the candidates at least `min_width` wide (default: wider than the slots of
        the ring the search chooses for the program unpacked)."""
        if min_width is None:
            params = self.estimate(program)
            if params is None:
                return
            min_width = params.slots + 1
        packed = self.candidates(program, min_width)
        if not packed:
            return
        remove_lifts(program)  # scale alignment is redone at the end (apply_plan)
        complex_values: set[SSAValue] = set()
        for enc in packed:
            source = enc.source()
            pty = ckks.pt_type(source.result)
            source.result._type = ckks.PtType.get(  # pyright: ignore[reportPrivateUsage]
                pty.dims, ckks.COMPLEX, pty.level_value, pty.scale
            )
            ckks.retype(enc)
            complex_values.add(enc.result)
        unpacked: dict[SSAValue, SSAValue] = {}

        def unpack(op: Operation, index: int) -> None:
            value = op.operands[index]
            if value not in unpacked:
                u = ckks.UnpackComplexOp(value)
                block = op.parent_block()
                assert block is not None
                block.insert_op_before(u, op)
                unpacked[value] = u.result
            op.operands[index] = unpacked[value]

        for op in list(program.block.ops):
            if isinstance(op, ckks.UnpackComplexOp):
                continue
            idx = [i for i, v in enumerate(op.operands) if v in complex_values]
            if not idx:
                _retype(op)
                continue
            if isinstance(op, ckks.DecryptOp):
                continue  # the coordinator splits the complex slots itself
            other = [i for i, v in enumerate(op.operands) if _is_ct(v) and i not in idx]
            real = len(other) == 1 and ckks.is_real_broadcast(op.operands[other[0]])
            if isinstance(op, ckks.MulOp | ckks.DotOp):
                if real:
                    self._complex_broadcast(op, other[0], real_factor=True)
                    _retype(op)
                    complex_values.add(op.results[0])
                    continue
                for i in idx:
                    unpack(op, i)
            elif isinstance(op, ckks.AddOp | ckks.SubOp) and real:
                self._complex_broadcast(op, other[0], real_factor=False)
                _retype(op)
                complex_values.add(op.results[0])
                continue
            elif isinstance(op, ckks.ReduceOp) or (
                # a mask is a real 0/1 vector over the packed axis, not over slot pairs
                isinstance(op, _LINEAR) and not other and not _is_mask(op)
            ):
                _retype(op)
                complex_values.add(op.results[0])
                continue
            else:
                for i in idx:
                    unpack(op, i)
            _retype(op)
        levels = [
            ckks.ct_type(o.operands[0]).level_value
            for o in program.block.ops
            if isinstance(o, ckks.KEY_SWITCH_OPS)
        ]
        if levels:  # none when every complex value is only decrypted (the coordinator splits)
            program.set_key_level(max(levels))
        apply_plan(program, nominal_plan(top_level(program)))

    @staticmethod
    def _complex_broadcast(op: Operation, index: int, real_factor: bool) -> None:
        """Make operand `index` of `op` (a broadcast of a replicated array) a complex
        broadcast of the same value: as a real factor of a product, or in both parts."""
        b = op.operands[index].owner
        assert isinstance(b, ckks.BroadcastOp)
        clone = ckks.BroadcastOp(
            b.input, b.shape_tuple, b.dims_tuple, ckks.COMPLEX, real_factor=real_factor
        )
        block = op.parent_block()
        assert block is not None
        block.insert_op_before(clone, op)
        op.operands[index] = clone.result
        if not b.result.uses:
            b.detach()
            b.erase()


def _retype(op: Operation) -> None:
    """Result type from the operands; an addition's operand scales may differ until
    apply_plan aligns them at the end of the pass."""
    if isinstance(op, ckks.AddOp | ckks.SubOp):
        a, b = ckks.ct_type(op.lhs), ckks.ct_type(op.rhs)
        op.results[0]._type = a.with_(  # pyright: ignore[reportPrivateUsage]
            degree=max(a.degree_value, b.degree_value),
            scale=max(a.scale, b.scale, key=lambda s: s.bits),
        )
        return
    ckks.retype(op)


def _is_ct(v: SSAValue) -> bool:
    return isinstance(v.type, ckks.CtType)
