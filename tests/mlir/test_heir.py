"""HEIR interchange: hec's compiled ckks programs exported to HEIR's ckks/lwe dialects are
accepted (parsed and verified) by heir-opt from the heir-py wheel, and HEIR's own compilation
of a program (heir-opt --mlir-to-ckks on its upstream form) is counted next to hec's."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver.pipeline import Options, compile_file
from targets.mlir.heir import count_heir_server_ops, export_heir
from tests.mlir.common import (
    EXAMPLES,
    HERE,
    NAMES,
    ckks_module,
    compilable,
    heir_opt,
    run_hec,
    small_sizes,
)


@pytest.mark.parametrize("path", EXAMPLES, ids=NAMES)
def test_heir_opt_accepts_the_export(path: Path) -> None:
    if (why := compilable(path)) is not None:
        pytest.skip(f"hec does not compile {path.name} to ckks: {why}")
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


def test_compare_heir_prints_both_counts() -> None:
    result = run_hec("ir", str(HERE / "chisq-rows.hec"), "--compare-heir", "--size", "N=16,M=8")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[2:]}
    assert int(rows["ct_mul"][0]) > 0 and int(rows["ct_mul"][1]) > 0
    assert rows["ring"][0].startswith("2^") and rows["ring"][1].startswith("2^")


def test_heir_cannot_broadcast_secret_values() -> None:
    """What limits the comparison: heir-opt (heir-py 2026.11.1) compiles no broadcast of a
    secret tensor, which chisq.hec (y @ S, r1 per SNP) and meancov.hec (X - mu) need; the
    comparison runs on tests/mlir/chisq-rows.hec, the same statistic with the phenotype
    replicated per SNP by its owner. When HEIR learns to broadcast, this test says so."""
    for path, sizes in (
        ("examples/gwas/chisq.hec", "N=8,M=4"),
        ("examples/stats/meancov.hec", "N=8,D=4"),
    ):
        result = run_hec("ir", path, "--compare-heir", "--size", sizes)
        assert result.returncode == 1
        assert "linalg.broadcast" in result.stderr and "heir-opt failed" in result.stderr


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
