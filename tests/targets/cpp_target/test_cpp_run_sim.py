"""`hec run --sim`: the compiled program through the reference simulator, then the client
block, on .npy inputs; the outputs must equal the plaintext reference (exact mode), and bad
inputs get their own clear errors with nothing left behind."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cpp_target_common import EXAMPLES, ROOT, example_inputs, rel_error

from compiler.errors import UserError
from driver.run import run_sim
from hec.cli import main


@pytest.mark.parametrize(("path", "sizes"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_sim_run_equals_the_plaintext_reference(path: str, sizes: str, tmp_path: Path) -> None:
    files, ref, _ = example_inputs(path, sizes, tmp_path / "in")
    args = ["run", str(ROOT / path), "--sim", "--out", str(tmp_path / "out")]
    for name, f in files.items():
        args += ["--input", f"{name}={f}"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["backend"] == "simulator-exact"
    assert summary["insecure"] is False
    assert set(summary["revealed"]) == set(ref.revealed)
    assert set(summary["client"]) == set(ref.client)
    for name, want in [*ref.revealed.items(), *ref.client.items()]:
        got = np.load(tmp_path / "out" / f"{name}.npy")
        assert got.shape == np.shape(want), name
        assert rel_error(got, want) <= 1e-9, name


def test_sim_noisy_run_is_close_but_not_equal(tmp_path: Path) -> None:
    path, sizes = EXAMPLES[0]
    files, ref, _ = example_inputs(path, sizes, tmp_path / "in")
    result = run_sim(ROOT / path, files, tmp_path / "out", noisy=True, seed=4)
    assert result.summary["backend"] == "simulator-noisy"
    got = result.revealed["chi2_den"]
    assert not np.array_equal(got, ref.revealed["chi2_den"])
    assert rel_error(got, ref.revealed["chi2_den"]) < 1e-4


def test_sizes_come_from_the_inputs_and_insecure_is_stamped(tmp_path: Path) -> None:
    from driver.pipeline import Options

    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    result = run_sim(
        ROOT / EXAMPLES[0][0],
        files,
        tmp_path / "out",
        options=Options(log_n=11, insecure=True),
    )
    assert result.summary["sizes"] == {"N": 20, "M": 10}
    assert result.summary["insecure"] is True
    assert "INSECURE" in str(result.summary["warning"])


def _error(tmp_path: Path, files: dict[str, Path]) -> str:
    out = tmp_path / "out"
    with pytest.raises(UserError) as info:
        run_sim(ROOT / EXAMPLES[0][0], files, out)
    assert not out.exists(), "a failed run must not leave an output directory"
    return str(info.value)


def test_missing_input_is_named(tmp_path: Path) -> None:
    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    del files["y"]
    assert "missing input 'y'" in _error(tmp_path, files)


def test_unknown_input_is_named(tmp_path: Path) -> None:
    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    files["Q"] = files["y"]
    assert "--input Q: the program has no input of that name" in _error(tmp_path, files)


def test_inconsistent_sizes_are_refused(tmp_path: Path) -> None:
    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    np.save(tmp_path / "in" / "y.npy", np.zeros(7))
    message = _error(tmp_path, files)
    assert "size N is 7 by input 'y' axis 0 but 20 by input 'S' axis 0" in message


def test_wrong_rank_is_refused(tmp_path: Path) -> None:
    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    np.save(tmp_path / "in" / "y.npy", np.zeros((20, 1)))
    assert "input 'y' has shape (20, 1), the program declares [N] (rank 1)" in _error(
        tmp_path, files
    )


def test_value_outside_the_domain_is_refused(tmp_path: Path) -> None:
    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    s = np.load(files["S"])
    s[3, 4] = 7
    np.save(files["S"], s)
    assert "input 'S' has value 7 at (3, 4), outside its domain {0, 1, 2}" in _error(
        tmp_path, files
    )


def test_truncated_npy_is_refused(tmp_path: Path) -> None:
    files, _, _ = example_inputs(*EXAMPLES[0], tmp_path / "in")
    data = files["S"].read_bytes()
    files["S"].write_bytes(data[: len(data) // 2])
    assert "S.npy is not a readable .npy file" in _error(tmp_path, files)
