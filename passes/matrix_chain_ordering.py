"""Matrix-chain ordering on `stat`: each product of three or more factors in its cheapest order.

A chain is a tree of `stat.matmul` ops whose inner products have no other use, e.g.
`X @ (A @ (X.T @ (S * w)))` or `A @ B @ v`; its factors (the leaves) are whatever is not such
a product: inputs, transposes, elementwise-scaled values (`S * w`), products used twice. Every
parenthesization computes the same value in real arithmetic, so the chain is rebuilt in the
order `compiler.analysis.matrix_chain.best_order` finds cheapest under HE at the declared sizes
(depth, then key switches, then ciphertext multiplications, then bytes), priced by the rules
of the lowering: an order the lowering cannot produce (a matrix-vector product into a packed
result, a packed transpose) is never chosen, and a chain whose source order cannot be lowered
gets one that can when there is one. The report (`chain_decisions`) shows per chain the
chosen order and its cost next to the order written in the source.

Reference: the matrix-chain recursion (Cormen et al., Introduction to Algorithms, §15.2) with
an HE cost in place of the flop count, as DESIGN.md §5 asks (`matrix-chain-ordering`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from compiler.analysis.depth import stat_depths
from compiler.analysis.diagonal import cyclic_value, diagonal_input
from compiler.analysis.matrix_chain import (
    CIPHERTEXT,
    CYCLIC,
    DEFAULT_SLOTS,
    LAYOUTS,
    PACKED,
    PLAINTEXT,
    REPLICATED,
    ChainCost,
    Factor,
    Model,
    Node,
    Plan,
    Tree,
    best_order,
    plan_cost,
    select,
    source_tree,
)
from compiler.analysis.ranges import proven_range, set_proven_range
from compiler.analysis.sizes import parse_sizes
from compiler.dialects import stat
from compiler.errors import InternalError, op_location
from compiler.types import Dim

MIN_FACTORS = 3


def _uses(v: SSAValue) -> list[Operation]:
    return [u.operation for u in v.uses]


def _inner_product(v: SSAValue) -> stat.MatmulOp | None:
    """The matmul defining `v` when it belongs to its single user's chain."""
    op = v.owner
    if isinstance(op, stat.MatmulOp) and len(_uses(v)) == 1:
        return op
    return None


def _known_public(v: SSAValue) -> bool:
    """A public value the compiler knows (constants, sizes, arithmetic on them): a plaintext.
    Any other public value is an owner's input, encrypted like a secret one (the lowering's
    `_is_public`)."""
    if stat.tensor_type(v).is_secret:
        return False
    op = v.owner
    match op:
        case stat.ConstantOp() | stat.SizeOp():
            return True
        case stat.AddOp() | stat.SubOp() | stat.MulOp() | stat.DivOp():
            return _known_public(op.lhs) and _known_public(op.rhs)
        case stat.NegOp() | stat.BroadcastOp():
            return _known_public(op.input)
        case _:
            return False


def _describe(v: SSAValue, depth: int = 0) -> str:
    """A short source-like text of a factor: `X`, `X.T`, `(S * w)`."""
    op = v.owner
    match op:
        case stat.InputOp():
            return op.sym_value
        case stat.TransposeOp():
            return f"{_describe(op.input, depth + 1)}.T"
        case stat.BroadcastOp():
            return _describe(op.input, depth)
        case stat.ConstantOp():
            return f"{op.float_value:g}"
        case stat.MulOp() | stat.AddOp() | stat.SubOp() if depth < 2 and v.name_hint is None:
            sign = {stat.MulOp: "*", stat.AddOp: "+", stat.SubOp: "-"}[type(op)]
            return f"({_describe(op.lhs, depth + 1)} {sign} {_describe(op.rhs, depth + 1)})"
        case _:
            return v.name_hint or "_"


def _layouts(v: SSAValue, columns: frozenset[Dim]) -> tuple[bool, bool]:
    """(packable, replicable): whether the lowering can produce `v` in each layout (the cases
    it refuses: a transpose or a matrix-vector product packed, a slot sum other than
    replicated)."""
    op = v.owner
    match op:
        case stat.TransposeOp():
            return False, True
        case stat.MatmulOp():
            lt, rt = stat.tensor_type(op.lhs), stat.tensor_type(op.rhs)
            if lt.rank == 2 and rt.rank == 1:
                return False, lt.dims[-1] in columns
            return True, True
        case stat.SumOp() | stat.MeanOp():
            src = stat.tensor_type(op.input)
            if src.rank - 1 in op.axes_tuple and src.dims[-1] in columns:
                return not stat.tensor_type(v).dims, True
            return True, True
        case _:
            return True, True


def _degree(v: SSAValue) -> int:
    """2 for an unrelinearized ciphertext product (lazy relinearization keeps it so)."""
    op = v.owner
    if isinstance(op, stat.MulOp | stat.PowOp | stat.PolyOp):
        operands = [op.lhs, op.rhs] if isinstance(op, stat.MulOp) else [op.input]
        if all(stat.tensor_type(x).is_secret for x in operands):
            return 2
    return 1


@dataclass(frozen=True)
class ChainDecision:
    """One chain: where it is, its factors, the order in the source and the order chosen."""

    location: str
    factors: tuple[str, ...]
    layout: str
    source: str
    source_cost: ChainCost | None  # None: the lowering cannot produce the source order
    chosen: str
    chosen_cost: ChainCost | None
    slots: int

    @property
    def changed(self) -> bool:
        return self.chosen != self.source

    def as_dict(self) -> dict[str, object]:
        return {
            "location": self.location,
            "factors": list(self.factors),
            "layout": self.layout,
            "source_order": self.source,
            "source_cost": None if self.source_cost is None else self.source_cost.as_dict(),
            "chosen_order": self.chosen,
            "chosen_cost": None if self.chosen_cost is None else self.chosen_cost.as_dict(),
            "slots": self.slots,
        }


@dataclass
class _Chain:
    root: stat.MatmulOp
    leaves: list[SSAValue]
    shape: Tree  # the source order as nested pairs of leaf indices
    inner: list[stat.MatmulOp]  # every product of the chain, root first


def _collect(root: stat.MatmulOp) -> _Chain:
    """The chain under `root`. An inner product with a vector result joins the chain only on
    the side its vector faces: `A @ (B @ v)` is A, B, v, but in `A @ (z @ X)` the row vector
    z would sit in the middle, so `(z @ X)` stays one factor."""
    leaves: list[SSAValue] = []
    inner: list[stat.MatmulOp] = []

    def walk(v: SSAValue, top: bool, side: str) -> Tree:
        op = root if top else _inner_product(v)
        if op is not None and not top:
            lhs_rank, rhs_rank = (stat.tensor_type(x).rank for x in (op.lhs, op.rhs))
            if (side == "right" and lhs_rank == 1) or (side == "left" and rhs_rank == 1):
                op = None
        if op is None:
            leaves.append(v)
            return len(leaves) - 1
        inner.append(op)
        return (walk(op.lhs, False, "left"), walk(op.rhs, False, "right"))

    shape = walk(root.result, True, "")
    return _Chain(root, leaves, shape, inner)


def _is_linear(leaves: list[SSAValue]) -> bool:
    """Whether the factors form one chain F1 @ ... @ Fn: matrices, except a row vector first
    and a column vector last, inner dimensions matching. `(v @ X)` inside `A @ (v @ X)` is a
    product whose factors do not (a vector in the middle): it stays one factor."""
    dims = [stat.tensor_type(v).dims for v in leaves]
    n = len(dims)
    for i, d in enumerate(dims):
        if len(d) != 2 and not (len(d) == 1 and i in (0, n - 1)):
            return False
    for i in range(n - 1):
        if dims[i][-1] != dims[i + 1][0]:
            return False
    return not (n == 1 and len(dims[0]) == 1)


def chains(program: stat.ProgramOp) -> list[_Chain]:
    """The maximal matmul chains of three or more factors, in program order."""
    found: list[_Chain] = []
    for op in program.server_ops():
        if not isinstance(op, stat.MatmulOp):
            continue
        users = _uses(op.result)
        if len(users) == 1 and isinstance(users[0], stat.MatmulOp):
            continue  # an inner product of its user's chain
        chain = _collect(op)
        if not _is_linear(chain.leaves):
            raise InternalError(f"matrix chain of {len(chain.leaves)} factors is not linear")
        if len(chain.leaves) >= MIN_FACTORS:
            found.append(chain)
    return found


def _model(program: stat.ProgramOp, sizes: dict[str, int], slots: int) -> Model:
    bounds = {k: min(v, sizes.get(k, v)) for k, v in program.params().items()}
    columns = frozenset(
        stat.tensor_type(op.result).dims[-1]
        for op in program.inputs()
        if stat.tensor_type(op.result).rank == 2 and stat.tensor_type(op.result).is_secret
    )
    return Model(bounds, columns, slots=slots, plaintext_operands=False)


def _default_layout(v: SSAValue, columns: frozenset[Dim]) -> str:
    """The layout the lowering asks of a revealed value (`_Lowering.default_layout`)."""
    dims = stat.tensor_type(v).dims
    if len(dims) >= 2 or (len(dims) == 1 and dims[0] in columns):
        return PACKED
    return REPLICATED


def _decide(
    program: stat.ProgramOp, chain: _Chain, model: Model, depths: dict[SSAValue, int]
) -> tuple[ChainDecision, Node | None]:
    """The decision for one chain and the plan to build (None: keep the source order)."""
    factors = []
    for i, leaf in enumerate(chain.leaves):
        packable, replicable = _layouts(leaf, model.columns)
        factors.append(
            Factor(
                _describe(leaf) if _describe(leaf) != "_" else f"f{i}",
                stat.tensor_type(leaf).dims,
                PLAINTEXT if _known_public(leaf) else CIPHERTEXT,
                depth=depths.get(leaf, 0),
                transposed=isinstance(leaf.owner, stat.TransposeOp),
                packable=packable,
                replicable=replicable,
                degree=_degree(leaf),
                diagonal=diagonal_input(leaf) and not _known_public(leaf),
                cyclic=cyclic_value(leaf) and not _known_public(leaf),
            )
        )
    names = [f.name for f in factors]
    layout = _default_layout(chain.root.result, model.columns)
    # A revealed vector is decrypted from any of these (the coordinator reads its elements);
    # a vector used further is needed in the layout its user asks for.
    revealed = all(isinstance(u, stat.RevealOp) for u in _uses(chain.root.result))
    roots = [layout]
    if revealed and stat.tensor_type(chain.root.result).rank == 1:
        roots = [PACKED, CYCLIC, REPLICATED]
    source, source_cost = _cheapest(
        [
            (
                source_tree(chain.shape, lay),
                plan_cost(model, factors, source_tree(chain.shape, lay)),
            )
            for lay in roots
        ]
    )
    candidates = [best_order(model, factors, lay) for lay in roots]
    best, _ = _cheapest([(p.tree, p.cost) for p in candidates if p is not None])
    best_cost = None if best is None else plan_cost(model, factors, best)
    plan: Node | None = None
    if (
        best is not None
        and best_cost is not None
        and (source_cost is None or best_cost < source_cost)
    ):
        # The result may be needed in another layout too: keep the source order unless the
        # new one can be produced wherever the source order could.
        usable = revealed or all(
            plan_cost(model, factors, _relayout(best, lay)) is not None
            for lay in LAYOUTS
            if plan_cost(model, factors, source_tree(chain.shape, lay)) is not None
        )
        if usable:
            plan = best
    loc = op_location(chain.root)
    assert source is not None
    decision = ChainDecision(
        location=f"{loc.line}:{loc.column}" if loc else "?",
        factors=tuple(names),
        layout=(plan or source).layout,
        source=source.text(names),
        source_cost=source_cost,
        chosen=(plan or source).text(names),
        chosen_cost=best_cost if plan is not None else source_cost,
        slots=model.slots,
    )
    return decision, plan


def _cheapest(plans: list[tuple[Node, ChainCost | None]]) -> tuple[Node | None, ChainCost | None]:
    """The cheapest of some plans by the chain model's selection (`select`), or the first
    plan with None when none can be lowered."""
    priced = [Plan(node, cost) for node, cost in plans if cost is not None]
    if not priced:
        return (plans[0][0] if plans else None), None
    best = select(priced)
    return best.tree, best.cost


def _relayout(node: Node, layout: str) -> Node:
    return Node(layout, node.index, node.left, node.right)


def chain_decisions(
    program: stat.ProgramOp, sizes: dict[str, int], slots: int = DEFAULT_SLOTS
) -> list[ChainDecision]:
    """What the pass decides for every chain of `program` (the report lists it)."""
    model = _model(program, sizes, slots)
    depths = stat_depths(program)
    return [_decide(program, c, model, depths)[0] for c in chains(program)]


def _build(node: Node, leaves: list[SSAValue], before: Operation) -> SSAValue:
    if node.left is None or node.right is None:
        return leaves[node.index]
    lhs = _build(node.left, leaves, before)
    rhs = _build(node.right, leaves, before)
    op = stat.MatmulOp(lhs, rhs)
    op.location = before.location
    assert before.parent is not None
    before.parent.insert_op_before(op, before)
    return op.result


@dataclass(frozen=True)
class MatrixChainOrderingPass(ModulePass):
    """Reorder every matmul chain of three or more factors by the HE cost.

    What it does: the module docstring. Assumes: a verified stat program. Establishes: the
    module verifies; every revealed value is the same in real arithmetic; each chain is in the
    order of `chain_decisions` (the source order when nothing is cheaper). Options: `sizes`
    ("N=5000,M=16384", the sizes the order is chosen for); `log_n` (the ring, when fixed:
    slots = 2^(log_n - 1); 0: DEFAULT_SLOTS, the ring being chosen later).
    """

    name = "matrix-chain-ordering"

    sizes: str = ""
    log_n: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sizes = parse_sizes(self.sizes)
        slots = 1 << (self.log_n - 1) if self.log_n else DEFAULT_SLOTS
        for program in list(op.body.block.ops):
            if not isinstance(program, stat.ProgramOp):
                continue
            model = _model(program, sizes, slots)
            depths = stat_depths(program)
            for chain in chains(program):
                decision, plan = _decide(program, chain, model, depths)
                root = chain.root
                if plan is None:
                    root.attributes["layout"] = StringAttr(decision.layout)
                    continue
                result = _build(plan, chain.leaves, root)
                assert isinstance(result.owner, stat.MatmulOp)
                # The root's layout, as priced: the lowering computes a revealed vector in it.
                result.owner.attributes["layout"] = StringAttr(decision.layout)
                if root.result.name_hint is not None:
                    result.name_hint = root.result.name_hint
                proven = proven_range(root)
                if proven is not None and isinstance(result.owner, stat.MatmulOp):
                    # The same value in another order: the theorem about it still holds.
                    set_proven_range(result.owner, proven)
                root.result.replace_all_uses_with(result)
                for old in chain.inner:  # root first: each is unused once its user is gone
                    old.detach()
                    old.erase()
