"""The broadcasting rules of the language, shared by the checker, the lowering and the
reference evaluator so that all three agree on what `a + b` means for any two shapes.

Two operands of an elementwise operation combine when
1. their shapes are equal;
2. one is a scalar (it is replicated);
3. both are matrices and, axis by axis, the sizes are equal or one of them is the literal 1
   (`row(v)` is 1 x n and `col(v)` is n x 1);
4. one is a vector of length n and the other a matrix: the vector is used as a ROW (one value
   per column) when n equals the number of columns, and as a COLUMN (one value per row) when n
   equals the number of rows. When it equals both, the program is ambiguous and must say
   `row(v)` or `col(v)`.
Sizes are compared symbolically: `N` and `M` are different sizes even if they happen to be
equal at run time, so a program means the same thing for every binding of its parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.types import Dim, Shape


@dataclass(frozen=True)
class Plan:
    """How two operands are broadcast to the result shape. `lhs_dims`/`rhs_dims` map each
    operand axis to a result axis, or are None when that operand already has the result shape."""

    shape: Shape
    lhs_dims: tuple[int, ...] | None
    rhs_dims: tuple[int, ...] | None


class BroadcastError(Exception):
    """Raised with `ambiguous` set when a vector matches both sides of a square matrix."""

    def __init__(self, ambiguous: bool = False):
        super().__init__("ambiguous broadcast" if ambiguous else "shape mismatch")
        self.ambiguous = ambiguous


def _combine_same_rank(a: Shape, b: Shape) -> Shape | None:
    out: list[Dim] = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return None
    return tuple(out)


def _dims_for(operand: Shape, result: Shape, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    return None if operand == result else dims


def broadcast_plan(lhs: Shape, rhs: Shape) -> Plan:
    """The result shape and the broadcasts of an elementwise operation; raises BroadcastError."""
    if lhs == rhs:
        return Plan(lhs, None, None)
    if not lhs:
        return Plan(rhs, (), None)
    if not rhs:
        return Plan(lhs, None, ())
    if len(lhs) == len(rhs):
        shape = _combine_same_rank(lhs, rhs)
        if shape is None:
            raise BroadcastError()
        full = tuple(range(len(shape)))
        return Plan(shape, _dims_for(lhs, shape, full), _dims_for(rhs, shape, full))
    vector_is_lhs = len(lhs) == 1
    vec, mat = (lhs, rhs) if vector_is_lhs else (rhs, lhs)
    (n,) = vec
    options: list[tuple[Shape, tuple[int, ...]]] = []
    for oriented, dims in (((1, n), (1,)), ((n, 1), (0,))):
        shape = _combine_same_rank(oriented, mat)
        if shape is not None:
            options.append((shape, dims))
    if not options:
        raise BroadcastError()
    if len(options) == 2 and n != 1:
        raise BroadcastError(ambiguous=True)
    shape, vec_dims = options[0]
    mat_dims = _dims_for(mat, shape, (0, 1))
    if vector_is_lhs:
        return Plan(shape, vec_dims, mat_dims)
    return Plan(shape, mat_dims, vec_dims)
