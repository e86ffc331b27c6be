"""Logic optimization with ABC (Berkeley, Debian package `berkeley-abc`) through binary AIGER,
with every result checked for equivalence by ABC's `cec` before it is used.

Flow (`optimize`):
 (1) hec's own structural hashing and constant folding: the circuit is rebuilt (`cleaned`);
 (2) it is lowered to an and-inverter graph (XOR, MUX, majority as three or four ANDs) and
     written as binary AIGER (the format of Biere's AIGER 1.9 spec, section "binary format");
 (3) ABC reads it, runs the script (default: `strash`, ABC's resyn2 sequence of balancing,
     rewriting and refactoring, then `dc2`) and writes the result;
 (4) the result is read back, recognising the three-AND pattern
     ~(~(s & t) & ~(~s & f)) as MUX (XOR when f = ~t) so XORs are free again for BFV and one
     bootstrap for FHEW, and rebuilt through hec's builders;
 (5) `cec` compares the read-back circuit (written again) with the AIGER of step (2); anything
     but "Networks are equivalent" raises `AbcError`, so a wrong result is never used;
 (6) the cheaper of the circuits of steps (1) and (4) for the target (chooser.cost_key) is kept.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from compiler.circuits.chooser import cost_key
from compiler.circuits.metrics import Metrics, lower_thresholds, measure
from compiler.circuits.netlist import FALSE, Circuit, Kind, Lit, node_of
from compiler.errors import UserError

# resyn2 (ABC's abc.rc alias, spelled out: the Debian package installs no abc.rc), then dc2.
DEFAULT_SCRIPT = (
    "strash; balance; rewrite; refactor; balance; rewrite; rewrite -z; balance; "
    "refactor -z; rewrite -z; balance; dc2"
)
ABC_NAMES = ("berkeley-abc", "abc", "yosys-abc")


class AbcError(Exception):
    """ABC failed, or its result is not equivalent to its input (an internal error: the
    result is never used)."""


def abc_executable() -> str:
    for name in ABC_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise UserError(
        "ABC is not installed (looked for " + ", ".join(ABC_NAMES) + ")",
        hint="install the Debian package berkeley-abc (scripts/setup does)",
    )


# ---- AIGER --------------------------------------------------------------------------------


def to_aig(c: Circuit) -> tuple[int, list[tuple[int, int]], list[int]]:
    """The and-inverter graph of `c`: (number of inputs, AND gates as (rhs0, rhs1) in AIGER
    literals in topological order, output literals). AIGER variable i + 1 is input bit i (the
    input words in order, least significant bit first); AND gate k is variable n_in + k + 1."""
    low = lower_thresholds(c)
    n_in = sum(len(w) for w in low.inputs.values())
    var: dict[int, int] = {0: 0}
    for i, bit in enumerate(b for w in low.inputs.values() for b in w):
        var[node_of(bit)] = 2 * (i + 1)
    ands: list[tuple[int, int]] = []
    hashed: dict[tuple[int, int], int] = {}

    def lit(x: Lit) -> int:
        return var[node_of(x)] ^ (x & 1)

    def and_(a: int, b: int) -> int:
        if a > b:
            a, b = b, a
        if a == 0:
            return 0
        if a == 1:
            return b
        if a == b:
            return a
        if a == b ^ 1:
            return 0
        found = hashed.get((a, b))
        if found is None:
            ands.append((b, a))
            found = 2 * (n_in + len(ands))
            hashed[(a, b)] = found
        return found

    def or_(a: int, b: int) -> int:
        return and_(a ^ 1, b ^ 1) ^ 1

    for n in low.live_nodes():
        node = low.nodes[n]
        ins = [lit(x) for x in node.fanins]
        if node.kind is Kind.AND:
            out = and_(ins[0], ins[1])
        elif node.kind is Kind.XOR:
            a, b = ins
            out = or_(and_(a, b ^ 1), and_(a ^ 1, b))
        elif node.kind is Kind.MUX:
            s, t, f = ins
            out = or_(and_(s, t), and_(s ^ 1, f))
        else:
            a, b, cc = ins  # majority (lower_thresholds leaves at most 3 inputs, k = 2)
            out = or_(and_(a, b), and_(cc, or_(a, b)))
        var[n] = out
    outputs = [lit(b) for w in low.outputs.values() for b in w]
    return n_in, ands, outputs


def _varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def write_aiger(c: Circuit) -> bytes:
    """Binary AIGER ("aig M I 0 O A") of `c`, with a symbol table naming every bit."""
    n_in, ands, outputs = to_aig(c)
    m = n_in + len(ands)
    data = bytearray(f"aig {m} {n_in} 0 {len(outputs)} {len(ands)}\n".encode())
    for o in outputs:
        data += f"{o}\n".encode()
    for k, (r0, r1) in enumerate(ands):
        lhs = 2 * (n_in + k + 1)
        data += _varint(lhs - r0) + _varint(r0 - r1)
    i = 0
    for name, bits in c.inputs.items():
        for j in range(len(bits)):
            data += f"i{i} {name}[{j}]\n".encode()
            i += 1
    i = 0
    for name, bits in c.outputs.items():
        for j in range(len(bits)):
            data += f"o{i} {name}[{j}]\n".encode()
            i += 1
    return bytes(data)


def read_aiger(data: bytes, like: Circuit) -> Circuit:
    """Reads binary AIGER into a new circuit with the input and output words of `like` (same
    widths and order), recognising MUX and XOR (module docstring, step 4)."""
    newline = data.index(b"\n")
    header = data[:newline].split()
    if len(header) < 6 or header[0] != b"aig":
        raise AbcError(f"not a binary AIGER file (header {data[:newline]!r})")
    m, n_in, n_latch, n_out, n_and = (int(x) for x in header[1:6])
    widths_in = sum(len(w) for w in like.inputs.values())
    widths_out = sum(len(w) for w in like.outputs.values())
    if n_latch or n_in != widths_in or n_out != widths_out or m != n_in + n_and:
        raise AbcError(
            f"AIGER header {header!r} does not match {widths_in} inputs and {widths_out} outputs"
        )
    pos = newline + 1
    outputs = []
    for _ in range(n_out):
        end = data.index(b"\n", pos)
        outputs.append(int(data[pos:end]))
        pos = end + 1

    def varint() -> int:
        nonlocal pos
        x, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            x |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return x

    gates: dict[int, tuple[int, int]] = {}
    for k in range(n_and):
        lhs = 2 * (n_in + k + 1)
        r0 = lhs - varint()
        r1 = r0 - varint()
        gates[lhs >> 1] = (r0, r1)
    fanout: dict[int, int] = {}
    for r0, r1 in gates.values():
        for r in (r0, r1):
            fanout[r >> 1] = fanout.get(r >> 1, 0) + 1
    for o in outputs:
        fanout[o >> 1] = fanout.get(o >> 1, 0) + 1

    out = Circuit()
    sig: dict[int, Lit] = {0: FALSE}
    v = 1
    for name, bits in like.inputs.items():
        for bit in out.input(name, len(bits), signed=name in like.signed_inputs):
            sig[v] = bit
            v += 1

    def lit(x: int) -> Lit:
        return sig[x >> 1] ^ (x & 1)

    def single_and(x: int) -> tuple[int, int] | None:
        """The fan-ins of AIGER literal x if it is a complemented AND used only here."""
        if x & 1 and (x >> 1) in gates and fanout.get(x >> 1) == 1:
            return gates[x >> 1]
        return None

    for var_index, (r0, r1) in gates.items():
        left, right = single_and(r0), single_and(r1)
        built = None
        if left is not None and right is not None:
            # ~(p & q) & ~(r & s) with a selector x in {p, q} and ~x in {r, s}: ~mux(x, ., .)
            for sel in left:
                if sel ^ 1 in right:
                    t = left[1] if left[0] == sel else left[0]
                    f = right[1] if right[0] == sel ^ 1 else right[0]
                    built = out.mux(lit(sel), lit(t), lit(f)) ^ 1
                    break
        sig[var_index] = built if built is not None else out.and_(lit(r0), lit(r1))
    flat = [lit(o) for o in outputs]
    i = 0
    for name, bits in like.outputs.items():
        out.output(name, flat[i : i + len(bits)])
        i += len(bits)
    return out


# ---- running ABC --------------------------------------------------------------------------


def run_abc(commands: str, workdir: Path, *, verdict: bool = False) -> str:
    """Runs ABC on `commands` in `workdir` and returns its output. ABC exits with status 0
    even when a command fails, so its output is searched for errors; with `verdict` (a `cec`
    run) a failed verification is left to the caller, which reads the verdict."""
    result = subprocess.run(
        [abc_executable(), "-c", commands],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    text = result.stdout + result.stderr
    lowered = text.lower()
    failed = "error" in lowered or ("failed" in lowered and not verdict)
    if result.returncode != 0 or failed:
        raise AbcError(f"ABC failed on `{commands}`:\n{text.strip()}")
    return text


def check_equivalent(reference: Circuit, candidate: Circuit) -> str:
    """Runs ABC's combinational equivalence check; returns its verdict line, raises AbcError
    unless the networks are equivalent."""
    with tempfile.TemporaryDirectory(prefix="hec-cec-") as tmp:
        d = Path(tmp)
        (d / "reference.aig").write_bytes(write_aiger(reference))
        (d / "candidate.aig").write_bytes(write_aiger(candidate))
        text = run_abc("cec reference.aig candidate.aig", d, verdict=True)
    verdict = [line for line in text.splitlines() if "equivalent" in line.lower()]
    if not verdict or "not equivalent" in verdict[-1].lower():
        raise AbcError(f"ABC cec: the optimized circuit is NOT equivalent:\n{text.strip()}")
    if "networks are equivalent" not in verdict[-1].lower():
        raise AbcError(f"ABC cec gave no verdict:\n{text.strip()}")
    return verdict[-1].strip()


def abc_optimize_raw(c: Circuit, script: str = DEFAULT_SCRIPT) -> Circuit:
    """ABC's result for `c` read back into a circuit (not yet checked)."""
    with tempfile.TemporaryDirectory(prefix="hec-abc-") as tmp:
        d = Path(tmp)
        (d / "in.aig").write_bytes(write_aiger(c))
        run_abc(f"read in.aig; {script}; write_aiger out.aig", d)
        return read_aiger((d / "out.aig").read_bytes(), like=c)


@dataclass
class Optimized:
    circuit: Circuit
    used_abc: bool
    before: Metrics
    after_abc: Metrics
    verdict: str


def optimize(c: Circuit, target: str, script: str = DEFAULT_SCRIPT) -> Optimized:
    """The flow of the module docstring: hashing and folding, ABC, cec, the cheaper circuit for
    `target` ("fhew" or "bfv")."""
    base = c.cleaned()
    optimized = abc_optimize_raw(base, script)
    verdict = check_equivalent(base, optimized)
    before, after = measure(base), measure(optimized)
    better = cost_key(after, target) < cost_key(before, target)
    return Optimized(optimized if better else base, better, before, after, verdict)
