"""Exact metrics of a netlist: gate counts by kind, logic depth, the BFV costs (AND count and
AND depth) and the FHEW costs (bootstraps and bootstrap levels, fhew_model.py).

BFV with plaintext modulus 2 evaluates a bit-sliced circuit with additions (XOR, NOT: free,
no depth) and multiplications: AND, OR, NAND and NOR cost one multiplication
(a | b = a + b + ab), MUX(s, t, f) = f + s (t + f) one, majority
maj(a, b, c) = a + (a + b)(a + c) one. The AND depth of a signal is the largest number of
multiplications on a path to it, with XOR adding nothing. Thresholds of more than 3 inputs are
lowered first (`lower_thresholds`) and measured in their lowered form; for FHEW, the netlist is
mapped as built and with its XOR trees regrouped into three-input parities (`regroup_xors`), and
the cheaper cover counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.circuits.fhew_model import VARS, FhewCost, FhewGateModel, fhew_cost
from compiler.circuits.netlist import FALSE, TRUE, Circuit, Kind, Lit, Node, node_of


def lower_thresholds(c: Circuit, max_inputs: int = 3) -> Circuit:
    """A copy of `c` in which every threshold gate of more than `max_inputs` inputs is built
    from MUXes by the recurrence T(k, i) = x_i ? T(k - 1, i - 1) : T(k, i - 1) (k of the first i
    inputs), which has O(n k) gates; the others are copied."""
    if all(
        c.nodes[n].kind is not Kind.THRESHOLD or len(c.nodes[n].fanins) <= max_inputs
        for n in c.live_nodes()
    ):
        return c

    def rule(target: Circuit, n: int, node: Node, ins: list[Lit]) -> Lit | None:
        if node.kind is not Kind.THRESHOLD or len(ins) <= max_inputs:
            return None
        # row[j] = at least j of the inputs so far (row[0] = true).
        row = [TRUE] + [FALSE] * node.k
        for x in ins:
            row = [TRUE] + [target.mux(x, row[j - 1], row[j]) for j in range(1, node.k + 1)]
        return row[node.k]

    return c.cleaned(rule)


def regroup_xors(c: Circuit) -> Circuit:
    """A copy of `c` in which every maximal XOR tree (XOR nodes whose XOR parents are their only
    consumers) is rebuilt as a tree of three-input parities, shallowest leaves first: the form
    in which FHEW evaluates k-input parity in ceil((k - 1) / 2) bootstraps (fhew_model.py).
    Cut mapping alone cannot re-associate ((a ^ b) ^ (c ^ d)) ^ e into two three-input cells."""
    live = c.live_nodes()
    uses: dict[int, int] = {}
    xor_parent: dict[int, int] = {}
    for n in live:
        for x in c.nodes[n].fanins:
            uses[node_of(x)] = uses.get(node_of(x), 0) + 1
            if c.nodes[n].kind is Kind.XOR:
                xor_parent[node_of(x)] = xor_parent.get(node_of(x), 0) + 1
    for bits in c.outputs.values():
        for b in bits:
            uses[node_of(b)] = uses.get(node_of(b), 0) + 1

    def absorbed(n: int) -> bool:
        return c.nodes[n].kind is Kind.XOR and uses.get(n, 0) == 1 and xor_parent.get(n) == 1

    fresh = Circuit()
    out: dict[int, Lit] = {0: FALSE}
    level: dict[int, int] = {0: 0}
    for name, bits in c.inputs.items():
        for old, new in zip(
            bits, fresh.input(name, len(bits), signed=name in c.signed_inputs), strict=True
        ):
            out[node_of(old)] = new
            level[node_of(new)] = 0

    def lit(x: Lit) -> Lit:
        return out[node_of(x)] ^ (x & 1)

    def lvl(x: Lit) -> int:
        return level.get(node_of(x), 0)

    for n in live:
        node = c.nodes[n]
        if node.kind is Kind.XOR and absorbed(n):
            continue
        if node.kind is not Kind.XOR:
            ins = [lit(x) for x in node.fanins]
            out[n] = fresh.gate_like(node, ins)
            level[node_of(out[n])] = 1 + max(lvl(x) for x in ins)
            continue
        leaves: list[Lit] = []
        flip = 0
        stack = list(node.fanins)
        while stack:
            x = stack.pop()
            if absorbed(node_of(x)):
                flip ^= x & 1
                stack.extend(c.nodes[node_of(x)].fanins)
            else:
                leaves.append(lit(x))
        pool = sorted(leaves, key=lvl)
        while len(pool) > 1:
            group, pool = pool[:3], pool[3:]
            r = fresh.xor_all(group)
            level[node_of(r)] = 1 + max(lvl(x) for x in group)
            pool = sorted([*pool, r], key=lvl)
        out[n] = pool[0] ^ flip
    for name, bits in c.outputs.items():
        fresh.output(name, [lit(b) for b in bits])
    return fresh


def expand_muxes_read_by_majorities(c: Circuit) -> Circuit:
    """A copy of `c` in which every MUX read by a majority is built as (s & t) | (~s & f)
    instead. A MUX output carries two blind-rotation errors, and when the FHEW model does not
    admit a one-bootstrap majority reading it (fhew_model.py), three 2-input cells for the MUX
    (one more than the runtime's MUX) keep the majority at one bootstrap, where expanding the
    majority instead would cost three more per reader. Even where it is admitted the 2-input
    cells can merge into their neighbours' cells, so `fhew_cover` maps both."""
    live = c.live_nodes()
    read_by_majority: set[int] = set()
    for n in live:
        node = c.nodes[n]
        if node.kind is Kind.THRESHOLD:
            read_by_majority.update(
                node_of(x) for x in node.fanins if c.nodes[node_of(x)].kind is Kind.MUX
            )
    if not read_by_majority:
        return c

    def rule(target: Circuit, n: int, node: Node, ins: list[Lit]) -> Lit | None:
        if node.kind is not Kind.MUX or n not in read_by_majority:
            return None
        s, t, f = ins
        return target.or_(target.and_(s, t), target.and_(s ^ 1, f))

    return c.cleaned(rule)


@dataclass
class Metrics:
    """What a circuit costs. `gates` counts live nodes by kind ("maj" is a 3-input threshold,
    "threshold" a wider one) and "not" the distinct complemented signals consumed (free in
    both targets). `depth` counts every gate as one level."""

    gates: dict[str, int] = field(default_factory=dict)
    depth: int = 0
    and_count: int = 0
    and_depth: int = 0
    bootstraps: int = 0
    bootstrap_levels: int = 0

    @property
    def gate_count(self) -> int:
        return sum(v for k, v in self.gates.items() if k != "not")

    def as_dict(self) -> dict[str, object]:
        return {
            "gates": dict(self.gates),
            "gate_count": self.gate_count,
            "depth": self.depth,
            "and_count": self.and_count,
            "and_depth": self.and_depth,
            "bootstraps": self.bootstraps,
            "bootstrap_levels": self.bootstrap_levels,
        }


def gate_counts(c: Circuit) -> dict[str, int]:
    counts = {"and": 0, "xor": 0, "mux": 0, "maj": 0, "threshold": 0, "not": 0}
    complemented: set[int] = set()
    for n in c.live_nodes():
        node = c.nodes[n]
        if node.kind is Kind.THRESHOLD:
            counts["maj" if len(node.fanins) == 3 and node.k == 2 else "threshold"] += 1
        else:
            counts[node.kind.value] += 1
        complemented.update(node_of(x) for x in node.fanins if x & 1 and node_of(x) != 0)
    for bits in c.outputs.values():
        complemented.update(node_of(b) for b in bits if b & 1 and node_of(b) != 0)
    counts["not"] = len(complemented)
    return counts


def logic_depth(c: Circuit) -> int:
    depth = [0] * len(c.nodes)
    for n in c.live_nodes():
        depth[n] = 1 + max(depth[node_of(x)] for x in c.nodes[n].fanins)
    return max((depth[node_of(b)] for bits in c.outputs.values() for b in bits), default=0)


def bfv_costs(c: Circuit) -> tuple[int, int]:
    """(AND count, AND depth) of `c` as a BFV bit-sliced program (module docstring)."""
    low = lower_thresholds(c)
    depth = [0] * len(low.nodes)
    count = 0
    for n in low.live_nodes():
        node = low.nodes[n]
        d = max(depth[node_of(x)] for x in node.fanins)
        if node.kind is Kind.XOR:
            depth[n] = d
        else:
            depth[n] = d + 1
            count += 1
    and_depth = max((depth[node_of(b)] for bits in low.outputs.values() for b in bits), default=0)
    return count, and_depth


def fhew_cover(c: Circuit, model: FhewGateModel | None = None) -> tuple[Circuit, FhewCost]:
    """The FHEW cover `measure` counts: `c` with thresholds lowered and MUXes read by
    majorities expanded, mapped as built and with its XOR trees regrouped, the cheaper of the
    two. Returns the mapped circuit (the cells' node numbers refer to it) and its cover."""
    model = model or FhewGateModel()
    lowered = lower_thresholds(c)
    expanded = expand_muxes_read_by_majorities(lowered)
    bases = [expanded]
    a, b, t = VARS
    majority = (a & b) | (a & t) | (b & t)
    if expanded is not lowered and model.cell(
        majority, (model.mux_output_variance_ratio, 1.0, 1.0)
    ):
        bases.append(lowered)  # a majority may read the runtime's MUX (GINX STD128: 2^-66)
    # Regrouping XOR trees can also undo sharing the mapper would have used: keep the better.
    candidates = [m for low in bases for m in (low, regroup_xors(low))]
    return min(((m, fhew_cost(m, model)) for m in candidates), key=lambda mc: mc[1].bootstraps)


def measure(c: Circuit, model: FhewGateModel | None = None) -> Metrics:
    """All metrics of `c` (gate counts and depth as built, BFV and FHEW costs as defined in
    this module and fhew_model.py)."""
    and_count, and_depth = bfv_costs(c)
    fhew = fhew_cover(c, model)[1]
    return Metrics(
        gates=gate_counts(c),
        depth=logic_depth(c),
        and_count=and_count,
        and_depth=and_depth,
        bootstraps=fhew.bootstraps,
        bootstrap_levels=fhew.levels,
    )
