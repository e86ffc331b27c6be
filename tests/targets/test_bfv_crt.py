"""BFV over several plaintext moduli (issue 18): when a revealed value needs more bits than one
plaintext prime below 2^60 holds, the program runs once modulo each of k primes and decryption
reconstructs the integers by the CRT, exactly (Python integers, no doubles).

Covered: the reconstruction against Python integers; the primes the parameter pass chooses
(batching-friendly, below the runtime's 2^60, covering twice the range, Q disjoint from them);
the simulator and the encrypted run of a program whose results exceed 2^62 in magnitude,
matched exactly against Python integers (the exact text file included); the report and the
cost model counting k residue computations; the refusals (a range beyond 16 primes, an
encrypted value beyond 2^53; a CRT binary run without --residue).
"""

from __future__ import annotations

import math
import random
import subprocess
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from compiler.analysis.security import is_prime
from compiler.analysis.sizes import Sizes
from compiler.dialects import bfv
from compiler.errors import UserError
from driver.pipeline import Options, compile_file, cost_of, report_of
from driver.run import read_exact_text, run_encrypted, run_sim
from passes.bfv_parameters import MAX_PLAIN_MODULI, plain_moduli
from targets.report.report import render_text
from targets.sim.bfv_sim import simulate_bfv

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "crt_products.hec"
SIZES = "N=64,D=3"
Y_DOMAIN = [-3000000000, -7, 0, 5, 3000000000]
X_DOMAIN = [-3000000000, -1, 0, 2, 3000000000]


def inputs(seed: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Mostly the large values of each domain, so the sums reach beyond 2^62."""
    rng = np.random.default_rng(seed)
    y = rng.choice(Y_DOMAIN, size=64, p=[0.45, 0.05, 0.0, 0.05, 0.45])
    x = rng.choice(X_DOMAIN, size=(64, 3), p=[0.1, 0.05, 0.0, 0.05, 0.8])
    return y.astype(np.int64), x.astype(np.int64)


def reference(y: npt.NDArray[np.int64], x: npt.NDArray[np.int64]) -> dict[str, list[int]]:
    """The results in Python integers (numpy's int64 would overflow)."""
    yi = [int(v) for v in y]
    xi = [[int(v) for v in row] for row in x]
    s = [sum(yi[n] * xi[n][j] for n in range(64)) for j in range(3)]
    scatter = [sum(xi[n][i] * xi[n][j] for n in range(64)) for i in range(3) for j in range(3)]
    return {"s": s, "scatter": scatter}


def as_ints(a: npt.ArrayLike) -> list[int]:
    return [int(v) for v in np.asarray(a).flat]


def test_reconstruct_is_exact_for_random_integers() -> None:
    rng = random.Random(5)
    moduli = (137438822401, 137438773249, 1152921504606830593)
    total = math.prod(moduli)
    values = [rng.randrange(-(total // 2), total // 2) for _ in range(200)]
    values += [total // 2, -(total // 2), 0, 1, -1]
    residues = [np.array([v % t for v in values], dtype=np.int64) for t in moduli]
    got = bfv.reconstruct(residues, moduli)
    assert got.dtype == object and as_ints(got) == values
    # Centred residues (what the runtime decrypts) give the same integers.
    centred = [np.where(r > t // 2, r - t, r) for r, t in zip(residues, moduli, strict=True)]
    assert as_ints(bfv.reconstruct(centred, moduli)) == values
    # Every value within int64: an int64 array; one modulus: the residues unchanged.
    small = bfv.reconstruct([np.array([5, -7]) % t for t in moduli[:2]], moduli[:2])
    assert small.dtype == np.int64 and as_ints(small) == [5, -7]
    assert as_ints(bfv.reconstruct([np.array([3, -4])], (65537,))) == [3, -4]
    with pytest.raises(ValueError, match="2 residue arrays for 3 moduli"):
        bfv.reconstruct(residues[:2], moduli)


@pytest.mark.parametrize("bits", [40, 59, 61, 69, 100, 200, 400])
def test_plain_moduli_cover_twice_the_range(bits: int) -> None:
    largest = float(2**bits)
    log_n = 13
    moduli = plain_moduli(largest, log_n, inputs=3e9)
    assert moduli is not None
    assert len(set(moduli)) == len(moduli)
    for t in moduli:
        assert is_prime(t) and t % (2 << log_n) == 1 and t < 2**60 and t > 2 * 3e9
    assert math.prod(moduli) > 2 * largest
    if bits < 59:
        assert len(moduli) == 1
    else:
        # More than one; no more than needed by a margin of one prime.
        assert 2 <= len(moduli) <= math.ceil((bits + 2) / 59) + 1


def test_crt_parameters_and_report_count_every_residue() -> None:
    comp = compile_file(PROGRAM, Options(scheme="bfv", sizes=Sizes.parse(SIZES)))
    params = comp.bfv_program.parameters()
    assert params is not None and params.residues == 2
    assert params.plain_product > 4 * 64 * 9 * 10**18
    assert not set(params.plain_moduli) & set(params.moduli + params.special_moduli)
    assert params.security_bits == 128
    cost = cost_of(comp)
    assert cost.residues == 2
    one = bfv.Parameters(**{**params.__dict__, "plain_moduli": params.plain_moduli[:1]})
    comp.bfv_program.set_parameters(one)
    single = cost_of(comp)
    comp.bfv_program.set_parameters(params)
    assert cost.compute_s == pytest.approx(2 * single.compute_s)
    assert cost.upload_bytes == 2 * single.upload_bytes
    assert cost.download_bytes == 2 * single.download_bytes
    text = render_text(report_of(comp))
    assert "CRT over 2 plaintext moduli" in text and "(2 residue computations, x2 counted)" in text


def test_crt_simulation_is_exact_beyond_int64() -> None:
    comp = compile_file(PROGRAM, Options(scheme="bfv", sizes=Sizes.parse(SIZES)))
    y, x = inputs(seed=1)
    want = reference(y, x)
    assert max(abs(v) for v in want["s"] + want["scatter"]) > 2**62
    got = simulate_bfv(comp.bfv_program, {"N": 64, "D": 3}, {"y": y, "X": x}).outputs
    assert as_ints(got["s"]) == want["s"]
    assert as_ints(got["scatter"]) == want["scatter"]


def test_hec_run_sim_writes_the_exact_integers(tmp_path: Path) -> None:
    y, x = inputs(seed=2)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "X.npy", x)
    out = tmp_path / "out"
    result = run_sim(
        PROGRAM,
        {"y": tmp_path / "y.npy", "X": tmp_path / "X.npy"},
        out,
        options=Options(scheme="bfv"),
    )
    want = reference(y, x)
    assert result.summary["exact_files"] == {"s": "s.txt", "scatter": "scatter.txt"}
    assert as_ints(read_exact_text(out / "s.txt")) == want["s"]
    scatter = read_exact_text(out / "scatter.txt")
    assert scatter.shape == (3, 3) and as_ints(scatter) == want["scatter"]
    # The .npy beside it holds the nearest float64s.
    np.testing.assert_allclose(np.load(out / "s.npy"), [float(v) for v in want["s"]])


def test_crt_encrypted_run_is_exact_beyond_int64(tmp_path: Path) -> None:
    y, x = inputs(seed=3)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "X.npy", x)
    want = reference(y, x)
    assert max(abs(v) for v in want["s"] + want["scatter"]) > 2**62
    out, work = tmp_path / "out", tmp_path / "work"
    result = run_encrypted(
        PROGRAM,
        {"y": tmp_path / "y.npy", "X": tmp_path / "X.npy"},
        out,
        options=Options(scheme="bfv"),
        work=work,
    )
    assert as_ints(result.revealed["s"]) == want["s"]
    assert as_ints(result.revealed["scatter"]) == want["scatter"]
    assert as_ints(read_exact_text(out / "s.txt")) == want["s"]
    assert as_ints(read_exact_text(out / "scatter.txt")) == want["scatter"]
    seconds = result.summary["residue_seconds"]
    assert isinstance(seconds, list) and len(seconds) == 2
    # Each residue ran in its own directory with its own keys; each decrypted residue is the
    # true value's centred residue modulo its prime.
    params = result.summary["params"]
    assert isinstance(params, dict)
    moduli = params["plain_moduli"]
    assert isinstance(moduli, list)
    for i, t in enumerate(moduli):
        assert isinstance(t, int)
        residue = as_ints(np.load(work / f"r{i}" / "dec" / "s.npy"))
        centred = [(v + t // 2) % t - t // 2 for v in want["s"]]
        assert residue == centred
        assert (work / f"r{i}" / "keys" / "secret").is_file()
    # The binary refuses to run a role without naming the residue.
    binary = Path(str(result.summary["binary"]))
    done = subprocess.run([str(binary), "info"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "runs as 2 residue computations" in done.stderr and "--residue I" in done.stderr


def test_bfv_refuses_a_range_beyond_every_crt_naming_the_output(tmp_path: Path) -> None:
    program = tmp_path / "power.hec"
    # sum(x) reaches 64 * 1e15; its 18th power 3.25e302 (1005 bits): more than 16 primes.
    program.write_text(
        "param N <= 64\ninput x: secret[N] in {-1000000000000000, 1000000000000000}\n"
        "s = sum(x)\nreveal small = s\nreveal p = s ^ 16 * s * s\n"
    )
    with pytest.raises(UserError, match=r"output 'p' reaches 3\.25e\+302 in magnitude") as err:
        compile_file(program, Options(scheme="bfv", sizes=Sizes.parse("N=64")))
    assert f"a CRT over {MAX_PLAIN_MODULI} plaintext primes below 2^60" in str(err.value)


def test_bfv_refuses_an_encrypted_value_beyond_float64_naming_it(tmp_path: Path) -> None:
    program = tmp_path / "owner.hec"
    # The data owner holds y and X and computes y * X (owner-side): 9e18 > 2^53.
    program.write_text(
        "param N <= 64\nparam D <= 3\n"
        "input y: secret[N] in {-3000000000, 0, 3000000000}\n"
        "input X: secret[N, D] in {-3000000000, 0, 3000000000}\nreveal s = y @ X\n"
    )
    with pytest.raises(
        UserError, match=r"encrypted value 'y_X_own' \(the data owner computes \(mul y X\)\)"
    ):
        compile_file(program, Options(scheme="bfv", sizes=Sizes.parse("N=64,D=3")))


def test_regression_products_at_a_large_plaintext_modulus_decrypt_exactly(tmp_path: Path) -> None:
    """The noise model left out the encoding error of Delta = floor(Q/t): the runtime adds
    Delta m with m's coefficients in [0, t), so t x = Q m - (Q mod t) m + t e, an extra noise of
    up to t per coefficient that a product multiplies by about N t. Squares of 21000 (t of
    35.7 bits at n = 2^13, two 60-bit primes) were predicted a 24-bit budget and decrypted to
    garbage in every slot; with the term the pass takes a third prime and they are exact."""
    program = tmp_path / "squares.hec"
    program.write_text(
        "param N <= 64\nparam D <= 3\ninput X: secret[N, D] in {-21000, -1, 0, 2, 21000}\n"
        "reveal p = X * X\nreveal q = sum(X * X, axis=0)\n"
    )
    rng = np.random.default_rng(4)
    x = rng.choice([-21000, -1, 0, 2, 21000], size=(64, 3)).astype(np.int64)
    np.save(tmp_path / "X.npy", x)
    result = run_encrypted(
        program, {"X": tmp_path / "X.npy"}, tmp_path / "out", options=Options(scheme="bfv")
    )
    params = result.summary["params"]
    assert isinstance(params, dict) and isinstance(params["plain_moduli"], list)
    (t,) = params["plain_moduli"]
    assert isinstance(t, int) and t > 2**35
    np.testing.assert_array_equal(result.revealed["p"], x * x)
    np.testing.assert_array_equal(result.revealed["q"], (x * x).sum(axis=0))
