"""The cost profile (compiler/analysis/profile.py) and its use by the cost model and the report.

Fast tier: the profile format (every rejected profile names the file and what is wrong; a
profile of another machine is refused when given and passed over when found at the user's
location), which profile is resolved, the cost model's figures following the profile's tables,
and the report naming the profile it used. The measurement itself (`hec calibrate`) and the
estimates' accuracy against the runtime are checked by `bench/run calibration-check`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.analysis import profile as prof
from compiler.analysis.cost import Units, key_switch_parts
from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, cost_of, report_of

ROOT = Path(__file__).resolve().parent.parent
CHISQ = ROOT / "examples" / "gwas" / "chisq.hec"


def _doc(**model: Any) -> dict[str, Any]:
    """A valid profile of this machine: the default's figures, `model` entries replaced."""
    doc = json.loads(prof.DEFAULT_PATH.read_text())
    doc["machine"] = prof.machine_info()
    doc["created"] = "2026-11-27T09:00:00Z"
    doc["runtime_digest"] = "0123456789abcdef"
    doc["load"] = [0.5, 0.7]
    doc["model"].update(model)
    return doc


def _write(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(autouse=True)
def _fresh_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No user profile unless a test writes one; the profile in use resolved afresh."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("HEC_PROFILE", raising=False)
    prof.use(None)
    yield
    prof.use(None)


def test_the_default_profile_holds_the_hand_measured_constants() -> None:
    d = prof.default()
    assert d.is_default
    assert d.by_log_n("ntt_ns_per_butterfly", 12) == 0.55
    assert d.by_log_n("pointwise_ns_per_coefficient", 17) == 0.45
    assert d.by_scheme("encrypt_ns_per_word", "bfv") == 119.0
    assert d.by_scheme("read_ns_per_byte", "ckks") == 0.47
    assert d.runtime_baseline_bytes == 6553600  # 6.25 MiB


def test_without_a_user_profile_the_default_is_used() -> None:
    assert prof.resolve().is_default


def test_a_user_profile_of_this_machine_is_used(tmp_path: Path) -> None:
    path = prof.user_profile_path()
    path.parent.mkdir(parents=True)
    _write(path, _doc())
    got = prof.resolve()
    assert got.source == str(path)
    assert got.note == ""


def test_a_user_profile_of_another_machine_is_passed_over_for_the_default() -> None:
    path = prof.user_profile_path()
    path.parent.mkdir(parents=True)
    doc = _doc()
    doc["machine"] = {"cpu": "Other CPU 9000", "cpus": "64", "id": "feedfacefeedface"}
    _write(path, doc)
    got = prof.resolve()
    assert got.is_default
    assert "measured on another machine (Other CPU 9000" in got.note
    assert "using the shipped default" in got.note


def test_a_given_profile_of_another_machine_is_refused(tmp_path: Path) -> None:
    doc = _doc()
    doc["machine"]["id"] = "feedfacefeedface"
    path = _write(tmp_path / "p.json", doc)
    with pytest.raises(prof.ProfileError, match=r"p\.json: measured on another machine"):
        prof.resolve(str(path))


def test_hec_profile_names_the_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "p.json", _doc())
    monkeypatch.setenv("HEC_PROFILE", str(path))
    assert prof.resolve().source == str(path)
    monkeypatch.setenv("HEC_PROFILE", "default")
    assert prof.resolve().is_default


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(format="something-else"), "not a hec cost profile"),
        (lambda d: d.update(version=2), "profile version 2; this hec reads version 1"),
        (lambda d: d["model"].pop("read_ns_per_byte"), "model.read_ns_per_byte is missing"),
        (
            lambda d: d["model"].update(ntt_ns_per_butterfly={"14": -1.0}),
            r"model.ntt_ns_per_butterfly\['14'\] must be a positive number",
        ),
        (
            lambda d: d["model"].update(ckks_tensor_factor={"big": 1.0}),
            "the key must be a log n",
        ),
        (
            lambda d: d["model"].update(encrypt_ns_per_word={"ckks": 1.0}),
            "must give ckks and bfv",
        ),
        (lambda d: d.update(machine="x"), "'machine' must be an object"),
        (lambda d: d.pop("model"), "'model' .* is missing"),
        (
            lambda d: d["model"].update(runtime_baseline_bytes="5 MiB"),
            "runtime_baseline_bytes must be a positive number",
        ),
        (
            lambda d: d["model"].update(compute_fixed_seconds={"ckks": -0.01, "bfv": 0.0}),
            r"compute_fixed_seconds\['ckks'\] must be a number >= 0",
        ),
        (
            lambda d: d["model"].update(read_ns_per_byte={"ckks": 0.0, "bfv": 1.0}),
            r"read_ns_per_byte\['ckks'\] must be a positive number",
        ),
    ],
)
def test_a_malformed_profile_is_a_user_error_naming_what_is_wrong(
    tmp_path: Path, mutate: Any, message: str
) -> None:
    doc = _doc()
    mutate(doc)
    path = _write(tmp_path / "bad.json", doc)
    with pytest.raises(prof.ProfileError, match=message) as err:
        prof.resolve(str(path))
    assert str(path) in str(err.value)
    assert "hec calibrate" in str(err.value)


def test_a_missing_or_unparsable_profile_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(prof.ProfileError, match="cannot be read"):
        prof.resolve(str(tmp_path / "nowhere.json"))
    (tmp_path / "torn.json").write_text('{"format": "hec-cost')
    with pytest.raises(prof.ProfileError, match="is not JSON"):
        prof.resolve(str(tmp_path / "torn.json"))


def test_a_corrupt_user_profile_is_an_error_not_silently_ignored() -> None:
    path = prof.user_profile_path()
    path.parent.mkdir(parents=True)
    path.write_text("[]")
    with pytest.raises(prof.ProfileError, match="not a JSON object"):
        prof.resolve()


def test_tables_answer_for_the_nearest_measured_ring() -> None:
    p = prof.parse(_doc(ntt_ns_per_butterfly={"12": 1.0, "14": 2.0, "16": 3.0}), "t")
    assert p.by_log_n("ntt_ns_per_butterfly", 10) == 1.0
    assert p.by_log_n("ntt_ns_per_butterfly", 13) == 2.0  # a tie goes to the larger ring
    assert p.by_log_n("ntt_ns_per_butterfly", 15) == 3.0
    assert p.by_log_n("ntt_ns_per_butterfly", 17) == 3.0


def test_the_cost_model_follows_the_profile() -> None:
    base = prof.parse(_doc(), "base")
    slow = prof.parse(
        _doc(
            read_ns_per_byte={"ckks": 2.47, "bfv": 0.98},
            encrypt_ns_per_word={"ckks": 300.0, "bfv": 119.0},
        ),
        "slow",
    )
    comp = compile_file(CHISQ, Options(sizes=Sizes.parse("N=300,M=2048"), flooding=False))
    prof.use(base)
    a = cost_of(comp)
    prof.use(slow)
    b = cost_of(comp)
    assert b.upload_bytes == a.upload_bytes > 0
    assert b.compute_s - a.compute_s == pytest.approx(a.upload_bytes * 2.0e-9)
    assert b.encrypt_s == pytest.approx(3 * a.encrypt_s)


def test_the_compute_role_fixed_cost_is_charged_once() -> None:
    comp = compile_file(CHISQ, Options(sizes=Sizes.parse("N=300,M=2048"), flooding=False))
    prof.use(prof.parse(_doc(), "base"))
    a = cost_of(comp)
    prof.use(prof.parse(_doc(compute_fixed_seconds={"ckks": 0.02, "bfv": 0.0}), "fixed"))
    assert cost_of(comp).compute_s - a.compute_s == pytest.approx(0.02)


def test_the_key_switch_scales_with_its_measured_factor() -> None:
    one = prof.parse(_doc(), "one")
    double = prof.parse(_doc(ckks_key_switch_factor={"13": 1.0, "15": 2.0}), "two")
    assert sum(key_switch_parts(Units(15, double), 8, 2, 4)) == pytest.approx(
        2 * sum(key_switch_parts(Units(15, one), 8, 2, 4))
    )
    assert sum(key_switch_parts(Units(13, double), 8, 2, 4)) == pytest.approx(
        sum(key_switch_parts(Units(13, one), 8, 2, 4))
    )


def test_the_report_names_its_profile_and_uses_its_baseline(tmp_path: Path) -> None:
    comp = compile_file(CHISQ, Options(sizes=Sizes.parse("N=300,M=2048"), flooding=False))
    default = report_of(comp)
    assert default["profile"]["source"] == "default"
    path = _write(
        tmp_path / "p.json",
        _doc(runtime_baseline_bytes=prof.default().runtime_baseline_bytes + 4096),
    )
    prof.use(prof.resolve(str(path)))
    measured = report_of(comp)
    assert measured["profile"]["source"] == str(path)
    assert measured["profile"]["load"] == [0.5, 0.7]
    mem, mem0 = measured["sizes"]["server_memory"], default["sizes"]["server_memory"]
    assert mem["total"] - mem0["total"] == 4096


def test_a_rebuilt_runtime_makes_the_report_say_the_profile_is_stale(tmp_path: Path) -> None:
    from driver.calibrate import profile_description, runtime_digest

    if not runtime_digest():
        pytest.skip("no runtime build to digest")
    path = _write(tmp_path / "p.json", _doc())
    prof.use(prof.resolve(str(path)))
    assert "run `hec calibrate` again" in profile_description()["stale"]
    doc = _doc()
    doc["runtime_digest"] = runtime_digest()
    prof.use(prof.resolve(str(_write(tmp_path / "q.json", doc))))
    assert "stale" not in profile_description()


def _hec(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "hec", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_hec_report_says_which_profile_and_refuses_a_bad_one(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.json", _doc())
    done = _hec("report", str(CHISQ), "--size", "N=300,M=2048", "--profile", str(good))
    assert done.returncode == 0, done.stderr
    assert f"cost profile: {good} (measured 2026-11-27T09:00:00Z" in done.stdout
    done = _hec("report", str(CHISQ), "--size", "N=300,M=2048", "--profile", "default")
    assert "cost profile: the shipped default" in done.stdout
    bad = _write(tmp_path / "bad.json", {"format": "hec-cost-profile", "version": 7})
    done = _hec("report", str(CHISQ), "--size", "N=300,M=2048", "--profile", str(bad))
    assert done.returncode == 1
    assert f"error: cost profile {bad}: profile version 7" in done.stderr
    assert "Traceback" not in done.stderr


def test_hec_calibrate_without_the_timing_tools_says_how_to_build_them(tmp_path: Path) -> None:
    done = _hec(
        "calibrate",
        "--profile",
        str(tmp_path / "p.json"),
        env={"HEC_RUNTIME_BUILD": str(tmp_path / "empty" / "release")},
    )
    assert done.returncode == 1
    assert "hec calibrate needs the runtime's timing tools" in done.stderr
    assert "cmake --preset bench" in done.stderr
    assert not (tmp_path / "p.json").exists()


def test_the_fhew_estimate_follows_the_runtime_batches_and_the_profile() -> None:
    """The gate program's estimate (compiler/analysis/cost.py) splits each level of a batch of
    evaluations over the threads as eval_batch does, at the profile's one-thread bootstrap."""
    from compiler.analysis.cost import fhew_compute_estimate

    p = prof.parse(_doc(fhew_gate_seconds={"1": 0.01, "2": 0.006}), "fhew")
    # Two levels: three one-bootstrap cells, then one MUX (two bootstraps).
    one = fhew_compute_estimate([[1, 1, 1], [2]], elements=1, wires=10, threads=1, profile=p)
    assert one.seconds == pytest.approx(5 * 0.01) and one.batches == 1
    # Two threads, one evaluation: level 1 splits 1 | 1 1 (2 bootstraps), level 2 one MUX.
    two = fhew_compute_estimate([[1, 1, 1], [2]], elements=1, wires=10, threads=2, profile=p)
    assert two.seconds == pytest.approx((2 + 2) * 0.01)
    # 130 evaluations: batches of 64, 64, 2; each level's ops halve over two threads.
    many = fhew_compute_estimate([[1, 1], [2]], elements=130, wires=10, threads=2, profile=p)
    assert many.batches == 3
    assert many.seconds == pytest.approx((2 * (64 + 64) + (2 + 2)) * 0.01)
    # A program too wide for 64 evaluations a batch: 2^17 wires hold one at a time.
    wide = fhew_compute_estimate([[1]], elements=3, wires=1 << 17, threads=2, profile=p)
    assert wide.batches == 3 and wide.seconds == pytest.approx(3 * 0.01)


def test_the_fhew_report_estimates_compute_time_from_the_profile() -> None:
    from driver.fhew import compile_fhew_file, fhew_report, render_fhew_text

    add8 = ROOT / "examples" / "circuits" / "add8.hec"
    comp = compile_fhew_file(add8, Options(sizes=Sizes.parse("N=8")))
    prof.use(prof.parse(_doc(fhew_gate_seconds={"1": 0.02}), "fhew"))
    report = fhew_report(comp, threads=1)
    est = report["estimate"]
    executed = report["counts"]["executed"]["bootstraps"]
    assert est["threads"] == 1 and est["compute_seconds"] == pytest.approx(executed * 0.02)
    assert "estimated compute: 2.4 s at 1 thread(s)" in render_fhew_text(report)
    insecure = compile_fhew_file(add8, Options(sizes=Sizes.parse("N=8"), insecure=True))
    assert fhew_report(insecure)["estimate"] is None
