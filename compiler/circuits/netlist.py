"""The Boolean netlist IR: named input words, gates, named output words, and a bit-exact
simulator.

A signal is a *literal*: `2 * node + complemented`, as in an and-inverter graph (AIGER), so NOT
is an edge attribute and costs nothing; node 0 is the constant false (literal 0 = false,
literal 1 = true). Gate nodes are AND (two inputs), XOR (two inputs), MUX (selector, if-true,
if-false) and THRESHOLD (at least k of n inputs; MAJ is k = 2 of 3). OR, NAND and NOR are AND
nodes with complemented edges (De Morgan), XNOR a complemented XOR; the builder methods of
those names exist and say what they build.

Every gate is created through `Circuit`'s builders, which fold constants and trivial
identities (x & x, x ^ ~x, mux with equal branches, thresholds with constant inputs), put the
gate in a canonical form (sorted inputs, complements pushed out of XOR and to the selector of
MUX, self-dual thresholds with at most half their inputs complemented) and hash it
structurally: building the same gate twice returns the same literal.

Words are lists of literals, least significant bit first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np

from compiler.errors import UserError

Lit = int
Word = list[Lit]

FALSE: Lit = 0
TRUE: Lit = 1


class Kind(Enum):
    CONST = "const"
    INPUT = "input"
    AND = "and"
    XOR = "xor"
    MUX = "mux"
    THRESHOLD = "threshold"


def node_of(lit: Lit) -> int:
    return lit >> 1


def is_complemented(lit: Lit) -> bool:
    return bool(lit & 1)


def negate(lit: Lit) -> Lit:
    return lit ^ 1


@dataclass(frozen=True)
class Node:
    """One node: its kind, fan-in literals and, for THRESHOLD, k (at least k inputs true)."""

    kind: Kind
    fanins: tuple[Lit, ...] = ()
    k: int = 0


# A node rebuilt another way by `Circuit.copy_into`: (target, node id, node, its inputs' target
# literals) -> the node's literal, or None for the node's own builder.
Rule = Callable[["Circuit", int, Node, list[Lit]], Lit | None]


class Circuit:
    """A Boolean netlist under construction (see the module docstring)."""

    def __init__(self) -> None:
        self.nodes: list[Node] = [Node(Kind.CONST)]
        self.inputs: dict[str, Word] = {}
        self.outputs: dict[str, Word] = {}
        self.signed_inputs: set[str] = set()
        self._hash: dict[tuple[object, ...], int] = {}
        # Multiplicative (AND) depth of every node, XOR free: generators use it to feed the
        # shallowest signals to the next gate; metrics.bfv_costs is the exact measure.
        self._and_depth: list[int] = [0]

    # ---- inputs and outputs ----------------------------------------------------------------

    def input(self, name: str, width: int, *, signed: bool = False) -> Word:
        """A new input word of `width` bits (least significant first)."""
        if width < 1:
            raise UserError(f"input '{name}' has width {width}; a word needs at least 1 bit")
        if name in self.inputs:
            raise UserError(f"input '{name}' is declared twice")
        bits = []
        for _ in range(width):
            self.nodes.append(Node(Kind.INPUT))
            self._and_depth.append(0)
            bits.append(2 * (len(self.nodes) - 1))
        self.inputs[name] = bits
        if signed:
            self.signed_inputs.add(name)
        return list(bits)

    def output(self, name: str, bits: Sequence[Lit]) -> None:
        if name in self.outputs:
            raise UserError(f"output '{name}' is declared twice")
        if not bits:
            raise UserError(f"output '{name}' has no bits")
        for b in bits:
            self._check(b)
        self.outputs[name] = list(bits)

    def const(self, value: bool) -> Lit:
        return TRUE if value else FALSE

    def const_word(self, value: int, width: int) -> Word:
        return [TRUE if (value >> i) & 1 else FALSE for i in range(width)]

    # ---- builders ---------------------------------------------------------------------------

    def _check(self, lit: Lit) -> None:
        if not isinstance(lit, int) or lit < 0 or node_of(lit) >= len(self.nodes):
            raise ValueError(f"literal {lit!r} is not a signal of this circuit")

    def _make(self, node: Node) -> Lit:
        key = (node.kind, node.fanins, node.k)
        found = self._hash.get(key)
        if found is not None:
            return 2 * found
        self.nodes.append(node)
        d = max(self._and_depth[node_of(x)] for x in node.fanins)
        self._and_depth.append(d if node.kind is Kind.XOR else d + 1)
        self._hash[key] = len(self.nodes) - 1
        return 2 * (len(self.nodes) - 1)

    def and_depth_of(self, lit: Lit) -> int:
        """AND depth of a signal as built (thresholds count one level)."""
        return self._and_depth[node_of(lit)]

    def not_(self, a: Lit) -> Lit:
        self._check(a)
        return negate(a)

    def and_(self, a: Lit, b: Lit) -> Lit:
        self._check(a)
        self._check(b)
        if a > b:
            a, b = b, a
        if a == FALSE:
            return FALSE
        if a == TRUE:
            return b
        if a == b:
            return a
        if a == negate(b):
            return FALSE
        return self._make(Node(Kind.AND, (a, b)))

    def or_(self, a: Lit, b: Lit) -> Lit:
        """a | b, built as ~(~a & ~b)."""
        return negate(self.and_(negate(a), negate(b)))

    def nand(self, a: Lit, b: Lit) -> Lit:
        return negate(self.and_(a, b))

    def nor(self, a: Lit, b: Lit) -> Lit:
        return self.and_(negate(a), negate(b))

    def xor(self, a: Lit, b: Lit) -> Lit:
        self._check(a)
        self._check(b)
        flip = (a & 1) ^ (b & 1)
        a, b = a & ~1, b & ~1
        if a > b:
            a, b = b, a
        if a == FALSE:
            out = b
        elif a == b:
            out = FALSE
        else:
            out = self._make(Node(Kind.XOR, (a, b)))
        return out ^ flip

    def xnor(self, a: Lit, b: Lit) -> Lit:
        return negate(self.xor(a, b))

    def mux(self, s: Lit, t: Lit, f: Lit) -> Lit:
        """s ? t : f."""
        for x in (s, t, f):
            self._check(x)
        if s & 1:
            s, t, f = negate(s), f, t
        if s == FALSE:
            return f
        if t == f:
            return t
        if t == negate(f):
            return self.xnor(s, t)
        if t in (TRUE, s):
            return self.or_(s, f)
        if t in (FALSE, negate(s)):
            return self.and_(negate(s), f)
        if f in (TRUE, negate(s)):
            return self.or_(negate(s), t)
        if f in (FALSE, s):
            return self.and_(s, t)
        if t & 1:
            return negate(self._make(Node(Kind.MUX, (s, negate(t), negate(f)))))
        return self._make(Node(Kind.MUX, (s, t, f)))

    def maj(self, a: Lit, b: Lit, c: Lit) -> Lit:
        """Majority of three (the carry of a full adder)."""
        return self.threshold(2, [a, b, c])

    def threshold(self, k: int, lits: Sequence[Lit]) -> Lit:
        """1 when at least k of `lits` are 1 (a literal listed twice counts twice)."""
        for x in lits:
            self._check(x)
        rest: list[Lit] = []
        for x in lits:
            if x == TRUE:
                k -= 1
            elif x != FALSE:
                rest.append(x)
        # x and ~x together contribute exactly one.
        by_node: dict[int, list[Lit]] = {}
        for x in rest:
            by_node.setdefault(node_of(x), []).append(x)
        kept: list[Lit] = []
        for group in by_node.values():
            pos = [x for x in group if not x & 1]
            neg = [x for x in group if x & 1]
            pairs = min(len(pos), len(neg))
            k -= pairs
            kept += pos[pairs:] + neg[pairs:]
        n = len(kept)
        if k <= 0:
            return TRUE
        if k > n:
            return FALSE
        if n == 1:
            return kept[0]
        if k == n:
            return self.and_all(kept)
        if k == 1:
            return self.or_all(kept)
        if n == 3 and len({node_of(x) for x in kept}) < 3:
            # maj(a, a, b) = maj(a, a, a) = a (the ~a, a case was removed above).
            return next(x for x in kept if kept.count(x) >= 2)
        if 2 * sum(x & 1 for x in kept) > n:
            # Self-duality: T_k(~x) = ~T_{n-k+1}(x).
            return negate(self.threshold(n - k + 1, [negate(x) for x in kept]))
        return self._make(Node(Kind.THRESHOLD, tuple(sorted(kept)), k))

    def and_all(self, lits: Iterable[Lit]) -> Lit:
        """AND of any number of literals as a balanced tree (depth ceil(log2 n))."""
        return self._tree(list(lits), self.and_, TRUE)

    def or_all(self, lits: Iterable[Lit]) -> Lit:
        return self._tree(list(lits), self.or_, FALSE)

    def xor_all(self, lits: Iterable[Lit]) -> Lit:
        return self._tree(list(lits), self.xor, FALSE)

    @staticmethod
    def _tree(items: list[Lit], op: Callable[[Lit, Lit], Lit], empty: Lit) -> Lit:
        if not items:
            return empty
        while len(items) > 1:
            items = [op(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)] + (
                [items[-1]] if len(items) % 2 else []
            )
        return items[0]

    # ---- structure --------------------------------------------------------------------------

    def live_nodes(self) -> list[int]:
        """Gate nodes reachable from the outputs, in topological (creation) order."""
        seen = [False] * len(self.nodes)
        stack = [node_of(b) for bits in self.outputs.values() for b in bits]
        while stack:
            n = stack.pop()
            if seen[n]:
                continue
            seen[n] = True
            stack.extend(node_of(x) for x in self.nodes[n].fanins)
        return [
            n
            for n, node in enumerate(self.nodes)
            if seen[n] and node.kind not in (Kind.CONST, Kind.INPUT)
        ]

    def copy_into(
        self, target: Circuit, mapping: dict[int, Lit], rule: Rule | None = None
    ) -> dict[int, Lit]:
        """Rebuilds the live gates of this circuit in `target` through its builders (so they are
        hashed and folded again); `mapping` gives the target literal of every input node.
        `rule(target, n, node, ins)` may build node n another way (its literal), or return
        None for the node's own builder."""
        out = dict(mapping)
        out[0] = FALSE

        def lit(x: Lit) -> Lit:
            return out[node_of(x)] ^ (x & 1)

        for n in self.live_nodes():
            node = self.nodes[n]
            ins = [lit(x) for x in node.fanins]
            built = None if rule is None else rule(target, n, node, ins)
            out[n] = target.gate_like(node, ins) if built is None else built
        return out

    def gate_like(self, node: Node, ins: list[Lit]) -> Lit:
        """A gate of `node`'s kind (and threshold) over `ins`, built here (hashed, folded)."""
        if node.kind is Kind.AND:
            return self.and_(*ins)
        if node.kind is Kind.XOR:
            return self.xor(*ins)
        if node.kind is Kind.MUX:
            return self.mux(*ins)
        return self.threshold(node.k, ins)

    def cleaned(self, rule: Rule | None = None) -> Circuit:
        """A copy with only the live gates, rebuilt (hashed and folded) in topological order;
        `rule` as in `copy_into`."""
        fresh = Circuit()
        mapping: dict[int, Lit] = {}
        for name, bits in self.inputs.items():
            new_bits = fresh.input(name, len(bits), signed=name in self.signed_inputs)
            for old, new in zip(bits, new_bits, strict=True):
                mapping[node_of(old)] = new
        out = self.copy_into(fresh, mapping, rule)
        for name, bits in self.outputs.items():
            fresh.output(name, [out[node_of(b)] ^ (b & 1) for b in bits])
        return fresh

    # ---- simulation -------------------------------------------------------------------------

    def simulate(self, values: Mapping[str, Sequence[int] | np.ndarray]) -> dict[str, np.ndarray]:
        """Evaluates the circuit on many input values at once, bit-exactly.

        `values[name]` is an array of integers (one per evaluation) for every input word; a
        negative value is taken modulo 2^width. Returns, per output word, the unsigned values
        as an int64-free array: uint64 for words of at most 64 bits, Python ints (dtype object)
        for wider ones. Bits are packed 64 evaluations to a machine word and every gate is one
        numpy operation over all of them.
        """
        missing = set(self.inputs) - set(values)
        if missing:
            raise UserError(f"no values for input(s) {sorted(missing)}")
        extra = set(values) - set(self.inputs)
        if extra:
            raise UserError(f"values for unknown input(s) {sorted(extra)}")
        arrays = {name: np.asarray(v) for name, v in values.items()}
        counts = {a.shape for a in arrays.values()}
        if len(counts) > 1:
            raise UserError(f"input arrays have different shapes {sorted(counts)}")
        shape = next(iter(counts)) if counts else (1,)
        count = int(np.prod(shape)) if shape else 1
        words = max(1, (count + 63) // 64)
        val: list[np.ndarray | None] = [None] * len(self.nodes)
        val[0] = np.zeros(words, dtype=np.uint64)
        for name, bits in self.inputs.items():
            arr = arrays[name].reshape(-1)
            if arr.dtype.kind in "iub":
                # Two's complement wrap of negative values is what astype(uint64) does.
                u = arr.astype(np.uint64)
                for i, b in enumerate(bits):
                    column = (
                        ((u >> np.uint64(i)) & np.uint64(1)).astype(np.uint8)
                        if i < 64
                        else ((arr < 0).astype(np.uint8))
                    )
                    val[node_of(b)] = _pack(column, words)
            else:
                flat = [int(v) for v in arr]
                for i, b in enumerate(bits):
                    column = np.fromiter(((v >> i) & 1 for v in flat), dtype=np.uint8, count=count)
                    val[node_of(b)] = _pack(column, words)
        ones = np.full(words, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=np.uint64)

        def get(x: Lit) -> np.ndarray:
            v = val[node_of(x)]
            assert v is not None
            return v ^ ones if x & 1 else v

        for n in self.live_nodes():
            node = self.nodes[n]
            ins = [get(x) for x in node.fanins]
            if node.kind is Kind.AND:
                val[n] = ins[0] & ins[1]
            elif node.kind is Kind.XOR:
                val[n] = ins[0] ^ ins[1]
            elif node.kind is Kind.MUX:
                val[n] = (ins[0] & ins[1]) | (~ins[0] & ins[2])
            else:
                # at_least[j]: at least j of the inputs seen so far are 1.
                at_least = [ones] + [np.zeros(words, dtype=np.uint64)] * node.k
                for x in ins:
                    for j in range(node.k, 0, -1):
                        at_least[j] = at_least[j] | (at_least[j - 1] & x)
                val[n] = at_least[node.k]
        result: dict[str, np.ndarray] = {}
        for name, bits in self.outputs.items():
            columns = [_unpack(get(b), count) for b in bits]
            if len(bits) <= 64:
                acc = np.zeros(count, dtype=np.uint64)
                for i, col in enumerate(columns):
                    acc |= col.astype(np.uint64) << np.uint64(i)
                result[name] = acc.reshape(shape)
            else:
                acc_obj = np.zeros(count, dtype=object)
                for i, col in enumerate(columns):
                    acc_obj += col.astype(object) << i
                result[name] = acc_obj.reshape(shape)
        return result


def _pack(column: np.ndarray, words: int) -> np.ndarray:
    padded = np.zeros(words * 64, dtype=np.uint8)
    padded[: len(column)] = column
    return np.packbits(padded, bitorder="little").view(np.uint64).copy()


def _unpack(packed: np.ndarray, count: int) -> np.ndarray:
    return np.unpackbits(packed.view(np.uint8), bitorder="little")[:count]
