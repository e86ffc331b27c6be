"""The HE cost of a matrix product and of a whole matrix chain, and the chain's best order.

A chain is a product F1 @ F2 @ ... @ Fn of n >= 2 factors (F1 may be a row vector, Fn a column
vector; the others are matrices). Every parenthesization computes the same value; under HE they
differ in multiplicative depth, key switches, ciphertext products and bytes, and some of them
cannot be lowered at all. The cost of one product is priced here by the rules of the lowering
(passes/lower_stat_to_he.py, `lower_matmul`), at the declared sizes and a slot count:

- [K] @ [K, M] (vector-matrix): the vector replicated, the matrix in the result's layout, one
  fused dot over K: K products per result ciphertext; no rotation.
- [N, K] @ [K] (matrix-vector) into a replicated result, with K a packed (column) dimension:
  N * ceil(K / slots) products, each row relinearized and summed over the slots (log2(slots)
  rotations per row, the rotate-and-add tree of `sum_slots`).
- [N, K] @ [K] into a cyclic result (the diagonal method, Halevi-Shoup with baby-step
  giant-step): the matrix a factor its owner encrypts in the diagonal layout (an input), the
  vector cyclic; D = min(P, Q) products (P, Q: N and K rounded up to powers of two) and
  (b - 1) + (G - 1) + G key switches (+ log2(Q / P) when P < Q), one level; needs
  max(P, Q) <= slots (`compiler.dialects.he.Diagonal`).
- [A, K] @ [K, B] (matrix-matrix): the left factor replicated and transposed (a relabelling),
  the right one in the result's layout, one dot over K: K * A * count(B) products.
- [K] @ [K] (inner product): packed when K is a column dimension (one product per block and a
  slot sum), else a replicated dot (K products).

Operands: a ciphertext (a secret value; also a public input, which its owner encrypts under the
current lowering: see `_is_public` there) or a plaintext (a public value the server holds). A
ciphertext-ciphertext product costs a ciphertext multiplication, a level and, where its degree-2
result enters another product or a rotation, a relinearization (a key switch); a
ciphertext-plaintext product costs a plaintext multiplication and a level (a real-valued
plaintext is encoded at a scale that one rescale removes) and no key switch; a
plaintext-plaintext product is public arithmetic, free on the server. Leaves cost the bytes of
their ciphertexts in the layout they are needed in (an input needed in two layouts is encrypted
twice by its owner, as the lowering does); a transposed leaf exists only replicated.

The order is chosen by `best_order`: dynamic programming over parenthesizations (the classic
O(n^3) matrix-chain recursion, Cormen et al. §15.2) with the HE cost, compared
lexicographically: depth first, then key switches, then ciphertext multiplications, then
bytes, then plaintext multiplications. Depth is a max over the two operands and the rest are
sums, so the best plan of a sub-chain is not always part of the best plan of the chain (a
deeper but cheaper sub-plan can win when the other operand is deeper still). The recursion
therefore keeps, per sub-chain and result layout, the Pareto front over (depth, degree,
additive cost), and `select` picks from the chain's front: depth first, but only among plans
within WORK_SLACK of the least work (a level is not worth an N x N intermediate).
`brute_force` enumerates every parenthesization with the same cost function and the same
selection; the tests check the two agree.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from compiler.dialects.he import diagonal_layout, pow2_at_least
from compiler.types import Dim

PACKED = "packed"
REPLICATED = "replicated"
# The Halevi-Shoup pair (compiler/dialects/he.py: Diagonal, cyclic_of): a matrix as its
# generalized diagonals, a vector repeated with its power-of-two period.
DIAGONAL = "diagonal"
CYCLIC = "cyclic"
LAYOUTS = (PACKED, REPLICATED, CYCLIC, DIAGONAL)
# The slot count the order is chosen for when the ring is not fixed yet (the pass runs before
# parameter selection): n = 2^13, the ring of the GWAS programs at their usual sizes.
DEFAULT_SLOTS = 1 << 12

# A shallower plan wins only while it needs at most this many times the ciphertext operations
# of the least-work plan: a level costs one prime more in every ciphertext below it (a few
# tens of percent of the work), not an N x N intermediate in place of an N x K one.
WORK_SLACK = 2.0

# A parenthesization: a factor index, or a pair (left, right).
Tree = int | tuple["Tree", "Tree"]

CIPHERTEXT = "ciphertext"
PLAINTEXT = "plaintext"


@dataclass(frozen=True, order=True)
class ChainCost:
    """The cost of a plan, in the order it is compared."""

    depth: int = 0
    key_switches: int = 0
    ct_mults: int = 0
    bytes: int = 0
    pt_mults: int = 0

    def __add__(self, other: ChainCost) -> ChainCost:
        return ChainCost(
            max(self.depth, other.depth),
            self.key_switches + other.key_switches,
            self.ct_mults + other.ct_mults,
            self.bytes + other.bytes,
            self.pt_mults + other.pt_mults,
        )

    @property
    def work(self) -> int:
        """Ciphertext operations: products (plaintext ones too) and key switches."""
        return self.key_switches + self.ct_mults + self.pt_mults

    def additive(self) -> tuple[int, int, int, int]:
        return (self.key_switches, self.ct_mults, self.bytes, self.pt_mults)

    def text(self) -> str:
        return (
            f"depth {self.depth}, key switches {self.key_switches}, ct mults {self.ct_mults}, "
            f"pt mults {self.pt_mults}, {self.bytes} bytes uploaded"
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "depth": self.depth,
            "key_switches": self.key_switches,
            "ct_mults": self.ct_mults,
            "pt_mults": self.pt_mults,
            "bytes": self.bytes,
        }


@dataclass(frozen=True)
class Factor:
    """One factor of a chain. `dims`: its shape (1 or 2 axes, symbolic or literal);
    `kind`: CIPHERTEXT or PLAINTEXT; `depth`: the levels it has used already; `transposed`: a
    transpose (exists only replicated); `packable`: whether it can be lowered packed at all
    (False for e.g. a matrix-vector product, which the lowering makes only replicated);
    `degree`: 2 when it is an unrelinearized ciphertext product; `name`: for the plan text."""

    name: str
    dims: tuple[Dim, ...]
    kind: str = CIPHERTEXT
    depth: int = 0
    transposed: bool = False
    packable: bool = True
    replicable: bool = True
    degree: int = 1
    # Whether its owner can encrypt it in the diagonal layout (a secret input matrix) or the
    # cyclic one (a vector the lowering can produce cyclic: inputs and elementwise functions
    # of them).
    diagonal: bool = False
    cyclic: bool = False


@dataclass(frozen=True)
class Model:
    """What a product costs depends on: the sizes (symbolic dims), the slot count, and the
    column dimensions (the packed axes: last axes of secret input matrices)."""

    sizes: Mapping[str, int]
    columns: frozenset[Dim]
    slots: int = DEFAULT_SLOTS
    # False: a plaintext operand cannot enter a matrix product (the lowering refuses it today).
    plaintext_operands: bool = True
    max_degree: int = 4  # the scheme's (CKKS: 4), as lazy-relinearization uses it
    ciphertext_bytes: int = 2 * 2 * DEFAULT_SLOTS * 8  # one limb of a degree-1 ciphertext

    def dim(self, d: Dim) -> int:
        return d if isinstance(d, int) else int(self.sizes[d])

    def count(self, dims: Sequence[Dim], layout: str) -> int:
        """Ciphertexts of an array in a layout (as compiler.analysis.counts.Shapes)."""
        if not dims:
            return 1
        sizes = [self.dim(d) for d in dims]
        if layout == CYCLIC:
            return 1
        if layout == DIAGONAL:
            return diagonal_layout(sizes[0], sizes[1]).count
        if layout == PACKED:
            return math.prod(sizes[:-1]) * -(-sizes[-1] // self.slots)
        return math.prod(sizes)

    def rotations_per_sum(self) -> int:
        return max(int(math.log2(self.slots)), 0)


@dataclass(frozen=True)
class Node:
    """One operand of a plan: a leaf (`index` of the factor) or a product of two nodes, with
    the layout it is lowered in."""

    layout: str
    index: int = -1
    left: Node | None = None
    right: Node | None = None

    def text(self, names: Sequence[str], top: bool = True) -> str:
        if self.left is None or self.right is None:
            return names[self.index]
        inner = f"{self.left.text(names, False)} @ {self.right.text(names, False)}"
        return inner if top else f"({inner})"

    def factors(self) -> tuple[int, int]:
        """The [first, last] factor indices this node covers."""
        if self.left is None or self.right is None:
            return self.index, self.index
        return self.left.factors()[0], self.right.factors()[1]


@dataclass(frozen=True)
class _Shape:
    dims: tuple[Dim, ...]
    kind: str
    degree: int  # ciphertext degree (1 fresh or relinearized; a product adds degrees)


@dataclass(frozen=True)
class _Product:
    """How one product is lowered: the operand layouts, its own cost (not the operands')."""

    left_layout: str
    right_layout: str
    cost: ChainCost
    shape: _Shape


def fits_cyclic(model: Model, dims: Sequence[Dim]) -> bool:
    """Whether a vector of `dims` fits the cyclic layout at the model's slots."""
    return len(dims) == 1 and pow2_at_least(model.dim(dims[0])) <= model.slots


def fitsdiagonal_layout(model: Model, dims: Sequence[Dim]) -> bool:
    if len(dims) != 2:
        return False
    return diagonal_layout(model.dim(dims[0]), model.dim(dims[1])).period <= model.slots


def product(model: Model, a: _Shape, b: _Shape, layout: str) -> _Product | None:
    """How `a @ b` is lowered into `layout` and what it costs by itself, or None when the
    lowering cannot produce it (module docstring)."""
    dims = a.dims[:-1] + b.dims[1:]
    if not dims:
        layout = REPLICATED
    if not model.plaintext_operands and PLAINTEXT in (a.kind, b.kind):
        return None
    if layout == DIAGONAL:
        return None  # only an input is diagonal (its owner encrypts the diagonals)
    if layout == CYCLIC:
        if (len(a.dims), len(b.dims)) != (2, 1) or PLAINTEXT in (a.kind, b.kind):
            return None
        if not fitsdiagonal_layout(model, a.dims):
            return None
        d = diagonal_layout(model.dim(a.dims[0]), model.dim(a.dims[1]))
        # The vector is rotated: a product is relinearized first.
        relin = 1 if b.degree > 1 else 0
        cost = ChainCost(depth=1, key_switches=d.key_switches() + relin, ct_mults=d.count)
        return _Product(DIAGONAL, CYCLIC, cost, _Shape(dims, CIPHERTEXT, 1))
    k = a.dims[-1]
    cts = a.kind == b.kind == CIPHERTEXT
    plain = a.kind == b.kind == PLAINTEXT
    sums_slots = False
    match (len(a.dims), len(b.dims)):
        case (1, 2):
            la, lb = REPLICATED, layout
            mults = model.dim(k) * model.count(dims, layout)
        case (2, 1):
            if layout != REPLICATED or k not in model.columns:
                return None
            la, lb = PACKED, PACKED
            mults = model.count(a.dims, PACKED)
            sums_slots = True
        case (2, 2):
            la, lb = REPLICATED, layout
            mults = model.dim(k) * model.dim(a.dims[0]) * model.count(b.dims[1:], layout)
        case _:  # (1, 1): an inner product
            if k in model.columns:
                la, lb = PACKED, PACKED
                mults = model.count(a.dims, PACKED)
                sums_slots = True
            else:
                la, lb = REPLICATED, REPLICATED
                mults = model.dim(k)
    if plain:
        return _Product(la, lb, ChainCost(), _Shape(dims, PLAINTEXT, 0))
    relin = 0
    degree = sum(x.degree for x in (a, b) if x.kind == CIPHERTEXT)
    if cts and degree > model.max_degree:
        # Lazy relinearization: the operands above degree 1 are relinearized first.
        relin += sum(model.count(x.dims, lx) for x, lx in ((a, la), (b, lb)) if x.degree > 1)
        degree = 2
    rotations = 0
    if sums_slots:
        # The slot sum rotates: the products are relinearized first (when above degree 1),
        # then each row is summed by the rotate-and-add tree.
        if degree > 1:
            relin += mults
        rotations = model.count(dims, REPLICATED) * model.rotations_per_sum()
        degree = 1
    cost = ChainCost(
        depth=1,
        key_switches=relin + rotations,
        ct_mults=mults if cts else 0,
        pt_mults=0 if cts else mults,
    )
    return _Product(la, lb, cost, _Shape(dims, CIPHERTEXT, degree))


def leaf_cost(model: Model, f: Factor, layout: str) -> ChainCost | None:
    """A factor in `layout`: the bytes of its ciphertexts (None when it cannot be lowered so)."""
    if layout == DIAGONAL and not (
        f.diagonal
        and f.kind == CIPHERTEXT
        and not f.transposed
        and fitsdiagonal_layout(model, f.dims)
    ):
        return None
    if layout == CYCLIC and not (f.cyclic and f.kind == CIPHERTEXT and fits_cyclic(model, f.dims)):
        return None
    if layout == PACKED and (f.transposed or not f.packable or not f.dims):
        return None
    if layout == REPLICATED and not f.replicable:
        return None
    uploaded = model.count(f.dims, layout) if f.kind == CIPHERTEXT else 0
    return ChainCost(depth=f.depth, bytes=uploaded * model.ciphertext_bytes)


def _leaf_shape(f: Factor) -> _Shape:
    return _Shape(f.dims, f.kind, f.degree if f.kind == CIPHERTEXT else 0)


@dataclass(frozen=True)
class Plan:
    tree: Node
    cost: ChainCost


def plan_cost(model: Model, factors: Sequence[Factor], tree: Node) -> ChainCost | None:
    """The cost of one given plan (`tree`, into its root's layout; the layouts of the inner
    nodes follow from the products), or None when the lowering cannot produce it."""

    def go(node: Node, layout: str) -> tuple[ChainCost, _Shape] | None:
        if node.left is None or node.right is None:
            f = factors[node.index]
            c = leaf_cost(model, f, layout)
            return None if c is None else (c, _leaf_shape(f))
        # The operands' layouts follow from their shapes and the result layout (not from
        # their degrees): find them first, then cost the operands in them.
        first, last = node.factors()
        mid = node.left.factors()[1]
        probe = product(model, _span(factors, first, mid), _span(factors, mid + 1, last), layout)
        if probe is None:
            return None
        left, right = go(node.left, probe.left_layout), go(node.right, probe.right_layout)
        if left is None or right is None:
            return None
        p = product(model, left[1], right[1], layout)
        assert p is not None
        depth = max(left[0].depth, right[0].depth) + p.cost.depth
        total = left[0] + right[0] + p.cost
        return ChainCost(depth, *total.additive()), p.shape

    found = go(tree, tree.layout)
    return None if found is None else found[0]


def _span(factors: Sequence[Factor], i: int, j: int) -> _Shape:
    """The dims and kind of the product of factors i..j (the same in every order), at degree
    1 (the degree depends on the order)."""
    kinds = {factors[t].kind for t in range(i, j + 1)}
    kind = CIPHERTEXT if CIPHERTEXT in kinds else PLAINTEXT
    return _Shape(factors[i].dims[:-1] + factors[j].dims[1:] if i < j else factors[i].dims, kind, 1)


# One entry of a Pareto front: (depth, degree, additive cost, result shape, plan).
_Entry = tuple[int, int, tuple[int, int, int, int], _Shape, Node]


def _dominates(a: _Entry, b: _Entry) -> bool:
    return a[0] <= b[0] and a[1] <= b[1] and all(x <= y for x, y in zip(a[2], b[2], strict=True))


def _insert(front: list[_Entry], entry: _Entry) -> None:
    if any(_dominates(e, entry) for e in front):
        return
    front[:] = [e for e in front if not _dominates(entry, e)]
    front.append(entry)


def best_order(model: Model, factors: Sequence[Factor], layout: str) -> Plan | None:
    """The cheapest parenthesization of the chain into `layout` (module docstring), or None
    when none can be lowered."""
    n = len(factors)

    @cache
    def front(i: int, j: int, lay: str) -> tuple[_Entry, ...]:
        out: list[_Entry] = []
        if i == j:
            c = leaf_cost(model, factors[i], lay)
            if c is not None:
                shape = _leaf_shape(factors[i])
                out.append((c.depth, shape.degree, c.additive(), shape, Node(lay, index=i)))
            return tuple(out)
        for k in range(i, j):
            for la in LAYOUTS:
                for lb in LAYOUTS:
                    for dl, _, al, sl, nl in front(i, k, la):
                        for dr, _, ar, sr, nr in front(k + 1, j, lb):
                            p = product(model, sl, sr, lay)
                            if p is None or (p.left_layout, p.right_layout) != (la, lb):
                                continue
                            depth = max(dl, dr) + p.cost.depth
                            add = (
                                al[0] + ar[0] + p.cost.key_switches,
                                al[1] + ar[1] + p.cost.ct_mults,
                                al[2] + ar[2] + p.cost.bytes,
                                al[3] + ar[3] + p.cost.pt_mults,
                            )
                            node = Node(lay, left=nl, right=nr)
                            _insert(out, (depth, p.shape.degree, add, p.shape, node))
        return tuple(out)

    found = front(0, n - 1, layout)
    if not found:
        return None
    return select([Plan(node, ChainCost(depth, *add)) for depth, _, add, _, node in found])


def select(plans: Sequence[Plan]) -> Plan:
    """The best of some plans: the lexicographically least cost (depth first) among those
    whose work (ciphertext products and key switches) is at most WORK_SLACK times the least
    work of any. Every plan on the Pareto front of `best_order` is a candidate, so the choice
    is the same as over all plans (a dominated plan never has less work than its dominator)."""
    least = min(p.cost.work for p in plans)
    return min((p for p in plans if p.cost.work <= WORK_SLACK * least), key=lambda p: p.cost)


def parenthesizations(i: int, j: int) -> Iterator[Tree]:
    """Every binary tree over factors i..j: an int (a leaf) or (left, right)."""
    if i == j:
        yield i
        return
    for k in range(i, j):
        yield from itertools.product(parenthesizations(i, k), parenthesizations(k + 1, j))


def _to_node(tree: Tree, layout: str) -> Node:
    """A tree of `parenthesizations` as a Node (inner layouts are decided by `plan_cost`)."""
    if isinstance(tree, int):
        return Node(layout, index=tree)
    left, right = tree
    return Node(layout, left=_to_node(left, layout), right=_to_node(right, layout))


def brute_force(model: Model, factors: Sequence[Factor], layout: str) -> Plan | None:
    """The best plan by enumerating every parenthesization (Catalan(n - 1) of them)."""
    plans: list[Plan] = []
    for tree in parenthesizations(0, len(factors) - 1):
        node = _to_node(tree, layout)
        cost = plan_cost(model, factors, node)
        if cost is not None:
            plans.append(Plan(node, cost))
    return select(plans) if plans else None


def source_tree(shape: Tree, layout: str) -> Node:
    """The plan of a tree given as nested pairs of factor indices (the order in the source)."""
    return _to_node(shape, layout)
