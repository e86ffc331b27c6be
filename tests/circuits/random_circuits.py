"""Random circuits over a 4-bit input `x` built through every builder (constants, repeated and
complemented operands included), with the truth table of every signal computed directly from
the gate definitions: a reference independent of the netlist's folding and hashing."""

from __future__ import annotations

import numpy as np

from compiler.circuits.netlist import FALSE, TRUE, Circuit, negate

FULL = 0xFFFF


def random_circuit(seed: int, gates: int = 60) -> tuple[Circuit, list[int]]:
    """A circuit whose outputs s0, s1, ... are every signal built, and their 16-bit truth
    tables over x (bit v of a table: the value at x = v)."""
    rng = np.random.default_rng(seed)
    c = Circuit()
    x = c.input("x", 4)
    signals: list[tuple[int, int]] = [(FALSE, 0), (TRUE, FULL)]
    signals += list(zip(x, [0xAAAA, 0xCCCC, 0xF0F0, 0xFF00], strict=True))

    def pick() -> tuple[int, int]:
        lit, table = signals[int(rng.integers(len(signals)))]
        if rng.random() < 0.4:
            return negate(lit), table ^ FULL
        return lit, table

    for _ in range(gates):
        op = int(rng.integers(7))
        (a, ta), (b, tb), (d, td) = pick(), pick(), pick()
        if op == 0:
            signals.append((c.and_(a, b), ta & tb))
        elif op == 1:
            signals.append((c.or_(a, b), ta | tb))
        elif op == 2:
            signals.append((c.xor(a, b), ta ^ tb))
        elif op == 3:
            signals.append((c.nand(a, b), (ta & tb) ^ FULL))
        elif op == 4:
            signals.append((c.mux(a, b, d), (ta & tb) | ((ta ^ FULL) & td)))
        elif op == 5:
            signals.append((c.maj(a, b, d), (ta & tb) | (ta & td) | (tb & td)))
        else:
            ins = [pick() for _ in range(int(rng.integers(1, 6)))]
            k = int(rng.integers(0, len(ins) + 2))
            table = 0
            for v in range(16):
                if sum((t >> v) & 1 for _, t in ins) >= k:
                    table |= 1 << v
            signals.append((c.threshold(k, [lit for lit, _ in ins]), table))
    for i, (lit, _) in enumerate(signals):
        c.output(f"s{i}", [lit])
    return c, [t for _, t in signals]
