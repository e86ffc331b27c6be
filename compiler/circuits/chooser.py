"""Chooses the circuit generator for an integer operation per target by exact cost: for FHEW
the fewest bootstraps (then fewest bootstrap levels, then gates); for BFV bit-slices the
smallest AND depth (then fewest ANDs, i.e. ciphertext multiplications). Every candidate is
built and measured (metrics.py); the choice says why, with every candidate's figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from compiler.circuits import generators as gen
from compiler.circuits.fhew_model import FhewGateModel
from compiler.circuits.metrics import Metrics, measure
from compiler.circuits.netlist import Circuit
from compiler.errors import UserError

TARGETS = ("fhew", "bfv")
OPERATIONS = ("add", "mul", "mul_full", "lt", "lt_signed", "eq", "min", "max", "sum3", "div")


def _candidates(op: str, width: int) -> dict[str, Callable[[], Circuit]]:
    blocks = [b for b in (2, 4, 8) if width % b == 0 and b < width]
    adders: dict[str, tuple[str, int]] = {a: (a, 4) for a in gen.ADDERS if a != "cla"}
    adders.update({f"cla/{b}": ("cla", b) for b in blocks})
    if op == "add":
        return {
            name: (lambda a=a, b=b: gen.build_adder(width, a, b)) for name, (a, b) in adders.items()
        }
    if op == "sum3":
        return {
            f"csa+{name}": (lambda a=a, b=b: gen.build_multi_adder(width, 3, a, b))
            for name, (a, b) in adders.items()
        }
    if op in ("mul", "mul_full"):
        full = op == "mul_full"
        out: dict[str, Callable[[], Circuit]] = {
            "array": lambda: gen.build_multiplier(width, "array", full)
        }
        for kind in ("wallace", "dadda"):
            for name, (a, b) in adders.items():
                out[f"{kind}+{name}"] = lambda k=kind, a=a, b=b: gen.build_multiplier(
                    width, k, full, a, b
                )
        return out
    if op in ("lt", "lt_signed", "min", "max"):
        signed = op == "lt_signed"
        if op in ("min", "max"):
            return {s: (lambda s=s: gen.build_minmax(width, op, False, s)) for s in gen.COMPARATORS}
        return {
            s: (lambda s=s: gen.build_comparator(width, "lt", signed, s)) for s in gen.COMPARATORS
        }
    if op == "div":
        return {
            f"{alg}+{a}": (lambda alg=alg, a=a: gen.build_divider(width, a, alg))
            for alg in gen.DIVIDERS
            for a in ("ripple", "sklansky")
        }
    if op == "eq":
        return {"tree": lambda: gen.build_comparator(width, "eq")}
    raise UserError(f"unknown operation '{op}'; expected one of {', '.join(OPERATIONS)}")


def cost_key(metrics: Metrics, target: str) -> tuple[int, ...]:
    if target == "fhew":
        return (metrics.bootstraps, metrics.bootstrap_levels, metrics.gate_count)
    if target == "bfv":
        return (metrics.and_depth, metrics.and_count, metrics.gate_count)
    raise UserError(f"unknown target '{target}'; expected one of {', '.join(TARGETS)}")


@dataclass
class Choice:
    name: str
    circuit: Circuit
    metrics: Metrics
    candidates: dict[str, Metrics]
    reason: str


def choose(op: str, width: int, target: str, model: FhewGateModel | None = None) -> Choice:
    """Builds every generator for `op` at `width`, measures them and keeps the cheapest for
    `target` (module docstring)."""
    gen.check_width(width)
    if target not in TARGETS:
        raise UserError(f"unknown target '{target}'; expected one of {', '.join(TARGETS)}")
    built = {name: make() for name, make in _candidates(op, width).items()}
    measured = {name: measure(c, model) for name, c in built.items()}
    ranked = sorted(measured, key=lambda n: (cost_key(measured[n], target), n))
    best = ranked[0]
    m = measured[best]
    if target == "fhew":
        what = f"{m.bootstraps} bootstraps in {m.bootstrap_levels} levels"
        criterion = "fewest bootstraps, then fewest levels"
    else:
        what = f"AND depth {m.and_depth} with {m.and_count} ANDs"
        criterion = "smallest AND depth, then fewest ANDs"
    others = ", ".join(f"{n}: {cost_key(measured[n], target)[:2]}" for n in ranked[1:])
    reason = f"{op} on {width} bits for {target}: {best} ({what}); criterion: {criterion}" + (
        f"; others {others}" if others else ""
    )
    return Choice(best, built[best], m, measured, reason)
