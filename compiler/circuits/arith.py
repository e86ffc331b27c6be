"""Arithmetic circuits for BFV bit slices: integer operations on words of 0/1 values computed
with the ring's own + and x (issue 23, docs/circuits.md "BFV bit slices").

A BFV plaintext slot holds an integer modulo a prime t = 1 (mod 2n) (batching needs it; t = 2
has no slots on the power-of-two rings the runtime uses), so a bit is the integer 0 or 1 and
the gates are polynomials: AND = xy, NOT = 1 - x, OR = x + y - xy, XOR = x + y - 2xy. Unlike
GF(2), XOR costs a multiplication, so the GF(2) constructions of generators.py lose depth here
(a full adder's carry, a majority, is a degree-3 polynomial: depth 2, not 1). The generators of
this module use what the integers give instead:

- **exact sums.** Values are kept as affine forms `sum c_i x_i + c` over the products and
  input bits (`Affine`); additions and constant factors are free, products are the cost, and
  the same product is formed once. A sum of terms that are never both 1 is their OR.
- **the sum identity.** A position's sum bit is s_j = z_j + k_j - 2 k_(j+1), where z_j is the
  count of ones added in column j and k_j the carry into it: linear in the carries, so the sum
  bits cost nothing once the carries are known.
- **carries by a prefix of carry maps.** The carry out of column j is floor((z_j + k_j) / 2).
  As a function of the carry in, it is a 0/1 matrix with one 1 per row whose entries are
  linear in the one-hot vector of z_j; carry maps compose by matrix products, so all carries
  come from a parallel prefix (Sklansky) of log2(width) levels. For two operands (z_j <= 2,
  carries 0/1) this is the generate/propagate prefix adder: depth 1 + ceil(log2 w).
- **one-hot counts.** The one-hot vector of the number of ones among m bits comes from a
  tree of convolutions, depth ceil(log2 m), and every bit of the count is a sum of its
  entries. A multiplier sums its partial products by counting columns (rounds that replace a
  column by the bits of its count) and then the carry-map prefix over the column counts.

Every value carries a proven range (bits [0, 1], counts [0, m]) that the BFV parameters use
for the plaintext modulus; `evaluate` checks it on every value it computes.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Affine:
    """sum(coefficient * node) + const over the circuit's nodes (input bits and products),
    with the range the construction proves for it."""

    terms: tuple[tuple[int, int], ...]  # (node, coefficient), sorted by node, none zero
    const: int
    lo: int
    hi: int

    @property
    def key(self) -> tuple[tuple[tuple[int, int], ...], int]:
        return self.terms, self.const

    def is_const(self) -> bool:
        return not self.terms

    def is_zero(self) -> bool:
        return not self.terms and self.const == 0


Word = list[Affine]


@dataclass(frozen=True)
class Node:
    """An input bit (`name`, `bit`) or the product of two affine forms."""

    depth: int
    lo: int
    hi: int
    name: str = ""
    bit: int = -1
    lhs: Affine | None = None
    rhs: Affine | None = None


@dataclass
class ArithCircuit:
    """An arithmetic circuit over the integers on 0/1 words (module docstring)."""

    nodes: list[Node] = field(default_factory=list)
    inputs: dict[str, list[Affine]] = field(default_factory=dict)
    signed: dict[str, bool] = field(default_factory=dict)
    outputs: dict[str, list[Affine]] = field(default_factory=dict)
    _products: dict[tuple[object, object], int] = field(default_factory=dict)

    # ---- values ---------------------------------------------------------------------------
    def const(self, value: int) -> Affine:
        return Affine((), int(value), int(value), int(value))

    def input(self, name: str, width: int, signed: bool = False) -> Word:
        if name in self.inputs:
            raise UserError(f"input '{name}' is declared twice")
        word = []
        for i in range(width):
            self.nodes.append(Node(0, 0, 1, name=name, bit=i))
            word.append(Affine(((len(self.nodes) - 1, 1),), 0, 0, 1))
        self.inputs[name] = word
        self.signed[name] = signed
        return list(word)

    def output(self, name: str, word: Sequence[Affine]) -> None:
        self.outputs[name] = list(word)

    def depth_of(self, x: Affine) -> int:
        return max((self.nodes[n].depth for n, _ in x.terms), default=0)

    def lin(
        self,
        terms: Sequence[tuple[int, Affine]],
        const: int = 0,
        known: tuple[int, int] | None = None,
    ) -> Affine:
        """sum(c * x) + const; its range is the interval bound, narrowed to `known` (a fact
        the caller proves: a sum of exclusive bits is a bit)."""
        acc: dict[int, int] = {}
        lo = hi = const
        for c, x in terms:
            if c == 0:
                continue
            const += c * x.const
            for n, k in x.terms:
                acc[n] = acc.get(n, 0) + c * k
            lo += min(c * x.lo, c * x.hi)
            hi += max(c * x.lo, c * x.hi)
        items = tuple(sorted((n, k) for n, k in acc.items() if k != 0))
        if not items:
            return self.const(const)
        if known is not None:
            lo, hi = max(lo, known[0]), min(hi, known[1])
            assert lo <= hi, "a proven range outside the interval bound"
        return Affine(items, const, lo, hi)

    def mul(self, x: Affine, y: Affine, known: tuple[int, int] | None = None) -> Affine:
        """x * y: free when one is a constant or both are the same bit (x^2 = x); otherwise a
        product node, formed once per pair."""
        if x.is_const():
            return self.lin([(x.const, y)])
        if y.is_const():
            return self.lin([(y.const, x)])
        if x.key == y.key and x.lo == 0 and x.hi == 1 and len(x.terms) == 1 and x.const == 0:
            return x  # a bit squared
        if y.key < x.key:
            x, y = y, x
        corners = [x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi]
        lo, hi = min(corners), max(corners)
        if known is not None:
            lo, hi = max(lo, known[0]), min(hi, known[1])
        key = (x.key, y.key)
        n = self._products.get(key)
        if n is None:
            depth = max(self.depth_of(x), self.depth_of(y)) + 1
            self.nodes.append(Node(depth, lo, hi, lhs=x, rhs=y))
            n = self._products[key] = len(self.nodes) - 1
        return Affine(((n, 1),), 0, lo, hi)

    # ---- gates on bits ---------------------------------------------------------------------
    def and_(self, x: Affine, y: Affine) -> Affine:
        return self.mul(x, y, (0, 1))

    def not_(self, x: Affine) -> Affine:
        return self.lin([(-1, x)], 1, (0, 1))

    def or_(self, x: Affine, y: Affine) -> Affine:
        return self.lin([(1, x), (1, y), (-1, self.and_(x, y))], 0, (0, 1))

    def xor(self, x: Affine, y: Affine) -> Affine:
        return self.lin([(1, x), (1, y), (-2, self.and_(x, y))], 0, (0, 1))

    def mux(self, s: Affine, a: Affine, b: Affine) -> Affine:
        """s ? a : b = b + s (a - b)."""
        return self.lin([(1, b), (1, self.mul(s, self.lin([(1, a), (-1, b)])))], 0, (0, 1))

    # ---- metrics ----------------------------------------------------------------------------
    def live(self) -> set[int]:
        """The product nodes the outputs read (the others were built and then not used)."""
        seen: set[int] = set()
        stack = [n for word in self.outputs.values() for x in word for n, _ in x.terms]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            node = self.nodes[n]
            if node.lhs is not None and node.rhs is not None:
                stack.extend(m for m, _ in node.lhs.terms)
                stack.extend(m for m, _ in node.rhs.terms)
        return {n for n in seen if self.nodes[n].lhs is not None}

    def products(self) -> int:
        return len(self.live())

    def depth(self) -> int:
        return max((self.depth_of(x) for word in self.outputs.values() for x in word), default=0)

    def largest(self) -> int:
        """The largest magnitude of any live value (the plaintext modulus must exceed twice it)."""
        big = max((max(abs(x.lo), abs(x.hi)) for w in self.outputs.values() for x in w), default=1)
        for n in self.live():
            node = self.nodes[n]
            for x in (node.lhs, node.rhs):
                assert x is not None
                big = max(big, abs(x.lo), abs(x.hi))
        return max(big, 1)

    # ---- evaluation ---------------------------------------------------------------------------
    def evaluate(self, values: Mapping[str, npt.ArrayLike]) -> dict[str, npt.NDArray[np.uint64]]:
        """The outputs as unsigned integers (bits assembled) for integer inputs of one shape;
        every live product and output is checked against its proven range."""
        arrays = {k: np.asarray(v) for k, v in values.items()}
        shape = next(iter(arrays.values())).shape if arrays else ()
        node_values: list[Ints | None] = [None] * len(self.nodes)
        live = self.live()

        def value_of(x: Affine) -> Ints:
            out = np.full(shape, x.const, dtype=np.int64)
            for n, k in x.terms:
                v = node_values[n]
                assert v is not None
                out += k * v
            if out.size and (out.min() < x.lo or out.max() > x.hi):
                raise AssertionError(f"a value leaves its proven range [{x.lo}, {x.hi}]")
            return out

        for n, node in enumerate(self.nodes):
            if node.lhs is None:
                raw = arrays[node.name].astype(np.int64) if node.name in arrays else None
                if raw is None:
                    raise UserError(f"no value for input '{node.name}'")
                node_values[n] = (raw >> node.bit) & 1
            elif n in live:
                assert node.rhs is not None
                node_values[n] = value_of(node.lhs) * value_of(node.rhs)
        out: dict[str, npt.NDArray[np.uint64]] = {}
        for name, word in self.outputs.items():
            acc = np.zeros(shape, dtype=np.uint64)
            for i, x in enumerate(word):
                bit = value_of(x)
                if bit.size and (bit.min() < 0 or bit.max() > 1):
                    raise AssertionError(f"output {name} bit {i} is not 0/1")
                acc |= bit.astype(np.uint64) << np.uint64(i)
            out[name] = acc
        return out


# ---- one-hot counts and carry maps ----------------------------------------------------

OneHot = list[Affine]  # entry k: 1 iff the value is k (exactly one entry is 1)
CarryMap = list[list[Affine]]  # row k (carry in), column k' (carry out): 1 iff k -> k'


def onehot_bit(c: ArithCircuit, x: Affine) -> OneHot:
    return [c.not_(x), x]


def convolve(c: ArithCircuit, u: OneHot, v: OneHot) -> OneHot:
    """The one-hot vector of the sum of two counts: (len(u)-1)(len(v)-1) products, each
    entry of u times each entry of v but the zeroth, which is one minus the others."""
    a, b = len(u) - 1, len(v) - 1
    p = {(i, j): c.and_(u[i], v[j]) for i in range(1, a + 1) for j in range(1, b + 1)}
    w: list[Affine] = []
    for k in range(1, a + b + 1):
        terms = [(1, p[i, k - i]) for i in range(max(1, k - b), min(a, k - 1) + 1)]
        if k <= a:  # u_k v_0 = u_k (1 - sum_j v_j)
            terms += [(1, u[k])] + [(-1, p[k, j]) for j in range(1, b + 1)]
        if k <= b:
            terms += [(1, v[k])] + [(-1, p[i, k]) for i in range(1, a + 1)]
        w.append(c.lin(terms, 0, (0, 1)))
    zero = c.lin([(-1, x) for x in w], 1, (0, 1))
    return [zero, *w]


def count_ones(c: ArithCircuit, bits: Sequence[Affine]) -> OneHot:
    """The one-hot count of `bits`: convolutions merged shallowest (then smallest) first, so
    the depth is the least a binary tree over the bits' depths allows."""
    if not bits:
        return [c.const(1)]
    heap: list[tuple[int, int, int, OneHot]] = []
    for i, x in enumerate(bits):
        heapq.heappush(heap, (c.depth_of(x), 1, i, onehot_bit(c, x)))
    order = len(bits)
    while len(heap) > 1:
        _, _, _, u = heapq.heappop(heap)
        _, _, _, v = heapq.heappop(heap)
        w = convolve(c, u, v)
        heapq.heappush(heap, (max(c.depth_of(x) for x in w), len(w), order, w))
        order += 1
    return heap[0][3]


def binary_of(c: ArithCircuit, onehot: OneHot) -> list[Affine]:
    """The bits of a count from its one-hot vector (sums of entries, free)."""
    width = max(1, (len(onehot) - 1).bit_length())
    return [
        c.lin([(1, x) for k, x in enumerate(onehot) if (k >> b) & 1], 0, (0, 1))
        for b in range(width)
    ]


def value_of_onehot(c: ArithCircuit, onehot: OneHot) -> Affine:
    return c.lin([(k, x) for k, x in enumerate(onehot)], 0, (0, len(onehot) - 1))


def carry_map(c: ArithCircuit, z: OneHot, carries_in: int) -> CarryMap:
    """Column j's map from the carry in (0 .. carries_in) to the carry out, floor((z + k)/2)."""
    out_max = (len(z) - 1 + carries_in) // 2
    rows = []
    for k in range(carries_in + 1):
        row = [
            c.lin([(1, z[v]) for v in range(len(z)) if (v + k) // 2 == k2], 0, (0, 1))
            for k2 in range(out_max + 1)
        ]
        rows.append(row)
    return rows


def compose(c: ArithCircuit, a: CarryMap, b: CarryMap) -> CarryMap:
    """a then b. Row r of the result is b's row 0 plus sum over k >= 1 of a[r][k] times
    (b[k] - b[0]) (a's row is one-hot: its entry 0 is one minus the rest); the column with
    the most products is one minus the others."""
    cols = len(b[0])
    out = []
    for row in a:
        entries: list[list[tuple[int, Affine]]] = [[(1, b[0][j])] for j in range(cols)]
        costs = [0] * cols
        for k in range(1, len(row)):
            if row[k].is_zero():
                continue
            for j in range(cols):
                diff = c.lin([(1, b[k][j]), (-1, b[0][j])])
                if not diff.is_zero():
                    costs[j] += 1
                    entries[j].append((k, diff))
        skip = max(range(cols), key=lambda j: costs[j])
        result: list[Affine | None] = [None] * cols
        for j in range(cols):
            if j == skip:
                continue
            terms = [(1, entries[j][0][1])]
            terms += [(1, c.mul(row[k], diff)) for k, diff in entries[j][1:]]
            result[j] = c.lin(terms, 0, (0, 1))
        result[skip] = c.lin([(-1, x) for x in result if x is not None], 1, (0, 1))
        out.append([x for x in result if x is not None])
    return out


def carries(c: ArithCircuit, counts: Sequence[OneHot], carry_in: int = 0) -> list[OneHot]:
    """The one-hot carry into every column 0 .. len(counts) (the last: the carry out), by a
    Sklansky prefix of the columns' carry maps; column 0 gets `carry_in` (0 or 1)."""
    maps: list[CarryMap] = []
    bound = carry_in
    for j, z in enumerate(counts):
        m = carry_map(c, z, bound)
        if j == 0:
            m = [m[carry_in]]  # the prefix from column 0 keeps its one row
        maps.append(m)
        bound = (len(z) - 1 + bound) // 2
    n = len(maps)
    x = list(maps)
    level = 0
    while (1 << level) < n:
        for i in range(n):
            if (i >> level) & 1:
                j = ((i >> level) << level) - 1
                x[i] = compose(c, x[j], x[i])
        level += 1
    first = [c.const(1 if v == carry_in else 0) for v in range(carry_in + 1)]
    return [first] + [m[0] for m in x]


def sum_columns(c: ArithCircuit, columns: Sequence[OneHot], carry_in: int = 0) -> Word:
    """The bits sum_j 2^j z_j + carry_in (mod 2^len(columns)) from the columns' one-hot counts:
    s_j = z_j + k_j - 2 k_(j+1) (the sum identity)."""
    k = carries(c, columns, carry_in)
    out = []
    for j, z in enumerate(columns):
        terms = [(1, value_of_onehot(c, z)), (1, value_of_onehot(c, k[j]))]
        terms.append((-2, value_of_onehot(c, k[j + 1])))
        out.append(c.lin(terms, 0, (0, 1)))
    return out


# ---- integer operations --------------------------------------------------------------


def _pair_count(c: ArithCircuit, x: Affine, y: Affine) -> OneHot:
    """The one-hot count of two bits: one product, g = xy; [1 - x - y + g, x + y - 2g, g]."""
    g = c.and_(x, y)
    return [
        c.lin([(-1, x), (-1, y), (1, g)], 1, (0, 1)),
        c.lin([(1, x), (1, y), (-2, g)], 0, (0, 1)),
        g,
    ]


def add(c: ArithCircuit, a: Word, b: Word, carry_in: int = 0) -> tuple[Word, Affine]:
    """a + b + carry_in (mod 2^w) and the carry out: one product per column for the count,
    then the generate/propagate prefix (depth 1 + ceil(log2 w))."""
    columns = [_pair_count(c, x, y) for x, y in zip(a, b, strict=True)]
    k = carries(c, columns, carry_in)
    out = []
    for j, (x, y) in enumerate(zip(a, b, strict=True)):
        terms = [(1, x), (1, y), (1, value_of_onehot(c, k[j])), (-2, value_of_onehot(c, k[j + 1]))]
        out.append(c.lin(terms, 0, (0, 1)))
    return out, value_of_onehot(c, k[-1])


def subtract(c: ArithCircuit, a: Word, b: Word) -> Word:
    """a - b = a + ~b + 1 (NOT is free)."""
    return add(c, a, [c.not_(y) for y in b], 1)[0]


def _carry_out_tree(c: ArithCircuit, counts: list[OneHot], carry_in: int) -> Affine:
    """The carry out of the whole word only: a balanced tree of compositions (no prefix)."""
    maps: list[CarryMap] = []
    bound = carry_in
    for j, z in enumerate(counts):
        m = carry_map(c, z, bound)
        maps.append([m[carry_in]] if j == 0 else m)
        bound = (len(z) - 1 + bound) // 2
    while len(maps) > 1:
        nxt = [compose(c, maps[i], maps[i + 1]) for i in range(0, len(maps) - 1, 2)]
        if len(maps) % 2:
            nxt.append(maps[-1])
        maps = nxt
    return value_of_onehot(c, maps[0][0])


def less_than(c: ArithCircuit, a: Word, b: Word, signed: bool = False) -> Affine:
    """a < b: the borrow of a - b, i.e. NOT the carry out of a + ~b + 1 (depth 1 + log2 w).
    Signed: the sign bits swapped."""
    a, b = list(a), list(b)
    if signed:
        a[-1], b[-1] = c.not_(a[-1]), c.not_(b[-1])
    counts = [_pair_count(c, x, c.not_(y)) for x, y in zip(a, b, strict=True)]
    return c.not_(_carry_out_tree(c, counts, 1))


def product_tree(c: ArithCircuit, bits: Sequence[Affine]) -> Affine:
    """The AND of `bits`, shallowest pairs first."""
    heap = [(c.depth_of(x), i, x) for i, x in enumerate(bits)]
    heapq.heapify(heap)
    order = len(bits)
    if not heap:
        return c.const(1)
    while len(heap) > 1:
        _, _, x = heapq.heappop(heap)
        _, _, y = heapq.heappop(heap)
        z = c.and_(x, y)
        heapq.heappush(heap, (c.depth_of(z), order, z))
        order += 1
    return heap[0][2]


def equal(c: ArithCircuit, a: Word, b: Word) -> Affine:
    return product_tree(c, [c.not_(c.xor(x, y)) for x, y in zip(a, b, strict=True)])


def select(c: ArithCircuit, s: Affine, a: Word, b: Word) -> Word:
    return [c.mux(s, x, y) for x, y in zip(a, b, strict=True)]


def reduce_columns(c: ArithCircuit, columns: list[list[Affine]], rounds: int) -> Word:
    """sum_j 2^j (sum of column j's bits) mod 2^len(columns): `rounds` rounds that replace
    each column by the bits of its count (placed in the columns above), then the carry-map
    prefix over the final columns' one-hot counts."""
    width = len(columns)
    cols = [list(col) for col in columns]
    for _ in range(rounds):
        if max(len(col) for col in cols) <= 2:
            break
        nxt: list[list[Affine]] = [[] for _ in range(width)]
        for j, col in enumerate(cols):
            if len(col) <= 1:
                nxt[j].extend(col)
                continue
            for b, bit in enumerate(binary_of(c, count_ones(c, col))):
                if j + b < width:
                    nxt[j + b].append(bit)
        cols = nxt
    return sum_columns(c, [count_ones(c, col) for col in cols])


def partial_products(c: ArithCircuit, a: Word, b: Word) -> list[list[Affine]]:
    width = len(a)
    cols: list[list[Affine]] = [[] for _ in range(width)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            if i + j < width:
                cols[i + j].append(c.and_(x, y))
    return cols


def multiply(c: ArithCircuit, a: Word, b: Word, rounds: int = 1) -> Word:
    """a * b mod 2^w: the partial products summed by `reduce_columns`."""
    return reduce_columns(c, partial_products(c, a, b), rounds)


def popcount(c: ArithCircuit, a: Word) -> Word:
    """The number of ones of `a` in `len(a)` bits (depth ceil(log2 w))."""
    bits = binary_of(c, count_ones(c, a))
    return (bits + [c.const(0)] * len(a))[: len(a)]


# ---- the chooser ---------------------------------------------------------------------


@dataclass(frozen=True)
class ArithCost:
    """What a BFV bit-slice circuit costs: its multiplicative depth and its ciphertext
    products (each a multiplication and a relinearization)."""

    depth: int
    products: int

    def key(self) -> tuple[float, int]:
        # Modelled time: each product costs about as many residue operations as the ciphertext
        # has primes, which grows with the depth (about one per level plus two).
        return (self.products * (self.depth + 2), self.depth)


def build(op: str, width: int, variant: str) -> ArithCircuit:
    """A whole circuit for `op` at `width` with inputs a, b and output c."""
    c = ArithCircuit()
    a = c.input("a", width)
    b = c.input("b", width)
    if op == "add":
        c.output("c", add(c, a, b)[0])
    elif op == "mul":
        c.output("c", multiply(c, a, b, int(variant.split("/")[1])))
    elif op == "lt":
        c.output("c", [less_than(c, a, b)])
    elif op == "eq":
        c.output("c", [equal(c, a, b)])
    else:
        raise UserError(f"unknown bit-slice operation '{op}'")
    return c


VARIANTS: dict[str, tuple[str, ...]] = {
    "add": ("prefix",),
    "mul": ("rounds/0", "rounds/1", "rounds/2", "rounds/3"),
    "lt": ("tree",),
    "eq": ("tree",),
}


@dataclass(frozen=True)
class ArithChoice:
    op: str
    width: int
    variant: str
    cost: ArithCost
    candidates: tuple[tuple[str, ArithCost], ...]

    @property
    def reason(self) -> str:
        others = ", ".join(
            f"{v}: depth {k.depth}, {k.products} products" for v, k in self.candidates
        )
        return (
            f"{self.variant}: depth {self.cost.depth}, {self.cost.products} products "
            f"(least products x (depth + 2) among {others})"
        )


_CHOICES: dict[tuple[str, int], ArithChoice] = {}


def choose(op: str, width: int) -> ArithChoice:
    """The variant of `op` at `width` with the least modelled time (`ArithCost.key`)."""
    key = (op, width)
    if key not in _CHOICES:
        costs = []
        for variant in VARIANTS[op]:
            circuit = build(op, width, variant)
            costs.append((variant, ArithCost(circuit.depth(), circuit.products())))
        best = min(costs, key=lambda vc: vc[1].key())
        _CHOICES[key] = ArithChoice(op, width, best[0], best[1], tuple(costs))
    return _CHOICES[key]


def seed_cla_depth(width: int) -> int:
    """The seed's carry-lookahead adder depth over GF(2) (16 bits: 7, 64 bits: 11)."""
    return 2 * math.ceil(math.log2(width)) - 1 if width > 1 else 1


__all__ = [
    "Affine",
    "ArithChoice",
    "ArithCircuit",
    "ArithCost",
    "add",
    "build",
    "choose",
    "equal",
    "less_than",
    "multiply",
    "popcount",
    "select",
    "subtract",
]
