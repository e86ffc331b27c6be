"""The Newton-Schulz iteration for an approximate inverse of a small matrix, and the ranges
it provably keeps (`inv_approx(A, steps)`, issue 21).

For a k x k matrix A whose entries lie in [-m, m], k at most its bound k_b, the program
computes, with the public constant c = (k_b m)^2 fixed at compile time,

    X_0     = A^T * (1/c)
    X_{i+1} = X_i @ (2 I - A @ X_i),      i = 0 .. steps - 1,

and returns X_steps (Schulz 1933; Ben-Israel and Cohen, SIAM J. Numer. Anal. 3, 1966, for
the choice X_0 = A^T / c with c >= ||A||_2^2). Only additions, products and one public
constant: every step is two ciphertext matrix products, so the depth is 2 steps + 1 (the
constant 1/c costs one level).

Theorem (the ranges `ranges()` states). Let A = U diag(s) V^T be a singular value
decomposition. Since ||A||_2^2 <= ||A||_F^2 <= k^2 m^2 <= c, every singular value s_j lies
in [0, sqrt(c)]. Define g_0(t) = t / c and g_{i+1} = g_i (2 - g_i). Then for every i

    X_i = V diag(g_i(s_j^2) / s_j) U^T        (the term is 0 where s_j = 0)
    A X_i = U diag(g_i(s_j^2)) U^T,   2 I - A X_i = U diag(2 - g_i(s_j^2)) U^T.

Proof by induction: X_0 = A^T / c = V diag(s_j / c) U^T = V diag(g_0(s_j^2) / s_j) U^T, and
if X_i has this form, A X_i = U diag(s_j) V^T V diag(g_i / s_j) U^T = U diag(g_i) U^T, so
X_{i+1} = X_i (2 I - A X_i) = V diag((g_i / s_j)(2 - g_i)) U^T = V diag(g_{i+1} / s_j) U^T.

Now g_0(s^2) = s^2 / c lies in [0, 1], and x -> x (2 - x) maps [0, 1] into [0, 1], so every
g_i(s_j^2) is in [0, 1]; and g_{i+1} = g_i (2 - g_i) <= 2 g_i, so g_i(t) <= 2^i t / c.
Consequences, with |M_pq| = |e_p^T M e_q| <= ||M||_2 for every entry:

1. A X_i is symmetric with eigenvalues in [0, 1]. Its diagonal entries e_p^T (A X_i) e_p
   lie in [0, 1]; an off-diagonal entry is one of A X_i - I/2, whose norm is at most 1/2.
   Every entry is in [-1/2, 1].
2. 2 I - A X_i is symmetric with eigenvalues in [1, 2]: diagonal entries in [1, 2], the
   others at most (2 - 1) / 2 in magnitude. Every entry is in [-1/2, 2].
3. The singular values of X_i are g_i(s^2) / s <= min(2^i s / c, 1 / s) <= 2^(i/2) / sqrt(c)
   (the two bounds cross at s^2 = c / 2^i). Every entry of X_i is in
   [-2^(i/2) / sqrt(c), 2^(i/2) / sqrt(c)].

These hold for every A within the declared domain and every size up to the bound, singular
or not, so they are ranges of the computed values, not estimates. Interval arithmetic on the
iteration gives bounds growing doubly exponentially (b_{i+1} ~ k b_i (2 + k m b_i)), for which
no CKKS parameters exist after a few steps; the compiler attaches the ranges above to the ops
that compute these values (`proven_range`, compiler/analysis/ranges.py) and every range
analysis intersects its own result with them.

Convergence: for a nonsingular A the residual I - A X_i = U diag(1 - g_i) U^T, and
1 - g_{i+1} = (1 - g_i)^2, so ||I - A X_i||_2 = (1 - s_min^2 / c)^(2^i): quadratic once the
residual is below 1, after about log2(c / s_min^2) steps to get there. `steps_for` gives the
number of steps that brings the residual below a tolerance for a lower bound on s_min.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from compiler.types import Interval

# The most steps a program may ask for: 2^16 / sqrt(c) bounds X, and the depth 33.
MAX_STEPS = 16

# The proven ranges of A @ X_i and of 2 I - A @ X_i (module docstring, 1 and 2).
PRODUCT_RANGE = Interval(-0.5, 1.0)
COMPLEMENT_RANGE = Interval(-0.5, 2.0)


@dataclass(frozen=True)
class NewtonSchulz:
    """The iteration for one `inv_approx(A, steps)`: k_b the bound of A's dimension, m the
    largest magnitude of A's entries (from its range)."""

    k_bound: int
    magnitude: float
    steps: int

    @property
    def scale(self) -> float:
        """c = (k_b m)^2: at least ||A||_F^2 >= ||A||_2^2 for every A in the domain."""
        return (self.k_bound * self.magnitude) ** 2

    def x_range(self, i: int) -> Interval:
        """The proven range of X_i's entries: [-b, b] with b = 2^(i/2) / sqrt(c)."""
        b = 2.0 ** (i / 2) / math.sqrt(self.scale)
        return Interval(-b, b)

    @property
    def depth(self) -> int:
        """Multiplicative depth of X_steps: one level for 1/c, two products per step."""
        return 2 * self.steps + 1

    def evaluate(self, a: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """X_steps for the matrix `a`, in floating point (the plaintext reference)."""
        a = np.asarray(a, dtype=np.float64)
        two = 2.0 * np.eye(a.shape[0])
        x = a.T * (1.0 / self.scale)
        for _ in range(self.steps):
            x = x @ (two - a @ x)
        return x


def steps_for(scale: float, sigma_min: float, tolerance: float) -> int:
    """The fewest steps after which ||I - A X||_2 = (1 - sigma_min^2 / c)^(2^steps) is at
    most `tolerance` (0 < tolerance < 1, 0 < sigma_min <= sqrt(c))."""
    q = 1.0 - sigma_min**2 / scale
    if q <= 0.0:
        return 0
    # q^(2^s) <= tol  <=>  2^s >= log(tol) / log(q)
    return max(0, math.ceil(math.log2(math.log(tolerance) / math.log(q))))
