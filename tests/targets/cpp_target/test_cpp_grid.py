"""The grid layout encrypted (docs/layout.md, issue 21): programs compiled with --grid-rows R
run by the C++ target (runtime/program: the index map, blocks of R rows streamed, the strided
row sum, masked constants) agree with the simulator of the same compiled program and with the
plaintext reference: sums over individuals, a masked constant, per-SNP values broadcast back to
the rows at N not a multiple of R; owners whose rows split a block; lra.hec.

Fast tier: small rings (lra at --insecure --log-n 13: its depth needs n = 2^16 at 128 bits,
which the slow test runs at the acceptance sizes)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from compiler.analysis.sizes import Sizes
from compiler.stat_numpy import run_client
from driver.pipeline import Compilation, Options, compile_file, report_of
from dsl.reference import evaluate
from hec.cli import main
from targets.sim.simulator import simulate
from tests.conftest import ROOT
from tests.dsl.test_reference import lra_data
from tests.targets.test_grid import SUMS

LRA = ROOT / "examples" / "gwas" / "lra.hec"

SIZES = {"N": 77, "M": 300}


def _data(seed: int) -> dict[str, npt.NDArray[np.float64]]:
    rng = np.random.default_rng(seed)
    return {
        "S": rng.integers(0, 3, size=(SIZES["N"], SIZES["M"])).astype(np.float64),
        "y": rng.integers(0, 2, size=SIZES["N"]).astype(np.float64),
    }


def _save(data: dict[str, npt.NDArray[np.float64]], directory: Path) -> list[str]:
    directory.mkdir(parents=True, exist_ok=True)
    args = []
    for name, value in data.items():
        np.save(directory / f"{name}.npy", value)
        args += ["--input", f"{name}={directory / f'{name}.npy'}"]
    return args


def _rel(got: npt.ArrayLike, want: npt.ArrayLike) -> float:
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return float(np.max(np.abs(g - w)) / (np.max(np.abs(w)) or 1.0))


def _hec_run(tmp_path: Path, path: Path, sizes: str, rows: str, *args: str) -> Path:
    """`hec run PATH --size SIZES --grid-rows ROWS --no-flooding ARGS` into tmp_path/out
    (built in tmp_path/build): the output directory."""
    out = tmp_path / "out"
    argv = ["run", str(path), "--size", sizes, "--grid-rows", rows, "--no-flooding", *args]
    assert main([*argv, "--out", str(out), "--build-dir", str(tmp_path / "build")]) == 0
    return out


def _compile(path: Path, rows: int, sizes: str, **options: object) -> Compilation:
    return compile_file(
        path,
        Options(sizes=Sizes.parse(sizes), grid_rows=rows, flooding=False, **options),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("rows", [2, 8])
def test_grid_program_encrypted_agrees_with_simulator_and_reference(
    tmp_path: Path, rows: int
) -> None:
    """N = 77 is not a multiple of R (the last block has padding rows: the masked constant of
    sum(y - 0.5) zeroes them); M = 300 spans several column blocks at R = 8 (C = 512)."""
    path = tmp_path / "p.hec"
    path.write_text(SUMS)
    data = _data(3)
    args = _save(data, tmp_path / "in")
    out = _hec_run(tmp_path, path, "N=77,M=300", str(rows), *args)
    comp = _compile(path, rows, "N=77,M=300")
    reference = evaluate(comp.checked, SIZES, data).revealed
    simulated = simulate(comp.program, SIZES, data).outputs
    for name in ("t", "r", "q"):
        got = np.load(out / f"{name}.npy")
        assert got.shape == (SIZES["M"],)
        assert _rel(got, reference[name]) <= 1e-4, name
        assert _rel(got, simulated[name]) <= 1e-4, name
    cpp = (tmp_path / "build" / "build" / "p.cpp").read_text()
    assert f"s.stream_block = {rows};" in cpp
    assert "fold_grid_rows" in cpp and "mul_mask_grid" in cpp


def _roles(binary: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def grid8(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program at R = 8, compiled and built (hec compile)."""
    d = tmp_path_factory.mktemp("grid8")
    (d / "p.hec").write_text(SUMS)
    assert (
        main(
            [
                "compile",
                str(d / "p.hec"),
                "--size",
                "N=77,M=300",
                "--grid-rows",
                "8",
                "--no-flooding",
                "-o",
                str(d / "build"),
            ]
        )
        == 0
    )
    return d / "build" / "p"


def test_owners_whose_rows_split_a_block(grid8: Path, tmp_path: Path) -> None:
    """Three owners, rows 0:37, 37:39 and 39:77 at R = 8: block 4 (rows 32..39) holds rows of
    all three. Each encrypts its rows of the blocks it touches (zeros elsewhere) and the server
    adds the shared block's uploads before any op."""
    data = _data(5)
    keys, cts, res, dec = (tmp_path / d for d in ("keys", "ct", "res", "dec"))
    owners = {"a": (0, 37), "b": (37, 39), "c": (39, 77)}
    ranges = [arg for o, (a, b) in owners.items() for arg in ("--owner", f"{o}={a}:{b}")]
    run = _roles(grid8, "keygen", "--out", str(keys), *ranges)
    assert run.returncode == 0, run.stderr
    for owner, (a, b) in owners.items():
        part = {k: v[a:b] for k, v in data.items()}
        args = _save(part, tmp_path / f"in-{owner}")
        run = _roles(grid8, "encrypt", "--pk", str(keys / "public"), "--owner", owner, *args,
                     "--out", str(cts))  # fmt: skip
        assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in cts.glob("S.rows-*.cts")) == [
        "S.rows-0-37.cts", "S.rows-37-39.cts", "S.rows-39-77.cts"
    ]  # fmt: skip
    run = _roles(grid8, "compute", "--eval", str(keys / "eval"), "--in", str(cts), "--out",
                 str(res))  # fmt: skip
    assert run.returncode == 0, run.stderr
    run = _roles(grid8, "decrypt", "--sk", str(keys / "secret"), "--in", str(res), "--out",
                 str(dec), "--no-flooding")  # fmt: skip
    assert run.returncode == 0, run.stderr
    s, y = data["S"], data["y"]
    n11 = y @ s
    want = {"t": n11 * np.sum(y - 0.5), "r": np.sum(s * n11, axis=0)}
    v = np.sum(s * (y - 0.5)[:, None], axis=0)
    want["q"] = v * v
    for name, w in want.items():
        assert _rel(np.load(dec / f"{name}.npy"), w) <= 1e-4, name


def test_block_rows_must_be_whole_grid_blocks(grid8: Path, tmp_path: Path) -> None:
    """encrypt --block-rows cuts an owner's upload into files; under the grid a file holds
    whole blocks of R rows, so a count that is not a multiple of R is a usage error."""
    keys = tmp_path / "keys"
    assert _roles(grid8, "keygen", "--out", str(keys)).returncode == 0
    args = _save(_data(1), tmp_path / "in")
    run = _roles(grid8, "encrypt", "--pk", str(keys / "public"), *args, "--block-rows", "12",
                 "--out", str(tmp_path / "ct"))  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "grid layout of 8 rows per ciphertext: --block-rows 12 must be a multiple of 8" in (
        run.stderr
    )
    run = _roles(grid8, "encrypt", "--pk", str(keys / "public"), *args, "--block-rows", "16",
                 "--out", str(tmp_path / "ct"))  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert len(list((tmp_path / "ct").glob("S.rows-*.cts"))) == 5  # ceil(77 / 16) files


def _lra_check(comp: Compilation, sizes: dict[str, int], data: dict[str, npt.NDArray[np.float64]],
               z: npt.NDArray[np.float64]) -> dict[str, float]:  # fmt: skip
    """z against the plaintext reference (R^2, max relative error) and the exact simulator."""
    want = evaluate(comp.checked, sizes, data).client["z"]
    sim = run_client(comp.stat_program, sizes, simulate(comp.program, sizes, data).outputs)["z"]
    return {
        "r2": float(1 - np.sum((z - want) ** 2) / np.sum((want - want.mean()) ** 2)),
        "max_rel": float(np.max(np.abs(z - want) / np.abs(want))),
        "rel_to_max": _rel(z, want),
        "rel_to_sim": _rel(z, sim),
    }


def _revealed_within_bounds(
    comp: Compilation, sizes: dict[str, int], data: dict[str, npt.NDArray[np.float64]], out: Path
) -> dict[str, tuple[float, float]]:
    """Every revealed value `hec run` wrote against the plaintext reference: (largest error,
    the report's bound: `precision_bits` below the output's range bound, issue 19), which it
    must not pass."""
    want = evaluate(comp.checked, sizes, data).revealed
    seen: dict[str, tuple[float, float]] = {}
    for o in report_of(comp)["outputs"]:
        got = np.load(out / f"{o['name']}.npy")
        err = float(np.max(np.abs(got - want[o["name"]]))) if got.size else 0.0
        bound = max(abs(o["range"][0]), abs(o["range"][1])) * 2.0 ** -o["precision_bits"]
        seen[o["name"]] = (err, bound)
    return seen


def _lra_run(
    tmp_path: Path, sizes: dict[str, int], rows: str, *extra: str, seed: int = 2
) -> tuple[dict[str, npt.NDArray[np.float64]], Path]:
    data = lra_data(np.random.default_rng(seed), sizes["N"], sizes["M"], sizes["K"])
    args = _save(data, tmp_path / "in")
    text = ",".join(f"{k}={v}" for k, v in sizes.items())
    return data, _hec_run(tmp_path, LRA, text, rows, *extra, *args)


def test_lra_grid_encrypted_small_ring(tmp_path: Path) -> None:
    """lra.hec at N = 120, M = 16, K = 3 with R = 8 (15 blocks, C = 512) on an insecure
    2^13 ring: z agrees with the plaintext reference and the simulator."""
    sizes = {"N": 120, "M": 16, "K": 3}
    data, out = _lra_run(tmp_path, sizes, "8", "--insecure", "--log-n", "13")
    comp = _compile(LRA, 8, "N=120,M=16,K=3", insecure=True, log_n=13)
    check = _lra_check(comp, sizes, data, np.load(out / "z.npy"))
    assert check["r2"] >= 0.9999, check
    assert check["rel_to_max"] <= 1e-2 and check["rel_to_sim"] <= 1e-2, check
    for name, (err, bound) in _revealed_within_bounds(comp, sizes, data, out).items():
        assert err <= bound, (name, err, bound)


@pytest.mark.slow
def test_lra_grid_encrypted_at_the_acceptance_sizes(tmp_path: Path) -> None:
    """Issue 21's acceptance: `hec run` of lra.hec at N = 1000, M = 1024, K = 4 with the grid
    the cost model chooses (128-bit parameters, n = 2^16): z agrees with the plaintext reference
    (R^2 >= 0.9999) and with the simulator."""
    sizes = {"N": 1000, "M": 1024, "K": 4}
    # The command as a user types it: the grid rows are the cost model's by default, and the
    # parameters keep the flooding budget (hec run decrypts without flooding).
    data = lra_data(np.random.default_rng(5), sizes["N"], sizes["M"], sizes["K"])
    out = tmp_path / "out"
    argv = ["run", str(LRA), "--size", "N=1000,M=1024,K=4", *_save(data, tmp_path / "in")]
    assert main([*argv, "--out", str(out), "--build-dir", str(tmp_path / "build")]) == 0
    comp = compile_file(LRA, Options(sizes=Sizes.parse("N=1000,M=1024,K=4"), grid_rows=0))
    assert comp.grids and comp.grids[0].rows > 1  # the grid: 1.91 MiB per individual
    check = _lra_check(comp, sizes, data, np.load(out / "z.npy"))
    revealed = _revealed_within_bounds(comp, sizes, data, out)
    print(check, revealed)
    assert check["r2"] >= 0.9999, check
    assert check["rel_to_sim"] <= 1e-2, check
    for name, (err, bound) in revealed.items():
        assert err <= bound, (name, err, bound)


def test_revealed_row_values_are_collected_a_block_at_a_time(tmp_path: Path) -> None:
    """A revealed per-individual value (leading axis N, on the grid rows) is collected one block
    of R rows at a time and decrypted by the index map; N = 37 leaves 3 padding rows."""
    path = tmp_path / "r.hec"
    path.write_text(
        "param N <= 1000\ninput y: secret[N] in {0, 1}\ninput x: secret[N] in [-1.0, 1.0]\n"
        "m = sum(x)\nreveal u = y * x + 1\nreveal s = m * m\n"
    )
    rng = np.random.default_rng(1)
    data = {"y": rng.integers(0, 2, size=37).astype(np.float64), "x": rng.uniform(-1, 1, 37)}
    out = _hec_run(tmp_path, path, "N=37", "8", *_save(data, tmp_path / "in"))
    u = np.load(out / "u.npy")
    assert u.shape == (37,)
    assert _rel(u, data["y"] * data["x"] + 1) <= 1e-5
    assert _rel(np.load(out / "s.npy"), np.sum(data["x"]) ** 2) <= 1e-5
