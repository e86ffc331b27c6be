"""The FHEW target end to end: gate programs written from compiler/circuits covers
(targets/fhew/gates.py) run encrypted by the runtime (hec_fhew_gates, the insecure small-n
GINX test set for speed) and match the plaintext netlist simulator; the runtime's count of
blind rotations equals the cover's bootstrap count (15 for the 8-bit ripple adder, 85 for the
8 x 8 -> 8 multiplier, docs/circuits.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.circuits import generators as gen
from compiler.circuits.metrics import fhew_cover
from compiler.circuits.netlist import Circuit
from compiler.errors import UserError
from driver.environment import runtime_build_dir
from targets.fhew.gates import gate_program, run_gate_program

HARNESS = runtime_build_dir() / "hec_fhew_gates"


@pytest.mark.parametrize(
    ("circuit", "bootstraps"),
    [
        (lambda: gen.build_adder(8, "ripple"), 15),
        (lambda: gen.build_multiplier(8, "dadda", adder="ripple"), 85),
        (lambda: gen.build_minmax(8, "min", structure="ripple"), 23),  # 8 MUX cells
    ],
    ids=["add8-ripple", "mul8-dadda-ripple", "min8-ripple"],
)
def test_encrypted_run_matches_the_simulator(circuit, bootstraps: int, tmp_path: Path) -> None:
    c: Circuit = circuit()
    mapped, cost = fhew_cover(c)
    assert cost.bootstraps == bootstraps
    program = tmp_path / "p.gates"
    program.write_text(gate_program(mapped, cost))
    rng = np.random.default_rng(23)
    inputs = {name: [int(v) for v in rng.integers(0, 256, 4)] for name in c.inputs}
    inputs["a"][0], inputs["b"][0] = 255, 255  # every carry
    report = run_gate_program(HARNESS, program, inputs)
    want = c.simulate(inputs)
    assert report["outputs"] == {k: [int(v) for v in want[k]] for k in want}
    assert report["bootstraps"] == cost.bootstraps == report["static_bootstraps"]
    assert report["levels"] == cost.levels
    assert report["evaluations"] == 4
    kinds = [line.split()[0] for line in program.read_text().splitlines()]
    assert kinds.count("linear") + 2 * kinds.count("mux") == bootstraps


def test_harness_errors_are_clear(tmp_path: Path) -> None:
    c = gen.build_adder(2, "ripple")
    mapped, cost = fhew_cover(c)
    program = tmp_path / "p.gates"
    program.write_text(gate_program(mapped, cost))
    with pytest.raises(UserError, match="does not fit in 2 bits"):
        run_gate_program(HARNESS, program, {"a": [4], "b": [1]})
    with pytest.raises(UserError, match="no --input for input 'b'"):
        run_gate_program(HARNESS, program, {"a": [1]})
    program.write_text(gate_program(mapped, cost).replace("end\n", ""))
    with pytest.raises(UserError, match=r"p\.gates:\d+: truncated gate program: no 'end'"):
        run_gate_program(HARNESS, program, {"a": [1], "b": [1]})
    with pytest.raises(UserError, match="is not built"):
        run_gate_program(tmp_path / "missing", program, {"a": [1], "b": [1]})


def test_unnameable_words_are_rejected() -> None:
    c = Circuit()
    a = c.input("a b", 1)
    c.output("c", a)
    mapped, cost = fhew_cover(c)
    with pytest.raises(UserError, match="input word 'a b' cannot be named"):
        gate_program(mapped, cost)
