"""The cost model `--scheme auto` chooses by: estimated time and bytes of a compiled program.

Labeled HE (`labhe_cost`, at the end) is counted in its own unit, modular products of its
ciphertext ring, converted to seconds with the runtime's measured product cost: the same
currency (seconds of one core, bytes moved). The RLWE schemes are counted in one currency: the
work of the ciphertext operations each party executes for the sizes of the run, in units of one
NTT of one RNS limb (n log2 n butterflies) and one pointwise pass over one limb (n modular
operations), converted to seconds with the runtime's measured per-coefficient costs (one core)
from the cost profile in use (compiler/analysis/profile.py: `hec calibrate` on this machine, or
the shipped default), which also scales the key switch, CKKS tensor product and rescale, and
BFV multiply by their measured / modelled ratios. The counts are per ciphertext and per limb of
the level each op runs at:

- encrypt: the role's measured cost per coefficient-limb written (the profile's
  encrypt_ns_per_word: the sampling and serialization dominate the 4 NTTs per limb of the
  encryption itself);
- the server's reads: its measured cost per byte of ciphertext read (read_ns_per_byte);
- add, sub, negate, add_const: (degree + 1) pointwise passes; mul_const: the same;
- tensor product: CKKS 4 pointwise passes per limb (operands in evaluation form); BFV's HPS
  multiply extends both operands to Q P_mult and back: 4 NTTs and 4 inverse NTTs per limb of
  Q P_mult plus the base conversions, about 3 (L + L') pointwise passes per output limb;
- key switch (relinearize, rotate, each sum_slots step): per digit an inverse NTT of the
  digit and NTTs of its extension to Q P, the inner product with the key (2 passes per limb
  of Q P), and the mod-down by P (2 NTTs per limb of Q);
- rescale: 2 inverse NTTs and 2 NTTs per limb;
- dot over K terms: K products and K - 1 additions; reduce and sum_slots: the additions.

A BFV program over k plaintext moduli (a CRT, passes/bfv_parameters.py) runs k residue
computations of the same shape: every time and byte count is k times one residue's.

Bytes: what the owners upload, what the server reads, and what the coordinator downloads, from
the ciphertext sizes as the files store them (CKKS: every limb at its prime's bit width,
runtime/ckks/io.h; BFV: (degree + 1) n limbs 8-byte words). The estimate is a model, not a
measurement: `bench/run gwas-chisq-schemes` checks its ratio against the runtimes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import Operation, SSAValue

from compiler.analysis.counts import (
    Shapes,
    ciphertext_file_bytes,
    coeff_group,
    sum_slots_rotations,
)
from compiler.analysis.profile import Profile, active
from compiler.analysis.streaming import schedule
from compiler.dialects import bfv, ckks, he
from compiler.labhe_plan import LabheProgram, ciphertext_bytes, message_bytes, result_bytes

# Every constant comes from the cost profile in use (compiler/analysis/profile.py: `hec
# calibrate`'s measurements on this machine, or the shipped default, the constants measured by
# hand on the development machine): per ring dimension the nanoseconds of one NTT butterfly and
# of one pointwise modular product, and the measured / modelled ratio of the key switch, the
# CKKS tensor product and rescale, and the BFV multiply; per scheme the encrypt role's cost per
# coefficient-limb of every ciphertext it writes (sampling, encoding, the owner's own values,
# serialization and checksums) and the server's per byte of ciphertext it reads (positioned
# reads, checksums, parsing), and the compute role's fixed cost per run (starting, reading the
# keys and the manifest, writing the results).


@dataclass(frozen=True)
class Cost:
    scheme: str
    log_n: int
    limbs: int  # primes of the ciphertext modulus at the top level
    encrypt_s: float  # all data owners together
    compute_s: float  # the server
    upload_bytes: int
    download_bytes: int
    residues: int = 1  # BFV: residue computations (one per plaintext modulus), counted in

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
            "residues": self.residues,
        }


class _Units:
    """Seconds of the modelled kernels at ring dimension 2^log_n under `profile` (None: the
    profile in use); `scheme` picks the key switch's measured factor."""

    def __init__(self, log_n: int, profile: Profile | None = None, scheme: str = "ckks"):
        self.n = 1 << log_n
        self.log_n = log_n
        self.profile = profile or active()
        self.ntt_ns = self.profile.by_log_n("ntt_ns_per_butterfly", log_n)
        self.pointwise_ns = self.profile.by_log_n("pointwise_ns_per_coefficient", log_n)
        self.key_switch_factor = self.profile.by_log_n(f"{scheme}_key_switch_factor", log_n)

    def ntt(self, limbs: float) -> float:
        return limbs * self.n * self.log_n / 2 * self.ntt_ns * 1e-9

    def pointwise(self, limbs: float) -> float:
        return limbs * self.n * self.pointwise_ns * 1e-9

    def factor(self, table: str) -> float:
        return self.profile.by_log_n(table, self.log_n)

    def key_switch(self, limbs: int, special: int, dnum: int) -> float:
        return sum(key_switch_parts(self, limbs, special, dnum))


Units = _Units


def key_switch_parts(u: _Units, limbs: int, special: int, dnum: int) -> tuple[float, float, float]:
    """A key switch in its three steps (core/keyswitch.h): ModUp (per digit the inverse NTT of
    the digit and the NTTs of its extension to Q P), the key product (2 passes per limb of Q P
    per digit), ModDown (the NTTs of the P part and of its conversion to Q). Hoisting shares
    the first among rotations of one ciphertext; double hoisting shares the last too."""
    digits = max(dnum, 1)
    per_digit = limbs / digits
    f = u.key_switch_factor  # measured / modelled (compiler/analysis/profile.py)
    mod_up = digits * (u.ntt(per_digit) + u.ntt(limbs + special))
    product = digits * u.pointwise(2 * (limbs + special))
    mod_down = u.ntt(2 * limbs) + u.ntt(2 * special)
    return f * mod_up, f * product, f * mod_down


def hoisted_stage_seconds(u: _Units, limbs: int, special: int, dnum: int, radix: int) -> float:
    """One doubly hoisted stage of a staged slot sum (compiler/analysis/rotations.py): the
    identity and radix - 1 rotations of one ciphertext summed with one ModUp and one ModDown;
    per rotation the key product, the permutations of the ModUp digits and of c_0 (one pass
    each over their words) and the addition of the term."""
    mod_up, product, mod_down = key_switch_parts(u, limbs, special, dnum)
    digits = max(dnum, 1)
    per_rotation = (
        product
        + u.pointwise(digits * (limbs + special))
        + u.pointwise(limbs)
        + u.pointwise(2 * limbs)
    )
    return mod_up + mod_down + (radix - 1) * per_rotation


def runs_per_op(program: ckks.ProgramOp | bfv.ProgramOp) -> dict[Operation, int]:
    """How many times the server executes each op: a program streamed over its rows in several
    passes (compiler/analysis/streaming.py) reads, in each pass, the inputs that pass's sums
    need, and recomputes the row values they are formed from (targets/cpp/emit.py,
    write_pass); a row value no sum needs is not computed. Ops absent from the map run once."""
    s = schedule(program)
    if s.stream_dim is None or s.fallback:
        return {}
    runs: dict[Operation, int] = {
        op: 0 for op in program.block.ops if op.results and op.results[0] in s.row
    }
    for p in range(s.passes):
        need: set[SSAValue] = set()
        stack = [o for op, q in s.sinks.items() if q == p for o in op.operands if o in s.row]
        stack += [op.input for op, q in s.collects.items() if q == p]
        while stack:
            v = stack.pop()
            if v in need:
                continue
            need.add(v)
            owner = v.owner
            if isinstance(owner, Operation):
                runs[owner] = runs.get(owner, 0) + 1
                if not isinstance(owner, he.EncryptRule):
                    stack += [o for o in owner.operands if o in s.row]
    return runs


def ckks_cost(program: ckks.ProgramOp, sizes: Mapping[str, int]) -> Cost:
    params = program.parameters()
    assert params is not None
    s = Shapes(sizes, params.slots, coeff_group(program))
    u = _Units(params.log_n)
    prof = u.profile
    tensor, rescale = u.factor("ckks_tensor_factor"), u.factor("ckks_rescale_factor")
    base = len(params.output_moduli)
    special = len(params.special_moduli)
    encrypt = compute = 0.0
    upload = download = read = 0
    runs = runs_per_op(program)
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, ckks.CtType):
            continue
        ty = ckks.ct_type(op.results[0])
        count = s.count(ty)
        c = 0.0  # seconds of this op's one execution, times its runs (runs_per_op)
        limbs = base + ty.level_value
        # The bytes of one as the array files store it (packed residues, runtime/ckks/io.h).
        stored = ciphertext_file_bytes(params, ty.level_value, ty.degree_value)
        match op:
            case ckks.EncryptOp():
                encrypt += (
                    count * limbs * u.n * prof.by_scheme("encrypt_ns_per_word", "ckks") * 1e-9
                )
                upload += count * stored
                read += count * stored * runs.get(op, 1)
            case ckks.MulOp() | ckks.DotOp():
                k = s.count(ckks.ct_type(op.operands[0]))
                c += tensor * k * u.pointwise(4 * limbs) + (k - count) * u.pointwise(3 * limbs)
            case ckks.RelinearizeOp() | ckks.RotateOp() | ckks.UnpackComplexOp():
                c += count * u.key_switch(limbs, special, params.dnum)
            case ckks.DiagMatvecOp():
                # D tensor products summed at degree 2, then (b - 1) hoisted baby rotations
                # (one decomposition: counted as key switches, an upper bound), G
                # relinearizations, G - 1 giant rotations and the fold, each with its add.
                d = op.diagonal
                switches = d.key_switches()
                c += tensor * d.count * u.pointwise(4 * limbs)
                c += (d.count - 1) * u.pointwise(3 * limbs)
                c += switches * (u.key_switch(limbs, special, params.dnum) + u.pointwise(2 * limbs))
            case ckks.ConvertOp():
                steps = len(op.replications(params.slots))
                c += steps * (u.key_switch(limbs, special, params.dnum) + u.pointwise(2 * limbs))
            case ckks.SumSlotsOp() if op.radix_values is not None:
                # Staged and doubly hoisted (compiler/analysis/rotations.py).
                c += count * sum(
                    hoisted_stage_seconds(u, limbs, special, params.dnum, r)
                    for r in op.radix_values
                )
            case ckks.SumSlotsOp():
                # log2(slots) steps, or log2(R) for a row sum of a grid array.
                steps = sum_slots_rotations(op, int(math.log2(params.slots)))
                c += (
                    count
                    * steps
                    * (u.key_switch(limbs, special, params.dnum) + u.pointwise(2 * limbs))
                )
            case ckks.RescaleOp():
                c += rescale * count * u.ntt(4 * (limbs + 1))
            case ckks.ReduceOp():
                k = s.count(ckks.ct_type(op.input))
                c += (k - count) * u.pointwise((ty.degree_value + 1) * limbs)
            case (
                ckks.AddOp()
                | ckks.SubOp()
                | ckks.NegateOp()
                | ckks.AddConstOp()
                | ckks.MulConstOp()
            ):
                c += count * u.pointwise((ty.degree_value + 1) * limbs)
            case _:
                pass
        compute += runs.get(op, 1) * c
    seen: set[object] = set()
    for d in program.decrypts():
        if d.input not in seen:
            seen.add(d.input)
            ty = ckks.ct_type(d.input)
            download += s.count(ty) * ciphertext_file_bytes(params, ty.level_value, ty.degree_value)
    compute += read * prof.by_scheme("read_ns_per_byte", "ckks") * 1e-9
    compute += prof.by_scheme("compute_fixed_seconds", "ckks")
    return Cost("ckks", params.log_n, base + len(params.moduli), encrypt, compute, upload, download)


def bfv_cost(program: bfv.ProgramOp, sizes: Mapping[str, int]) -> Cost:
    params = program.parameters()
    assert params is not None
    s = Shapes(sizes, params.slots)
    u = _Units(params.log_n, scheme="bfv")
    prof = u.profile
    multiply = u.factor("bfv_multiply_factor")
    special = len(params.special_moduli)
    encrypt = compute = 0.0
    upload = download = read = 0
    runs = runs_per_op(program)
    for op in program.block.ops:
        if not op.results or not isinstance(op.results[0].type, he.CtType):
            continue
        ty = he.ct_type(op.results[0])
        count = s.count(ty)
        c = 0.0  # seconds of this op's one execution, times its runs (runs_per_op)
        limbs = ty.level_value + 1
        words = (ty.degree_value + 1) * limbs * u.n * 8
        # HPS: the auxiliary basis P_mult has about log2(Q t N) bits in primes below 2^50.
        aux = limbs * 60 / 50 + 1
        match op:
            case bfv.EncryptOp():
                encrypt += count * limbs * u.n * prof.by_scheme("encrypt_ns_per_word", "bfv") * 1e-9
                upload += count * words
                read += count * words * runs.get(op, 1)
            case bfv.MulOp() | bfv.DotOp():
                k = s.count(he.ct_type(op.operands[0]))
                each = multiply * (
                    u.ntt(8 * (limbs + aux)) + u.pointwise(3 * (limbs + aux) * (limbs + 2))
                )
                c += k * each + (k - count) * u.pointwise(3 * limbs)
            case bfv.RelinearizeOp() | bfv.RotateOp():
                c += count * u.key_switch(limbs, special, params.dnum)
            case bfv.SumSlotsOp():
                steps = params.log_n  # N/2-slot rows: log2(N/2) rotations and the row swap
                c += (
                    count
                    * steps
                    * (u.key_switch(limbs, special, params.dnum) + u.pointwise(2 * limbs))
                )
            case bfv.ReduceOp():
                k = s.count(he.ct_type(op.input))
                c += (k - count) * u.pointwise((ty.degree_value + 1) * limbs)
            case bfv.AddOp() | bfv.SubOp() | bfv.NegateOp() | bfv.AddConstOp() | bfv.MulConstOp():
                c += count * u.pointwise((ty.degree_value + 1) * limbs)
            case _:
                pass
        compute += runs.get(op, 1) * c
    seen: set[object] = set()
    for d in program.decrypts():
        if d.input not in seen:
            seen.add(d.input)
            ty = he.ct_type(d.input)
            download += s.count(ty) * (ty.degree_value + 1) * (ty.level_value + 1) * u.n * 8
    compute += read * prof.by_scheme("read_ns_per_byte", "bfv") * 1e-9
    compute += prof.by_scheme("compute_fixed_seconds", "bfv")
    k = params.residues
    return Cost(
        "bfv",
        params.log_n,
        len(params.moduli),
        k * encrypt,
        k * compute,
        k * upload,
        k * download,
        residues=k,
    )


# --- labeled HE (Barbosa-Catalano-Fiore over Joye-Libert or Paillier) ------------------------
#
# Counted in modular products of the ciphertext ring (Z_N for Joye-Libert, Z_N^2 for Paillier),
# the server's only expensive operation, converted to seconds with the runtime's measured cost
# of one Montgomery product (runtime/labhe/bigint.h) at a 2048-bit modulus, scaled by the square
# of the ring's size (schoolbook-sized operands: 32 to 96 limbs). Calibrated on `bench/run labhe`
# (2048-bit Joye-Libert, one thread, CPU seconds; load average 5-17 on the 2 shared cores):
# - LABHE_PRODUCT_NS: the covariance of 4096 x 8 values took 5.24 s, for 3.71 M products as
#   counted below (36 multi-exponentiations of 8192 and 4096 bases with 108-bit exponents,
#   Pippenger windows of 9 bits, and the conversions and encodings): 1.4 us a product.
# - LABHE_ENCRYPT_NS_PER_PRODUCT: an encryption (PRF mask, k/4 fixed-base products and k
#   squarings, all side-channel silent, and a random unit) took 0.21 ms at k = 108: 1.5 us per
#   product of the 1.25 k + 2 counted.
# - LABHE_PLAIN_NS: the server's arithmetic on the clear halves a = m - b (the mean of 2^20 x 2
#   values: 0.035 s for 2^21 additions): 17 ns an element.
# The server's reads are counted at CKKS's measured cost per byte (the profile's
# read_ns_per_byte; the labeled server's own reader was not measured).
LABHE_PRODUCT_NS = 1400.0
LABHE_ENCRYPT_NS_PER_PRODUCT = 1500.0
LABHE_PLAIN_NS = 17.0
LABHE_INVERSE_PRODUCTS = 10  # a modular inverse (extended gcd), in products


def _pippenger_products(bases: int, bits: int) -> float:
    """Products of one multi-exponentiation (runtime/labhe/multiexp.cpp): Straus for up to 8
    bases, else Pippenger with the runtime's window choice."""
    if bases == 0 or bits == 0:
        return 0.0
    if bases <= 8:
        return 15 * bases + bits + bases * bits / 4
    best = min(math.ceil(bits / c) * (bases + 2 ** (c + 1)) + bits for c in range(1, 21))
    return float(best)


def labhe_products(plan: LabheProgram) -> tuple[float, float]:
    """(ring products, clear-half element operations) of the server's evaluation of `plan`,
    following runtime/labhe/plan.cpp: which registers carry ciphertexts, the symmetric half of
    x @ x contractions, one multi-exponentiation per output entry."""
    steps = plan.steps
    need_c = [False] * len(steps)
    for s in reversed(steps):
        for a in s.args:
            if steps[a].level2:
                continue
            if s.op == "contract" or s.level2 or need_c[s.id]:
                need_c[a] = True
    k = plan.message_bits

    def size(shape: tuple[int, ...]) -> int:
        return int(np.prod(shape, dtype=np.int64))

    products = plain = 0.0
    for s in steps:
        n = size(s.shape)
        has_c = s.level2 or need_c[s.id]
        if s.op == "input":
            continue
        if s.op == "contract":
            lhs, rest = s.words[0].split(",")
            rhs, out = rest.split("->")
            extent: dict[str, int] = {}
            for letters, reg in ((lhs, s.args[0]), (rhs, s.args[1])):
                for ch, d in zip(letters, steps[reg].shape, strict=True):
                    extent[ch] = d
            summed = math.prod(d for ch, d in extent.items() if ch not in out)
            symmetric = s.args[0] == s.args[1] and len(out) == 2 and len(lhs) == len(rhs)
            entries = n
            if symmetric:
                d = extent[out[0]]
                entries = n - d * (d - 1) // 2
            diagonal = extent[out[0]] if symmetric else 0
            off = entries - diagonal
            # Operands to Montgomery form once, then per entry a multi-exponentiation and the
            # public encoding Enc(sum a a'; 1) (a k-bit power) times it.
            products += size(steps[s.args[0]].shape) + (
                0 if s.args[0] == s.args[1] else size(steps[s.args[1]].shape)
            )
            products += off * _pippenger_products(2 * summed, k)
            products += diagonal * _pippenger_products(summed, k + 1)
            products += entries * (1.5 * k + 2)
            plain += entries * summed
        elif s.op == "sum":
            src = size(steps[s.args[0]].shape)
            plain += src
            if has_c:
                products += src
        elif s.op in ("add", "sub"):
            plain += n
            if has_c:
                products += n
                if s.op == "sub":
                    products += size(steps[s.args[1]].shape) * LABHE_INVERSE_PRODUCTS
        elif s.op in ("neg", "mulc"):
            plain += n
            if has_c:
                c = 1 if s.op == "neg" else abs(int(s.words[0]))
                products += n * (1.5 * max(c.bit_length(), 1) + LABHE_INVERSE_PRODUCTS)
        else:
            plain += n
    return products, plain


def labhe_cost(plan: LabheProgram, linear: str, modulus_bits: int) -> Cost:
    """The labeled program's estimated time (one core) and bytes, in the currency of
    ckks_cost and bfv_cost. Joye-Libert's ring is Z_N (N of modulus_bits bits); Paillier's is
    Z_N^2 and its encryption an N-bit power (r^N)."""
    ring_bits = modulus_bits if linear == "jl" else 2 * modulus_bits
    scale = (ring_bits / 2048) ** 2
    products, plain = labhe_products(plan)
    compute = (products * LABHE_PRODUCT_NS * scale + plain * LABHE_PLAIN_NS) * 1e-9
    values = plan.upload_values()
    per_value = 1.25 * plan.message_bits + 2 if linear == "jl" else 1.5 * modulus_bits + 2
    encrypt = values * per_value * LABHE_ENCRYPT_NS_PER_PRODUCT * scale * 1e-9
    upload = values * (
        ciphertext_bytes(linear, modulus_bits)
        + message_bytes(linear, modulus_bits, plan.message_bits)
    )
    compute += upload * active().by_scheme("read_ns_per_byte", "ckks") * 1e-9
    return Cost("labhe", 0, 0, encrypt, compute, upload, result_bytes(plan, linear, modulus_bits))


# --- FHEW gate programs ---------------------------------------------------------------------

# Evaluations the compute role of the gate program tool runs as one batch per level, and the
# wires a batch may hold (runtime/fhew/gate_tool.cpp: kBatchEvaluations, 2^17 ciphertexts).
FHEW_BATCH_EVALUATIONS = 64
FHEW_BATCH_WIRES = 1 << 17


@dataclass(frozen=True)
class FhewEstimate:
    """The compute role's estimated seconds for a gate program: `seconds` at `threads`, from
    one bootstrap's measured seconds on one core (`gate_seconds`)."""

    seconds: float
    threads: int
    gate_seconds: float
    batches: int

    def as_dict(self) -> dict[str, float | int]:
        return {
            "compute_seconds": self.seconds,
            "threads": self.threads,
            "gate_seconds": self.gate_seconds,
            "batches": self.batches,
        }


def fhew_compute_estimate(
    levels: Sequence[Sequence[int]],
    elements: int,
    wires: int,
    threads: int,
    profile: Profile | None = None,
) -> FhewEstimate:
    """Seconds of the compute role (runtime/fhew/gate_program.cpp, run_gate_program_batch) for
    `elements` evaluations of a gate program whose bootstrap levels hold cells of the given
    bootstrap counts (1 for a one-bootstrap cell, 2 for a MUX), as the runtime runs it: the
    evaluations in batches of up to FHEW_BATCH_EVALUATIONS (fewer when the wires would exceed
    FHEW_BATCH_WIRES), each level of a batch one `eval_batch` whose operations are cut into
    `threads` contiguous parts of equal count, each part on one core at the profile's
    one-thread bootstrap time. A level lasts as long as its slowest part."""
    profile = profile or active()
    gate = profile.tables["fhew_gate_seconds"]
    one = gate[1] if 1 in gate else gate[min(gate, key=lambda k: int(k))]
    threads = max(1, threads)
    chunk = max(1, min(FHEW_BATCH_EVALUATIONS, FHEW_BATCH_WIRES // (wires + 1)))
    full, rest = divmod(elements, chunk)

    def batch_seconds(count: int) -> float:
        total = 0.0
        for level in levels:
            ops = [b for _ in range(count) for b in level]
            if not ops:
                continue
            parts = min(len(ops), threads)
            slowest = max(
                sum(ops[len(ops) * p // parts : len(ops) * (p + 1) // parts]) for p in range(parts)
            )
            total += slowest * one
        return total

    seconds = full * batch_seconds(chunk) + (batch_seconds(rest) if rest else 0.0)
    return FhewEstimate(seconds, threads, one, full + (1 if rest else 0))
