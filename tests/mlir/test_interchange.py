"""hec's IR in MLIR's own tools: IRDL definitions generated from the xDSL dialects, every
example's stat and ckks layers (an integer program's bool circuit) parsed and verified by
`mlir-opt-19 --irdl-file`, the round
trip hec -> MLIR text -> hec (also through mlir-opt's own printing), and the importer's
located errors. The `test_regression_*` cases are the facts issue 27 started from."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compiler.errors import UserError
from compiler.ir_text import print_ir
from driver.fhew import compile_fhew_file
from driver.pipeline import Options
from targets.mlir import irdl
from targets.mlir.form import from_mlir, to_mlir
from tests.mlir.common import (
    CIRCUITS,
    EXAMPLES,
    HERE,
    NAMES,
    SINGLE_PARTY,
    flooding_flags,
    layer_module,
    mlir_opt,
    run_hec,
    size_text,
    small_sizes,
    stat_module,
)

LAYERS = ["stat", "scheme"]
# Every example's every layer; the scheme layer of a program that compiles for minutes
# (common.SINGLE_PARTY: lra) is in the slow tier.
CASES = [
    pytest.param(
        p,
        layer,
        id=f"{n}-{layer}",
        marks=[pytest.mark.slow] if layer == "scheme" and p.name in SINGLE_PARTY else [],
    )
    for p, n in zip(EXAMPLES, NAMES, strict=True)
    for layer in LAYERS
]


# -- the IRDL definitions ---------------------------------------------------------------------


def test_committed_irdl_is_generated_from_the_xdsl_dialects() -> None:
    """One source of truth: the committed file is what the generator writes today (after a
    change to compiler/dialects, run `python -m targets.mlir.irdl --write`)."""
    assert irdl.IRDL_FILE.read_text() == irdl.generate(), "run python -m targets.mlir.irdl --write"
    assert irdl.main(["--check"]) == 0


def test_stale_irdl_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "hec.irdl.mlir"
    stale.write_text(irdl.generate().replace("irdl.operation @add", "irdl.operation @plus"))
    monkeypatch.setattr(irdl, "IRDL_FILE", stale)
    assert irdl.main(["--check"]) == 1


def test_every_op_and_type_of_the_dialects_is_defined() -> None:
    text = irdl.generate()
    for dialect in (d for d in __import__("targets.mlir.form").mlir.form.DIALECTS):
        for op in dialect.operations:
            short = op.name.split(".", 1)[1]
            assert f"irdl.operation @{short} " in text or f"// {op.name}: carried" in text
        for attr in dialect.attributes:
            short = attr.name.split(".", 1)[1]
            assert f"@{short} {{" in text


# -- mlir-opt accepts every layer of every example ----------------------------------------------


@pytest.mark.parametrize(("path", "layer"), CASES)
def test_mlir_opt_verifies_the_layer(path: Path, layer: str) -> None:
    module = layer_module(path, layer)
    text = to_mlir(module)
    result = mlir_opt(text)
    assert result.returncode == 0, result.stderr
    # What mlir-opt prints (custom form for func/scf, generic for hec's ops) reads back.
    assert from_mlir(result.stdout, "mlir-opt").is_structurally_equivalent(module)
    generic = mlir_opt(text, "--mlir-print-op-generic")
    assert generic.returncode == 0, generic.stderr
    assert from_mlir(generic.stdout, "mlir-opt").is_structurally_equivalent(module)


@pytest.mark.parametrize("path", CIRCUITS, ids=[p.name for p in CIRCUITS])
def test_mlir_opt_verifies_the_bool_circuit(path: Path) -> None:
    """An integer program's IR is its circuit in the bool dialect (the one its FHEW gate program
    computes): mlir-opt verifies it, and hec -> MLIR form -> hec is the identity, also through
    mlir-opt's own printing."""
    module = compile_fhew_file(path, Options()).ir
    text = to_mlir(module)
    result = mlir_opt(text)
    assert result.returncode == 0, result.stderr
    assert from_mlir(result.stdout, "mlir-opt").is_structurally_equivalent(module)
    back = from_mlir(text, "form")
    assert to_mlir(back) == text and print_ir(back) == print_ir(module)


@pytest.mark.parametrize(("path", "layer"), CASES)
def test_round_trip_is_the_identity(path: Path, layer: str) -> None:
    """hec -> MLIR form -> hec gives the same IR, printed identically (custom form too)."""
    module = layer_module(path, layer)
    text = to_mlir(module)
    back = from_mlir(text, "form")
    assert print_ir(back) == print_ir(module)
    assert to_mlir(back) == text
    custom = print_ir(module)
    assert print_ir(from_mlir(custom, "custom")) == custom


@pytest.mark.parametrize(("path", "layer"), CASES)
def test_hec_ir_prints_each_layer_for_mlir_opt(path: Path, layer: str) -> None:
    sizes = size_text(small_sizes(path))
    flags = flooding_flags(path) if layer == "scheme" else []
    result = run_hec("ir", str(path), "--layer", layer, "--size", sizes, "--generic", *flags)
    assert result.returncode == 0, result.stderr
    verified = mlir_opt(result.stdout)
    assert verified.returncode == 0, verified.stderr


# -- regressions: the facts of issue 27 -------------------------------------------------------


def test_regression_generic_ir_needed_allow_unregistered_dialect() -> None:
    """`hec ir --generic` parsed in mlir-opt-19 only with --allow-unregistered-dialect, so
    nothing was verified; now it parses with hec's IRDL dialects and nothing unregistered."""
    result = run_hec("ir", "--generic", "examples/gwas/chisq.hec")
    assert result.returncode == 0, result.stderr
    verified = mlir_opt(result.stdout)
    assert verified.returncode == 0, verified.stderr


def test_regression_custom_form_was_rejected() -> None:
    """hec's custom form (`hec ir`) was rejected by mlir-opt ("Dialect `stat' not found").
    MLIR cannot parse an IRDL dialect's custom op syntax, so the custom form reaches MLIR
    through hec's importer, which converts it losslessly to the MLIR form."""
    custom = run_hec("ir", "examples/gwas/chisq.hec")
    assert custom.returncode == 0
    converted = run_hec("ir", "-", "--generic", stdin=custom.stdout)
    assert converted.returncode == 0, converted.stderr
    assert mlir_opt(converted.stdout).returncode == 0


def test_regression_ckks_layer_was_rejected() -> None:
    """The CKKS-level IR could not be printed by `hec ir` and was rejected by mlir-opt."""
    result = run_hec("ir", "examples/gwas/chisq.hec", "--layer", "scheme", "--size", "N=24,M=6")
    assert result.returncode == 0, result.stderr
    assert "ckks.program" in result.stdout
    generic = run_hec(
        "ir", "examples/gwas/chisq.hec", "--layer", "scheme", "--size", "N=24,M=6", "--generic"
    )
    verified = mlir_opt(generic.stdout)
    assert verified.returncode == 0, verified.stderr
    assert '"ckks.encrypt"' in verified.stdout and '"ckks.reduce"' in verified.stdout


def test_regression_nothing_was_verified() -> None:
    """With --allow-unregistered-dialect any op passed; now mlir-opt checks each op against
    its IRDL definition: a missing attribute and a type parameter of the wrong kind fail."""
    text = to_mlir(layer_module(EXAMPLES[0], "stat"))
    assert mlir_opt(text).returncode == 0
    no_bound = text.replace('"stat.param"() {bound = ', '"stat.param"() {b = ', 1)
    assert no_bound != text
    result = mlir_opt(no_bound)
    assert result.returncode != 0 and 'attribute "bound" is expected' in result.stderr
    bad_param = text.replace('"secret">', "7>", 1)
    result = mlir_opt(bad_param)
    assert result.returncode != 0
    assert "expected base attribute 'builtin.string' but got 'builtin.integer'" in result.stderr


# -- the importer's errors ----------------------------------------------------------------------

GOOD = to_mlir(layer_module(EXAMPLES[0], "stat")) if EXAMPLES else ""


def _located(text: str) -> UserError:
    with pytest.raises(UserError) as info:
        from_mlir(text, "bad.mlir")
    assert info.value.location is not None, str(info.value)
    return info.value


def test_malformed_mlir_is_a_located_error() -> None:
    lines = GOOD.splitlines()
    target = next(i for i, line in enumerate(lines) if '"stat.matmul"' in line)
    lines[target] = lines[target].replace(") : (", " : (", 1)  # the operand list never closes
    col = lines[target].index(" : (") + 1
    err = _located("\n".join(lines))
    assert (err.location.line, err.location.column) == (target + 1, col + 1)  # pyright: ignore
    assert "')'" in err.message
    assert "bad.mlir:" in str(err) and "^" in str(err)


def test_wrong_type_parameters_are_a_located_error() -> None:
    lines = GOOD.splitlines()
    target = next(i for i, line in enumerate(lines) if '"stat.input"' in line)
    lines[target] = lines[target].replace(', "secret">', ">", 1)
    err = _located("\n".join(lines))
    assert err.location.line == target + 1  # pyright: ignore[reportOptionalMemberAccess]
    assert "stat.tensor has 2 parameters" in err.message


def test_ir_that_does_not_verify_is_located_at_its_op() -> None:
    lines = GOOD.splitlines()
    target = next(i for i, line in enumerate(lines) if '"stat.pow"' in line)
    lines[target] = lines[target].replace("exponent = 2 : i64", "exponent = 0 : i64")
    err = _located("\n".join(lines))
    assert err.location.line == target + 1  # pyright: ignore[reportOptionalMemberAccess]
    assert err.location.column == lines[target].index("%") + 1  # pyright: ignore
    assert "stat.pow" in err.message and "exponent must be >= 1" in err.message


def test_hec_ir_reports_malformed_mlir_with_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text(GOOD.replace('"stat.sum"(', '"stat.sum"(%zz, ', 1))
    line = next(i for i, x in enumerate(bad.read_text().splitlines()) if "%zz" in x) + 1
    result = run_hec("ir", str(bad))
    assert result.returncode == 1
    assert result.stderr.startswith(f"{bad}:{line}:"), result.stderr
    assert "Traceback" not in result.stderr
    missing = run_hec("ir", str(tmp_path / "none.mlir"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr


# -- a golden file of the MLIR form -----------------------------------------------------------

GOLDEN_SOURCE = HERE / "client-functions.hec"
GOLDEN = HERE / "client-functions.stat.mlir"


def test_golden_mlir_form() -> None:
    """The MLIR form of a small program (every client function) is pinned: a change of the
    text format shows as a diff here. Regenerate with HEC_UPDATE_GOLDEN=1 after review."""
    module = stat_module(GOLDEN_SOURCE)
    text = to_mlir(module)
    if os.environ.get("HEC_UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(text)
    assert GOLDEN.read_text() == text, "the MLIR form changed: review, then HEC_UPDATE_GOLDEN=1"
    assert print_ir(from_mlir(GOLDEN.read_text(), str(GOLDEN))) == print_ir(module)
    assert mlir_opt(GOLDEN.read_text()).returncode == 0
