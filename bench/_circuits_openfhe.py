"""OpenFHE side of `bench/run circuits` (runs under the Python 3.10 interpreter of .venv-bench).

The 8-bit operations of examples/circuits written on the PyPI `openfhe` wheel's binfhe as an
expert writes them with its gate set (STD128, GINX; EvalNOT is free, every other gate one
bootstrap, MAJORITY one bootstrap over three inputs):

- add (wrapping): a ripple-carry adder; bit i's sum XOR(XOR(a_i, b_i), carry), the carry
  MAJORITY(a_i, b_i, carry); bit 0 a half adder (XOR, AND), bit 7 no carry out: 22 gates;
- multiply (wrapping, low 8 bits): the 36 partial products AND(a_i, b_j), i + j < 8, added row
  by row with ripple adders truncated at bit 7: 106 gates;
- less-than: the borrow chain of a - b, borrow = MAJORITY(NOT a_i, b_i, borrow), bit 0
  AND(NOT a_0, b_0): 8 gates.

One operation after another on freshly encrypted random operands, every result decrypted and
checked. Single-threaded: the wheel's binfhe evaluates one gate per call and cannot serialize
its keys for worker processes. Prints one JSON object: {op: {"wall_ms", "cpu_ms", "gates"}}.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from typing import Any


def bits(x: int) -> list[int]:
    return [(x >> i) & 1 for i in range(8)]


class Counter:
    """The gates of one operation on `cc` (a binfhe context, or a plaintext stand-in in the
    tests), counted; `gate` maps "AND", "XOR", "MAJORITY" to the context's gate constants."""

    def __init__(self, cc: Any, gate: dict[str, Any]) -> None:
        self.cc = cc
        self.gate = gate
        self.gates = 0

    def g2(self, gate: str, x: object, y: object) -> object:
        self.gates += 1
        return self.cc.EvalBinGate(self.gate[gate], x, y)

    def maj(self, x: object, y: object, z: object) -> object:
        self.gates += 1
        return self.cc.EvalBinGate(self.gate["MAJORITY"], [x, y, z])

    def nnot(self, x: object) -> object:
        return self.cc.EvalNOT(x)


def add_rows(g: Counter, acc: list[object], row: list[object], start: int) -> list[object]:
    """acc + row (row's bits at positions start..7), truncated to 8 bits."""
    out = list(acc)
    carry = None
    for i in range(start, 8):
        a, b = acc[i], row[i - start]
        t = g.g2("XOR", a, b)
        if carry is None:
            out[i] = t
            if i < 7:
                carry = g.g2("AND", a, b)
        else:
            out[i] = g.g2("XOR", t, carry)
            if i < 7:
                carry = g.maj(a, b, carry)
    return out


def add8(g: Counter, a: list[object], b: list[object]) -> list[object]:
    return add_rows(g, a, b, 0)


def mul8(g: Counter, a: list[object], b: list[object]) -> list[object]:
    acc = [g.g2("AND", a[i], b[0]) for i in range(8)]
    for j in range(1, 8):
        row = [g.g2("AND", a[i], b[j]) for i in range(8 - j)]
        acc = add_rows(g, acc, row, j)
    return acc


def lt8(g: Counter, a: list[object], b: list[object]) -> list[object]:
    borrow = g.g2("AND", g.nnot(a[0]), b[0])
    for i in range(1, 8):
        borrow = g.maj(g.nnot(a[i]), b[i], borrow)
    return [borrow]


OPS = {
    "add": (add8, lambda x, y: (x + y) % 256),
    "mul": (mul8, lambda x, y: (x * y) % 256),
    "lt": (lt8, lambda x, y: int(x < y)),
}


def main() -> None:
    import openfhe as o  # pyright: ignore[reportMissingImports]

    gate = {"AND": o.AND, "XOR": o.XOR, "MAJORITY": o.MAJORITY}
    repeats = int(sys.argv[1])
    ops = sys.argv[2].split(",") if len(sys.argv) > 2 else list(OPS)
    cc = o.BinFHEContext()
    cc.GenerateBinFHEContext(o.STD128, o.GINX)
    sk = cc.KeyGen()
    cc.BTKeyGen(sk)
    rng = random.Random(23)
    result: dict[str, object] = {"n": cc.Getn(), "q": cc.Getq()}
    for name in ops:
        fn, want = OPS[name]
        wall, cpu, gates = [], [], 0
        for _ in range(repeats):
            x, y = rng.randrange(256), rng.randrange(256)
            ca = [cc.Encrypt(sk, v) for v in bits(x)]
            cb = [cc.Encrypt(sk, v) for v in bits(y)]
            g = Counter(cc, gate)
            w0, p0 = time.perf_counter(), time.process_time()
            out = fn(g, ca, cb)
            wall.append((time.perf_counter() - w0) * 1e3)
            cpu.append((time.process_time() - p0) * 1e3)
            got = sum(cc.Decrypt(sk, c) << i for i, c in enumerate(out))
            if got != want(x, y):
                raise SystemExit(f"_circuits_openfhe: {name}({x}, {y}) decrypted {got}")
            gates = g.gates
        result[name] = {
            "wall_ms": statistics.median(wall),
            "cpu_ms": statistics.median(cpu),
            "gates": gates,
        }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
