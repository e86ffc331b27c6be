"""Hypothesis strategies that write random well-formed hec programs.

A program declares three size parameters (N, M, K), one input of each shape used below with
a random secrecy and domain, a few let-bindings built shape-first (each expression is drawn
for a target shape, so every operator is applied to operands that fit), some reveals and a
client block that post-processes revealed values with the public-only functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

Shape = tuple[str, ...]
INPUT_SHAPES: list[Shape] = [(), ("N",), ("M",), ("K",), ("N", "M"), ("N", "K"), ("K", "K")]
LET_SHAPES: list[Shape] = [*INPUT_SHAPES, ("M", "N"), ("K", "N")]
DIMS = ("N", "M", "K")
MATRICES = {s for s in LET_SHAPES if len(s) == 2}


def available(shape: Shape) -> bool:
    """Shapes that a leaf can always provide (an input, or the transpose of one)."""
    return len(shape) < 2 or shape in MATRICES


@dataclass
class Env:
    names: dict[str, Shape] = field(default_factory=dict)

    def with_shape(self, shape: Shape) -> list[str]:
        return [n for n, s in self.names.items() if s == shape]


@dataclass
class Generated:
    text: str
    uses_small_matrix: bool  # det/adj: compared separately, see test_properties


def _number(draw: st.DrawFn) -> str:
    value = draw(st.sampled_from(["0.5", "1", "2", "3", "0.25", "1.5", "4"]))
    return value


def _leaf(draw: st.DrawFn, env: Env, shape: Shape) -> str:
    names = env.with_shape(shape)
    if names:
        return draw(st.sampled_from(names))
    if len(shape) == 2 and env.with_shape(shape[::-1]):
        return draw(st.sampled_from(env.with_shape(shape[::-1]))) + ".T"
    if not shape:
        return _number(draw)
    raise AssertionError(f"no leaf of shape {shape}")


def expression(draw: st.DrawFn, env: Env, shape: Shape, depth: int, flags: dict[str, bool]) -> str:
    """A random expression of the given shape (sizes compared symbolically)."""
    if depth <= 0:
        return _leaf(draw, env, shape)
    sub = depth - 1

    def e(s: Shape) -> str:
        return expression(draw, env, s, sub, flags)

    kinds = ["leaf", "add", "scalar", "neg", "pow", "poly", "div", "reduce", "matmul"]
    if len(shape) == 2:
        kinds += ["vector", "transpose"]
    if shape in ((), ("K", "K")):
        kinds.append("small")
    if not shape:
        kinds.append("param")
    kind = draw(st.sampled_from(kinds))
    op = draw(st.sampled_from(["+", "-", "*"]))
    match kind:
        case "leaf":
            return _leaf(draw, env, shape)
        case "param":
            return draw(st.sampled_from(DIMS))
        case "add":
            return f"({e(shape)} {op} {e(shape)})"
        case "scalar":
            return f"({e(())} {op} {e(shape)})"
        case "neg":
            return f"-{e(shape)}"
        case "pow":
            return f"({e(shape)})^{draw(st.integers(1, 3))}"
        case "poly":
            coeffs = draw(
                st.lists(st.sampled_from(["1", "-0.5", "0.25", "2", "0"]), min_size=1, max_size=4)
            )
            return f"poly({e(shape)}, [{', '.join(coeffs)}])"
        case "div":
            divisor = draw(st.sampled_from(["2", "N", "(M + 1)", "(2 * K)", "0.5"]))
            return f"({e(shape)} / {divisor})"
        case "reduce":
            func = draw(st.sampled_from(["sum", "mean"]))
            extra = draw(st.sampled_from(DIMS))
            if not shape and draw(st.booleans()):
                whole = draw(st.sampled_from([s for s in INPUT_SHAPES if s]))
                return f"{func}({e(whole)})"
            if len(shape) >= 2:  # reductions of rank-3 arrays do not exist
                return _leaf(draw, env, shape)
            axis = draw(st.integers(0, len(shape)))
            full = (*shape[:axis], extra, *shape[axis:])
            if not available(full):
                return _leaf(draw, env, shape)
            return f"{func}({e(full)}, axis={axis})"
        case "matmul":
            inner = draw(st.sampled_from(DIMS))
            if not shape:
                return f"({e((inner,))} @ {e((inner,))})"
            if len(shape) == 1:
                if draw(st.booleans()) and available((inner, shape[0])):
                    return f"({e((inner,))} @ {e((inner, shape[0]))})"
                if available((shape[0], inner)):
                    return f"({e((shape[0], inner))} @ {e((inner,))})"
                return _leaf(draw, env, shape)
            if available((shape[0], inner)) and available((inner, shape[1])):
                return f"({e((shape[0], inner))} @ {e((inner, shape[1]))})"
            return _leaf(draw, env, shape)
        case "vector":
            rows, cols = shape
            if rows == cols:
                wrap = draw(st.sampled_from(["row", "col"]))
                return f"({e(shape)} {op} {wrap}({e((rows,))}))"
            along = draw(st.sampled_from([rows, cols]))
            return f"({e((along,))} {op} {e(shape)})"
        case "transpose":
            return f"({e(shape[::-1])}).T"
        case "small":
            flags["small"] = True
            func = "det" if not shape else "adj"
            return f"{func}({e(('K', 'K'))})"
    raise AssertionError(kind)


CLIENT_FORMS = [
    "sqrt(abs({r}))",
    "exp(-abs({r}) / (abs({r}) + 1))",
    "log(1 + abs({r}))",
    "norm_sf({r})",
    "norm_cdf({r})",
    "chi2_sf(abs({r}), df=2)",
    "{r} / ({r} * {r} + 1)",
    "abs({r}) + 2 * N",
]


@st.composite
def programs(draw: st.DrawFn) -> Generated:
    flags: dict[str, bool] = {}
    bounds = {d: draw(st.integers(1, 6 if d == "K" else 10_000)) for d in DIMS}
    lines = [f"param {d} <= {bounds[d]}" for d in DIMS]
    env = Env()
    for i, shape in enumerate(INPUT_SHAPES):
        name = f"x{i}"
        secret = draw(st.booleans()) or i == 0
        lo = draw(st.sampled_from([-2.0, -1.0, 0.0]))
        if draw(st.booleans()):
            domain = f"in [{lo}, {lo + draw(st.sampled_from([1.0, 2.5, 4.0]))}]"
        else:
            values = sorted(
                set(draw(st.lists(st.sampled_from([-1, 0, 1, 2]), min_size=1, max_size=3)))
            )
            domain = "in {" + ", ".join(str(v) for v in values) + "}"
        dims = f"[{', '.join(shape)}]" if shape else ""
        lines.append(f"input {name}: {'secret' if secret else 'public'}{dims} {domain}")
        env.names[name] = shape
    for i in range(draw(st.integers(1, 5))):
        shape = draw(st.sampled_from(LET_SHAPES))
        lines.append(f"t{i} = {expression(draw, env, shape, draw(st.integers(1, 4)), flags)}")
        env.names[f"t{i}"] = shape
    revealed: dict[str, Shape] = {}
    for i in range(draw(st.integers(1, 3))):
        shape = draw(st.sampled_from(LET_SHAPES))
        body = expression(draw, env, shape, draw(st.integers(0, 2)), flags)
        lines.append(f"reveal r{i} = {body}")
        env.names[f"r{i}"] = shape
        revealed[f"r{i}"] = shape
    lets = [name for name in env.names if name.startswith("t")]
    if lets and draw(st.booleans()):
        name = draw(st.sampled_from(lets))
        lines.append(f"reveal {name}")
        revealed[name] = env.names[name]
    client = []
    for i in range(draw(st.integers(0, 3))):
        r = draw(st.sampled_from(sorted(revealed)))
        client.append(f"  c{i} = " + draw(st.sampled_from(CLIENT_FORMS)).format(r=r))
    if client:
        lines += ["client {", *client, "}"]
    return Generated("\n".join(lines) + "\n", flags.get("small", False))


# The pieces of the language, for token-soup programs.
TOKENS = [
    "param", "input", "reveal", "client", "secret", "public", "in", "N", "M", "x", "y", "S",
    "sum", "mean", "poly", "det", "adj", "row", "col", "sqrt", "chi2_sf", "axis", "df",
    "=", "<=", "+", "-", "*", "/", "@", "^", ".T", "(", ")", "[", "]", "{", "}", ",", ":",
    "0", "1", "2", "2.5", "-1", "1e3", "#", "\n",
]  # fmt: skip
