"""`bench/run circuits`: the OpenFHE reference's gate circuits (bench/_circuits_openfhe.py)
compute the operations they stand for, with the gate counts its docstring states, checked on
a plaintext stand-in for binfhe's context (every gate evaluated on bits): every first operand
against 52 second operands (0, 5, ..., 255). The hec side runs encrypted in the bench only
(its programs are checked by tests/targets/test_fhew_programs.py)."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _module() -> ModuleType:
    path = ROOT / "bench" / "_circuits_openfhe.py"
    spec = importlib.util.spec_from_file_location("bench_circuits_openfhe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class PlainContext:
    """binfhe's EvalBinGate and EvalNOT on plaintext bits (the gate names are the constants)."""

    def EvalBinGate(self, gate: str, x: Any, y: Any = None) -> int:
        if gate == "MAJORITY":
            return int(sum(x) >= 2)
        return {"AND": x & y, "XOR": x ^ y}[gate]

    def EvalNOT(self, x: int) -> int:
        return 1 - x


@pytest.mark.parametrize(("op", "gates"), [("add", 22), ("mul", 106), ("lt", 8)])
def test_the_openfhe_circuits_compute_their_operation(op: str, gates: int) -> None:
    m = _module()
    fn, want = m.OPS[op]
    names = {"AND": "AND", "XOR": "XOR", "MAJORITY": "MAJORITY"}
    for x, y in itertools.product(range(256), range(0, 256, 5)):
        g = m.Counter(PlainContext(), names)
        out = fn(g, m.bits(x), m.bits(y))
        assert sum(b << i for i, b in enumerate(out)) == want(x, y), (op, x, y)
        assert g.gates == gates
