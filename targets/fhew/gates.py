"""Writes an FHEW gate program (runtime/fhew/gate_program.h, format version 1) from a cover of a
Boolean netlist by one-bootstrap cells (compiler.circuits.metrics.fhew_cover), and runs one with
the runtime's harness `hec_fhew_gates`.

Wire numbers are the mapped circuit's node numbers (node 0 is the constant false in both);
input words name their input nodes; a one-bootstrap cell becomes `linear ROOT K LEAVES...
MULTIPLIERS... CONSTANT` with the combination the gate model chose (the runtime re-checks its
margin and noise weight against its parameters); a MUX cell becomes `mux ROOT S T F` with the
MUX node's fan-in literals; output words are literals (2 * node + complemented)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from compiler.circuits.fhew_model import FhewCost, cover_cells
from compiler.circuits.netlist import Circuit, node_of
from compiler.errors import UserError

VERSION = 1
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")


def _check_name(kind: str, name: str) -> None:
    if not _NAME.match(name):
        raise UserError(
            f"{kind} word '{name}' cannot be named in an FHEW gate program "
            "([A-Za-z_][A-Za-z0-9_]*, at most 64 characters)"
        )


def gate_program(mapped: Circuit, cost: FhewCost) -> str:
    """The text of the gate program of `cost`, a cover of `mapped` (see fhew_cover)."""
    lines = [f"hec-fhew-gates {VERSION}", f"wires {len(mapped.nodes)}"]
    for name, bits in mapped.inputs.items():
        _check_name("input", name)
        lines.append(" ".join(["input", name, *(str(node_of(b)) for b in bits)]))
    for cell in cover_cells(mapped, cost):
        if cell.mux is not None:
            lines.append(" ".join(["mux", str(cell.root), *(str(x) for x in cell.mux)]))
            continue
        lines.append(
            " ".join(
                [
                    "linear",
                    str(cell.root),
                    str(len(cell.leaves)),
                    *(str(leaf) for leaf in cell.leaves),
                    *(str(m) for m in cell.multipliers),
                    str(cell.constant),
                ]
            )
        )
    for name, bits in mapped.outputs.items():
        _check_name("output", name)
        lines.append(" ".join(["output", name, *(str(b) for b in bits)]))
    lines.append("end")
    return "\n".join(lines) + "\n"


def run_gate_program(
    harness: Path,
    program: Path,
    inputs: Mapping[str, Sequence[int]],
    params: str = "toy-ginx",
    threads: int | None = None,
) -> dict[str, object]:
    """Runs `program` encrypted with the runtime's `hec_fhew_gates` (keys, encryption,
    evaluation and decryption in one process) on the input values (evaluation i takes value i
    of every word) and returns its JSON report: outputs, bootstraps (blind rotations counted by
    the runtime), levels, per-evaluation seconds. Raises UserError with the harness's message
    when it fails."""
    if not harness.is_file():
        raise UserError(
            f"the FHEW gate harness {harness} is not built "
            "(cmake --build build/release --target hec_fhew_gates)"
        )
    args = [str(harness), str(program), "--params", params]
    for name, values in inputs.items():
        args += ["--input", f"{name}=" + ",".join(str(int(v)) for v in values)]
    env = dict(os.environ)
    if threads is not None:
        env["HEC_THREADS"] = str(threads)
    done = subprocess.run(args, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise UserError(done.stderr.strip() or f"hec_fhew_gates exited with {done.returncode}")
    return json.loads(done.stdout)
