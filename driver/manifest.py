"""The manifest of a finished compilation: what a runner needs to know about a compiled
program without reading the scheme's IR itself (issue 18).

`manifest_of` reads it once from the compiled program: the data owners' inputs, each encrypted
array with the owner inputs it is computed from and its layout, the revealed values, the slot
count of the ring and how many columns of a row one ciphertext holds. gwas/ sizes its SNP
blocks and groups its encryptions from it; the runner and the emitter take the same
`Compilation`. `program_text` / `load_program` store and restore the compiled IR (gwas's
program cache) without the caller naming the scheme's dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from xdsl.dialects.builtin import ModuleOp

from compiler.analysis.ckks_util import ckks_programs
from compiler.dialects import ckks, he
from compiler.errors import InternalError
from compiler.ir_text import parse_ir, print_ir


class Layout(Enum):
    """How an encrypted array lies in its ciphertexts (the layouts of the ckks dialect)."""

    PACKED = ckks.PACKED  # a row's columns in the slots, one block of `slots` per ciphertext
    COMPLEX = ckks.COMPLEX  # two column blocks per ciphertext (real and imaginary parts)
    REPLICATED = ckks.REPLICATED  # one value in every slot
    COEFF = ckks.COEFF  # packed counts: `group` columns per coefficient
    GRID = "grid"  # rows x columns (docs/layout.md): the type's layout text gives R and roles
    # The diagonal matrix-vector product's operands (docs/layout.md, "Diagonal layout"): a
    # matrix as its generalized diagonals, a vector repeated with a period; both whole arrays.
    DIAGONAL = "diagonal"
    CYCLIC = "cyclic"

    @staticmethod
    def of(name: str) -> Layout:
        if he.grid_of(name) is not None:
            return Layout.GRID
        if he.diagonal_of(name) is not None:
            return Layout.DIAGONAL
        if he.cyclic_of(name) is not None:
            return Layout.CYCLIC
        return Layout(name)


@dataclass(frozen=True)
class EncryptedInput:
    """One array a data owner encrypts: the owner inputs it is computed from (the owner-side
    precomputation may combine several) and its layout."""

    sources: tuple[str, ...]
    layout: Layout


@dataclass(frozen=True)
class Manifest:
    """Inputs, encrypted arrays, revealed values and the ring's packing of a compiled program."""

    inputs: tuple[str, ...]  # the owner inputs the encrypt role reads, in program order
    encrypted: tuple[EncryptedInput, ...]
    outputs: tuple[str, ...]  # the revealed values the decrypt role writes
    slots: int
    coeff_group: int  # columns per coefficient when the program packs counts, else 0

    @property
    def complex_packed(self) -> bool:
        """Some secret rows are complex-packed (two slot sets per ciphertext)."""
        return any(e.layout is Layout.COMPLEX for e in self.encrypted)

    @property
    def columns_per_ciphertext(self) -> int:
        """Columns of a row one ciphertext holds."""
        if self.coeff_group:  # `slots` coefficients of `group` columns in each half
            return 2 * self.slots * self.coeff_group
        return self.slots * (2 if self.complex_packed else 1)


def _program(module: ModuleOp) -> ckks.ProgramOp:
    found = next(ckks_programs(module), None)
    if found is None:
        raise InternalError("compiled module has no ckks.program")
    return found


def manifest_of(module: ModuleOp) -> Manifest:
    program = _program(module)
    params = program.parameters()
    if params is None:
        raise InternalError("compiled program has no parameters")
    inputs: list[str] = []
    groups: list[int] = []
    for op in program.block.ops:
        if isinstance(op, ckks.EncodeOp):
            if op.sym_value not in inputs:
                inputs.append(op.sym_value)
            if ckks.pt_type(op.result).layout_name == ckks.COEFF:
                groups.append(op.group_value)
    encrypted = tuple(
        EncryptedInput(tuple(e.source().sources()), Layout.of(ckks.ct_type(e.result).layout_name))
        for e in program.encrypts()
    )
    outputs = tuple(dict.fromkeys(d.sym_value for d in program.decrypts()))
    return Manifest(tuple(inputs), encrypted, outputs, params.slots, max(groups, default=0))


def program_text(module: ModuleOp) -> str:
    """The compiled IR as text (what `load_program` reads back)."""
    return print_ir(module)


def load_program(text: str) -> ModuleOp:
    """A compiled module from `program_text`'s output, verified."""
    return parse_ir(text, ckks.Ckks)
