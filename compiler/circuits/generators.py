"""Circuit generators for integer arithmetic on words of bits, each parameterised by width.

The constructions are those of H. Chen's survey of homomorphic integer arithmetic (the seed
slides: ripple-carry and carry-lookahead adders, log-depth prefix adders, 3-for-2 carry-save
reduction, array and tree multipliers) and the textbook ones (N. Weste, D. Harris, "CMOS VLSI
Design", ch. 11): Sklansky, Kogge-Stone and Brent-Kung prefix networks; Wallace's row-wise and
Dadda's column-wise compression; restoring and non-restoring division.

Two facts shape every construction here:
- the generate g = a & b and propagate p = a ^ b of one position are never both 1, and neither
  are a group's generate G and propagate P, so the prefix operator
  (G, P) o (G', P') = (G | P G', P P') is built as (G ^ P G', P P'): the same function, one
  multiplication instead of two in BFV (XOR is free there);
- carries are majorities (one FHEW bootstrap, one BFV multiplication) and sums three-input
  parities (one bootstrap, free in BFV).

Building blocks take a `Circuit` and words (least significant bit first) and return words; the
`build_*` functions make a whole circuit with inputs `a`, `b` (and more where stated) and
output `c`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TypeVar

from compiler.circuits.netlist import FALSE, TRUE, Circuit, Lit, Word, negate
from compiler.errors import UserError

MAX_WIDTH = 4096
T = TypeVar("T")

ADDERS = ("ripple", "cla", "sklansky", "kogge-stone", "brent-kung")
PREFIX = ("sklansky", "kogge-stone", "brent-kung")


def check_width(width: int, what: str = "width") -> None:
    if isinstance(width, bool) or not isinstance(width, int):
        raise UserError(f"{what} must be an integer, got {width!r}")
    if not 1 <= width <= MAX_WIDTH:
        raise UserError(f"{what} {width} is out of range; it must be between 1 and {MAX_WIDTH}")


def _check_same(a: Word, b: Word) -> None:
    if len(a) != len(b):
        raise UserError(f"operand widths differ ({len(a)} and {len(b)} bits)")


# ---- adders -------------------------------------------------------------------------------


def ripple_add(c: Circuit, a: Word, b: Word, cin: Lit = FALSE) -> tuple[Word, Lit]:
    """Ripple-carry adder: sum_i = a_i ^ b_i ^ carry_i, carry_{i+1} = maj(a_i, b_i, carry_i).
    Returns (sum, carry out)."""
    _check_same(a, b)
    carry = cin
    out = []
    for x, y in zip(a, b, strict=True):
        out.append(c.xor(c.xor(x, y), carry))
        carry = c.maj(x, y, carry)
    return out, carry


def _combine(c: Circuit, hi: tuple[Lit, Lit], lo: tuple[Lit, Lit]) -> tuple[Lit, Lit]:
    """The prefix operator on (generate, propagate) pairs, with exclusive OR (module doc)."""
    return c.xor(hi[0], c.and_(hi[1], lo[0])), c.and_(hi[1], lo[1])


def _prefix(c: Circuit, items: list[tuple[Lit, Lit]], network: str) -> list[tuple[Lit, Lit]]:
    """All prefixes items[i] o ... o items[0] by the named parallel-prefix network."""
    x = list(items)
    m = len(x)
    if network == "sklansky":
        level = 0
        while (1 << level) < m:
            for i in range(m):
                if (i >> level) & 1:
                    j = ((i >> level) << level) - 1
                    x[i] = _combine(c, x[i], x[j])
            level += 1
    elif network == "kogge-stone":
        d = 1
        while d < m:
            x = [x[i] if i < d else _combine(c, x[i], x[i - d]) for i in range(m)]
            d *= 2
    elif network == "brent-kung":
        d = 1
        while d < m:
            for i in range(2 * d - 1, m, 2 * d):
                x[i] = _combine(c, x[i], x[i - d])
            d *= 2
        d //= 2
        while d >= 1:
            for i in range(3 * d - 1, m, 2 * d):
                x[i] = _combine(c, x[i], x[i - d])
            d //= 2
    else:
        raise UserError(f"unknown prefix network '{network}'; expected one of {', '.join(PREFIX)}")
    return x


def prefix_add(
    c: Circuit, a: Word, b: Word, network: str, cin: Lit = FALSE, carry_out: bool = True
) -> tuple[Word, Lit]:
    """Parallel-prefix adder: carries from the prefixes of (g_i, p_i) (with the carry in as
    position -1); AND depth 1 + ceil(log2 m) for m prefix positions."""
    _check_same(a, b)
    n = len(a)
    g = [c.and_(x, y) for x, y in zip(a, b, strict=True)]
    p = [c.xor(x, y) for x, y in zip(a, b, strict=True)]
    needed = n if carry_out else n - 1
    items = [(g[i], p[i]) for i in range(needed)]
    if cin != FALSE:
        items = [(cin, FALSE), *items]
    pre = _prefix(c, items, network)
    shift = 1 if cin != FALSE else 0
    carries = [cin] + [pre[i + shift][0] for i in range(needed)]
    out = [c.xor(p[i], carries[i]) for i in range(n)]
    return out, carries[n] if carry_out else FALSE


def cla_add(
    c: Circuit, a: Word, b: Word, block: int, cin: Lit = FALSE, carry_out: bool = True
) -> tuple[Word, Lit]:
    """Carry-lookahead adder with blocks of `block` bits: inside a block every carry is the
    flat lookahead sum g_{i-1} + p_{i-1} g_{i-2} + ... + p_{i-1}...p_s C (its terms are mutually
    exclusive, so the sum is an XOR, and each product a balanced AND tree); block carries
    ripple: C_{j+1} = G_j ^ P_j C_j."""
    _check_same(a, b)
    n = len(a)
    if isinstance(block, bool) or not isinstance(block, int) or block < 1:
        raise UserError(f"carry-lookahead block size must be a positive integer, got {block!r}")
    if n % block:
        raise UserError(
            f"carry-lookahead block size {block} does not divide the width {n}; "
            f"use a divisor of {n} (e.g. {max(d for d in range(1, 5) if n % d == 0)})"
        )
    g = [c.and_(x, y) for x, y in zip(a, b, strict=True)]
    p = [c.xor(x, y) for x, y in zip(a, b, strict=True)]
    out: Word = []
    carry = cin
    for start in range(0, n, block):
        for i in range(start, start + block):
            # carry into bit i
            terms = [
                c.and_all([*p[j + 1 : i], g[j]]) for j in range(start, i)
            ]  # g_j propagated to i
            terms.append(c.and_all([*p[start:i], carry]))
            out.append(c.xor(p[i], c.xor_all(terms)))
        end = start + block
        if end < n or carry_out:
            group_g = c.xor_all(c.and_all([*p[j + 1 : end], g[j]]) for j in range(start, end))
            group_p = c.and_all(p[start:end])
            carry = c.xor(group_g, c.and_(group_p, carry))
    return out, carry if carry_out else FALSE


def add(
    c: Circuit,
    a: Word,
    b: Word,
    adder: str = "kogge-stone",
    block: int = 4,
    cin: Lit = FALSE,
    carry_out: bool = False,
) -> tuple[Word, Lit]:
    """a + b + cin by the named adder (one of ADDERS)."""
    if adder == "ripple":
        return ripple_add(c, a, b, cin)
    if adder == "cla":
        return cla_add(c, a, b, block, cin, carry_out)
    if adder in PREFIX:
        return prefix_add(c, a, b, adder, cin, carry_out)
    raise UserError(f"unknown adder '{adder}'; expected one of {', '.join(ADDERS)}")


def subtract(c: Circuit, a: Word, b: Word, adder: str = "ripple") -> tuple[Word, Lit]:
    """a - b as a + ~b + 1; the carry out is 1 exactly when a >= b (unsigned)."""
    return add(c, a, [negate(x) for x in b], adder, cin=TRUE, carry_out=True)


# ---- carry-save reduction -----------------------------------------------------------------


def _full_adder(c: Circuit, x: Lit, y: Lit, z: Lit) -> tuple[Lit, Lit]:
    return c.xor(c.xor(x, y), z), c.maj(x, y, z)


def carry_save_sum(
    c: Circuit, words: Sequence[Word], adder: str = "kogge-stone", block: int = 4
) -> Word:
    """Sum of t words modulo 2^width by 3-for-2 carry-save reduction (Wallace on words: each
    layer turns every three words into two, depth ~ log_{3/2} t layers) and one final adder."""
    if not words:
        raise UserError("carry-save sum of no operands")
    width = len(words[0])
    for w in words:
        if len(w) != width:
            raise UserError(f"operand widths differ ({len(w)} and {width} bits)")
    layer = [list(w) for w in words]
    while len(layer) > 2:
        layer.sort(key=lambda w: max(map(c.and_depth_of, w)))
        nxt: list[Word] = []
        for i in range(0, len(layer) - 2, 3):
            x, y, z = layer[i : i + 3]
            pairs = [_full_adder(c, x[j], y[j], z[j]) for j in range(width)]
            nxt.append([s for s, _ in pairs])
            nxt.append([FALSE, *[cy for _, cy in pairs][: width - 1]])
        nxt.extend(layer[len(layer) - len(layer) % 3 :])
        layer = nxt
    if len(layer) == 1:
        return layer[0]
    return add(c, layer[0], layer[1], adder, block)[0]


def _compress_columns(
    c: Circuit, columns: list[list[Lit]], scheme: str, adder: str, block: int
) -> Word:
    """Reduces columns of bits (column j has weight 2^j; bits beyond the last column are
    dropped) to two rows by Wallace or Dadda compression, then adds them."""
    width = len(columns)
    cols = [list(col) for col in columns]

    def fa(j: int, bits: list[Lit], nxt: list[list[Lit]]) -> None:
        s, cy = _full_adder(c, *bits)
        nxt[j].append(s)
        if j + 1 < width:
            nxt[j + 1].append(cy)

    def ha(j: int, x: Lit, y: Lit, nxt: list[list[Lit]]) -> None:
        nxt[j].append(c.xor(x, y))
        if j + 1 < width:
            nxt[j + 1].append(c.and_(x, y))

    def by_depth(col: list[Lit]) -> list[Lit]:
        # the shallowest bits go into the next adders (stable: equal depths keep their order)
        return sorted(col, key=c.and_depth_of)

    if scheme == "wallace":
        while max(len(col) for col in cols) > 2:
            nxt: list[list[Lit]] = [[] for _ in range(width)]
            for j, col in enumerate(map(by_depth, cols)):
                i = 0
                while len(col) - i >= 3:
                    fa(j, col[i : i + 3], nxt)
                    i += 3
                if len(col) - i == 2 and len(col) > 2:
                    ha(j, col[i], col[i + 1], nxt)
                    i += 2
                nxt[j].extend(col[i:])
            cols = nxt
    elif scheme == "dadda":
        heights = [2]
        while heights[-1] < max(len(col) for col in cols):
            heights.append(heights[-1] * 3 // 2)
        for target in reversed(heights[:-1]):
            nxt = [[] for _ in range(width)]
            for j in range(width):
                col = by_depth(cols[j])
                i = 0
                # bits this column will hold: what is left plus what the stage already put in
                while len(col) - i + len(nxt[j]) > target:
                    excess = len(col) - i + len(nxt[j]) - target
                    if excess >= 2 and len(col) - i >= 3:
                        fa(j, col[i : i + 3], nxt)
                        i += 3
                    elif len(col) - i >= 2:
                        ha(j, col[i], col[i + 1], nxt)
                        i += 2
                    else:
                        break
                nxt[j].extend(col[i:])
            cols = nxt
    else:
        raise UserError(f"unknown compression scheme '{scheme}'; expected wallace or dadda")
    row0 = [col[0] if len(col) > 0 else FALSE for col in cols]
    row1 = [col[1] if len(col) > 1 else FALSE for col in cols]
    return add(c, row0, row1, adder, block)[0]


# ---- multipliers --------------------------------------------------------------------------

MULTIPLIERS = ("array", "wallace", "dadda")


def multiply(
    c: Circuit,
    a: Word,
    b: Word,
    kind: str = "dadda",
    full: bool = False,
    adder: str = "kogge-stone",
    block: int = 4,
) -> Word:
    """a * b: modulo 2^n (truncated, `full` False) or the full 2n-bit product. "array" adds
    the shifted partial-product rows one after another with ripple-carry adders; "wallace"
    reduces the rows three at a time with word-level 3-for-2 layers; "dadda" compresses the
    partial-product columns to Dadda's heights 2, 3, 4, 6, 9, ...; both end with `adder`. The
    truncated forms build only the partial products of the low n columns."""
    _check_same(a, b)
    n = len(a)
    width = 2 * n if full else n
    columns: list[list[Lit]] = [[] for _ in range(width)]
    for i, y in enumerate(b):
        for j, x in enumerate(a):
            if i + j < width:
                columns[i + j].append(c.and_(x, y))
    if kind == "array":
        acc = [FALSE] * width
        for i, y in enumerate(b):
            row = [FALSE] * i + [c.and_(x, y) for x in a]
            row = (row + [FALSE] * width)[:width]
            if i == 0:
                acc = row
                continue
            # bits below i are final; add the row from position i upward
            high, _ = ripple_add(c, acc[i:], row[i:])
            acc = acc[:i] + high
        return acc
    if kind == "wallace":
        # Wallace's own formulation: the partial-product rows, three at a time, through
        # word-level 3-for-2 layers (constant-zero positions fold away); log_{3/2} n layers
        # for every column, where column compression would ripple carries through the sparse
        # top columns of a 2n-bit product.
        rows = []
        for i, y in enumerate(b):
            row = [FALSE] * i + [c.and_(x, y) for x in a]
            rows.append((row + [FALSE] * width)[:width])
        return carry_save_sum(c, rows, adder, block)
    if kind == "dadda":
        return _compress_columns(c, columns, kind, adder, block)
    raise UserError(f"unknown multiplier '{kind}'; expected one of {', '.join(MULTIPLIERS)}")


# ---- comparison, selection ----------------------------------------------------------------

COMPARATORS = ("ripple", "tree")


def less_than(c: Circuit, a: Word, b: Word, signed: bool = False, structure: str = "tree") -> Lit:
    """a < b. Unsigned: "ripple" is the borrow chain of a - b, borrow_{i+1} =
    maj(~a_i, b_i, borrow_i) (one bootstrap per bit); "tree" combines (lt, eq) pairs of bit
    ranges, (LT, EQ) o (LT', EQ') = (LT ^ EQ LT', EQ EQ'), in ceil(log2 n) levels. Signed
    (two's complement): the same on operands with their sign bits inverted."""
    _check_same(a, b)
    if signed:
        a = [*a[:-1], negate(a[-1])]
        b = [*b[:-1], negate(b[-1])]
    if structure == "ripple":
        borrow = FALSE
        for x, y in zip(a, b, strict=True):
            borrow = c.maj(negate(x), y, borrow)
        return borrow
    if structure != "tree":
        raise UserError(
            f"unknown comparator structure '{structure}'; expected one of {', '.join(COMPARATORS)}"
        )
    items = [(c.and_(negate(x), y), c.xnor(x, y)) for x, y in zip(a, b, strict=True)]
    while len(items) > 1:
        nxt = []
        for i in range(0, len(items) - 1, 2):
            lo, hi = items[i], items[i + 1]
            nxt.append((c.xor(hi[0], c.and_(hi[1], lo[0])), c.and_(hi[1], lo[1])))
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    return items[0][0]


def equal(c: Circuit, a: Word, b: Word) -> Lit:
    _check_same(a, b)
    return c.and_all(c.xnor(x, y) for x, y in zip(a, b, strict=True))


def select(c: Circuit, s: Lit, a: Word, b: Word) -> Word:
    """s ? a : b, bitwise."""
    _check_same(a, b)
    return [c.mux(s, x, y) for x, y in zip(a, b, strict=True)]


def minimum(c: Circuit, a: Word, b: Word, signed: bool = False, structure: str = "tree") -> Word:
    return select(c, less_than(c, a, b, signed, structure), a, b)


def maximum(c: Circuit, a: Word, b: Word, signed: bool = False, structure: str = "tree") -> Word:
    return select(c, less_than(c, a, b, signed, structure), b, a)


# ---- division, popcount, shifts -----------------------------------------------------------


def restoring_divide(c: Circuit, a: Word, b: Word, adder: str = "ripple") -> tuple[Word, Word]:
    """Unsigned restoring division, one quotient bit per step from the most significant:
    T = 2R + a_i; q_i = [T >= b]; R = q_i ? T - b : T. Returns (quotient, remainder). Division by
    zero gives quotient 2^n - 1 and remainder a (every trial subtraction succeeds)."""
    _check_same(a, b)
    n = len(a)
    rem: Word = [FALSE] * n
    quotient: Word = [FALSE] * n
    b_ext = [*b, FALSE]
    for i in range(n - 1, -1, -1):
        trial = [a[i], *rem]  # n + 1 bits: 2R + a_i
        diff, no_borrow = subtract(c, trial, b_ext, adder)
        quotient[i] = no_borrow
        rem = select(c, no_borrow, diff[:n], trial[:n])
    return quotient, rem


def nonrestoring_divide(c: Circuit, a: Word, b: Word, adder: str = "ripple") -> tuple[Word, Word]:
    """Unsigned non-restoring division: the partial remainder R (n + 1 bits, two's complement)
    stays in [-b, b); each step R = 2R + a_i - b when R >= 0, else 2R + a_i + b (one adder whose
    operand is b XOR the add/subtract control, no selection), q_i = [R >= 0]; a final
    R += b when R < 0. The same results as `restoring_divide` (b = 0 included) without a MUX
    per remainder bit. Returns (quotient, remainder)."""
    _check_same(a, b)
    n = len(a)
    rem: Word = [FALSE] * (n + 1)
    quotient: Word = [FALSE] * n
    b_ext = [*b, FALSE]
    for i in range(n - 1, -1, -1):
        sub = negate(rem[n])  # subtract while the remainder is not negative
        shifted = [a[i], *rem[:n]]
        operand = [c.xor(x, sub) for x in b_ext]
        rem, _ = add(c, shifted, operand, adder, cin=sub)
        quotient[i] = negate(rem[n])
    correction = [c.and_(x, rem[n]) for x in b_ext]
    fixed, _ = add(c, rem, correction, adder)
    return quotient, fixed[:n]


def popcount(c: Circuit, a: Word, adder: str = "ripple") -> Word:
    """Number of ones of `a`, ceil(log2(n + 1)) bits, by Wallace compression of one column."""
    width = max(1, len(a).bit_length())
    columns: list[list[Lit]] = [list(a)] + [[] for _ in range(width - 1)]
    if width == 1:
        return [a[0]]
    return _compress_columns(c, columns, "wallace", adder, 1)


SHIFTS = ("shl", "lshr", "ashr", "rotl", "rotr")


def shift(a: list[T], kind: str, amount: int, zero: T) -> list[T]:
    """Shift or rotation by a constant: wires only, no gates (`zero`: the fill bit, FALSE in a
    Boolean circuit, the constant 0 in an arithmetic one)."""
    n = len(a)
    if isinstance(amount, bool) or not isinstance(amount, int) or not 0 <= amount < n:
        raise UserError(
            f"shift amount {amount!r} is out of range for a {n}-bit word; it must be in [0, {n})"
        )
    if kind == "shl":
        return [zero] * amount + a[: n - amount]
    if kind == "lshr":
        return a[amount:] + [zero] * amount
    if kind == "ashr":
        return a[amount:] + [a[-1]] * amount
    if kind == "rotl":
        return a[n - amount :] + a[: n - amount]
    if kind == "rotr":
        return a[amount:] + a[:amount]
    raise UserError(f"unknown shift '{kind}'; expected one of {', '.join(SHIFTS)}")


# ---- whole circuits -----------------------------------------------------------------------


def _binary(width: int, body: Callable[[Circuit, Word, Word], dict[str, Word]]) -> Circuit:
    check_width(width)
    c = Circuit()
    a = c.input("a", width)
    b = c.input("b", width)
    for name, bits in body(c, a, b).items():
        c.output(name, bits)
    return c


def build_adder(width: int, adder: str = "kogge-stone", block: int = 4) -> Circuit:
    """c = a + b mod 2^width."""
    return _binary(width, lambda c, a, b: {"c": add(c, a, b, adder, block)[0]})


def build_multi_adder(
    width: int, operands: int, adder: str = "kogge-stone", block: int = 4
) -> Circuit:
    """c = x0 + ... + x_{t-1} mod 2^width by a 3-for-2 carry-save tree."""
    check_width(width)
    if isinstance(operands, bool) or not isinstance(operands, int) or operands < 2:
        raise UserError(f"a carry-save tree needs at least 2 operands, got {operands!r}")
    c = Circuit()
    words = [c.input(f"x{i}", width) for i in range(operands)]
    c.output("c", carry_save_sum(c, words, adder, block))
    return c


def build_multiplier(
    width: int,
    kind: str = "dadda",
    full: bool = False,
    adder: str = "kogge-stone",
    block: int = 4,
) -> Circuit:
    """c = a * b, modulo 2^width or (full) as a 2*width-bit product."""
    return _binary(width, lambda c, a, b: {"c": multiply(c, a, b, kind, full, adder, block)})


COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")


def build_comparator(
    width: int, op: str = "lt", signed: bool = False, structure: str = "tree"
) -> Circuit:
    """c = [a op b] (one bit)."""

    def body(c: Circuit, a: Word, b: Word) -> dict[str, Word]:
        if op == "eq":
            return {"c": [equal(c, a, b)]}
        if op == "ne":
            return {"c": [negate(equal(c, a, b))]}
        if op == "lt":
            return {"c": [less_than(c, a, b, signed, structure)]}
        if op == "gt":
            return {"c": [less_than(c, b, a, signed, structure)]}
        if op == "le":
            return {"c": [negate(less_than(c, b, a, signed, structure))]}
        if op == "ge":
            return {"c": [negate(less_than(c, a, b, signed, structure))]}
        raise UserError(f"unknown comparison '{op}'; expected one of {', '.join(COMPARISONS)}")

    if op not in COMPARISONS:
        raise UserError(f"unknown comparison '{op}'; expected one of {', '.join(COMPARISONS)}")
    return _binary(width, body)


def build_minmax(
    width: int, op: str = "min", signed: bool = False, structure: str = "tree"
) -> Circuit:
    if op not in ("min", "max"):
        raise UserError(f"unknown operation '{op}'; expected min or max")
    fn = minimum if op == "min" else maximum
    return _binary(width, lambda c, a, b: {"c": fn(c, a, b, signed, structure)})


def build_select(width: int) -> Circuit:
    """c = s ? a : b with a one-bit input s."""
    check_width(width)
    c = Circuit()
    s = c.input("s", 1)
    a = c.input("a", width)
    b = c.input("b", width)
    c.output("c", select(c, s[0], a, b))
    return c


DIVIDERS = ("restoring", "non-restoring")


def build_divider(width: int, adder: str = "ripple", algorithm: str = "restoring") -> Circuit:
    """q = a // b and r = a % b (unsigned; b = 0 gives q = 2^width - 1, r = a)."""
    if algorithm not in DIVIDERS:
        raise UserError(f"unknown divider '{algorithm}'; expected one of {', '.join(DIVIDERS)}")
    divide = restoring_divide if algorithm == "restoring" else nonrestoring_divide

    def body(c: Circuit, a: Word, b: Word) -> dict[str, Word]:
        q, r = divide(c, a, b, adder)
        return {"q": q, "r": r}

    return _binary(width, body)


def build_popcount(width: int, adder: str = "ripple") -> Circuit:
    check_width(width)
    c = Circuit()
    a = c.input("a", width)
    c.output("c", popcount(c, a, adder))
    return c


def build_shift(width: int, kind: str, amount: int) -> Circuit:
    check_width(width)
    c = Circuit()
    a = c.input("a", width)
    c.output("c", shift(a, kind, amount, FALSE))
    return c


def seed_multiplier_depth_bound(width: int) -> int:
    """The seed's multiplication depth 1 + d + ceil(log2(n + d + 2)), d = ceil(log_{3/2} n)."""
    d = math.ceil(math.log(width, 1.5) - 1e-12) if width > 1 else 0
    return 1 + d + math.ceil(math.log2(width + d + 2))
