"""The labeled program ("plan") of the labhe target and its exact integer semantics.

A plan is what `passes/lower_stat_to_labhe.py` makes of a degree-2 `stat` program and what the
runtime executes (`runtime/labhe/plan.h` states the text format and the three places it runs:
server, receiver's offline decryption, plaintext). Registers hold integer arrays; a value is
`register / den` with a public denominator (fixed-point scales of real inputs, 1/N of means),
so every computation is exact in the message space Z_M. Level-1 registers are linear in the
inputs (uploaded as (a, Enc(b)) pairs); a `contract` of two level-1 registers (an einsum such
as `nd,ne->de`) makes a level-2 register (one ciphertext per entry, Barbosa-Catalano-Fiore
§3). `evaluate_plain` is the exact integer reference of the target: the plan run on the
plaintext integers with Python's arbitrary-precision ints, reduced mod 2^k as the runtime
does, decoded and bound-checked like the receiver.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError

# Check bits: a result decrypted with the masks of another program, another key or other
# labels is a uniform residue, which lands inside its bound with probability about 2^-c when
# the message space has c bits above the widest revealed numerator, and decrypt refuses the
# result when any entry lands outside. Over E entries that decrypt independently, c =
# ceil(CHECK_BITS / E) bits per entry (at least 1) keep the chance that a wrong result passes
# every entry below 2^-CHECK_BITS. Each bit widens every masked value, and so every exponent
# of the server's multi-exponentiations, by one bit: a 24 x 24 covariance needs 1 bit, not 32.
CHECK_BITS = 32


def check_bits_per_entry(reveal_shapes: list[tuple[int, ...]]) -> int:
    """c above for the revealed arrays of these shapes; each array counts half its entries
    (a symmetric matrix is computed once per pair: its mirrored entries are the same residue)."""
    entries = sum(-(-math.prod(shape) // 2) for shape in reveal_shapes)
    return max(1, -(-CHECK_BITS // max(1, entries)))


@dataclass(frozen=True)
class Step:
    id: int
    op: str  # input add sub neg mulc addc sum transpose broadcast contract
    args: tuple[int, ...] = ()
    words: tuple[str, ...] = ()
    shape: tuple[int, ...] = ()
    level2: bool = False


@dataclass(frozen=True)
class PlanInput:
    name: str
    scale: int  # the encrypted integer is round(x * scale)
    shape: tuple[int, ...]
    register: int
    bound: int  # max |round(x * scale)| over the input's domain
    # A derived input (owner-side precomputation): c0 + c1 x + c2 x^2 of input `source`,
    # computed by the provider of `source` on its rows.
    source: str = ""
    coeffs: tuple[float, ...] = ()


@dataclass(frozen=True)
class PlanReveal:
    name: str
    register: int
    den: int
    bound: int  # max |numerator| over the inputs' domains


@dataclass
class LabheProgram:
    name: str
    message_bits: int
    inputs: list[PlanInput] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    reveals: list[PlanReveal] = field(default_factory=list)

    def check_bits(self) -> int:
        """The check bits per entry its reveals need (`check_bits_per_entry`)."""
        return check_bits_per_entry([self.steps[r.register].shape for r in self.reveals])

    def text(self) -> str:
        lines = ["hec-labhe-plan 1", f"program {self.name}", f"message_bits {self.message_bits}"]
        for s in self.steps:
            words = " ".join([str(a) for a in s.args] + list(s.words))
            lines.append(f"v {s.id} {s.op} {words}".rstrip())
        for r in self.reveals:
            lines.append(f"reveal {r.name} {r.register} {r.den} {r.bound}")
        return "\n".join(lines) + "\n"

    @property
    def digest(self) -> str:
        """BLAKE2b-256 of the text, as the runtime computes it (the files carry it)."""
        return hashlib.blake2b(self.text().encode(), digest_size=32).hexdigest()

    def input(self, name: str) -> PlanInput:
        return next(i for i in self.inputs if i.name == name)

    # --- cost facts (the report) -------------------------------------------------------------

    def products(self) -> int:
        """Level-1 x level-1 products the server forms (each two exponentiations with k-bit
        exponents, one fewer on a symmetric x @ x diagonal), over all contractions."""
        total = 0
        for s in self.steps:
            if s.op == "contract":
                lhs, rest = s.words[0].split(",")
                rhs, _out = rest.split("->")
                extent: dict[str, int] = {}
                for letters, reg in ((lhs, s.args[0]), (rhs, s.args[1])):
                    for ch, d in zip(letters, self.steps[reg].shape, strict=True):
                        extent[ch] = d
                n = 1
                for d in extent.values():
                    n *= d
                total += n
        return total

    def upload_values(self) -> int:
        return sum(int(np.prod(i.shape, dtype=np.int64)) for i in self.inputs)


def ciphertext_bytes(scheme: str, modulus_bits: int) -> int:
    """One ciphertext: an element of Z_N (Joye-Libert) or Z_N^2 (Paillier)."""
    return (modulus_bits if scheme == "jl" else 2 * modulus_bits) // 8


def message_bytes(scheme: str, modulus_bits: int, message_bits: int) -> int:
    return (message_bits + 7) // 8 if scheme == "jl" else modulus_bits // 8


def result_bytes(plan: LabheProgram, scheme: str, modulus_bits: int) -> int:
    """Bytes the server sends the receiver: a ciphertext per level-2 entry, the a part (one
    message) per level-1 entry. Independent of the number of rows."""
    total = 0
    for r in plan.reveals:
        s = plan.steps[r.register]
        count = int(np.prod(s.shape, dtype=np.int64))
        width = (
            ciphertext_bytes(scheme, modulus_bits)
            if s.level2
            else message_bytes(scheme, modulus_bits, plan.message_bits)
        )
        total += count * width
    return total


# --- exact integer semantics ---------------------------------------------------------------


def _gather(src: tuple[int, ...], out: tuple[int, ...], axis_map: list[int]) -> Any:
    """An index array into `src` (flat) for each element of `out`."""
    idx = np.zeros(out, dtype=np.int64)
    stride = 1
    for i in reversed(range(len(src))):
        if src[i] != 1:
            coord = np.arange(out[axis_map[i]]).reshape(
                [out[axis_map[i]] if j == axis_map[i] else 1 for j in range(len(out))]
            )
            idx = idx + coord * stride
        stride *= src[i]
    return idx


def evaluate_plain(
    plan: LabheProgram, inputs: dict[str, npt.ArrayLike]
) -> dict[str, npt.NDArray[np.float64]]:
    """Run the plan on plaintext values (quantized with each input's scale) in Z_(2^k) and
    decode every reveal as the receiver does; raise `UserError` when a value leaves its bound
    (an input outside its declared domain)."""
    modulus = 1 << plan.message_bits
    regs: dict[int, Any] = {}
    for s in plan.steps:
        if s.op == "input":
            spec = plan.input(s.words[0])
            if spec.source:
                src = np.asarray(inputs[spec.source], dtype=np.float64)
                c0, c1, c2 = spec.coeffs
                x = (c0 + c1 * src + c2 * src * src).reshape(spec.shape)
            else:
                x = np.asarray(inputs[spec.name], dtype=np.float64).reshape(spec.shape)
            q = np.rint(x * spec.scale).astype(object)
            regs[s.id] = np.vectorize(lambda v: int(v) % modulus, otypes=[object])(q)
            continue
        a = [regs[i] for i in s.args]
        if s.op in ("add", "sub"):
            r = a[0] + a[1] if s.op == "add" else a[0] - a[1]
        elif s.op == "neg":
            r = -a[0]
        elif s.op == "mulc":
            r = a[0] * int(s.words[0])
        elif s.op == "addc":
            r = a[0] + int(s.words[0])
        elif s.op == "sum":
            r = np.sum(a[0], axis=tuple(int(w) for w in s.words[1:]))
            r = np.asarray(r, dtype=object)
        elif s.op == "transpose":
            r = np.asarray(a[0]).T
        elif s.op == "broadcast":
            rank = int(s.words[0])
            axis_map = [int(w) for w in s.words[2 + rank :]]
            src = tuple(np.asarray(a[0]).shape)
            r = np.asarray(a[0]).reshape(-1)[_gather(src, s.shape, axis_map)]
        elif s.op == "contract":
            r = np.einsum(s.words[0], a[0], a[1])
        else:
            raise AssertionError(f"unknown plan op {s.op}")
        r = np.asarray(r, dtype=object)
        regs[s.id] = np.vectorize(lambda v: int(v) % modulus, otypes=[object])(r) if r.size else r
    out: dict[str, npt.NDArray[np.float64]] = {}
    for rev in plan.reveals:
        raw = np.asarray(regs[rev.register], dtype=object)
        flat = []
        for v in raw.reshape(-1):
            num = int(v) - modulus if int(v) >= modulus // 2 else int(v)
            if abs(num) > rev.bound:
                raise UserError(
                    f"revealed value '{rev.name}' leaves its bound (an input outside its domain)"
                )
            flat.append(float(Fraction(num, rev.den)))
        out[rev.name] = np.asarray(flat, dtype=np.float64).reshape(raw.shape)
    return out
