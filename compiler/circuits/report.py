"""The tables of docs/circuits.md, computed from the generators: exact metrics of each
construction at several widths, the chooser's pick per target, and the ABC flow's effect.

`python -m compiler.circuits.report` prints them; `--write` replaces the generated sections of
docs/circuits.md (tests/circuits/test_report.py checks that the document is up to date).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from compiler.circuits import generators as gen
from compiler.circuits.abc import optimize
from compiler.circuits.chooser import choose
from compiler.circuits.metrics import measure
from compiler.circuits.netlist import Circuit

HEADER = (
    "| circuit | width | gates (and/xor/mux/maj) | depth | AND count | AND depth "
    "| bootstraps | bootstrap levels |\n|---|---|---|---|---|---|---|---|"
)


def _rows() -> list[tuple[str, int, Callable[[], Circuit]]]:
    rows: list[tuple[str, int, Callable[[], Circuit]]] = []
    for w in (8, 16, 64):
        for adder, block in (
            ("ripple", 4),
            ("cla", 4),
            ("sklansky", 4),
            ("kogge-stone", 4),
            ("brent-kung", 4),
        ):
            label = f"add, {adder}" + ("/4" if adder == "cla" else "")
            rows.append((label, w, lambda w=w, a=adder, b=block: gen.build_adder(w, a, b)))
    for w in (16,):
        for t in (3, 8):
            rows.append(
                (
                    f"sum of {t}, carry-save + sklansky",
                    w,
                    lambda w=w, t=t: gen.build_multi_adder(w, t, "sklansky"),
                )
            )
    for w in (8, 16):
        for full in (False, True):
            size = f"{w}x{w}->{2 * w if full else w}"
            for kind, adder in (
                ("array", "ripple"),
                ("wallace", "sklansky"),
                ("dadda", "sklansky"),
                ("dadda", "ripple"),
            ):
                label = f"mul {size}, {kind}" + ("" if kind == "array" else f" + {adder}")
                rows.append(
                    (
                        label,
                        w,
                        lambda w=w, k=kind, f=full, a=adder: gen.build_multiplier(w, k, f, a),
                    )
                )
    for w in (8, 16, 64):
        for structure in gen.COMPARATORS:
            rows.append(
                (
                    f"a < b, {structure}",
                    w,
                    lambda w=w, s=structure: gen.build_comparator(w, "lt", False, s),
                )
            )
        rows.append(("a == b", w, lambda w=w: gen.build_comparator(w, "eq")))
    for w in (8, 16):
        for structure in gen.COMPARATORS:
            rows.append(
                (
                    f"min, {structure}",
                    w,
                    lambda w=w, s=structure: gen.build_minmax(w, "min", False, s),
                )
            )
        for alg in gen.DIVIDERS:
            rows.append(
                (
                    f"{alg} divide (q, r)",
                    w,
                    lambda w=w, alg=alg: gen.build_divider(w, "ripple", alg),
                )
            )
    for w in (8, 16, 64):
        rows.append(("popcount", w, lambda w=w: gen.build_popcount(w)))
    return rows


def metrics_table() -> str:
    lines = [HEADER]
    for label, width, build in _rows():
        m = measure(build())
        g = m.gates
        kinds = f"{g['and']}/{g['xor']}/{g['mux']}/{g['maj']}"
        lines.append(
            f"| {label} | {width} | {m.gate_count} ({kinds}) | {m.depth} | {m.and_count} "
            f"| {m.and_depth} | {m.bootstraps} | {m.bootstrap_levels} |"
        )
    return "\n".join(lines)


def chooser_table() -> str:
    lines = ["| operation | width | target | chosen | cost |", "|---|---|---|---|---|"]
    for op, widths in (
        ("add", (8, 16, 64)),
        ("mul", (8, 16)),
        ("mul_full", (16,)),
        ("lt", (8, 16)),
        ("div", (8,)),
    ):
        for w in widths:
            for target in ("fhew", "bfv"):
                ch = choose(op, w, target)
                m = ch.metrics
                cost = (
                    f"{m.bootstraps} bootstraps, {m.bootstrap_levels} levels"
                    if target == "fhew"
                    else f"AND depth {m.and_depth}, {m.and_count} ANDs"
                )
                lines.append(f"| {op} | {w} | {target} | {ch.name} | {cost} |")
    return "\n".join(lines)


def abc_table() -> str:
    lines = [
        "| circuit (8-bit) | before ABC: bootstraps / AND depth / ANDs "
        "| after ABC | kept for FHEW | kept for BFV |",
        "|---|---|---|---|---|",
    ]
    cases = [
        ("add, ripple", gen.build_adder(8, "ripple")),
        ("add, sklansky", gen.build_adder(8, "sklansky")),
        ("mul 8x8->8, array", gen.build_multiplier(8, "array")),
        ("mul 8x8->8, dadda + sklansky", gen.build_multiplier(8, "dadda", False, "sklansky")),
        ("a < b, tree", gen.build_comparator(8, "lt")),
        ("min, ripple", gen.build_minmax(8, "min", False, "ripple")),
        ("restoring divide", gen.build_divider(8)),
        ("non-restoring divide", gen.build_divider(8, "ripple", "non-restoring")),
        ("popcount", gen.build_popcount(8)),
    ]
    for label, c in cases:
        fhew, bfv = optimize(c, "fhew"), optimize(c, "bfv")
        b, a = fhew.before, fhew.after_abc
        kept = ["ABC" if r.used_abc else "generated" for r in (fhew, bfv)]
        lines.append(
            f"| {label} | {b.bootstraps} / {b.and_depth} / {b.and_count} "
            f"| {a.bootstraps} / {a.and_depth} / {a.and_count} "
            f"| {kept[0]} | {kept[1]} |"
        )
    return "\n".join(lines)


SECTIONS: dict[str, Callable[[], str]] = {
    "metrics": metrics_table,
    "chooser": chooser_table,
    "abc": abc_table,
}


def begin_marker(name: str) -> str:
    return f"<!-- BEGIN generated {name}: python -m compiler.circuits.report --write -->"


def end_marker(name: str) -> str:
    return f"<!-- END generated {name} -->"


def render_into(text: str, tables: dict[str, str]) -> str:
    for name, table in tables.items():
        begin, end = begin_marker(name), end_marker(name)
        start = text.index(begin) + len(begin)
        stop = text.index(end)
        text = text[:start] + "\n" + table + "\n" + text[stop:]
    return text


def main(argv: list[str]) -> int:
    tables = {name: make() for name, make in SECTIONS.items()}
    if "--write" in argv:
        doc = Path(__file__).resolve().parents[2] / "docs" / "circuits.md"
        doc.write_text(render_into(doc.read_text(), tables))
    else:
        for name, table in tables.items():
            print(f"## {name}\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
