"""`hec run` of a program that declares an input and a size its server never reads (found by
the slow statistical test's generated programs): the encrypt role refused the unused input
("the program has no input of that name"), and without it the server asked for the unused size
("size M is not given by any input"). Only the inputs the program encrypts go to the encrypt
role, and the generated program asks only for the sizes its values and numbers use."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options
from driver.run import Built, compile_cpp
from hec.cli import main
from tests.targets.cpp_target.test_cpp_encrypted import role

PROGRAM = """param N <= 10
param M <= 10
input x: secret[N] in [0.0, 1.0]
input z: secret[M] in [0.0, 1.0]
reveal s = sum(x)
"""


def _hec_run_s(tmp_path: Path, program: str) -> tuple[float, float]:
    """`hec run` of `program` on x (7 values) and z (4): its s, and sum(x)."""
    (tmp_path / "p.hec").write_text(program)
    x = np.linspace(0.0, 1.0, 7)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "z.npy", np.full(4, 0.5))
    args = ["run", str(tmp_path / "p.hec"), "--insecure", "--log-n", "12"]
    inputs = ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"z={tmp_path / 'z.npy'}"]
    assert main([*args, *inputs, "--out", str(tmp_path / "out")]) == 0
    return float(np.load(tmp_path / "out" / "s.npy")), float(np.sum(x))


def test_an_input_the_server_never_reads_does_not_stop_hec_run(tmp_path: Path) -> None:
    s, sum_x = _hec_run_s(tmp_path, PROGRAM)
    assert abs(s - sum_x) <= 1e-6


USES_M = """param N <= 10
param M <= 10
input x: secret[N] in [0.0, 1.0]
input z: secret[M] in [0.0, 1.0]
reveal s = sum(x) / (M + 1)
"""


def test_a_size_only_an_unread_input_carries_is_fixed_by_keygen(tmp_path: Path) -> None:
    """Was (the slow tier's generated programs, `x3 / (M + 1)` with the only [M] input unread):
    the server needs M but no upload carries it, and compute failed "size M is not given by
    any input". `hec run` now has keygen fix it in the run manifest (`--size M=4`, from z's
    shape)."""
    s, sum_x = _hec_run_s(tmp_path, USES_M)
    assert abs(s - sum_x / 5) <= 1e-6


@pytest.fixture(scope="module")
def uses_m(tmp_path_factory: pytest.TempPathFactory) -> Built:
    base = tmp_path_factory.mktemp("uses_m")
    (base / "p.hec").write_text(USES_M)
    return compile_cpp(base / "p.hec", base / "prog", Options(sizes=Sizes.parse("N=10,M=10"),
                       flooding=False, insecure=True, log_n=12))  # fmt: skip


def _run(built: Built, work: Path, *keygen: str) -> subprocess.CompletedProcess[str]:
    """keygen with `keygen` extra arguments, encrypt x (7 rows), compute: compute's result."""
    done = role(built.binary, "keygen", "--out", str(work / "keys"), *keygen)
    assert done.returncode == 0, done.stderr
    np.save(work / "x.npy", np.linspace(0.0, 1.0, 7))
    done = role(built.binary, "encrypt", "--pk", str(work / "keys" / "public"),
                  "--input", f"x={work / 'x.npy'}", "--out", str(work / "ct"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return role(built.binary, "compute", "--eval", str(work / "keys" / "eval"),
                  "--in", str(work / "ct"), "--out", str(work / "res"))  # fmt: skip


def test_without_the_fixed_size_compute_says_how_to_fix_it(uses_m: Built, tmp_path: Path) -> None:
    done = _run(uses_m, tmp_path)
    assert done.returncode == 1
    assert "size M is not given by any input" in done.stderr
    assert "keygen --size M=V" in done.stderr
    assert not (tmp_path / "res").exists()


def test_a_fixed_size_the_uploads_contradict_is_refused(uses_m: Built, tmp_path: Path) -> None:
    done = _run(uses_m, tmp_path, "--size", "M=4", "--size", "N=6")
    assert done.returncode == 1
    assert "have N = 7 but the run manifest" in done.stderr and "fixes N = 6" in done.stderr
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize(
    ("arg", "says"),
    [
        ("Q=3", "no size parameter 'Q'"),
        ("M=0", "must be a positive integer"),
        ("M=x", "must be a positive integer"),
        ("M=11", "exceeds the bound M <= 10"),
        ("M", "NAME=VALUE"),
    ],
)
def test_bad_keygen_sizes_are_usage_errors(
    uses_m: Built, tmp_path: Path, arg: str, says: str
) -> None:
    done = role(uses_m.binary, "keygen", "--out", str(tmp_path / "keys"), "--size", arg)
    assert done.returncode == 2 and says in done.stderr, done.stderr
    assert not (tmp_path / "keys").exists()
