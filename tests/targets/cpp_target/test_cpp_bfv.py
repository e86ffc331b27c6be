"""The C++ emitter's BFV branch. examples/stats/meancov_int.hec compiled with `--scheme bfv`
runs its four roles and matches numpy exactly. A small integer `bfv.program` (built here op by
op, to cover ops the examples do not use) becomes a C++ file over
runtime/program/bfv_program.h with the same structure as a CKKS one (streaming schedule, value
names, the IR op above each call), builds warning-free, and its four roles give exactly
numpy's integer results: column sums of S (a row accumulator), y @ S (a fused dot product over
rows, relinearized), a relinearized product, sum_slots over all N slots, integer constants,
a modulus switch.
Parameters: N = 2^12, Q = two 50-bit primes, t = 65537: 128-bit secure by the HE Standard table
(log2 Q = 100 <= 109), no --insecure."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cpp_target_common import ROOT

from compiler.analysis.sizes import Sizes
from compiler.dialects import bfv, he
from compiler.types import Interval
from driver.pipeline import Options
from driver.run import _runtime_library, _system_libs, compile_cpp, ninja_build
from targets.cpp.emit import emit, write_project

# Two 50-bit primes = 1 mod 2N (N = 4096), not t: math::ntt_primes(50, 2, 4096, {65537}).
MODULI = (1125899906826241, 1125899906629633)
T = 65537
ROTATIONS = tuple(1 << k for k in range(11))  # sum_slots: 1, 2, ..., N/4 = 1024


def integer_program() -> bfv.ProgramOp:
    program = bfv.ProgramOp("intprog")
    block = program.block
    add = block.add_op
    add(bfv.ParamOp("N", 64))
    add(bfv.ParamOp("M", 100))
    top = len(MODULI) - 1
    py = bfv.EncodeOp("y", he.PtType.get(["N"], he.REPLICATED, top), Interval(-9.0, 9.0))
    ps = bfv.EncodeOp("S", he.PtType.get(["N", "M"], he.PACKED, top), Interval(-9.0, 9.0))
    add(py)
    y = bfv.EncryptOp(py.result)
    add(y)
    add(ps)
    s = bfv.EncryptOp(ps.result)
    add(s)
    colsum = bfv.ReduceOp(s.result, 0)
    add(colsum)
    yb = bfv.BroadcastOp(y.result, ["N", "M"], [0], he.PACKED)
    add(yb)
    ys = bfv.DotOp(yb.result, s.result, 0)
    add(ys)
    ys1 = bfv.RelinearizeOp(ys.result)
    add(ys1)
    sq = bfv.MulOp(colsum.result, colsum.result)
    add(sq)
    sq1 = bfv.RelinearizeOp(sq.result)
    add(sq1)
    total = bfv.SumSlotsOp(colsum.result)
    add(total)
    three = bfv.ConstantOp(-3.0)
    add(three)
    scaled = bfv.MulConstOp(colsum.result, three.result, integer=True)
    add(scaled)
    seven = bfv.ConstantOp(7.0)
    add(seven)
    shifted = bfv.AddConstOp(scaled.result, seven.result, integer=True)
    add(shifted)
    low = bfv.ModSwitchOp(colsum.result)  # level 1 -> 0: the last prime of Q dropped
    add(low)
    for name, value in (
        ("colsum", colsum),
        ("colsum_low", low),
        ("yS", ys1),
        ("sq", sq1),
        ("total", total),
        ("shifted", shifted),
    ):
        add(bfv.DecryptOp(name, value.result))
    program.set_parameters(
        bfv.Parameters(
            log_n=12,
            plain_moduli=(T,),
            moduli=MODULI,
            special_moduli=(),
            dnum=2,
            security_bits=128,
            insecure=False,
        )
    )
    program.set_rotation_keys(ROTATIONS)
    program.verify()
    return program


def role(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HEC_QUIET": "1"}
    return subprocess.run(
        [str(binary), *args], capture_output=True, text=True, check=False, env=env
    )


def _all_roles(binary: Path, inputs: dict[str, Path], work: Path, rows: int) -> Path:
    enc = [a for name, f in inputs.items() for a in ("--input", f"{name}={f}")]
    steps = [
        ("keygen", "--out", str(work / "keys"), "--rows", str(rows)),
        ("encrypt", "--pk", str(work / "keys" / "public"), *enc, "--out", str(work / "ct")),
        (
            "compute",
            "--eval",
            str(work / "keys" / "eval"),
            "--in",
            str(work / "ct"),
            "--out",
            str(work / "res"),
        ),
        (
            "decrypt",
            "--sk",
            str(work / "keys" / "secret"),
            "--in",
            str(work / "res"),
            "--out",
            str(work / "out"),
        ),
    ]
    for args in steps:
        done = role(binary, *args)
        assert done.returncode == 0, (args[0], done.stderr)
    return work / "out"


def test_meancov_int_compiled_with_scheme_bfv_matches_numpy_exactly(tmp_path: Path) -> None:
    built = compile_cpp(
        ROOT / "examples/stats/meancov_int.hec",
        tmp_path / "build",
        Options(sizes=Sizes.parse("N=20,D=3"), scheme="bfv"),
    )
    assert '#include "program/bfv_program.h"' in built.emitted.cpp
    rng = np.random.default_rng(11)
    x = rng.integers(0, 3, size=(20, 3)).astype(np.int64)
    np.save(tmp_path / "X.npy", x)
    out = _all_roles(built.binary, {"X": tmp_path / "X.npy"}, tmp_path, 20)
    sums, scatter = np.load(out / "sums.npy"), np.load(out / "scatter.npy")
    assert sums.dtype == np.int64 and scatter.dtype == np.int64
    np.testing.assert_array_equal(sums, x.sum(axis=0))
    np.testing.assert_array_equal(scatter, x.T @ x)


def test_a_public_factor_is_applied_exactly_on_bfv(tmp_path: Path) -> None:
    """`reveal chi2_num = d * (...)^2` with d = 2N public: BFV multiplies by d on the server
    (its plaintext modulus covers the product), so the decrypted value is the exact integer.
    It was refused at decrypt: "factor 100 (a BFV result is an exact integer: its factor is
    1)"."""
    n, m = 30, 5
    built = compile_cpp(
        ROOT / "examples/gwas/chisq_numerators.hec",
        tmp_path / "build",
        Options(sizes=Sizes.parse(f"N={n},M={m}"), scheme="bfv"),
    )
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, size=n).astype(np.int64)
    s = rng.integers(0, 3, size=(n, m)).astype(np.int64)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "S.npy", s)
    out = _all_roles(built.binary, {"y": tmp_path / "y.npy", "S": tmp_path / "S.npy"}, tmp_path, n)
    n11, c1, r1, d = y @ s, s.sum(axis=0), 2 * int(y.sum()), 2 * n
    chi2_num = np.load(out / "chi2_num.npy")
    assert chi2_num.dtype == np.int64
    np.testing.assert_array_equal(chi2_num, d * (n11 * d - c1 * r1) ** 2)
    np.testing.assert_array_equal(np.load(out / "or_den.npy"), (c1 - n11) * (r1 - n11))


def test_emitted_bfv_program_has_the_ckks_structure() -> None:
    runtime_dir, lib = ROOT / "runtime", ROOT / "build" / "release" / "libhec_runtime.a"
    e = emit(integer_program(), "intprog.hec", runtime_dir, lib)
    assert e.streaming and e.passes == 1 and e.stream_dim == "N"
    assert '#include "program/bfv_program.h"' in e.cpp
    assert "using namespace hec::program::bfv_program;" in e.cpp
    assert "s.plain_modulus = 65537ULL;" in e.cpp
    assert "log_scale" not in e.cpp and "scale" not in e.cpp.split("void compute")[1]
    assert "DotSink v6_sum(ops, server.threads());" in e.cpp
    assert 'server.stream("compute pass 1/1", {"v1", "v3"}' in e.cpp
    # Every server-side bfv op is printed as a comment right above its call.
    lines = [ln.strip() for ln in e.cpp.splitlines()]
    for name in (
        "bfv.mod_switch",
        "bfv.reduce",
        "bfv.broadcast",
        "bfv.dot",
        "bfv.mul",
        "bfv.relinearize",
        "bfv.sum_slots",
        "bfv.mul_const",
        "bfv.add_const",
    ):
        at = [i for i, ln in enumerate(lines) if ln.startswith("// %") and f"= {name} " in ln]
        assert at, name
        below = lines[at[0] + 1]
        assert not below.startswith("//"), (name, below)
    assert "integer_constant(" in e.cpp


def test_bfv_program_runs_all_roles_and_matches_numpy_exactly(tmp_path: Path) -> None:
    runtime_dir, lib = _runtime_library()
    e = emit(integer_program(), "intprog.hec", runtime_dir, lib, _system_libs())
    out = tmp_path / "build"
    write_project(e, out)
    binary = out / e.name
    ninja_build(out, binary)

    rng = np.random.default_rng(5)
    n, m = 7, 100
    y = rng.integers(-9, 10, size=n).astype(np.int64)
    s = rng.integers(-9, 10, size=(n, m)).astype(np.int64)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "S.npy", s)
    steps = [
        ("keygen", "--out", str(tmp_path / "keys"), "--rows", str(n)),
        (
            "encrypt",
            "--pk",
            str(tmp_path / "keys" / "public"),
            "--input",
            f"y={tmp_path / 'y.npy'}",
            "--input",
            f"S={tmp_path / 'S.npy'}",
            "--out",
            str(tmp_path / "ct"),
        ),
        (
            "compute",
            "--eval",
            str(tmp_path / "keys" / "eval"),
            "--in",
            str(tmp_path / "ct"),
            "--out",
            str(tmp_path / "res"),
        ),
        (
            "decrypt",
            "--sk",
            str(tmp_path / "keys" / "secret"),
            "--in",
            str(tmp_path / "res"),
            "--out",
            str(tmp_path / "out"),
        ),
    ]
    for args in steps:
        done = role(binary, *args)
        assert done.returncode == 0, (args[0], done.stderr)
    assert (tmp_path / "keys" / "secret").stat().st_mode & 0o777 == 0o600
    upload = next((tmp_path / "ct").glob("v3.rows-*.cts"))
    info = role(binary, "info", str(upload))
    assert info.returncode == 0, info.stderr
    assert "scheme: BFV" in info.stdout and "kind: ciphertext array" in info.stdout
    assert f"count: {n}" in info.stdout and "(same parameters)" in info.stdout
    assert "scale" not in info.stdout

    colsum = s.sum(axis=0)
    expected = {
        "colsum": colsum,
        "colsum_low": colsum,
        "yS": y @ s,
        "sq": colsum * colsum,
        "total": np.int64(colsum.sum()),
        "shifted": -3 * colsum + 7,
    }
    for name, want in expected.items():
        got = np.load(tmp_path / "out" / f"{name}.npy")
        assert got.dtype == np.int64, name
        np.testing.assert_array_equal(got, want, err_msg=name)


@pytest.mark.parametrize("bad", [0.5, -2.25])
def test_bfv_program_refuses_a_non_integer_input(tmp_path: Path, bad: float) -> None:
    runtime_dir, lib = _runtime_library()
    e = emit(integer_program(), "intprog.hec", runtime_dir, lib, _system_libs())
    out = tmp_path / "build"
    write_project(e, out)
    binary = out / e.name
    ninja_build(out, binary)
    s = np.zeros((3, 100))
    s[2, 41] = bad
    np.save(tmp_path / "S.npy", s)
    np.save(tmp_path / "y.npy", np.zeros(3, dtype=np.int64))
    assert role(binary, "keygen", "--out", str(tmp_path / "keys")).returncode == 0
    done = role(
        binary,
        "encrypt",
        "--pk",
        str(tmp_path / "keys" / "public"),
        "--input",
        f"y={tmp_path / 'y.npy'}",
        "--input",
        f"S={tmp_path / 'S.npy'}",
        "--out",
        str(tmp_path / "ct"),
    )
    assert done.returncode == 1
    assert f"input 'S' sample 2 column 41 is {bad:g}" in done.stderr
