"""The benchmarks' reference libraries (OpenFHE, Lattigo, tfhe-rs): a reference that cannot be
set up or run makes its cells say "not available (reason)" and the rest of the bench runs; the
JSON rows carry each reference's name and version and `ratio_fastest` / `ratio_tfhe`."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import common  # noqa: E402
from common import Reference, ReferenceUnavailableError, Row  # noqa: E402


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def json_rows(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def by_name(row: dict) -> dict[str, dict]:
    return {r["name"]: r for r in row["references"]}


def test_ratio_fastest_uses_the_fastest_available_reference() -> None:
    refs = (
        Reference("openfhe", "1.6.1", 8.0),
        Reference("lattigo", "v6.1.1", 4.0),
        Reference("tfhe-rs", "1.8.2", None, "not available (cargo not found)"),
    )
    row = json.loads(Row("b", "c", 2.0, 8.0, "ms", refs).as_json())
    assert row["ratio"] == 0.25 and row["ratio_fastest"] == 0.5
    assert row["ratio_tfhe"] is None
    assert by_name(row)["tfhe-rs"]["note"] == "not available (cargo not found)"
    alone = json.loads(Row("b", "c", None, None, "ms", refs[1:2]).as_json())
    assert alone["ours"] is None and alone["ratio_fastest"] is None


def test_a_memory_bound_row_says_whether_its_target_is_below_the_memory_floor() -> None:
    refs = (Reference("openfhe", "1.6.1", 0.124), Reference("lattigo", "v6.1.1", 0.158))
    below = json.loads(Row("b", "add", 0.093, 0.124, "ms", refs, floor=0.092).as_json())
    assert below["memory_floor"] == 0.092 and below["ratio_floor"] == pytest.approx(0.093 / 0.092)
    assert below["target_below_floor"] is True and "memory_floor_ours" not in below
    # Half the fastest reference (0.062) at or above the floor: the target is reachable.
    reachable = json.loads(
        Row("b", "mp", 0.45, 0.9, "ms", refs, floor=0.06, floor_ours=0.07).as_json()
    )
    assert reachable["target_below_floor"] is False and reachable["memory_floor_ours"] == 0.07
    plain = json.loads(Row("b", "rotate", 1.0, 2.0, "ms", refs).as_json())
    assert "memory_floor" not in plain and "target_below_floor" not in plain
    no_reference = Row("b", "add", 1.0, None, "ms", floor=0.5)
    assert no_reference.target_below_floor is None


def test_setup_reference_says_why_a_toolchain_is_missing(monkeypatch, tmp_path) -> None:
    # A PATH with only what the script needs before it looks for go / cargo.
    for tool in ("bash", "dirname"):
        found = shutil.which(tool)
        assert found is not None
        (tmp_path / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(tmp_path))
    for which, tool in (("lattigo", "go"), ("tfhers", "cargo")):
        with pytest.raises(ReferenceUnavailableError, match=f"{tool} not found"):
            common.reference_tool(which)
    out = subprocess.run(
        [str(ROOT / "bench" / "setup-reference"), "nope"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "unknown reference 'nope'" in out.stderr


def test_pinned_versions_are_read_from_the_lock_files() -> None:
    assert common.lattigo_version().startswith("v6.")
    assert common.tfhers_version().startswith("1.")
    assert common.openfhe_version() == "1.6.1"


def fail_openfhe(*_args: object, **_kwargs: object) -> object:
    raise subprocess.CalledProcessError(1, "python", stderr="Traceback\nRuntimeError: no wheel")


def fail_lattigo(*_args: object, **_kwargs: object) -> object:
    raise ReferenceUnavailableError("bench/setup-reference: go not found")


def test_ckks_rows_say_a_reference_is_not_available(monkeypatch, capsys) -> None:
    ckks = load("ckks")
    ours = {op: 0.001 for op, _ in ckks.OPS}
    monkeypatch.setattr(ckks, "run_ours", lambda cfg, dot=0, threads=1: ours)
    monkeypatch.setattr(ckks, "run_reference", fail_openfhe)
    monkeypatch.setattr(ckks, "run_lattigo", fail_lattigo)
    monkeypatch.setattr(sys, "argv", ["ckks.py", "--only", "13"])
    assert ckks.main() == 0
    captured = capsys.readouterr()
    rows = json_rows(captured.out)
    assert len(rows) == len(ckks.OPS) + 1  # the ops and Lattigo's bare key switch
    for row in rows:
        refs = by_name(row)
        assert refs["lattigo"]["value"] is None
        assert refs["lattigo"]["note"] == "not available (bench/setup-reference: go not found)"
        assert row["ratio_fastest"] is None
        if row["ours"] is not None:  # the key-switch row is Lattigo's only: OpenFHE not measured
            assert refs["openfhe"]["note"] == "not available (exit 1: RuntimeError: no wheel)"
    assert rows[0]["ours"] == 1.0
    assert "lattigo: not available (bench/setup-reference: go not found)" in captured.out
    assert "bench: lattigo: not available" in captured.err


def test_ckks_ratio_fastest_with_lattigo_only(monkeypatch, capsys) -> None:
    ckks = load("ckks")
    monkeypatch.setattr(
        ckks, "run_ours", lambda cfg, dot=0, threads=1: {op: 0.001 for op, _ in ckks.OPS}
    )
    monkeypatch.setattr(ckks, "run_reference", fail_openfhe)
    params = {"dnum": 4, "special": 1, "log_qp": 210.0}
    times = {op: 0.004 for op, _ in ckks.OPS} | {"keyswitch": 0.002}
    monkeypatch.setattr(ckks, "run_lattigo", lambda cfg, threads: (params, times))
    monkeypatch.setattr(sys, "argv", ["ckks.py", "--only", "13"])
    assert ckks.main() == 0
    rows = json_rows(capsys.readouterr().out)
    assert rows[0]["ratio_fastest"] == pytest.approx(0.25)
    assert by_name(rows[0])["lattigo"]["note"].startswith("dnum 4, 1 special primes")
    assert rows[-1]["ours"] is None and by_name(rows[-1])["lattigo"]["value"] == 2.0


def test_ckks_two_thread_rows_run_every_side_on_two_threads_in_wall_time(
    monkeypatch, capsys
) -> None:
    ckks = load("ckks")
    calls: list[tuple[str, int, str]] = []

    def ours(cfg, dot=0, threads=1):
        calls.append(("ours", threads, cfg["clock"]))
        return {op: 0.001 * threads for op, _ in ckks.OPS} | {"add_floor": 0.003}

    def openfhe(python, cfg, dot=0, threads=1):
        calls.append(("openfhe", threads, cfg["clock"]))
        return {op: 0.004 for op, _ in ckks.OPS}

    def lattigo(cfg, threads):
        calls.append(("lattigo", threads, cfg["clock"]))
        return {"dnum": 4, "special": 1, "log_qp": 210.0}, {op: 0.008 for op, _ in ckks.OPS}

    monkeypatch.setattr(ckks, "run_ours", ours)
    monkeypatch.setattr(ckks, "run_reference", openfhe)
    monkeypatch.setattr(ckks, "run_lattigo", lattigo)
    monkeypatch.setattr(sys, "argv", ["ckks.py", "--only", "13", "--threads", "1,2"])
    assert ckks.main() == 0
    assert sorted(set(calls)) == sorted(
        {(side, 1, "cpu") for side in ("ours", "openfhe", "lattigo")}
        | {(side, 2, "wall") for side in ("ours", "openfhe", "lattigo")}
    )
    rows = json_rows(capsys.readouterr().out)
    two = [r for r in rows if r["case"].endswith("(2 threads)")]
    assert len(two) == len(rows) // 2 == len(ckks.OPS) + 1
    assert two[0]["ours"] == 2.0 and two[0]["ratio_fastest"] == pytest.approx(0.5)
    assert by_name(two[0])["lattigo"]["note"].endswith(
        "GOMAXPROCS=2 (one operation runs on one goroutine)"
    )
    # The add rows carry our binary's memory floor of that thread count: half of OpenFHE's
    # 4 ms is below its 3 ms.
    adds = [r for r in rows if " add" in r["case"]]
    assert len(adds) == 2 and all(r["memory_floor"] == 3.0 for r in adds)
    assert all(r["target_below_floor"] is True for r in adds)
    assert sum("memory_floor" in r for r in rows) == 2
    monkeypatch.setattr(sys, "argv", ["ckks.py", "--threads", "0"])
    assert ckks.main() == 2


def test_bfv_two_thread_rows(monkeypatch, capsys) -> None:
    bfv = load("bfv")
    seen: list[tuple[str, int]] = []

    def ours(log_n, limbs, t, dnum, repeats, ops, threads=1):
        seen.append(("ours", threads))
        return {"limbs": limbs}, {op: 0.002 for op, _ in bfv.OPS}

    def openfhe(cfg, threads=1):
        seen.append(("openfhe", threads))
        assert cfg.get("clock", bfv.clock(threads)) == bfv.clock(threads)
        return {"ring_dim": 1 << cfg["log_n"], "limbs": 2}, {op: 0.004 for op, _ in bfv.OPS}

    monkeypatch.setattr(bfv, "run_ours", ours)
    monkeypatch.setattr(bfv, "run_reference", openfhe)
    monkeypatch.setattr(bfv, "run_lattigo", fail_lattigo)
    argv = ["bfv.py", "--max-log-n", "13", "--repeats", "1", "--skip-grid", "--threads", "1,2"]
    monkeypatch.setattr(sys, "argv", [*argv, "--rounds", "1"])
    assert bfv.main() == 0
    assert seen == [("openfhe", 1), ("ours", 1), ("openfhe", 2), ("ours", 2)]
    assert bfv.clock(1) == "cpu" and bfv.clock(2) == "wall"
    rows = json_rows(capsys.readouterr().out)
    assert sum(r["case"].endswith("(2 threads)") for r in rows) == len(bfv.OPS) + 1


def test_bfv_runs_on_without_openfhe_and_lattigo(monkeypatch, capsys) -> None:
    bfv = load("bfv")
    ours = {op: 0.002 for op, _ in bfv.OPS}
    ours |= {"multiply_plain_floor": 0.001, "multiply_plain_floor_table": 0.0015}
    monkeypatch.setattr(bfv, "run_ours", lambda *args: ({"limbs": args[1]}, ours))
    monkeypatch.setattr(bfv, "run_reference", fail_openfhe)
    monkeypatch.setattr(bfv, "run_lattigo", fail_lattigo)
    monkeypatch.setattr(sys, "argv", ["bfv.py", "--max-log-n", "13", "--repeats", "1"])
    assert bfv.main() == 0
    rows = json_rows(capsys.readouterr().out)
    # The main N = 2^13 case and its Lattigo-only key switch row; the grid is skipped (OpenFHE
    # chooses its ring dimension).
    assert [r["case"].split(" ")[0] for r in rows] == ["N=2^13"] * (len(bfv.OPS) + 1)
    measured = [r for r in rows if r["ours"] is not None]
    assert len(measured) == len(bfv.OPS)
    assert all(by_name(r)["openfhe"]["note"].startswith("not available") for r in measured)
    # The multiply by a plaintext row has both floors; with no reference, no verdict.
    (mp,) = [r for r in measured if "multiply by plaintext" in r["case"]]
    assert mp["memory_floor"] == 1.0 and mp["memory_floor_ours"] == 1.5
    assert mp["target_below_floor"] is None
    assert all(by_name(r)["lattigo"]["note"].startswith("not available") for r in rows)
    assert rows[0]["ours"] == 2.0 and rows[0]["ratio_fastest"] is None


def test_fhew_rows_say_tfhers_is_not_available(monkeypatch, capsys) -> None:
    fhew = load("fhew")
    ours = {"correct": True, "nand_ms_median": 10.0, "nand_cpu_ms_median": 9.0, "keygen_s": 1.0}
    ours |= {"eval_key_rss_bytes": 2**20, "eval_key_memory_bytes": 2**20}
    ours |= {"eval_key_file_bytes": 2**20, "params": "STD128_GINX", "n": 1, "q": 1, "N": 1, "Q": 1}
    ours |= {"lwe_secret": "binary", "q_ks": 65536, "failure_log2": -136.1}
    ref = dict(ours, nand_ms_median=40.0, nand_cpu_ms_median=36.0)

    def no_cargo(*_args: object) -> object:
        raise ReferenceUnavailableError("bench/setup-reference: cargo not found")

    monkeypatch.setattr(fhew, "run_ours", lambda method, repeats: ours)
    monkeypatch.setattr(fhew, "run_openfhe", lambda method, repeats: ref)
    monkeypatch.setattr(fhew, "run_tfhers", no_cargo)
    monkeypatch.setattr(sys, "argv", ["fhew.py", "--methods", "GINX", "--batch", "0"])
    assert fhew.main() == 0
    rows = {r["case"]: r for r in json_rows(capsys.readouterr().out)}
    nand = rows["GINX STD128 NAND wall"]
    assert nand["ratio_fastest"] == 0.25 and nand["ratio_tfhe"] is None
    assert by_name(nand)["tfhe-rs"]["note"] == (
        "not available (bench/setup-reference: cargo not found)"
    )
    assert "132-bit" not in by_name(nand)["tfhe-rs"]["note"]
    assert nand["ours_note"].startswith("128-bit: LWE n=1 binary secret mod q_ks=65536")
    assert "per-gate failure 2^-136.1" in nand["ours_note"]
    assert rows["tfhe-rs FheUint8 add wall (no hec row)"]["ours"] is None


def test_fhew_batch_rows_set_ours_against_tfhers_par_iter_at_each_thread_count(
    monkeypatch, capsys
) -> None:
    fhew = load("fhew")
    ours = {"correct": True, "nand_ms_median": 10.0, "nand_cpu_ms_median": 9.0, "keygen_s": 1.0}
    ours |= {"eval_key_rss_bytes": 2**20, "eval_key_memory_bytes": 2**20}
    ours |= {"eval_key_file_bytes": 2**20, "params": "STD128_GINX", "n": 1, "q": 1, "N": 1, "Q": 1}
    ours |= {"lwe_secret": "binary", "q_ks": 65536, "failure_log2": -118.9}
    calls: list[tuple[int, int]] = []
    batch_repeats: list[tuple[str, int, int]] = []  # (side, threads, repeats) of batch rows

    def tfhers(repeats: int, threads: int = 1, batch: int = 0) -> dict:
        calls.append((threads, batch))
        if batch:
            batch_repeats.append(("tfhe-rs", threads, repeats))
        gate = {"wall_ms": 16.0, "cpu_ms": 16.0}
        if batch:
            return {"nand_batch": {"wall_ms": 16.0 / threads, "cpu_ms": 16.0}}
        return dict.fromkeys(
            ("nand", "and", "xor", "mux", "uint8_add", "uint8_mul", "uint8_gt"), gate
        )

    def batch(method: str, size: int, threads: int, repeats: int) -> dict:
        batch_repeats.append(("ours", threads, repeats))
        return {"correct": True, "threads": threads, "batch_ms_per_gate": 4.0 / threads}

    monkeypatch.setattr(fhew, "run_ours", lambda method, repeats: ours)
    monkeypatch.setattr(
        fhew, "run_openfhe", lambda method, repeats: dict(ours, nand_ms_median=40.0)
    )
    monkeypatch.setattr(fhew, "run_tfhers", tfhers)
    monkeypatch.setattr(fhew, "run_ours_batch", batch)
    monkeypatch.setattr(fhew.os, "cpu_count", lambda: 2)
    argv = ["fhew.py", "--methods", "GINX", "--batch", "16", "--repeats", "9"]
    monkeypatch.setattr(sys, "argv", argv)
    assert fhew.main() == 0
    assert calls == [(1, 0), (1, 16), (2, 16)]
    # Both sides of a batch row time at least as many batches (ours used to time three).
    assert batch_repeats == [(side, t, 9) for t in (1, 2) for side in ("ours", "tfhe-rs")]
    rows = {r["case"]: r for r in json_rows(capsys.readouterr().out)}
    for threads in (1, 2):
        row = rows[f"GINX eval_batch 16 NAND, {threads} thr, per gate"]
        assert row["ours"] == 4.0 / threads
        assert by_name(row)["tfhe-rs"]["value"] == 16.0 / threads
        assert row["ratio_tfhe"] == 0.25 and row["ratio_fastest"] == 0.25
        assert f"par_iter on {threads} rayon thread" in by_name(row)["tfhe-rs"]["note"]
        assert "per-gate failure 2^-118.9" in row["ours_note"]


@pytest.mark.skipif(
    not (ROOT / ".bench-ref" / "lattigo-reference").exists(),
    reason="the Lattigo reference is built by bench/setup-reference lattigo",
)
def test_lattigo_reference_reports_its_errors() -> None:
    binary = str(ROOT / ".bench-ref" / "lattigo-reference")
    cfg = {"scheme": "bfv", "log_n": 12, "log_q": [60], "log_p": [60], "t": 2, "repeats": 1}
    out = subprocess.run([binary, json.dumps(cfg)], capture_output=True, text=True)
    assert out.returncode == 1 and "cyclotomic order" in out.stderr
    out = subprocess.run(
        [binary, '{"scheme": "nope", "repeats": 1}'], capture_output=True, text=True
    )
    assert out.returncode == 1 and 'unknown scheme "nope"' in out.stderr


@pytest.mark.skipif(
    not (ROOT / ".bench-ref" / "lattigo-reference").exists(),
    reason="the Lattigo reference is built by bench/setup-reference lattigo",
)
def test_lattigo_ntt_reference_times_our_prime_and_checks_its_config() -> None:
    from compiler.analysis.security import largest_ntt_primes

    binary = str(ROOT / ".bench-ref" / "lattigo-reference")
    cfg = {"scheme": "ntt", "log_ns": [10, 11], "bits": 50, "repeats": 1}
    out = subprocess.run([binary, json.dumps(cfg)], capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    primes = [line["params"]["q"] for line in lines if "params" in line]
    assert primes == [largest_ntt_primes(50, log_n, 1)[0] for log_n in (10, 11)]
    times = {line["op"]: line["seconds"] for line in lines if "op" in line}
    assert set(times) == {"forward/10", "inverse/10", "forward/11", "inverse/11"}
    assert all(0 < t < 1e-3 for t in times.values())
    bad = subprocess.run([binary, json.dumps(cfg | {"bits": 70})], capture_output=True, text=True)
    assert bad.returncode == 1 and "bits must be in [30, 61]" in bad.stderr


def _gwas_chisq_with_exact_ours(monkeypatch):
    """bench/gwas_chisq.py with our side replaced by the exact statistics (1 s per phase)."""
    from gwas.exact import exact_statistics, table_counts

    g = load("gwas_chisq")

    def ours(S, y, threads, cache, C=None):
        chi2, _, odds = exact_statistics(table_counts(S, y))
        params = {"log_n": 12, "moduli_bits": [], "special_moduli_bits": []}
        return dict.fromkeys(g.PHASES, 1.0), {}, chi2, odds, params, 0, {}

    monkeypatch.setattr(g, "run_ours", ours)
    monkeypatch.setattr(g, "reference_python", lambda: "python3.10")
    monkeypatch.setattr(
        sys, "argv", ["gwas_chisq.py", "--sizes", "40", "--snps", "32", "--threads", "1"]
    )
    return g


def test_gwas_chisq_rows_say_a_reference_is_not_available(monkeypatch, capsys) -> None:
    g = _gwas_chisq_with_exact_ours(monkeypatch)
    monkeypatch.setattr(g, "run_reference", fail_openfhe)
    monkeypatch.setattr(g, "run_lattigo_chisq", fail_lattigo)
    g.main()
    captured = capsys.readouterr()
    rows = {r["case"]: r for r in json_rows(captured.out)}
    compute = rows["N=40 M=32 t=1 compute"]
    assert compute["ours"] == 1.0 and compute["reference"] is None
    assert compute["ratio_fastest"] is None
    refs = by_name(compute)
    assert refs["openfhe"]["note"] == "not available (exit 1: RuntimeError: no wheel)"
    assert refs["lattigo"]["note"] == "not available (bench/setup-reference: go not found)"
    assert "lattigo: not available (bench/setup-reference: go not found)" in captured.out


def test_gwas_chisq_ratio_fastest_with_lattigo_only(monkeypatch, capsys) -> None:
    g = _gwas_chisq_with_exact_ours(monkeypatch)
    monkeypatch.setattr(g, "run_reference", fail_openfhe)
    facts = {
        "seconds": {"keygen": 0.5, "encrypt": 4.0, "compute": 2.0, "decrypt": 0.1},
        "params": {"log_n": 14, "workers": 1},
    }

    def lattigo(S, y, threads, work):
        from gwas.exact import exact_statistics, table_counts

        chi2, _, odds = exact_statistics(table_counts(S, y))
        return facts, chi2, odds

    monkeypatch.setattr(g, "run_lattigo_chisq", lattigo)
    g.main()
    rows = {r["case"]: r for r in json_rows(capsys.readouterr().out)}
    compute = rows["N=40 M=32 t=1 compute"]
    assert compute["ratio_fastest"] == 0.5
    assert by_name(compute)["lattigo"]["value"] == 2.0
    assert by_name(compute)["lattigo"]["note"] == "ring 2^14, 1 worker(s)"
    assert rows["N=40 M=32 t=1 Lattigo CHISQ max rel. error (vs OpenFHE)"]["ours"] == 0.0


@pytest.mark.skipif(
    not (ROOT / ".bench-ref" / "lattigo-reference").exists(),
    reason="the Lattigo reference is built by bench/setup-reference lattigo",
)
def test_lattigo_chisq_reference_checks_its_data(tmp_path) -> None:
    binary = str(ROOT / ".bench-ref" / "lattigo-reference")
    (tmp_path / "S.u8").write_bytes(bytes(10))
    (tmp_path / "y.u8").write_bytes(bytes(4))
    cfg = {"scheme": "chisq", "repeats": 1, "n": 4, "m": 3, "workers": 1}
    cfg |= {"s": str(tmp_path / "S.u8"), "y": str(tmp_path / "y.u8"), "out": str(tmp_path / "o")}
    out = subprocess.run([binary, json.dumps(cfg)], capture_output=True, text=True)
    assert out.returncode == 1 and "has 10 bytes" in out.stderr and "want 4 x 3" in out.stderr


def test_measure_rounds_interleaves_and_drops_a_reference_that_fails() -> None:
    calls: list[str] = []

    def step(name: str, fail_in: int = 0):
        def run() -> str:
            calls.append(name)
            if fail_in and calls.count(name) == fail_in:
                raise ReferenceUnavailableError("gone")
            return f"{name}{calls.count(name)}"

        return run

    got = common.measure_rounds(
        3, [("a", step("a"), False), ("ref", step("ref", fail_in=2), True), ("b", step("b"), False)]
    )
    # Each step once a round, in order; the reference that failed in round 2 is not run again.
    assert calls == ["a", "ref", "b", "a", "ref", "b", "a", "b"]
    assert got["a"] == (["a1", "a2", "a3"], "") and got["b"][0] == ["b1", "b2", "b3"]
    assert got["ref"] == (None, "not available (gone)")
    with pytest.raises(ValueError):
        common.measure_rounds(0, [])


def test_median_of_rounds_leaves_out_a_round_under_a_burst_of_load() -> None:
    rounds = [{"mult": 9.0, "add": 1.0}, {"mult": 13.0, "add": 1.2}, {"mult": 8.8}]
    # mult: the burst's 13.0 is not the figure; add: measured in two rounds only, left out.
    assert common.median_of_rounds(rounds) == {"mult": 9.0}
    assert common.parse_rounds([], 3) == 3 and common.parse_rounds(["--rounds", "5"], 3) == 5
    assert common.parse_rounds(["--rounds", "0"], 3) is None
    assert common.parse_rounds(["--rounds"], 3) is None


def test_bfv_and_ckks_rows_are_medians_over_interleaved_rounds(monkeypatch, capsys) -> None:
    bfv = load("bfv")
    order: list[str] = []
    ours_rotate = iter([2.5e-3, 4.0e-3, 2.6e-3])  # round 2 under a burst of load
    lattigo_rotate = iter([6.0e-3, 6.1e-3, 9.0e-3])  # round 3 under one

    def ours(log_n, limbs, t, dnum, repeats, ops, threads=1):
        order.append("ours")
        return {"limbs": limbs}, {op: 0.002 for op, _ in bfv.OPS} | {"rotate": next(ours_rotate)}

    def openfhe(cfg, threads=1):
        order.append("openfhe")
        return {"ring_dim": 1 << cfg["log_n"], "limbs": 2}, {op: 0.008 for op, _ in bfv.OPS}

    def lattigo(cfg, threads=1):
        order.append("lattigo")
        params = {"dnum": 2, "special": 1, "log_qp": 180}
        return params, {op: 0.004 for op, _ in bfv.OPS} | {"rotate": next(lattigo_rotate)}

    monkeypatch.setattr(bfv, "run_ours", ours)
    monkeypatch.setattr(bfv, "run_reference", openfhe)
    monkeypatch.setattr(bfv, "run_lattigo", lattigo)
    argv = ["bfv.py", "--max-log-n", "13", "--repeats", "1", "--skip-grid", "--rounds", "3"]
    monkeypatch.setattr(sys, "argv", argv)
    assert bfv.main() == 0
    assert order == ["openfhe", "ours", "lattigo"] * 3
    out = capsys.readouterr().out
    assert "median of 3 interleaved rounds" in out
    (rotate,) = [r for r in json_rows(out) if "rotate" in r["case"]]
    assert rotate["ours"] == pytest.approx(2.6)
    assert by_name(rotate)["lattigo"]["value"] == pytest.approx(6.1)
    assert rotate["ratio_fastest"] == pytest.approx(2.6 / 6.1)

    ckks = load("ckks")
    runs = iter([1.0, 3.0, 1.1])
    monkeypatch.setattr(
        ckks,
        "run_ours",
        lambda cfg, dot=0, threads=1: (
            {op: next(runs) for op, _ in ckks.OPS[:1]} | {op: 0.001 for op, _ in ckks.OPS[1:]}
        ),
    )
    monkeypatch.setattr(ckks, "run_reference", fail_openfhe)
    monkeypatch.setattr(ckks, "run_lattigo", fail_lattigo)
    monkeypatch.setattr(sys, "argv", ["ckks.py", "--only", "13", "--rounds", "3"])
    assert ckks.main() == 0
    first = json_rows(capsys.readouterr().out)[0]
    assert first["ours"] == pytest.approx(1100.0)
    monkeypatch.setattr(sys, "argv", ["ckks.py", "--only", "13", "--rounds", "0"])
    assert ckks.main() == 2


def test_median_of_repeats_fills_a_quarter_second_and_keeps_slow_operations_at_repeats() -> None:
    def fake(step: float):
        state = {"now": 0.0, "calls": 0}

        def clock() -> float:
            return state["now"]

        def fn() -> None:
            state["calls"] += 1
            state["now"] += step

        return fn, clock, state

    fn, clock, state = fake(0.01)  # 10 ms: one warm-up, then 25 timed runs reach 0.25 s
    assert common.median_of_repeats(fn, 3, clock) == pytest.approx(0.01)
    assert state["calls"] == 1 + 25
    fn, clock, state = fake(1.0)  # slower than the quarter second: `repeats` runs
    common.median_of_repeats(fn, 3, clock)
    assert state["calls"] == 1 + 3
    fn, clock, state = fake(0.0)  # never adds up: stops at MAX_REPEATS
    common.median_of_repeats(fn, 3, clock)
    assert state["calls"] == 1 + common.MAX_REPEATS


@pytest.mark.parametrize("lattigo_up", [True, False])
def test_ntt_rows_carry_openfhe_and_lattigo_or_say_lattigo_is_missing(
    monkeypatch, capsys, lattigo_up: bool
) -> None:
    ntt = load("ntt")
    ways = ("forward", "inverse")

    def benchmarks(binary: str, extra_env: dict[str, str]) -> dict[tuple[str, int, str], float]:
        """ns per transform: ours 100 on both paths, OpenFHE 400."""
        paths = ("avx512-ifma", "portable") if binary == "hec_bench_ntt" else ("openfhe",)
        value = 100.0 if binary == "hec_bench_ntt" else 400.0
        return {(d, n, p): value for d in ways for n in ntt.LOG_NS for p in paths}

    monkeypatch.setattr(ntt, "run_benchmarks", benchmarks)
    monkeypatch.setattr(ntt, "openfhe_core_library", lambda: ("libOPENFHEcore.so.1", ""))
    seen: list[dict] = []

    def lattigo(cfg: dict, threads: int = 1) -> tuple[dict, dict[str, float]]:
        seen.append(cfg)
        if not lattigo_up:
            raise ReferenceUnavailableError("bench/setup-reference: go not found")
        ops = {f"{d}/{n}": 200e-9 for d in ways for n in ntt.LOG_NS}
        return {"library": "lattigo"}, ops

    monkeypatch.setattr(ntt, "run_lattigo", lattigo)
    assert ntt.main() == 0
    assert seen == [{"scheme": "ntt", "log_ns": list(ntt.LOG_NS), "bits": 50, "repeats": 1}]
    rows = {r["case"]: r for r in json_rows(capsys.readouterr().out)}
    row = rows["forward N=2^16 avx512-ifma time/limb"]
    assert row["ours"] == 0.1 and row["reference"] == 0.4 and row["ratio"] == 0.25
    refs = by_name(row)
    assert refs["openfhe"]["value"] == 0.4
    if lattigo_up:
        assert refs["lattigo"]["value"] == pytest.approx(0.2)
        assert row["ratio_fastest"] == pytest.approx(0.5)
    else:
        assert refs["lattigo"]["value"] is None
        assert refs["lattigo"]["note"] == "not available (bench/setup-reference: go not found)"
        assert row["ratio_fastest"] == 0.25  # the one reference that ran
    butterflies = (1 << 16) // 2 * 16
    per_butterfly = rows["forward N=2^16 avx512-ifma"]
    assert per_butterfly["ours"] == pytest.approx(100.0 / butterflies)
    assert len(per_butterfly["references"]) == 2
