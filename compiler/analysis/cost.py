"""The cost model `--scheme auto` chooses by: estimated time and bytes of a compiled program.

Both schemes are counted in one currency: the work of the ciphertext operations each party
executes for the sizes of the run, in units of one NTT of one RNS limb (n log2 n butterflies)
and one pointwise pass over one limb (n modular operations), converted to seconds with the
runtime's measured per-coefficient costs (UNIT_NS; one core, AVX-512 IFMA kernels). The counts
are per ciphertext and per limb of the level each op runs at:

- encrypt (public key): 3 NTTs per limb (u, e0, e1 to evaluation form) and 5 pointwise passes,
  plus the encoding (CKKS: an inverse FFT and 1 NTT per limb; BFV: 1 inverse NTT mod t);
- add, sub, negate, add_const: (degree + 1) pointwise passes; mul_const: the same;
- tensor product: CKKS 4 pointwise passes per limb (operands in evaluation form); BFV's HPS
  multiply extends both operands to Q P_mult and back: 4 NTTs and 4 inverse NTTs per limb of
  Q P_mult plus the base conversions, about 3 (L + L') pointwise passes per output limb;
- key switch (relinearize, rotate, each sum_slots step): per digit an inverse NTT of the
  digit and NTTs of its extension to Q P, the inner product with the key (2 passes per limb
  of Q P), and the mod-down by P (2 NTTs per limb of Q);
- rescale: 2 inverse NTTs and 2 NTTs per limb;
- dot over K terms: K products and K - 1 additions; reduce and sum_slots: the additions.

Bytes: what the owners upload, what the server reads, and what the coordinator downloads, from
the ciphertext sizes ((degree + 1) n limbs 8-byte words). The estimate is a model, not a
measurement: `bench/run gwas-chisq-schemes` checks its ratio against the runtimes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from compiler.analysis.counts import Shapes, coeff_group
from compiler.dialects import bfv, ckks, he

# Nanoseconds per coefficient: one butterfly of an NTT, one pointwise modular product.
UNIT_NS = {"ntt": 0.55, "pointwise": 0.45}


@dataclass(frozen=True)
class Cost:
    scheme: str
    log_n: int
    limbs: int  # primes of the ciphertext modulus at the top level
    encrypt_s: float  # all data owners together
    compute_s: float  # the server
    upload_bytes: int
    download_bytes: int

    @property
    def total_s(self) -> float:
        return self.encrypt_s + self.compute_s

    def as_dict(self) -> dict[str, float | int | str]:
        return {
            "scheme": self.scheme,
            "log_n": self.log_n,
            "limbs": self.limbs,
            "encrypt_seconds": self.encrypt_s,
            "compute_seconds": self.compute_s,
            "total_seconds": self.total_s,
            "upload_bytes": self.upload_bytes,
            "download_bytes": self.download_bytes,
        }


class _Units:
    def __init__(self, log_n: int):
        self.n = 1 << log_n
        self.log_n = log_n

    def ntt(self, limbs: float) -> float:
        return limbs * self.n * self.log_n / 2 * UNIT_NS["ntt"] * 1e-9

    def pointwise(self, limbs: float) -> float:
        return limbs * self.n * UNIT_NS["pointwise"] * 1e-9

    def key_switch(self, limbs: int, special: int, dnum: int) -> float:
        digits = max(dnum, 1)
        per_digit = limbs / digits
        return (
            digits
            * (
                self.ntt(per_digit)
                + self.ntt(limbs + special)
                + self.pointwise(2 * (limbs + special))
            )
            + self.ntt(2 * limbs)
            + self.ntt(2 * special)
        )


def ckks_cost(program: ckks.ProgramOp, sizes: Mapping[str, int]) -> Cost:
    params = program.parameters()
    assert params is not None
    s = Shapes(sizes, params.slots, coeff_group(program))
    u = _Units(params.log_n)
    base = len(params.output_moduli)
    special = len(params.special_moduli)
    encrypt = compute = 0.0
    upload = download = 0
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, ckks.CtType):
            continue
        ty = ckks.ct_type(op.results[0])
        count = s.count(ty)
        limbs = base + ty.level_value
        words = (ty.degree_value + 1) * limbs * u.n * 8
        match op:
            case ckks.EncryptOp():
                encrypt += count * (u.ntt(4 * limbs) + u.pointwise(5 * limbs) + u.ntt(1) / limbs)
                upload += count * words
            case ckks.MulOp() | ckks.DotOp():
                k = s.count(ckks.ct_type(op.operands[0]))
                compute += k * u.pointwise(4 * limbs) + (k - count) * u.pointwise(3 * limbs)
            case ckks.RelinearizeOp() | ckks.RotateOp() | ckks.UnpackComplexOp():
                compute += count * u.key_switch(limbs, special, params.dnum)
            case ckks.SumSlotsOp():
                steps = int(math.log2(params.slots))
                compute += (
                    count
                    * steps
                    * (u.key_switch(limbs, special, params.dnum) + u.pointwise(2 * limbs))
                )
            case ckks.RescaleOp():
                compute += count * u.ntt(4 * (limbs + 1))
            case ckks.ReduceOp():
                k = s.count(ckks.ct_type(op.input))
                compute += (k - count) * u.pointwise((ty.degree_value + 1) * limbs)
            case (
                ckks.AddOp()
                | ckks.SubOp()
                | ckks.NegateOp()
                | ckks.AddConstOp()
                | ckks.MulConstOp()
            ):
                compute += count * u.pointwise((ty.degree_value + 1) * limbs)
            case _:
                pass
    seen: set[object] = set()
    for d in program.decrypts():
        if d.input not in seen:
            seen.add(d.input)
            ty = ckks.ct_type(d.input)
            download += s.count(ty) * (ty.degree_value + 1) * (base + ty.level_value) * u.n * 8
    return Cost("ckks", params.log_n, base + len(params.moduli), encrypt, compute, upload, download)


def bfv_cost(program: bfv.ProgramOp, sizes: Mapping[str, int]) -> Cost:
    params = program.parameters()
    assert params is not None
    s = Shapes(sizes, params.slots)
    u = _Units(params.log_n)
    special = len(params.special_moduli)
    encrypt = compute = 0.0
    upload = download = 0
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, he.CtType):
            continue
        ty = he.ct_type(op.results[0])
        count = s.count(ty)
        limbs = ty.level_value + 1
        words = (ty.degree_value + 1) * limbs * u.n * 8
        # HPS: the auxiliary basis P_mult has about log2(Q t N) bits in primes below 2^50.
        aux = limbs * 60 / 50 + 1
        match op:
            case bfv.EncryptOp():
                encrypt += count * (u.ntt(3 * limbs + 1) + u.pointwise(5 * limbs))
                upload += count * words
            case bfv.MulOp() | bfv.DotOp():
                k = s.count(he.ct_type(op.operands[0]))
                each = u.ntt(8 * (limbs + aux)) + u.pointwise(3 * (limbs + aux) * (limbs + 2))
                compute += k * each + (k - count) * u.pointwise(3 * limbs)
            case bfv.RelinearizeOp() | bfv.RotateOp():
                compute += count * u.key_switch(limbs, special, params.dnum)
            case bfv.SumSlotsOp():
                steps = params.log_n  # N/2-slot rows: log2(N/2) rotations and the row swap
                compute += (
                    count
                    * steps
                    * (u.key_switch(limbs, special, params.dnum) + u.pointwise(2 * limbs))
                )
            case bfv.ReduceOp():
                k = s.count(he.ct_type(op.input))
                compute += (k - count) * u.pointwise((ty.degree_value + 1) * limbs)
            case bfv.AddOp() | bfv.SubOp() | bfv.NegateOp() | bfv.AddConstOp() | bfv.MulConstOp():
                compute += count * u.pointwise((ty.degree_value + 1) * limbs)
            case _:
                pass
    seen: set[object] = set()
    for d in program.decrypts():
        if d.input not in seen:
            seen.add(d.input)
            ty = he.ct_type(d.input)
            download += s.count(ty) * (ty.degree_value + 1) * (ty.level_value + 1) * u.n * 8
    return Cost("bfv", params.log_n, len(params.moduli), encrypt, compute, upload, download)
