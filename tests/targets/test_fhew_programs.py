"""Integer programs on the FHEW target (issue #23), the three-way oracle: the plaintext
reference (dsl/reference.py, integer arithmetic), the compiled circuit in the netlist simulator
(exhaustively over 8-bit inputs), and encrypted runs through the runtime's four roles (random
inputs; the fast tier on the runtime's insecure small-n test set, the 128-bit set in the slow
tier). Every compiled circuit passed ABC's `cec` against the generated one (compile_fhew), and
the lowering of `a + b` / `a * b` is equivalent to the chooser's generator. The bitonic sort of
eight values (sort8.hec) is checked against numpy's sort on random and adversarial tuples, and
the circuit `hec compile` writes in the bool dialect (NAME.bool.mlir) against its gate program
and in `mlir-opt-19` with hec's IRDL definitions."""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from compiler.circuits import generators as gen
from compiler.circuits.abc import check_equivalent
from compiler.circuits.bool_conversion import bool_to_circuit
from compiler.dialects import boolean
from compiler.errors import UserError
from driver.environment import runtime_build_dir
from driver.fhew import compile_fhew, fhew_report, run_fhew
from driver.pipeline import Options
from dsl.checker import ProgramErrors, check
from dsl.parser import parse_file, parse_program
from dsl.reference import evaluate
from targets.mlir.form import from_mlir
from tests.mlir.common import mlir_opt

ROOT = Path(__file__).resolve().parents[2]
CIRCUITS = ROOT / "examples" / "circuits"
EXAMPLES = sorted(CIRCUITS.glob("*.hec"))
TOOL = runtime_build_dir() / "hec_fhew_gates"


def compiled(path: Path, insecure: bool = False):
    return compile_fhew(check(parse_file(path)), Options(insecure=insecure))


def all_inputs(comp, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every combination of the inputs' values when that is at most 2^16 (every 8-bit pair,
    every bool triple), else 4096 random ones."""
    types = {name: t for name, (t, _) in comp.program.inputs.items()}
    if sum(t.width for t in types.values()) <= 16:
        ranges = [range(t.lo, t.hi + 1) for t in types.values()]
        rows = np.array(list(itertools.product(*ranges)), dtype=np.int64)
        return {name: rows[:, i] for i, name in enumerate(types)}
    return {
        name: rng.integers(t.lo, t.hi, size=4096, endpoint=True, dtype=np.int64)
        if t.width < 64
        else rng.integers(0, 2**63, size=4096, dtype=np.int64)
        for name, t in types.items()
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_circuit_matches_the_reference_on_every_input(path: Path) -> None:
    comp = compiled(path)
    verdict = comp.abc.get("verdict")
    assert isinstance(verdict, str) and verdict.lower().startswith("networks are equivalent")
    values = all_inputs(comp, np.random.default_rng(23))
    count = len(next(iter(values.values())))
    bound = comp.checked.params["N"]
    want: dict[str, list[int]] = {name: [] for name in comp.program.outputs}
    for start in range(0, count, bound):  # the reference holds to the declared bound of N
        chunk = {k: v[start : start + bound] for k, v in values.items()}
        n = len(next(iter(chunk.values())))
        reference = evaluate(comp.checked, {"N": n}, chunk)
        for name, (t, _) in comp.program.outputs.items():
            want[name] += [int(v) % (1 << t.width) for v in reference.revealed[name]]
    unsigned = {
        name: np.asarray([int(v) % (1 << t.width) for v in values[name]], dtype=np.uint64)
        for name, (t, _) in comp.program.inputs.items()
    }
    got = comp.circuit.simulate(unsigned)
    for name in comp.program.outputs:
        assert [int(v) for v in got[name]] == want[name], name


def test_acceptance_bootstraps() -> None:
    """8-bit addition <= 16 bootstraps, 8 x 8 -> 8 multiplication <= 100 (HEIR: 34, 149)."""
    add = compiled(CIRCUITS / "add8.hec")
    mul = compiled(CIRCUITS / "mul8.hec")
    assert add.cover.bootstraps == 15
    assert mul.cover.bootstraps == 85
    nand = compiled(CIRCUITS / "nand_adder.hec")
    assert nand.cover.bootstraps == 2  # the nine NANDs are one parity and one majority
    report = fhew_report(add)
    assert report["counts"]["static"]["bootstraps"] == 15
    assert report["counts"]["executed"]["bootstraps"] == 15 * 4096
    assert report["params"]["security_bits"] == 128
    assert report["params"]["failure_log2_per_bootstrap"] <= -40
    assert [(o["op"], o["width"], o["generator"]) for o in report["operations"]] == [
        ("add", 8, "ripple")
    ]


@pytest.mark.parametrize(
    ("source", "generator"),
    [
        ("reveal c = a + b\n", lambda: gen.build_adder(8, "ripple")),
        ("reveal c = a * b\n", lambda: gen.build_multiplier(8, "dadda", adder="ripple")),
        ("reveal c = a - b\n", None),
    ],
    ids=["add", "mul", "sub"],
)
def test_lowering_is_equivalent_to_the_generator(source: str, generator) -> None:
    text = "param N <= 8\ninput a: secret[N] u8\ninput b: secret[N] u8\n" + source
    comp = compile_fhew(check(parse_program(text, "p.hec")), Options())
    lowered = comp.program.circuit.cleaned()
    if generator is not None:
        assert "equivalent" in check_equivalent(generator(), lowered).lower()
    # the compiled (possibly ABC's) circuit against the lowered one
    assert "equivalent" in check_equivalent(lowered, comp.circuit).lower()


def test_signed_scalar_and_conversion_program() -> None:
    text = (
        "param N <= 256\ninput s: secret[N] i8\ninput k: public i8\n"
        "reveal lo = min(s, k)\nreveal up = i16(s) * 300\nreveal neg = s < 0\n"
        "client {\n  shifted = real(lo) + 0.5\n}\n"
    )
    checked = check(parse_program(text, "p.hec"))
    comp = compile_fhew(checked, Options())
    s = np.arange(-128, 128, dtype=np.int64)
    reference = evaluate(checked, {"N": 256}, {"s": s, "k": np.int64(-3)})
    got = comp.circuit.simulate({"s": s % 256, "k": np.full(256, (-3) % 256, dtype=np.uint64)})
    for name, (t, _) in comp.program.outputs.items():
        want = [int(v) % (1 << t.width) for v in reference.revealed[name]]
        assert [int(v) for v in got[name]] == want, name


LOWERING_ERRORS = [
    (
        "param N <= 4\ninput a: secret[N] u8\ninput x: secret[N] in [0, 1]\nreveal c = a + 1\n",
        3,
        "input 'x' is real-valued",
    ),
    (
        "param N <= 4\nparam M <= 4\ninput a: secret[N] u8\ninput b: secret[M] u8\n"
        "reveal c = a + 1\n",
        4,
        "but 'a' has [N]",
    ),
    (
        "param N <= 4\ninput a: secret[N] u8\nreveal c = real(a)\n",
        3,
        "real() of a secret integer",
    ),
    ("param N <= 4\ninput a: secret[N] u8\nc = a + 1\n", 0, "the program reveals nothing"),
]


@pytest.mark.parametrize(("text", "line", "message"), LOWERING_ERRORS)
def test_fhew_refusals_are_located(text: str, line: int, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)) as info:
        compile_fhew(check(parse_program(text, "p.hec")), Options())
    if line:
        err = info.value
        first = err.errors[0] if isinstance(err, ProgramErrors) else err
        assert first.location is not None and first.location.line == line, str(err)


def run_hec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hec", *args], capture_output=True, text=True, check=False, cwd=ROOT
    )


def test_report_and_sim_run_from_the_command_line(tmp_path: Path) -> None:
    done = run_hec("report", str(CIRCUITS / "add8.hec"), "--scheme", "fhew", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["static"]["bootstraps"] == 15
    assert report["counts"]["static"]["bootstrap_levels"] == 8
    text = run_hec("report", str(CIRCUITS / "add8.hec"), "--scheme", "fhew")
    assert "15 bootstraps in 8 levels" in text.stdout, text.stderr
    a, b = np.arange(8, dtype=np.uint8) * 37, np.arange(8, dtype=np.uint8) * 91
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / "out"
    done = run_hec(
        "run",
        str(CIRCUITS / "add8.hec"),
        "--scheme",
        "fhew",
        "--sim",
        "--size",
        "N=8",
        "--input",
        f"a={tmp_path / 'a.npy'}",
        "--input",
        f"b={tmp_path / 'b.npy'}",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert list(np.load(out / "c.npy")) == list((a.astype(int) + b) % 256)
    assert json.loads((out / "summary.json").read_text())["backend"] == "fhew-simulator"


def test_run_refuses_values_outside_the_type(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array([1, 300]))
    np.save(tmp_path / "b.npy", np.array([1, 2]))
    with pytest.raises(UserError, match=r"input 'a' has value 300 at \(1,\), outside u8"):
        run_fhew(
            CIRCUITS / "add8.hec",
            {"a": tmp_path / "a.npy", "b": tmp_path / "b.npy"},
            tmp_path / "out",
            Options(),
            sim=True,
        )


def encrypted_run(path: Path, tmp_path: Path, insecure: bool, count: int, seed: int) -> None:
    comp = compiled(path, insecure)
    rng = np.random.default_rng(seed)
    values = {
        name: rng.integers(t.lo, t.hi, size=count, endpoint=True, dtype=np.int64)
        for name, (t, _) in comp.program.inputs.items()
    }
    files = {}
    for name, v in values.items():
        files[name] = tmp_path / f"{name}.npy"
        np.save(files[name], v)
    result = run_fhew(
        path, files, tmp_path / "out", Options(insecure=insecure), work=tmp_path / "work"
    )
    reference = evaluate(comp.checked, {"N": count}, values)
    for name in comp.program.outputs:
        assert [int(v) for v in result.revealed[name]] == [
            int(v) for v in reference.revealed[name]
        ], name
    stats = result.summary["compute"]
    assert isinstance(stats, dict)
    worst = stats["worst_failure_log2"]
    assert isinstance(worst, float) and worst <= (0 if insecure else -40)
    assert stats["bootstraps"] == comp.cover.bootstraps * count
    assert stats["evaluations"] == count
    # one encrypt role per data owner (each input its own by default), public key only
    owners = result.summary["owners"]
    assert isinstance(owners, list)
    assert [o["inputs"] for o in owners if isinstance(o, dict)] == [
        [name] for name in comp.program.inputs
    ]
    assert_owners_hold_no_secret_key(tmp_path / "work")


def assert_owners_hold_no_secret_key(work: Path) -> None:
    """No file in a data owner's directory is the secret key or any secret-key container
    (kind byte 2 of a HEC1 file); each holds the public key (kind 3) and its ciphertexts."""
    secret = (work / "keys" / "secret").read_bytes()
    assert secret[:4] == b"HEC1" and secret[9] == 2
    owners = sorted((work / "owners").iterdir())
    assert owners
    for own in owners:
        files = [f for f in own.rglob("*") if f.is_file()]
        assert (own / "public").read_bytes()[9] == 3
        for f in files:
            data = f.read_bytes()
            assert data != secret, f
            assert not (data[:4] == b"HEC1" and data[9] == 2), f


@pytest.mark.skipif(not TOOL.is_file(), reason="the runtime's hec_fhew_gates is not built")
@pytest.mark.parametrize("name", ["add8.hec", "mul8.hec", "compare8.hec", "nand_adder.hec"])
def test_encrypted_runs_match_the_reference(name: str, tmp_path: Path) -> None:
    encrypted_run(CIRCUITS / name, tmp_path, insecure=True, count=8, seed=len(name))


@pytest.mark.skipif(not TOOL.is_file(), reason="the runtime's hec_fhew_gates is not built")
def test_encrypted_sort8_matches_the_reference(tmp_path: Path) -> None:
    """One element (912 bootstraps; about 3 s on the small-n set)."""
    encrypted_run(CIRCUITS / "sort8.hec", tmp_path, insecure=True, count=1, seed=8)


@pytest.mark.slow
@pytest.mark.skipif(not TOOL.is_file(), reason="the runtime's hec_fhew_gates is not built")
@pytest.mark.parametrize("name", ["add8.hec", "millionaires.hec", "hamming.hec"])
def test_encrypted_runs_at_128_bits(name: str, tmp_path: Path) -> None:
    encrypted_run(CIRCUITS / name, tmp_path, insecure=False, count=4, seed=len(name))


def test_compile_writes_the_gate_program(tmp_path: Path) -> None:
    done = run_hec("compile", str(CIRCUITS / "add8.hec"), "--scheme", "fhew", "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "15 bootstraps in 8 levels per element" in done.stdout
    text = (tmp_path / "add8.gates").read_text()
    assert text.startswith("hec-fhew-gates 1\n") and text.count("\nlinear ") == 15
    assert str(tmp_path / "add8.bool.mlir") in done.stdout


def run_gate_text(text: str, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A gate program (targets/fhew/gates.py) evaluated in plaintext, one bit array per wire:
    `linear` by its phase (2 * sum m_i x_i + c) mod 8 < 4, `mux` by selection; an oracle
    written from the format alone."""
    lines = text.splitlines()
    assert lines[0] == "hec-fhew-gates 1" and lines[-1] == "end"
    count = len(next(iter(values.values())))
    wire: dict[int, np.ndarray] = {0: np.zeros(count, dtype=np.int64)}

    def lit(x: int) -> np.ndarray:
        return wire[x >> 1] ^ (x & 1)

    outputs: dict[str, np.ndarray] = {}
    for line in lines[2:-1]:
        kind, *rest = line.split()
        if kind == "input":
            for i, w in enumerate(rest[1:]):
                wire[int(w)] = (values[rest[0]].astype(np.int64) >> i) & 1
        elif kind == "linear":
            root, k = int(rest[0]), int(rest[1])
            leaves = [int(x) for x in rest[2 : 2 + k]]
            multipliers = [int(x) for x in rest[2 + k : 2 + 2 * k]]
            phase = 2 * sum(m * wire[leaf] for m, leaf in zip(multipliers, leaves, strict=True))
            wire[root] = np.asarray((phase + int(rest[2 + 2 * k])) % 8 < 4, dtype=np.int64)
        elif kind == "mux":
            root, sel, t, f = (int(x) for x in rest)
            wire[root] = np.asarray(np.where(lit(sel) == 1, lit(t), lit(f)), dtype=np.int64)
        else:
            assert kind == "output", line
            word = np.zeros(count, dtype=np.int64)
            for i, b in enumerate(rest[1:]):
                word |= lit(int(b)) << i
            outputs[rest[0]] = word
    return outputs


def test_compile_writes_the_bool_circuit_of_the_gate_program(tmp_path: Path) -> None:
    """add8.bool.mlir, parsed back, is one bool.circuit with add8's words that computes what
    add8.gates computes on every input pair; mlir-opt-19 verifies it with hec's IRDL dialects
    and what it prints reads back to the same module."""
    done = run_hec("compile", str(CIRCUITS / "add8.hec"), "--scheme", "fhew", "-o", str(tmp_path))
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "add8.bool.mlir").read_text()
    assert text.startswith('"builtin.module"() ({') and 'hec.op = "bool.circuit"' in text
    module = from_mlir(text, "add8.bool.mlir")
    (circuit_op,) = boolean.circuits(module)
    assert circuit_op.sym_name.data == "add8"
    words = [(w.sym_value, w.int_type_value) for w in circuit_op.inputs() + circuit_op.outputs()]
    assert words == [("a", "u8"), ("b", "u8"), ("c", "u8")]
    circuit = bool_to_circuit(module)
    rows = np.array(list(itertools.product(range(256), repeat=2)), dtype=np.uint64)
    values = {"a": rows[:, 0], "b": rows[:, 1]}
    gates = run_gate_text((tmp_path / "add8.gates").read_text(), values)
    assert [int(v) for v in circuit.simulate(values)["c"]] == [int(v) for v in gates["c"]]
    assert [int(v) for v in gates["c"]] == [int(v) for v in (rows[:, 0] + rows[:, 1]) % 256]
    verified = mlir_opt(text)
    assert verified.returncode == 0, verified.stderr
    assert from_mlir(verified.stdout, "mlir-opt").is_structurally_equivalent(module)


def test_mlir_opt_refuses_a_mux_of_two_operands() -> None:
    """The IRDL definitions carry the operand counts: mlir-opt-19 itself refuses a bool.mux of
    two operands, and hec's importer refuses it at its line."""
    text = (
        '"builtin.module"() ({\n'
        '  "func.func"() <{sym_name = "bad", function_type = () -> ()}> ({\n'
        '    %0, %1 = "bool.input"() {int_type = "u2", sym = "a"} : () -> (i1, i1)\n'
        '    %2 = "bool.mux"(%0, %1) : (i1, i1) -> i1\n'
        '    "bool.output"(%2) {int_type = "bool", sym = "c"} : (i1) -> ()\n'
        '    "func.return"() : () -> ()\n'
        '  }) {hec.op = "bool.circuit"} : () -> ()\n'
        "}) : () -> ()\n"
    )
    refused = mlir_opt(text)
    assert refused.returncode != 0 and "bool.mux" in refused.stderr, refused.stderr
    with pytest.raises(UserError, match="Expected 3 operands, but got 2") as info:
        from_mlir(text, "bad.mlir")
    assert info.value.location is not None and info.value.location.line == 4


def sort8_rows(rng: np.random.Generator) -> np.ndarray:
    """Rows of eight u8 values: 20,000 random ones, then the adversarial ones: all equal
    (0, 1, 127, 128, 255), sorted and reverse-sorted runs, many duplicates (values from three,
    or from {0, 255}), every row over {0, 255} (by the 0-1 principle a comparator network that
    sorts all 256 of them sorts every input) and every permutation of eight distinct values
    from 0 to 255."""
    random = rng.integers(0, 256, size=(20_000, 8))
    equal = np.repeat(np.array([[0], [1], [127], [128], [255]]), 8, axis=1)
    runs = np.array([np.arange(8), np.arange(8) * 36, np.arange(248, 256), [0] * 4 + [255] * 4])
    sorted_rows = np.concatenate([runs, runs[:, ::-1]])
    few = rng.choice([0, 128, 255], size=(2000, 8))
    binary = np.array(list(itertools.product([0, 255], repeat=8)))
    distinct = np.array(list(itertools.permutations([0, 1, 2, 127, 128, 253, 254, 255])))
    return np.concatenate([random, equal, sorted_rows, few, binary, distinct]).astype(np.int64)


def test_sort8_sorts_random_and_adversarial_tuples() -> None:
    comp = compiled(CIRCUITS / "sort8.hec")
    assert comp.cover.bootstraps == 912 and comp.cover.levels == 54
    rows = sort8_rows(np.random.default_rng(8))
    want = np.sort(rows, axis=1)
    got = comp.circuit.simulate({f"v{i}": rows[:, i].astype(np.uint64) for i in range(8)})
    for i in range(8):
        assert np.array_equal(got[f"s{i}"].astype(np.int64), want[:, i]), f"s{i}"
    # the reference evaluator agrees on the first 4,096 random rows and the adversarial ones
    bound = comp.checked.params["N"]
    for start in (0, 20_000, 20_000 + bound):
        chunk = rows[start : start + bound]
        reference = evaluate(
            comp.checked, {"N": len(chunk)}, {f"v{i}": chunk[:, i] for i in range(8)}
        )
        for i in range(8):
            assert [int(v) for v in reference.revealed[f"s{i}"]] == list(want[start:, i][:bound])


def test_a_missing_runtime_tool_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEC_RUNTIME_BUILD", str(tmp_path / "nowhere"))
    np.save(tmp_path / "a.npy", np.array([1, 2]))
    np.save(tmp_path / "b.npy", np.array([3, 4]))
    with pytest.raises(UserError, match="hec_fhew_gates is not built"):
        run_fhew(
            CIRCUITS / "add8.hec",
            {"a": tmp_path / "a.npy", "b": tmp_path / "b.npy"},
            tmp_path / "out",
            Options(insecure=True),
        )


@pytest.mark.skipif(not TOOL.is_file(), reason="the runtime's hec_fhew_gates is not built")
def test_the_server_refuses_ciphertexts_of_another_key(tmp_path: Path) -> None:
    """compute checks the ciphertexts' key id against the evaluation key's: a role failure is
    a UserError carrying the runtime's message."""
    from driver.roles import run_role

    comp = compiled(CIRCUITS / "add8.hec", insecure=True)
    program = tmp_path / "p.gates"
    program.write_text(comp.gate_text)
    for keys in ("k1", "k2"):
        run_role(TOOL, "keygen", "--params", "toy-ginx", "--out", str(tmp_path / keys))
    run_role(
        TOOL,
        "encrypt",
        "--params",
        "toy-ginx",
        "--pk",
        str(tmp_path / "k1" / "public"),
        "--program",
        str(program),
        "--input",
        "a=1,2",
        "--input",
        "b=3,4",
        "--out",
        str(tmp_path / "ct"),
    )

    def compute(*ins: str, keys: str = "k2") -> None:
        run_role(
            TOOL,
            "compute",
            "--params",
            "toy-ginx",
            "--eval",
            str(tmp_path / keys / "eval"),
            "--program",
            str(program),
            *ins,
            "--out",
            str(tmp_path / "res"),
        )

    both = ("--in", f"a={tmp_path / 'ct' / 'a.ct'}", "--in", f"b={tmp_path / 'ct' / 'b.ct'}")
    with pytest.raises(UserError, match=r"hec_fhew_gates compute failed: .*key id"):
        compute(*both)
    with pytest.raises(UserError, match="compute needs --in b=FILE"):
        compute(*both[:2], keys="k1")
    with pytest.raises(UserError, match="--in c: the program has no such input"):
        compute(*both, "--in", f"c={tmp_path / 'ct' / 'a.ct'}", keys="k1")
    with pytest.raises(UserError, match="--in a given twice"):
        compute(*both, *both[:2], keys="k1")
    with pytest.raises(UserError, match=r"b\.ct holds 2 evaluations of input 'b', a has 1"):
        run_role(
            TOOL, "encrypt", "--params", "toy-ginx", "--pk", str(tmp_path / "k1" / "public"),
            "--program", str(program), "--input", "a=5", "--out", str(tmp_path / "ct1"),
        )  # fmt: skip
        compute("--in", f"a={tmp_path / 'ct1' / 'a.ct'}", *both[2:], keys="k1")
    compute(*both, keys="k1")  # the owners' files under the right key: accepted
    assert (tmp_path / "res").is_file()
    with pytest.raises(UserError, match="compute: unknown option '--sk'"):
        run_role(TOOL, "compute", "--sk", str(tmp_path / "k1" / "secret"))


@pytest.mark.skipif(not TOOL.is_file(), reason="the runtime's hec_fhew_gates is not built")
def test_encrypt_refuses_the_secret_key(tmp_path: Path) -> None:
    """A data owner's encrypt takes the public key only: `--sk` is refused by name, and a
    secret-key file given as `--pk` is refused by its kind; an input the program does not have
    and a value wider than its word are refused too."""
    from driver.roles import run_role

    comp = compiled(CIRCUITS / "add8.hec", insecure=True)
    program = tmp_path / "p.gates"
    program.write_text(comp.gate_text)
    keys = tmp_path / "keys"
    run_role(TOOL, "keygen", "--params", "toy-ginx", "--out", str(keys))

    def encrypt(*args: str) -> None:
        run_role(
            TOOL, "encrypt", "--params", "toy-ginx", "--program", str(program), *args,
            "--out", str(tmp_path / "ct"),
        )  # fmt: skip

    refused = r"encrypt: a data owner encrypts with the public key .* --sk is refused"
    with pytest.raises(UserError, match=refused):
        encrypt("--sk", str(keys / "secret"), "--input", "a=1")
    with pytest.raises(UserError, match="object kind secret key \\(2\\), expected public key"):
        encrypt("--pk", str(keys / "secret"), "--input", "a=1")
    with pytest.raises(UserError, match="--input c: the program has no such input"):
        encrypt("--pk", str(keys / "public"), "--input", "c=1")
    with pytest.raises(UserError, match="--input a: 256 does not fit in 8 bits"):
        encrypt("--pk", str(keys / "public"), "--input", "a=256")
    with pytest.raises(UserError, match="--input b has 1 values, others 2"):
        encrypt("--pk", str(keys / "public"), "--input", "a=1,2", "--input", "b=1")
    assert not (tmp_path / "ct").exists()


def cli_encrypted_add8(tmp_path: Path, *extra: str, count: int = 8) -> dict:
    """`hec run examples/circuits/add8.hec --scheme fhew` from the command line, the work
    directory kept; checks the sums and returns the summary."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(23)
    a = rng.integers(0, 256, size=count, dtype=np.int64)
    b = rng.integers(0, 256, size=count, dtype=np.int64)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out, work = tmp_path / "out", tmp_path / "work"
    done = run_hec(
        "run", str(CIRCUITS / "add8.hec"), "--scheme", "fhew", "--size", f"N={count}",
        "--input", f"a={tmp_path / 'a.npy'}", "--input", f"b={tmp_path / 'b.npy'}",
        "--out", str(out), "--build-dir", str(work), *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [int(x) for x in np.load(out / "c.npy")] == [int(x) for x in (a + b) % 256]
    assert "with the public key" in done.stdout
    assert_owners_hold_no_secret_key(work)
    return json.loads((out / "summary.json").read_text())


@pytest.mark.skipif(not TOOL.is_file(), reason="the runtime's hec_fhew_gates is not built")
def test_cli_run_encrypts_with_the_public_key_per_owner(tmp_path: Path) -> None:
    summary = cli_encrypted_add8(tmp_path / "own", "--insecure")
    assert [o["owner"] for o in summary["owners"]] == ["owner-a", "owner-b"]
    assert summary["backend"] == "fhew-encrypted" and summary["insecure"]
    grouped = cli_encrypted_add8(tmp_path / "one", "--insecure", "--owner", "a=0", "--owner", "b=0")
    assert grouped["owners"][0]["owner"] == "owner-0"
    assert grouped["owners"][0]["inputs"] == ["a", "b"]
    assert grouped["owners"][0]["ciphertexts"] == 2 * 8 * 8


@pytest.mark.slow
@pytest.mark.skipif(not TOOL.is_file(), reason="the runtime's hec_fhew_gates is not built")
def test_cli_run_encrypts_with_the_public_key_at_128_bits(tmp_path: Path) -> None:
    summary = cli_encrypted_add8(tmp_path, count=4)
    assert summary["params"]["name"] == "std128-ginx" and not summary["insecure"]
    assert summary["compute"]["worst_failure_log2"] <= -42


def test_owner_of_an_unknown_input_is_refused(tmp_path: Path) -> None:
    np.save(tmp_path / "a.npy", np.array([1, 2]))
    np.save(tmp_path / "b.npy", np.array([3, 4]))
    with pytest.raises(UserError, match="--owner z=0: the program has no input 'z'"):
        run_fhew(
            CIRCUITS / "add8.hec",
            {"a": tmp_path / "a.npy", "b": tmp_path / "b.npy"},
            tmp_path / "out",
            Options(insecure=True),
            owners={"z": 0},
        )
