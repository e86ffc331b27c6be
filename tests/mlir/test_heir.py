"""HEIR interchange: hec's compiled ckks programs exported to HEIR's ckks/lwe dialects are
accepted (parsed and verified) by heir-opt from the heir-py wheel, and HEIR's own compilation
of a program (heir-opt --mlir-to-ckks on the HEIR form of its stat program) is counted next to
hec's, in `hec report --compare-heir` and `hec ir --compare-heir`."""

from __future__ import annotations

import json
import stat as file_mode
from pathlib import Path

import jsonschema
import pytest

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver.pipeline import Options, compile_file
from dsl.checker import check
from dsl.lower import lower
from dsl.parser import parse_file
from targets.mlir import tools
from targets.mlir.heir import COMPARED, compare_with_heir, count_heir_server_ops, export_heir
from targets.mlir.upstream import lower_to_upstream
from targets.report.report import render_heir_comparison
from tests.mlir.common import (
    EXAMPLES,
    HERE,
    NAMES,
    ROOT,
    ckks_module,
    heir_opt,
    run_hec,
    scheme_cases,
    small_sizes,
)

SCHEMA = json.loads((ROOT / "tests" / "report.schema.json").read_text())


@pytest.mark.parametrize("path", scheme_cases(EXAMPLES, NAMES))
def test_heir_opt_accepts_the_export(path: Path) -> None:
    exported = export_heir(ckks_module(path, complex_packing=False), small_sizes(path))
    result = heir_opt(exported.text)
    assert result.returncode == 0, result.stderr[:3000]
    assert "ckks." in result.stdout
    # HEIR's own lowering of its ckks dialect to lwe takes it as well.
    lowered = heir_opt(exported.text, "--ckks-to-lwe")
    assert lowered.returncode == 0, lowered.stderr[:3000]


def test_hec_ir_heir_for_chisq_and_meancov() -> None:
    for path, sizes in (
        ("examples/gwas/chisq.hec", "N=24,M=6"),
        ("examples/stats/meancov.hec", "N=24,D=4"),
    ):
        result = run_hec("ir", path, "--heir", "--size", sizes)
        assert result.returncode == 0, result.stderr
        assert "ckks.schemeParam" in result.stdout and '"ckks.add"' in result.stdout
        checked = heir_opt(result.stdout)
        assert checked.returncode == 0, checked.stderr[:3000]


def test_export_refuses_complex_packing() -> None:
    """HEIR has no conjugation: a complex-packed program is refused with a next step."""
    source = Path(__file__).resolve().parents[1] / "passes" / "complex-packing.hec"
    options = Options(sizes=Sizes.parse("N=8,M=10000"), owner_side=False, packed_counts=False)
    comp = compile_file(source, options)
    assert any("complex" in str(op.results[0].type) for op in comp.program.encrypts())
    with pytest.raises(UserError, match="HEIR has no conjugation"):
        export_heir(comp.module, {"N": 8, "M": 10000})


def _rows(text: str) -> dict[str, list[str]]:
    """The comparison table's rows by their first word."""
    return {
        line.split()[0]: line.split()[1:] for line in text.splitlines() if line.startswith("  ")
    }


def test_compare_heir_prints_both_counts() -> None:
    result = run_hec("ir", str(HERE / "chisq-rows.hec"), "--compare-heir", "--size", "N=16,M=8")
    assert result.returncode == 0, result.stderr
    rows = _rows(result.stdout)
    assert int(rows["ct_mul"][0]) > 0 and int(rows["ct_mul"][1]) > 0
    assert rows["ring"][0].startswith("2^") and rows["ring"][1].startswith("2^")


@pytest.mark.parametrize(
    ("path", "sizes"),
    [("examples/gwas/chisq.hec", "N=16,M=8"), ("examples/stats/meancov.hec", "N=16,D=4")],
)
def test_report_compares_hec_and_heir(path: str, sizes: str) -> None:
    """The acceptance of issue 27: for chisq.hec and meancov.hec as written, HEIR compiles the
    program and the report (JSON and text) shows both compilations' counts side by side."""
    run = run_hec("report", path, "--size", sizes, "--compare-heir", "--json")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    jsonschema.validate(report, SCHEMA)
    comparison = report["heir_comparison"]
    heir = comparison["heir"]
    assert heir["compiled"], heir
    assert heir["counts"]["rotate"] > 0 and heir["counts"]["add"] > 0
    assert heir["log_n"] >= 10 and heir["levels"] >= 1
    ours = comparison["hec"]
    assert ours["log_n"] == report["params"]["log_n"]
    assert ours["counts"]["add"] == report["counts"]["executed"]["add"]
    text = run_hec("report", path, "--size", sizes, "--compare-heir")
    assert text.returncode == 0, text.stderr
    assert "hec vs HEIR (heir-opt --mlir-to-ckks" in text.stdout
    rows = _rows(text.stdout.split("hec vs HEIR", 1)[1].split("passes:", 1)[0])
    assert rows["rotate"] == [str(ours["counts"]["rotate"]), str(heir["counts"]["rotate"])]
    assert rows["ring"] == [f"2^{ours['log_n']}", f"2^{heir['log_n']}"]
    assert rows["levels"] == [str(ours["levels"]), str(heir["levels"])]


def test_report_has_no_comparison_unless_asked() -> None:
    run = run_hec("report", "examples/gwas/chisq.hec", "--size", "N=16,M=8", "--json")
    assert run.returncode == 0, run.stderr
    assert "heir_comparison" not in json.loads(run.stdout)


def _chisq(sizes: str):
    return compile_file("examples/gwas/chisq.hec", Options(sizes=Sizes.parse(sizes)))


def test_a_program_heir_cannot_compile_shows_heirs_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When heir-opt rejects the program, the comparison says so with heir-opt's first error
    line (here a stand-in heir-opt that fails as heir-opt does: a located `error:` line, then
    the op it failed on)."""
    fake = tmp_path / "heir-opt"
    fake.write_text(
        "#!/bin/sh\ncat > /dev/null\n"
        "echo \"<stdin>:7:11: error: 'linalg.broadcast' op input rank mismatch\" >&2\n"
        "echo '<stdin>:7:11: note: see current operation' >&2\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | file_mode.S_IEXEC)
    monkeypatch.setattr(tools, "heir_opt", lambda: str(fake))
    comp = _chisq("N=8,M=4")
    comparison = compare_with_heir(comp.program, comp.stat_module, {"N": 8, "M": 4})
    assert comparison["heir"] == {
        "compiled": False,
        "by": "heir-opt",
        "error": "error: 'linalg.broadcast' op input rank mismatch",
    }
    jsonschema.validate({"heir_comparison": comparison}, _comparison_schema())
    text = "\n".join(render_heir_comparison(comparison))
    assert "HEIR cannot compile it: error: 'linalg.broadcast' op input rank mismatch" in text


def test_a_crash_of_heir_opt_is_reported_as_one() -> None:
    from targets.mlir.heir import _first_error  # pyright: ignore[reportPrivateUsage]

    assert _first_error("Stack dump:\n0. Program arguments: heir-opt\n", -11) == (
        "heir-opt crashed (signal 11)"
    )
    assert _first_error("out of memory\n", 3) == "heir-opt failed (exit 3): out of memory"


def test_comparison_without_heir_opt_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """No heir-opt (no heir-py wheel, none on PATH): refused with the way to install it."""
    monkeypatch.setattr(tools, "heir_opt", lambda: None)
    comp = _chisq("N=8,M=4")
    with pytest.raises(UserError, match="heir-opt is not installed") as err:
        compare_with_heir(comp.program, comp.stat_module, {"N": 8, "M": 4})
    assert "heir-py" in (err.value.hint or "")


def test_heir_opt_that_cannot_be_started_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: a heir-opt that exists but cannot be run (not executable, a broken install)
    made `subprocess.run` raise PermissionError out of the comparison: a traceback. It is a
    UserError naming the program."""
    fake = tmp_path / "heir-opt"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o644)
    monkeypatch.setattr(tools, "heir_opt", lambda: str(fake))
    comp = _chisq("N=8,M=4")
    with pytest.raises(UserError, match=rf"cannot run {fake}"):
        compare_with_heir(comp.program, comp.stat_module, {"N": 8, "M": 4})


def test_heir_opt_that_does_not_finish_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """heir-opt past the comparison's time limit: HEIR's side says so, hec's counts stay."""
    fake = tmp_path / "heir-opt"
    fake.write_text("#!/bin/sh\ncat > /dev/null\nexec sleep 30\n")
    fake.chmod(0o755)
    monkeypatch.setattr(tools, "heir_opt", lambda: str(fake))
    comp = _chisq("N=8,M=4")
    comparison = compare_with_heir(comp.program, comp.stat_module, {"N": 8, "M": 4}, timeout=0.5)
    assert comparison["heir"] == {
        "compiled": False,
        "by": "heir-opt",
        "error": "heir-opt --mlir-to-ckks did not finish in 0.5 s",
    }
    assert comparison["hec"]["counts"]["add"] > 0
    jsonschema.validate({"heir_comparison": comparison}, _comparison_schema())


def test_sizes_too_large_for_the_heir_form_are_not_compared() -> None:
    """The HEIR form writes every data movement as a public matrix (its size grows with the
    sizes squared): at production sizes the comparison says so instead of running heir-opt."""
    comp = _chisq("N=5000,M=1000")
    comparison = compare_with_heir(comp.program, comp.stat_module, {"N": 5000, "M": 1000})
    assert comparison["heir"]["compiled"] is False and comparison["heir"]["by"] == "hec"
    assert "public matrix" in comparison["heir"]["error"]
    assert comparison["hec"]["counts"]["add"] > 0
    text = "\n".join(render_heir_comparison(comparison))
    assert "not compared: the HEIR form at sizes N=5000, M=1000 needs a" in text


def test_compare_heir_is_refused_for_other_schemes() -> None:
    run = run_hec(
        "report",
        "examples/stats/meancov_int.hec",
        "--size",
        "N=8,D=2",
        "--scheme",
        "bfv",
        "--compare-heir",
    )
    assert run.returncode == 1
    assert "--compare-heir compares ckks compilations" in run.stderr


def test_compare_heir_is_refused_when_auto_chooses_labeled_he() -> None:
    run = run_hec(
        "report",
        "examples/stats/meancov.hec",
        "--size",
        "N=8",
        "--scheme",
        "auto",
        "--compare-heir",
    )
    assert run.returncode == 1
    assert "--scheme auto chose labhe" in run.stderr and "pass --scheme ckks" in run.stderr


def _comparison_schema() -> dict:
    return {**SCHEMA, "required": ["heir_comparison"]}


# -- what HEIR compiles: the facts the HEIR form is built on ------------------------------------


def _heir_input(body: str, args: str, results: str) -> str:
    return (
        "module attributes {backend.openfhe} {\n"
        f"  func.func @f({args}) -> ({results}) {{\n{body}\n  }}\n}}\n"
    )


Y = "%y: tensor<8xf64> {secret.secret}"
S = "%S: tensor<8x4xf64> {secret.secret}"


def test_regression_heir_cannot_broadcast_a_secret_tensor() -> None:
    """heir-opt (heir-py 2026.11.1) compiles no `linalg.broadcast` of a secret tensor, which
    chisq.hec (y @ S) and meancov.hec (X - mu) need: their comparison failed with this error
    until the HEIR form wrote broadcasts as public matrix products. When HEIR learns to
    broadcast, this test says so."""
    text = _heir_input(
        "    %e = tensor.empty() : tensor<8x4xf64>\n"
        "    %b = linalg.broadcast ins(%y : tensor<8xf64>) outs(%e : tensor<8x4xf64>) "
        "dimensions = [1]\n"
        "    %p = arith.mulf %b, %S : tensor<8x4xf64>\n"
        "    return %p : tensor<8x4xf64>",
        f"{Y}, {S}",
        "tensor<8x4xf64>",
    )
    result = heir_opt(text, "--mlir-to-ckks")
    assert result.returncode != 0 and "'linalg.broadcast' op" in result.stderr


def test_regression_heir_takes_no_secret_matrix() -> None:
    """A product with a secret matrix (y @ S as linalg.vecmat) is refused."""
    text = _heir_input(
        "    %z = arith.constant dense<0.0> : tensor<4xf64>\n"
        "    %r = linalg.vecmat ins(%y, %S : tensor<8xf64>, tensor<8x4xf64>) "
        "outs(%z : tensor<4xf64>) -> tensor<4xf64>\n"
        "    return %r : tensor<4xf64>",
        f"{Y}, {S}",
        "tensor<4xf64>",
    )
    result = heir_opt(text, "--mlir-to-ckks")
    assert result.returncode != 0
    assert "Only secret vectors and plaintext matrices are supported" in result.stderr


def test_heir_compiles_the_flat_form_of_chisq() -> None:
    """What the HEIR form is made of (flat vectors, linalg.matvec by public 0/1 matrices,
    elementwise arith) compiles, and HEIR's ops on ciphertext tensors are counted per
    ciphertext (its output loops over them)."""
    module = lower(check(parse_file(ROOT / "examples/gwas/chisq.hec")))
    form = lower_to_upstream(module, {"N": 8, "M": 4}, client=False, mark_secret=True)
    assert "linalg.matvec" in form.text and "linalg.broadcast" not in form.text
    assert "%S: tensor<32xf64> {secret.secret}" in form.text
    result = heir_opt(form.text, "--mlir-to-ckks")
    assert result.returncode == 0, result.stderr[:2000]
    assert count_heir_server_ops(result.stdout)["rotate"] > 0


def test_heir_counts_are_read_from_the_server_functions() -> None:
    text = "\n".join(
        [
            'func.func @f__encrypt__arg0(%a: t) attributes {heir.interface = {roles = ["c"]}} {',
            "  %0 = ckks.mul %a, %a : t",
            "}",
            'func.func @f__pre(%a: t) attributes {heir.interface = {roles = ["server.e"]}}',
            "  %ct = ckks.mul %a, %a : t",
            "  %ct_1 = ckks.relinearize %ct <from_basis = [0, 1, 2], to_basis = [0, 1]> : t",
            "  %ct_2 = ckks.add_plain %ct_1, %p : t",
            "  %ct_3 = ckks.rotate %ct_2, %c1 : index : t",
            "}",
        ]
    )
    counts = count_heir_server_ops(text)
    assert counts["ct_mul"] == 1 and counts["relin"] == 1
    assert counts["add"] == 1 and counts["rotate"] == 1


def test_heir_counts_follow_its_loops_over_ciphertexts() -> None:
    """heir-opt applies an op to each ciphertext of a tensor in an affine.for (scf.for with
    index constants): each op counts once per iteration of the loops around it."""
    text = "\n".join(
        [
            'func.func @f__eval(%a: t) attributes {heir.interface = {roles = ["server.e"]}} {',
            "  %c0 = arith.constant 0 : index",
            "  %c3 = arith.constant 3 : index",
            "  %c1 = arith.constant 1 : index",
            "  %0 = affine.for %i = 0 to 4 iter_args(%x = %a) -> (tensor<4x!ct>) {",
            '    %ct = ckks.mul %e, %e {heir.kernel_info = {layout = "{ [i0] -> [ct] }"}} : t',
            "    %1 = scf.for %j = %c0 to %c3 step %c1 iter_args(%y = %x) -> (t) {",
            "      %ct_1 = ckks.rotate %y, %c1 : index : t",
            "      scf.yield %ct_1 : t",
            "    }",
            "    affine.yield %1 : t",
            "  }",
            "  %ct_2 = ckks.add %0, %0 : t",
            "  return %ct_2 : t",
            "}",
        ]
    )
    counts = count_heir_server_ops(text)
    assert counts["ct_mul"] == 4 and counts["rotate"] == 12 and counts["add"] == 1


def test_schema_rejects_a_failed_comparison_without_its_error() -> None:
    comparison = {
        "sizes": {"N": 8},
        "heir_version": "2026.11.1",
        "hec": {"log_n": 12, "levels": 0, "counts": dict.fromkeys(COMPARED, 0)},
        "heir": {"compiled": False, "by": "heir-opt"},
    }
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"heir_comparison": comparison}, _comparison_schema())
    comparison["heir"]["error"] = "error: 'linalg.broadcast' op input rank mismatch"
    jsonschema.validate({"heir_comparison": comparison}, _comparison_schema())


@pytest.mark.slow
def test_report_compares_hec_and_heir_on_lra() -> None:
    """lra.hec (single-party: it has parameters only without flooding) compiles in HEIR too:
    its det and adj are entries selected and placed by public matrices. hec: ~90 s, heir-opt
    ~40 s at these sizes."""
    run = run_hec(
        "report",
        "examples/gwas/lra.hec",
        "--size",
        "N=24,M=6,K=3",
        "--no-flooding",
        "--compare-heir",
        "--json",
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    jsonschema.validate(report, SCHEMA)
    heir = report["heir_comparison"]["heir"]
    assert heir["compiled"], heir
    assert heir["counts"]["ct_mul"] > 0 and heir["levels"] >= 1
