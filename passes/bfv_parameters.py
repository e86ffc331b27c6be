"""BFV parameters: plaintext moduli from the ranges, primes from the noise model, security.

- plaintext modulus t: every value the program forms must be represented exactly, i.e. lie in
  (-t/2, t/2) (range analysis of the bfv program, `compiler.analysis.ranges.value_ranges`); t is
  the smallest prime = 1 (mod 2N) above twice the largest magnitude (batching needs t prime and
  = 1 mod 2N). The runtime takes t < 2^MAX_PLAIN_BITS (runtime/bfv/context.cpp); a range that
  needs more bits is held by a CRT over k primes t_1 .. t_k = 1 (mod 2N), each below
  2^MAX_PLAIN_BITS, of about equal size, whose product T exceeds twice the largest magnitude
  with one bit of margin (the float bound of the range analysis is not exact beyond 2^53):
  the program runs k times, modulo each t_i, on the same ring and Q (every op of a bfv program
  is a ring operation, so each run computes the true value mod t_i), and decryption
  reconstructs each integer exactly (`bfv.reconstruct`). k is at most MAX_PLAIN_MODULI (every
  cost is k-fold); a range beyond that, or unbounded, is refused naming the revealed value.
- ciphertext modulus Q: the fewest primes below 2^MAX_PRIME_BITS (q = 1 mod 2N, none of them a
  t_i) that leave every decrypted value a noise budget of MARGIN_BITS under the largest t_i
  (`compiler.analysis.bfv_noise`);
- key switching (only when the program relinearizes or rotates): hybrid, one digit per prime
  of Q, one special prime P as large as the largest prime of Q;
- the ring: the smallest n from 2^MIN_LOG_N up for which log2(Q P) is within the 128-bit
  bound of the HE Standard (`compiler.analysis.security`, the runtime's table), or the given
  `log_n`; beyond the bound only with `insecure`, stamped on the program.
- rotation keys: sum_slots rotates each row by 1, 2, ..., N/4 and swaps the rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from compiler.analysis.bfv_noise import MARGIN_BITS, Ring, decrypt_budgets
from compiler.analysis.ranges import magnitude, value_ranges
from compiler.analysis.security import (
    MAX_PRIME_BITS,
    is_prime,
    largest_ntt_primes,
    log2_product,
    max_log_qp,
    security_bits,
)
from compiler.dialects import bfv, he
from compiler.errors import UserError

MIN_LOG_N = 12
MAX_LOG_N = 17
MAX_PLAIN_BITS = 60
MAX_Q_PRIMES = 40
# At most this many residue computations (each costs a whole run): 16 primes below 2^60
# represent integers of up to about 950 bits.
MAX_PLAIN_MODULI = 16
# Encrypted values reach the runtime as float64 (.npy inputs, owner-side expressions), exact
# up to 2^53; below that every plaintext prime chosen holds one (each t_i > 2 x the largest).
MAX_EXACT_INPUT = float(2**53)


def plain_modulus(largest: float, log_n: int) -> int:
    """The smallest prime t = 1 (mod 2^(log_n + 1)) with t > 2 * largest (and t > 2)."""
    step = 1 << (log_n + 1)
    k = max(1, math.floor(2.0 * largest) // step + 1)
    while True:
        t = k * step + 1
        if t > 2.0 * largest and is_prime(t):
            return t
        k += 1


def plain_moduli(largest: float, log_n: int, inputs: float = 0.0) -> tuple[int, ...] | None:
    """One prime t (`plain_modulus`) when 2 * largest < 2^MAX_PLAIN_BITS, else the fewest primes
    t_i = 1 (mod 2^(log_n + 1)) below 2^MAX_PLAIN_BITS, of about equal size, with product above
    4 * largest (one bit of margin) and each above 2 * inputs (the runtime encrypts an input
    as its centred residue, refusing one outside (-t_i/2, t_i/2)); None when
    MAX_PLAIN_MODULI primes do not reach it."""
    if not math.isfinite(largest):
        return None
    if math.log2(2.0 * largest + 1.0) <= MAX_PLAIN_BITS:
        t = plain_modulus(largest, log_n)
        if t < 1 << MAX_PLAIN_BITS:
            return (t,)
    need = 4 * math.ceil(largest)
    need_bits = need.bit_length()
    floor = 2 * math.ceil(inputs)
    for count in range(2, MAX_PLAIN_MODULI + 1):
        bits = min(MAX_PLAIN_BITS, max(-(-need_bits // count), floor.bit_length()) + 1)
        primes = largest_ntt_primes(bits, log_n, count)
        if len(primes) == count and math.prod(primes) > need and min(primes) > floor:
            return tuple(primes)
    return None


def set_level(program: bfv.ProgramOp, level: int) -> None:
    """Every value at `level` (no modulus switching yet: all at the top of the chain)."""
    for op in program.block.ops:
        if isinstance(op, bfv.EncodeOp):
            ty = he.pt_type(op.result)
            op.result._type = he.PtType.get(ty.dims, ty.layout_name, level)  # pyright: ignore[reportPrivateUsage]
        he.retype(op)


def needs_key_switch(program: bfv.ProgramOp) -> bool:
    return any(isinstance(op, bfv.KEY_SWITCH_OPS) for op in program.block.ops)


def sum_slots_steps(log_n: int) -> list[int]:
    """Row rotations of bfv.sum_slots: 1, 2, ..., N/4 (a row holds N/2 slots)."""
    return [1 << k for k in range(log_n - 1)]


@dataclass(frozen=True)
class BfvParametersPass(ModulePass):
    """Choose t, Q, P, dnum and n for every bfv program; stamp security and rotation keys.

    Assumes: a verified bfv program. Establishes: `bfv.program` parameters (see
    bfv.Parameters) and `rotation_keys`; UserError when no ring up to 2^17 holds the program
    at 128 bits (or `insecure` accepts it, stamped). Options: `log_n` (0: search), `insecure`.
    Reference: Halevi-Polyakov-Shoup (CT-RSA 2019) and the runtime's noise bounds.
    """

    name = "bfv-parameters"

    log_n: int = 0
    insecure: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in list(op.body.block.ops):
            if isinstance(program, bfv.ProgramOp):
                self.run(program)

    def run(self, program: bfv.ProgramOp) -> None:
        bounds = program.params()
        ranges = value_ranges(program, bounds)
        largest = max(
            (magnitude(r) for v, r in ranges.items() if isinstance(v.type, he.CtType)), default=1.0
        )
        inputs = max((magnitude(ranges[e.result]) for e in program.encrypts()), default=0.0)
        for enc in program.encrypts():
            reach = magnitude(ranges[enc.result])
            if reach > MAX_EXACT_INPUT:
                src = enc.source()
                what = f" (the data owner computes {src.expr_value})" if src.expr_value else ""
                raise UserError(
                    f"--scheme bfv: the encrypted value '{src.sym_value}'{what} reaches "
                    f"{reach:.3g} in magnitude, beyond 2^53: inputs travel as float64, which "
                    "holds integers exactly only up to 2^53",
                    hint="use smaller input domains, or --scheme ckks",
                )
        if plain_moduli(largest, MAX_LOG_N, inputs) is None:
            # The revealed value that reaches furthest (the one to make smaller).
            widest = max(program.decrypts(), key=lambda d: magnitude(ranges[d.input]))
            reach = magnitude(ranges[widest.input])
            raise UserError(
                f"--scheme bfv: output '{widest.sym_value}' reaches {reach:.3g} in magnitude "
                f"(a value of the program reaches {largest:.3g}), beyond what a CRT over "
                f"{MAX_PLAIN_MODULI} plaintext primes below 2^{MAX_PLAIN_BITS} holds exactly "
                f"(about {MAX_PLAIN_MODULI * (MAX_PLAIN_BITS - 1) - 2} bits)",
                hint="use --scheme ckks, or smaller size bounds or input domains",
            )
        key_switch = needs_key_switch(program)
        rings = [self.log_n] if self.log_n else list(range(MIN_LOG_N, MAX_LOG_N + 1))
        best: bfv.Parameters | None = None
        for log_n in rings:
            params = self.fit(program, log_n, largest, inputs, key_switch, max_log_qp(log_n))
            if params is not None:
                secure = security_bits(log_n, params.log_qp)
                best = replace(params, security_bits=secure)
                break
        if best is None and self.insecure:
            params = self.fit(program, rings[-1], largest, inputs, key_switch, math.inf)
            best = None if params is None else replace(params, insecure=True)
        if best is None:
            raise UserError(
                "--scheme bfv: no ring dimension up to 2^17 holds the program at 128-bit "
                "security with a noise budget left in every decrypted value (it multiplies "
                "too deeply for BFV at these sizes)",
                hint="use --scheme ckks, or pass --insecure to accept (and label) insecure "
                "parameters",
            )
        set_level(program, best.top_level)
        program.set_parameters(best)
        if any(isinstance(op, bfv.SumSlotsOp) for op in program.block.ops):
            program.set_rotation_keys(sum_slots_steps(best.log_n))
        else:
            program.set_rotation_keys(
                [op.offset_value for op in program.block.ops if isinstance(op, bfv.RotateOp)]
            )

    def fit(
        self,
        program: bfv.ProgramOp,
        log_n: int,
        largest: float,
        inputs: float,
        key_switch: bool,
        bound: float,
    ) -> bfv.Parameters | None:
        """The fewest primes of Q that leave every decrypted value its margin at ring 2^log_n
        with log2(QP) <= bound, or None."""
        moduli = plain_moduli(largest, log_n, inputs)
        if moduli is None:
            return None
        for count in range(1, MAX_Q_PRIMES + 1):
            # The largest primes below 2^60 (the runtime's limit for a prime of Q or P).
            primes = [
                x
                for x in largest_ntt_primes(MAX_PRIME_BITS, log_n, count + 1 + len(moduli))
                if x not in moduli
            ]
            q = primes[:count]
            p = primes[count : count + 1] if key_switch else []
            if log2_product(q) + log2_product(p) > bound:
                return None
            set_level(program, count - 1)
            ring = Ring(
                log_n=log_n,
                log_t=math.log2(max(moduli)),
                q_bits=tuple(math.log2(x) for x in q),
                p_bits=tuple(math.log2(x) for x in p),
                dnum=count if key_switch else 0,
            )
            budgets = decrypt_budgets(program, ring, program.params())
            if min(budgets.values(), default=math.inf) >= MARGIN_BITS:
                return bfv.Parameters(
                    log_n=log_n,
                    plain_moduli=moduli,
                    moduli=tuple(q),
                    special_moduli=tuple(p),
                    dnum=count if key_switch else 0,
                    security_bits=0,
                    insecure=False,
                )
        return None
