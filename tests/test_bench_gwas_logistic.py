"""`bench/run gwas-logistic` without the OpenFHE reference or the encrypted run: the reference's
output is parsed, the rows are built (phases, peaks, accuracy, the hec-only row), and a
reference that cannot be installed or fails at run time makes its cells say why."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from common import ReferenceUnavailableError  # noqa: E402

ARGS = ["gwas_logistic.py", "--n", "60", "--snps", "100", "--threads", "1", "--repeats", "2"]


def load() -> ModuleType:
    path = ROOT / "bench" / "gwas_logistic.py"
    spec = importlib.util.spec_from_file_location("bench_gwas_logistic", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def exact_sums(data) -> dict[str, np.ndarray]:
    S, inputs = data.S, data.inputs
    return {"score": inputs["r"] @ S, "sws": inputs["w"] @ (S * S), "vs": inputs["V"].T @ S}


def fake_ours(bench: ModuleType, seconds: float = 2.0):
    def run(data, threads, cache):
        phases = dict.fromkeys(bench.PHASES, seconds)
        params = {"log_n": 13, "moduli_bits": [42.0] * 3, "blocks": 1, "block_width": 4096,
                  "upload_bytes": 3 * 2**30}  # fmt: skip
        return bench.Run(phases, dict.fromkeys(bench.PHASES, 2**20), exact_sums(data), params)

    return run


def json_rows(out: str) -> dict[str, dict]:
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return {r["case"]: r for r in rows}


def test_rows_say_openfhe_is_not_installed(monkeypatch, capsys) -> None:
    bench = load()

    def no_python() -> str:
        raise ReferenceUnavailableError("bench/setup-reference: Python 3.10 not found")

    monkeypatch.setattr(bench, "reference_python", no_python)
    monkeypatch.setattr(bench, "run_ours", fake_ours(bench))
    monkeypatch.setattr(sys, "argv", [*ARGS, "--large", "80x120"])
    assert bench.main() == 0
    captured = capsys.readouterr()
    rows = json_rows(captured.out)
    compute = rows["N=60 M=100 K=4 t=1 compute"]
    assert compute["ours"] == 2.0 and compute["reference"] is None
    assert compute["ratio_fastest"] is None
    note = compute["references"][0]["note"]
    assert note == "not available (bench/setup-reference: Python 3.10 not found)"
    assert rows["N=60 M=100 K=4 t=1 STAT max abs. error"]["ours"] == 0.0
    assert rows["N=60 M=100 K=4 t=1 STAT R^2 vs float64"]["ours"] == pytest.approx(1.0)
    # The hec-only row at the --large size: no reference, its upload and memory.
    large = "hec only N=80 M=120 K=4 t=1"
    assert rows[f"{large} compute"]["ours"] == 2.0 and rows[f"{large} compute"]["reference"] is None
    assert rows[f"{large} ciphertext files written"]["ours"] == 3.0
    assert rows[f"{large} encrypt peak RSS"]["ours"] == 1.0
    assert rows[f"{large} driver process peak RSS"]["ours"] > 0
    assert "openfhe: not available (bench/setup-reference: Python 3.10 not found)" in captured.out


def test_rows_say_the_reference_failed_at_run_time(monkeypatch, capsys) -> None:
    bench = load()

    def crash(*_args: object, **_kwargs: object) -> object:
        raise subprocess.CalledProcessError(1, "python", stderr="Traceback\nRuntimeError: Decode")

    monkeypatch.setattr(bench, "reference_python", lambda: "/nonexistent/python3.10")
    monkeypatch.setattr(bench, "run_reference", crash)
    monkeypatch.setattr(bench, "run_ours", fake_ours(bench))
    monkeypatch.setattr(sys, "argv", [*ARGS, "--large", "none"])
    assert bench.main() == 0
    captured = capsys.readouterr()
    rows = json_rows(captured.out)
    assert not any(case.startswith("hec only") for case in rows)
    encrypt = rows["N=60 M=100 K=4 t=1 encrypt"]
    assert encrypt["references"][0]["note"] == "not available (exit 1: RuntimeError: Decode)"
    assert "bench: openfhe: not available" in captured.err


def test_reference_output_is_parsed_and_compared(monkeypatch, tmp_path, capsys) -> None:
    bench = load()
    data = bench.cohort(60, 100, 5)
    sums = exact_sums(data)
    # The reference's sums off by 1e-6 of their largest value: its accuracy rows show it.
    noisy = {k: v + 1e-6 * np.max(np.abs(v)) for k, v in sums.items()}
    out = tmp_path / "ref.npz"
    np.savez(out, **noisy)
    facts = {
        "seconds": {"keygen": 0.1, "encrypt": 8.0, "compute": 4.0, "decrypt": 0.2},
        "peak_rss": {"keygen": 2**21, "encrypt": 2**22, "compute": 2**22, "decrypt": 2**21},
        "params": {"ring_dim": 8192, "moduli_bits": [60, 50], "workers": 1},
        "openfhe": "1.6.1.0.22.4",
    }
    ref = bench.parse_reference("openfhe says hello\n" + json.dumps(facts) + "\n", out)
    assert ref.seconds["compute"] == 4.0 and ref.params["openfhe"] == "1.6.1.0.22.4"
    assert np.array_equal(ref.revealed["vs"], noisy["vs"])
    ref_acc = bench.accuracy(ref.revealed, data)
    assert ref_acc["sums_rel"] == pytest.approx(1e-6, rel=1e-3)
    assert ref_acc["stat_abs"] > 0 and ref_acc["stat_r2"] > 0.999
    ours = fake_ours(bench, 1.0)(data, 1, tmp_path)
    ours_acc = bench.accuracy(ours.revealed, data)
    assert ours_acc["sums_rel"] == 0.0
    rows = bench.comparison_rows("c", [ours], ours_acc, [ref, ref], ref_acc, "")
    by_case = {r.case: r for r in rows}
    assert by_case["c compute"].ratio == 0.25 and by_case["c compute"].ratio_fastest == 0.25
    assert by_case["c encrypt peak RSS"].reference == 4.0
    assert by_case["c compute"].refs[0].note.startswith("openfhe 1.6.1.0.22.4: ring 2^13")


def test_large_size_option() -> None:
    bench = load()
    assert bench.parse_size("none") is None
    assert bench.parse_size("5000x16384") == (5000, 16384)
    with pytest.raises(ValueError):
        bench.parse_size("5000")


def test_matched_reference_and_the_compute_split_are_rows(monkeypatch, capsys) -> None:
    """Ours' compute split (read+verify, arithmetic) is a row each; the reference runs a
    second time at our scale (`--scale-bits`), in its own column, and a third time with its
    server deserializing the uploads (`--uploads`), whose deserializing is the read+verify
    row's counterpart and the rest the arithmetic row's."""
    bench = load()
    plain = fake_ours(bench, 2.0)

    def ours(data, threads, cache):
        run = plain(data, threads, cache)
        run.params["scale_bits"] = 57.0
        run.seconds.update({"compute: read+verify": 1.5, "compute: arithmetic": 0.5})
        return run

    calls: list[tuple[int | None, bool]] = []

    def reference(python, data, threads, workdir, scale_bits=None, uploads=False):
        calls.append((scale_bits, uploads))
        compute = 1.0 if scale_bits is None else 2.5
        compute += 3.0 if uploads else 0.0
        moduli = [60, 50] if scale_bits is None else [60, scale_bits, scale_bits]
        d = bench.cohort(60, 100, 22)
        params = {"ring_dim": 8192, "moduli_bits": moduli, "workers": threads, "openfhe": "x",
                  "uploads": uploads}  # fmt: skip
        seconds = {**dict.fromkeys(bench.PHASES, 1.0), "compute": compute}
        if uploads:
            seconds[bench.DESERIALIZE] = 2.0
        return bench.Run(seconds, dict.fromkeys(bench.PHASES, 2**20), exact_sums(d), params)

    monkeypatch.setattr(bench, "reference_python", lambda: "/nonexistent/python3.10")
    monkeypatch.setattr(bench, "run_reference", reference)
    monkeypatch.setattr(bench, "run_ours", ours)
    monkeypatch.setattr(sys, "argv", [*ARGS, "--large", "none"])
    assert bench.main() == 0
    rows = json_rows(capsys.readouterr().out)
    # --repeats 2 of each
    assert calls == [(None, False)] * 2 + [(57, False)] * 2 + [(None, True)] * 2
    compute = rows["N=60 M=100 K=4 t=1 compute"]
    assert [r["value"] for r in compute["references"]] == [1.0, 2.5, 4.0]
    names = [r["name"] for r in compute["references"]]
    assert names == ["openfhe", "openfhe-matched", "openfhe-uploads"]
    assert "moduli [60, 57, 57]" in compute["references"][1]["note"]
    assert "the server deserializes every upload" in compute["references"][2]["note"]
    assert compute["ratio"] == 2.0 and compute["ratio_fastest"] == 2.0
    arithmetic = rows["N=60 M=100 K=4 t=1 compute: arithmetic"]
    assert arithmetic["ours"] == 0.5 and arithmetic["ratio"] == 0.5
    assert [r["value"] for r in arithmetic["references"]] == [1.0, 2.5, 2.0]
    verify = rows["N=60 M=100 K=4 t=1 compute: read+verify"]
    assert verify["ours"] == 1.5 and verify["reference"] is None
    assert "holds its ciphertexts in memory" in verify["references"][0]["note"]
    assert verify["references"][2]["value"] == 2.0  # the deserializing


def test_the_compute_roles_split_is_read_from_its_stderr(monkeypatch, tmp_path) -> None:
    """SplitBackend adds up the compute role's read_seconds= and arithmetic_seconds= over the
    blocks, and refuses a role that printed none (an old build)."""
    bench = load()
    from driver.roles import RoleOutput

    line = "[compute] ... (read_seconds=1.250000 arithmetic_seconds=0.500000 read_bytes=9)\n"
    outputs = iter([RoleOutput(line, "", 1), RoleOutput(line, "", 1), RoleOutput("", "", 1)])
    monkeypatch.setattr(
        bench.EncryptedBackend, "_runner", lambda self, meter: lambda *args: next(outputs)
    )
    backend = bench.SplitBackend()
    run = backend._runner(bench.PhaseMeter())
    run(tmp_path, ["compute"], None)
    run(tmp_path, ["compute"], None)
    assert backend.split == {"read_seconds": 2.5, "arithmetic_seconds": 1.0}
    with pytest.raises(RuntimeError, match="printed no read_seconds="):
        run(tmp_path, ["compute"], None)
