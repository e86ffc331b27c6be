"""The FHEW gate model: which Boolean functions one bootstrap of hec's runtime evaluates, and
the mapping of a netlist onto such one-bootstrap cells that gives its bootstrap count.

What one bootstrap evaluates (runtime/fhew/README.md, "Gate pipeline"). A bit x is encrypted
as x * q/4. A gate adds integer multiples of its input ciphertexts and a constant,
phase = sum_i m_i * x_i * q/4 + c * q/8, and bootstraps the sign test: the output is 1 exactly
when the phase lies in [0, q/2). In units of q/8 the phase is u = 2 * sum_i m_i x_i + c mod 8
and the output is [u in {0, 1, 2, 3}]. The runtime's AND (m = 1, 1; c = -3), OR (c = -1) and
XOR (m = 2, 2; c = -2) are instances. The *margin* M is the smallest distance, in units of
q/8, from any reachable u to the decision boundaries 0 and 4; each input carries an error of
variance V (the bootstrapped-output variance), so the combination's error has variance
sum_i m_i^2 V and the gate fails with probability erfc(M q/8 / sqrt(2 sum m_i^2 V)). We call
W = sum_i m_i^2 / M^2 the noise weight: AND, OR and XOR have W = 2, the runtime's design point
(GINX STD128: margin / std. dev. = 12.62, failure 2^-118.9 per gate). The model admits a
combination when W <= `max_noise_weight` (3 by default: failure 2^-80.3 for GINX STD128, within
the issue's 2^-40 per bootstrap). An input that is the output of a MUX (two blind rotations
added) counts with its larger variance (342.2 / 205.7 times, GINX): a cell is admitted when
that weighted W still fails with at most 2^-40 (a majority reading a MUX output: W = 3.7,
2^-66); fresh encryptions, whose error is far smaller, are counted as bootstrapped bits
(conservative). With W <= 3 one bootstrap evaluates every non-constant
function of 2 inputs, the majority of 3 inputs with any input polarity (the carry of a full
adder) and the parity of 3 inputs (its sum bit): a full adder costs 2 bootstraps, not 5.
Among 3-input functions, AND3 and OR3 are not in the class (their 4 sum levels cannot be cut
by one half-circle). NOT is free (q/4 - x). A MUX costs 2 bootstraps (the runtime's `eval_mux`:
two blind rotations, one key switch).

The runtime evaluates every such cell in one bootstrap (`Gate::kLinear`, `eval_linear`,
runtime/fhew/fhew.h); targets/fhew writes a cover as a gate program for it.

The bootstrap count is the cost of a cover of the netlist by cells: each cell is a node with a
cut of at most 3 leaves whose function is in the class (1 bootstrap) or a MUX node over its
own fan-ins (2). The cover is found with cut enumeration, area-flow selection and exact-area
recovery (the standard scheme of FPGA technology mappers, e.g. Mishchenko et al., "Combinational
and sequential mapping with priority cuts", ICCAD 2007).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache
from itertools import product

from compiler.circuits.netlist import Circuit, Kind, node_of

# Truth tables over three leaves: leaf i has the pattern VARS[i]; bit x of a table is the value
# at the assignment x = leaf0 + 2 leaf1 + 4 leaf2.
VARS = (0xAA, 0xCC, 0xF0)
FULL = 0xFF

# The runtime's GINX STD128 design point: margin / std. dev. of an AND, OR or XOR gate (noise
# weight 2), from runtime/fhew/README.md, "Noise analysis and failure probability".
GINX_STD128_MARGIN_SIGMA = 12.62
GINX_STD128_MUX_VARIANCE_RATIO = 342.2 / 205.7


@dataclass(frozen=True)
class Combination:
    """One bootstrap: output = [(2 * sum_i m_i x_i + c) mod 8 < 4], with margin M (units of
    q/8) and noise weight sum_i m_i^2 / M^2 (all inputs of the bootstrapped variance)."""

    multipliers: tuple[int, int, int]
    constant: int
    noise_weight: float
    margin: int = 1

    def weighted(self, variance_ratios: tuple[float, float, float]) -> float:
        """Noise weight when input i has `variance_ratios[i]` times the bootstrapped variance."""
        m = self.multipliers
        return sum(m[i] * m[i] * variance_ratios[i] for i in range(3)) / self.margin**2


@cache
def all_combinations(max_noise_weight: float) -> dict[int, tuple[Combination, ...]]:
    """Every combination of noise weight at most `max_noise_weight`, by truth table."""
    found: dict[int, list[Combination]] = {}
    for m in product(range(-2, 3), repeat=3):
        for c in range(8):
            table = 0
            margin = 4
            for x in range(8):
                u = (2 * sum(m[i] * ((x >> i) & 1) for i in range(3)) + c) % 8
                margin = min(margin, u % 4, 4 - u % 4)
                if u < 4:
                    table |= 1 << x
            if margin == 0 or table in (0, FULL):
                continue
            weight = sum(v * v for v in m) / margin**2
            if weight <= max_noise_weight:
                found.setdefault(table, []).append(
                    Combination((m[0], m[1], m[2]), c, weight, margin)
                )
    return {t: tuple(sorted(cs, key=lambda x: x.noise_weight)) for t, cs in found.items()}


def one_bootstrap_functions(max_noise_weight: float) -> dict[int, Combination]:
    """Every 3-input truth table one bootstrap evaluates with noise weight at most
    `max_noise_weight`, with the least-noisy combination that does it."""
    return {t: cs[0] for t, cs in all_combinations(max_noise_weight).items()}


@dataclass(frozen=True)
class FhewGateModel:
    """The cost model above. `margin_sigma_at_weight_2` is the runtime parameter set's
    margin / std. dev. of a 2-input gate (GINX STD128 by default)."""

    max_noise_weight: float = 3.0
    margin_sigma_at_weight_2: float = GINX_STD128_MARGIN_SIGMA
    mux_bootstraps: int = 2
    # A MUX output carries two blind-rotation errors: variance 342.2 against 205.7 for GINX
    # STD128 (runtime/fhew/README.md); a cell reading one counts it with this ratio.
    mux_output_variance_ratio: float = GINX_STD128_MUX_VARIANCE_RATIO
    # The budget per bootstrap: a cell whose weighted noise weight (inputs from MUX
    # outputs counted with their larger variance) would fail more often is not admitted.
    failure_bound: float = 2.0**-40

    def failure_probability(self, noise_weight: float) -> float:
        """Probability that one bootstrap of the given noise weight decrypts wrongly."""
        ratio = self.margin_sigma_at_weight_2 * math.sqrt(2.0 / noise_weight)
        return math.erfc(ratio / math.sqrt(2.0))

    def cell(
        self, table: int, variance_ratios: tuple[float, float, float] = (1.0, 1.0, 1.0)
    ) -> tuple[Combination, float] | None:
        """The least-noisy combination computing `table` on inputs with the given variance
        ratios, and its weighted noise weight; None when none is within the budget. The
        combination's own weight is at most `max_noise_weight` (what the runtime's linear gate
        accepts); the weighted one must keep the failure within `failure_bound`."""
        best: tuple[Combination, float] | None = None
        for comb in all_combinations(self.max_noise_weight).get(table, ()):
            w = comb.weighted(variance_ratios)
            if (best is None or w < best[1]) and self.failure_probability(w) <= self.failure_bound:
                best = (comb, w)
        return best


@dataclass(frozen=True)
class Cell:
    """One gate of an FHEW program: the node it computes, its leaves (nodes), its truth table
    over them, its bootstrap level, and how it runs: one bootstrap of `combination` (the
    multipliers apply to the leaves in order), or the runtime's MUX (`combination` None, two
    bootstraps; the leaves are the MUX node's fan-ins)."""

    root: int
    leaves: tuple[int, ...]
    table: int
    level: int
    combination: Combination | None
    noise_weight: float

    @property
    def bootstraps(self) -> int:
        return 1 if self.combination is not None else 2


@dataclass
class FhewCost:
    """A cover of a netlist by FHEW cells (by root node): bootstraps, levels of bootstraps,
    and the largest noise weight of a cell."""

    bootstraps: int
    levels: int
    cells: dict[int, Cell] = field(default_factory=dict)
    max_noise_weight: float = 0.0


_MAX_CUTS = 16


def _cone_table(c: Circuit, root: int, leaves: tuple[int, ...]) -> int:
    """Truth table of node `root` over the cut `leaves` (at most 3 nodes)."""
    known: dict[int, int] = {0: 0}
    for i, leaf in enumerate(leaves):
        known[leaf] = VARS[i]

    def lit(x: int) -> int:
        return table(node_of(x)) ^ (FULL if x & 1 else 0)

    def table(n: int) -> int:
        if n in known:
            return known[n]
        node = c.nodes[n]
        ins = [lit(x) for x in node.fanins]
        if node.kind is Kind.AND:
            t = ins[0] & ins[1]
        elif node.kind is Kind.XOR:
            t = ins[0] ^ ins[1]
        elif node.kind is Kind.MUX:
            t = (ins[0] & ins[1]) | (~ins[0] & FULL & ins[2])
        else:
            t = 0
            for x in range(8):
                if sum((v >> x) & 1 for v in ins) >= node.k:
                    t |= 1 << x
        known[n] = t
        return t

    return table(root)


def fhew_cost(c: Circuit, model: FhewGateModel | None = None) -> FhewCost:
    """Maps `c` (thresholds of at most 3 inputs; see metrics.lower_thresholds) onto FHEW cells
    and returns the bootstrap count of the cover."""
    model = model or FhewGateModel()
    live = c.live_nodes()
    is_gate = dict.fromkeys(live, True)
    for n in live:
        node = c.nodes[n]
        if node.kind is Kind.THRESHOLD and len(node.fanins) > 3:
            raise ValueError("fhew_cost needs thresholds of at most 3 inputs; lower them first")

    # Step (1): cut enumeration (cuts of at most 3 leaves; leaves are inputs or gates).
    cuts: dict[int, list[tuple[int, ...]]] = {}

    def leaf_cuts(n: int) -> list[tuple[int, ...]]:
        if n in is_gate:
            return [*cuts[n], (n,)]
        return [(n,)] if n != 0 else [()]

    def ratios(leaves: tuple[int, ...]) -> tuple[float, float, float]:
        r = [
            model.mux_output_variance_ratio if c.nodes[leaf].kind is Kind.MUX else 1.0
            for leaf in leaves
        ]
        return (*r, *([1.0] * (3 - len(r))))  # type: ignore[return-value]

    options: dict[int, list[tuple[tuple[int, ...], int]]] = {}
    for n in live:
        node = c.nodes[n]
        fanin_nodes = [node_of(x) for x in node.fanins]
        merged: set[tuple[int, ...]] = set()
        for combo in product(*(leaf_cuts(f) for f in fanin_nodes)):
            leaves = tuple(sorted(set().union(*combo)))
            if len(leaves) <= 3:
                merged.add(leaves)
        ranked = sorted(merged, key=lambda t: (len(t), t))[:_MAX_CUTS]
        cuts[n] = ranked
        opts: list[tuple[tuple[int, ...], int]] = []
        for leaves in ranked:
            cell = model.cell(_cone_table(c, n, leaves), ratios(leaves))
            if cell is not None:
                opts.append((leaves, 1))
        if node.kind is Kind.MUX:
            opts.append((tuple(sorted(set(fanin_nodes) - {0})), model.mux_bootstraps))
        if not opts:
            raise ValueError(f"node {n} ({node.kind.value}) has no FHEW cell")
        options[n] = opts

    # Step (2): area flow with estimated fan-outs.
    fanout = dict.fromkeys(live, 0)
    for n in live:
        for x in c.nodes[n].fanins:
            if node_of(x) in fanout:
                fanout[node_of(x)] += 1
    for bits in c.outputs.values():
        for b in bits:
            if node_of(b) in fanout:
                fanout[node_of(b)] += 1
    flow: dict[int, float] = {}
    best: dict[int, tuple[tuple[int, ...], int]] = {}
    for n in live:
        scored = []
        for leaves, cost in options[n]:
            af = cost + sum(flow.get(leaf, 0.0) / max(1, fanout.get(leaf, 1)) for leaf in leaves)
            scored.append((af, len(leaves), leaves, cost))
        af, _, leaves, cost = min(scored)
        flow[n] = af
        best[n] = (leaves, cost)

    # Step (3): exact-area recovery by reference counting, twice.
    refs = dict.fromkeys(live, 0)

    def ref(n: int) -> int:
        leaves, cost = best[n]
        area = cost
        for leaf in leaves:
            if leaf in refs:
                refs[leaf] += 1
                if refs[leaf] == 1:
                    area += ref(leaf)
        return area

    def deref(n: int) -> int:
        leaves, cost = best[n]
        area = cost
        for leaf in leaves:
            if leaf in refs:
                refs[leaf] -= 1
                if refs[leaf] == 0:
                    area += deref(leaf)
        return area

    roots = [node_of(b) for bits in c.outputs.values() for b in bits if node_of(b) in refs]
    for r in roots:
        refs[r] += 1
        if refs[r] == 1:
            ref(r)
    for _ in range(2):
        for n in live:
            if refs[n] == 0:
                continue
            deref(n)
            choice = None
            for leaves, cost in options[n]:
                best[n] = (leaves, cost)
                area = ref(n)
                deref(n)
                key = (area, len(leaves))
                if choice is None or key < choice[0]:
                    choice = (key, leaves, cost)
            assert choice is not None
            best[n] = (choice[1], choice[2])
            ref(n)

    # Step (4): the cover, its levels and its noise.
    cells: dict[int, Cell] = {}
    level: dict[int, int] = {}
    for n in live:
        if refs[n] == 0:
            continue
        leaves, cost = best[n]
        table = _cone_table(c, n, leaves)
        level[n] = 1 + max((level.get(leaf, 0) for leaf in leaves), default=0)
        found = model.cell(table, ratios(leaves)) if cost == 1 else None
        if cost == 1 and found is None:
            raise AssertionError(f"cell of node {n} left the gate model")
        comb, weight = found if found else (None, 2.0)
        cells[n] = Cell(n, leaves, table, level[n], comb, weight)
    return FhewCost(
        bootstraps=sum(cell.bootstraps for cell in cells.values()),
        levels=max((level[r] for r in roots), default=0),
        cells=cells,
        max_noise_weight=max((cell.noise_weight for cell in cells.values()), default=0.0),
    )


def evaluate_cover(
    c: Circuit, cost: FhewCost, inputs: dict[str, list[int]]
) -> dict[str, list[int]]:
    """Evaluates the outputs of `c` from the cells of `cost` alone, on lists of input values,
    the way the FHEW target would run them: a one-bootstrap cell by its combination's phase,
    u = 2 sum_i m_i x_i + c mod 8, output [u < 4]; a MUX cell by its truth table. Checks that the
    cover is a complete implementation; raises ValueError when a cell reads a gate outside it."""
    count = len(next(iter(inputs.values()))) if inputs else 1
    value: dict[int, list[int]] = {0: [0] * count}
    for name, bits in c.inputs.items():
        for i, b in enumerate(bits):
            value[node_of(b)] = [(v >> i) & 1 for v in inputs[name]]
    for n in sorted(cost.cells):
        cell = cost.cells[n]
        for leaf in cell.leaves:
            if leaf not in value:
                raise ValueError(f"cell {n} reads node {leaf}, which no cell computes")
        comb = cell.combination
        if comb is None:
            value[n] = [
                (cell.table >> sum(value[leaf][j] << i for i, leaf in enumerate(cell.leaves))) & 1
                for j in range(count)
            ]
        else:
            m = comb.multipliers
            value[n] = [
                int(
                    (
                        2 * sum(m[i] * value[leaf][j] for i, leaf in enumerate(cell.leaves))
                        + comb.constant
                    )
                    % 8
                    < 4
                )
                for j in range(count)
            ]
    out: dict[str, list[int]] = {}
    for name, bits in c.outputs.items():
        words = [0] * count
        for i, b in enumerate(bits):
            if node_of(b) not in value:
                raise ValueError(f"output {name}[{i}] is not computed by the cover")
            for j in range(count):
                words[j] |= (value[node_of(b)][j] ^ (b & 1)) << i
        out[name] = words
    return out


@dataclass(frozen=True)
class CoverCell:
    """One cell of a cover, as a gate program and the bool dialect write it: a MUX of three
    fanin literals (`mux`), or a one-bootstrap linear gate of its leaves."""

    root: int
    mux: tuple[int, ...] | None
    leaves: tuple[int, ...] = ()
    multipliers: tuple[int, ...] = ()
    constant: int = 0


def cover_cells(mapped: Circuit, cost: FhewCost) -> list[CoverCell]:
    """The cells of `cost`, a cover of `mapped`, in root order (ValueError on a malformed one:
    no combination and not a MUX, or a multiplier of a missing leaf)."""
    out = []
    for root in sorted(cost.cells):
        cell = cost.cells[root]
        comb = cell.combination
        if comb is None:
            node = mapped.nodes[root]
            if node.kind is not Kind.MUX:
                raise ValueError(f"cell {root} has no combination and is not a MUX")
            out.append(CoverCell(root, tuple(node.fanins)))
            continue
        k = len(cell.leaves)
        if any(m != 0 for m in comb.multipliers[k:]):
            raise ValueError(f"cell {root}: a multiplier of a missing leaf is not 0")
        out.append(
            CoverCell(root, None, tuple(cell.leaves), tuple(comb.multipliers[:k]), comb.constant)
        )
    return out
