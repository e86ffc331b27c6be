"""`hec report`: its JSON follows `tests/report.schema.json`, and its numbers state the
issue #6 acceptance facts for the chi-square kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "report.schema.json").read_text())
# The acceptance facts of the chi-square kernel are those of single-party use (hec gwas, which
# compiles and decrypts without noise flooding); flooding's budget is tested in
# tests/reliability/test_flooding.py.
ACCEPTANCE = Options(sizes=Sizes.parse("N=5000,M=16384"), precision="chi2_num=29", flooding=False)


def hec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hec", *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("path", "sizes"),
    [
        ("examples/gwas/chisq_numerators.hec", "N=5000,M=16384"),
        ("examples/stats/meancov.hec", "N=10000,D=16"),
        ("examples/stats/grs.hec", "N=5000,M=1000"),
    ],
)
def test_report_json_follows_the_schema(path: str, sizes: str) -> None:
    run = hec("report", path, "--size", sizes, "--json")
    assert run.returncode == 0, run.stderr
    jsonschema.validate(json.loads(run.stdout), SCHEMA)


def test_schema_rejects_a_report_without_counts() -> None:
    report = report_of(
        compile_file("examples/stats/grs.hec", Options(sizes=Sizes.parse("N=10,M=10")))
    )
    del report["counts"]["executed"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, SCHEMA)


def test_chisq_acceptance_facts() -> None:
    # Without complex packing: no key switch at all, three primes, depth 2.
    plain = report_of(
        compile_file(
            "examples/gwas/chisq_numerators.hec", replace(ACCEPTANCE, complex_packing=False)
        )
    )
    params = plain["params"]
    assert plain["counts"]["executed"]["key_switch"] == 0
    assert plain["counts"]["static"]["relin"] == 0
    assert params["primes"] <= 3 and params["chain_levels"] <= 3
    assert params["security_bits"] == 128 and not params["insecure"]
    assert params["special_moduli_bits"] == []
    assert all(o["depth"] == 2 for o in plain["outputs"])
    assert plain["keys"] == {
        "relinearization": False,
        "rotations": [],
        "conjugation": False,
        "key_level": 0,
        "eval_key_bytes": 0,
    }
    # With it (the default at M = 16,384 = 4 slot sets): fewer bytes per individual, key
    # switches only on the aggregates (per pair of slot sets, not per individual), keys
    # over Q_0·P only, still 128-bit secure at the same ring.
    report = report_of(compile_file("examples/gwas/chisq_numerators.hec", ACCEPTANCE))
    params = report["params"]
    assert params["log_n"] == plain["params"]["log_n"]
    assert params["security_bits"] == 128 and not params["insecure"]
    up, up_plain = (r["sizes"]["upload_per_individual"] for r in (report, plain))
    assert up < up_plain
    assert report["keys"]["conjugation"] and report["keys"]["key_level"] == 0
    pairs = 16384 // (2 * params["slots"])
    assert (
        report["counts"]["executed"]["conjugate"] == report["counts"]["static"]["conjugate"] * pairs
    )
    assert all(o["depth"] == 2 for o in report["outputs"])
    assert {r["name"] for r in report["reveals"]} == {"chi2_num", "chi2_den", "or_num", "or_den"}
    assert not any(r["per_individual"] for r in report["reveals"])


def test_grs_reports_rotations_and_per_individual_reveals() -> None:
    report = report_of(
        compile_file("examples/stats/grs.hec", Options(sizes=Sizes.parse("N=100,M=1000")))
    )
    assert report["counts"]["executed"]["rotate"] > 0
    assert report["keys"]["relinearization"] and report["keys"]["rotations"]
    assert report["reveals"][0]["per_individual"]


def test_insecure_is_stamped() -> None:
    run = hec(
        "report",
        "examples/stats/grs.hec",
        "--size",
        "N=10,M=10",
        "--log-n",
        "10",
        "--insecure",
        "--json",
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    params = report["params"]
    assert params["log_n"] == 10 and params["insecure"] and params["security_bits"] == 0
    assert all(o["insecure"] for o in report["outputs"])
    text = hec(
        "report", "examples/stats/grs.hec", "--size", "N=10,M=10", "--log-n", "10", "--insecure"
    )
    assert "INSECURE" in text.stdout


def test_forcing_a_small_ring_without_insecure_is_refused() -> None:
    run = hec("report", "examples/stats/grs.hec", "--size", "N=10,M=10", "--log-n", "10")
    assert run.returncode == 1
    assert "128-bit" in run.stderr


def test_print_ir_after_a_pass() -> None:
    run = hec(
        "report",
        "examples/gwas/chisq_numerators.hec",
        "--size",
        "N=10,M=10",
        "--print-ir-after",
        "rescale-placement",
    )
    assert run.returncode == 0, run.stderr
    assert "IR after rescale-placement" in run.stdout and "ckks.rescale" in run.stdout
    bad = hec("report", "examples/gwas/chisq_numerators.hec", "--print-ir-after", "no-such-pass")
    assert bad.returncode == 1 and "unknown pass" in bad.stderr


def test_simulate_command_prints_both_modes() -> None:
    run = hec("simulate", "examples/gwas/chisq_numerators.hec", "--size", "N=50,M=60", "--noisy")
    assert run.returncode == 0, run.stderr
    assert "exact" in run.stdout and "noisy" in run.stdout and "chi2" in run.stdout


def test_horner_degree_8_compiles_to_depth_4() -> None:
    # Depth as written is 8; depth-minimization turns it into a power tree.
    comp = compile_file(
        "tests/passes/depth-minimization-horner.hec", Options(sizes=Sizes.parse("N=64"))
    )
    assert comp.stat_depth_before == {"p": 8}
    assert comp.stat_depth_after == {"p": 4}
    (out,) = report_of(comp)["outputs"]
    assert out["depth"] == 4


def test_det_without_the_size_of_its_matrix_is_a_located_user_error() -> None:
    # det/adj of a secret matrix are expanded for the compile-time size of K (issue 21): with
    # no size for K, a located user error naming the flag, never a crash.
    run = hec("report", "examples/gwas/lra.hec", "--size", "N=100,M=100")
    assert run.returncode == 1
    assert "lra.hec:32:9: error: det and adj of an encrypted K x K matrix" in run.stderr
    assert "--size K=" in run.stderr and "Traceback" not in run.stderr


def test_lra_at_its_declared_sizes_is_refused_where_its_range_overflows() -> None:
    """Was: 'the secret value z_num has no finite range ... give every secret input a bounded
    domain', with no location, although every input has a domain (issue 19, fact 6)."""
    run = hec("report", "examples/gwas/lra.hec")
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "lra.hec:42:16: error: the range of the secret value z_num overflows" in run.stderr


def test_ir_size_does_not_depend_on_the_data_size() -> None:
    # Principle 1 of the design: N = 100 and N = 100,000 give the same ops (only the
    # parameters chosen for them differ). The layout may depend on the row width (a row of
    # several slot sets is complex-packed, with unpacks on the aggregates), but the op count
    # stays that of the program text, whatever the sizes.
    def op_names(sizes: str) -> list[str]:
        comp = compile_file("examples/gwas/chisq_numerators.hec", Options(sizes=Sizes.parse(sizes)))
        return [op.name for op in comp.program.block.ops]

    assert op_names("N=100,M=1000") == op_names("N=100000,M=1000")
    wide = op_names("N=100,M=1000000")
    assert wide == op_names("N=100000,M=1000000")
    assert "ckks.unpack_complex" in wide and len(wide) < 2 * len(op_names("N=100,M=1000"))


def test_sizes_above_the_declared_bounds_are_refused() -> None:
    run = hec("report", "examples/stats/meancov.hec", "--size", "N=10,D=17")
    assert run.returncode == 1 and "exceeds the program's bound D <= 16" in run.stderr
