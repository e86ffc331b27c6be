"""The diagonal (Halevi-Shoup) layout and its matrix-vector product (compiler/dialects/he.py:
Diagonal, DiagMatvecRule; docs/layout.md, "Diagonal layout"): the placement the data owner
encodes, the baby-step choice, the matrix-chain order it enables on `A @ B @ v` (issue 21's
acceptance: fewer key switches than the source order, in the report), agreement of the
simulator with the plaintext reference for square, tall and wide matrices, and the
refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.utils.exceptions import VerifyException

from compiler.analysis.sizes import Sizes
from compiler.dialects import he
from compiler.errors import UserError
from driver.pipeline import Options, compile_file, report_of, simulate_against_reference
from targets.report.report import render_text
from targets.sim.simulator import _Sim  # pyright: ignore[reportPrivateUsage]

HERE = Path(__file__).resolve().parent / "diagonal"


@pytest.mark.parametrize("rows,cols", [(8, 8), (5, 8), (33, 7), (7, 33), (1, 16), (16, 1)])
def test_place_is_where_the_simulator_encodes_each_entry(rows: int, cols: int) -> None:
    """Diagonal.place (the spec the C++ owner encodes by) against the simulator's encoding,
    entry by entry, every copy of the period, and zeros elsewhere."""
    d = he.diagonal_layout(rows, cols)
    slots = 256
    sim = _Sim.__new__(_Sim)
    sim.slots = slots
    x = np.arange(1, rows * cols + 1, dtype=np.float64).reshape(rows, cols)
    encoded = sim.to_diagonal(x, d)
    assert encoded.shape == (d.count, slots)
    expected = np.zeros_like(encoded)
    for r in range(rows):
        for c in range(cols):
            i, s = d.place(r, c)
            expected[i, s :: d.period] = x[r, c]
    assert np.array_equal(encoded, expected)


def test_baby_step_minimizes_key_switches() -> None:
    assert he.best_baby(64) == 16  # 15 + 3 rotations and 4 relinearizations: 22 (b = 8: 22)
    assert he.best_baby(8) == 4
    assert he.best_baby(1) == 1
    d = he.diagonal_layout(64, 64)
    assert d.key_switches() == 22 and d.count == 64 and d.fold == ()
    wide = he.diagonal_layout(7, 33)  # P = 8 < Q = 64: 8 diagonals, fold 8, 16, 32
    assert (wide.count, wide.period, wide.fold) == (8, 64, (8, 16, 32))


def test_a_b_v_at_64_has_fewer_key_switches_than_the_source_order() -> None:
    """Issue 21: `A @ B @ v` with 64 x 64 matrices; the plan in the report has fewer key
    switches than the order written, and the compiled program executes what the plan says."""
    comp = compile_file(HERE / "abv.hec", Options(sizes=Sizes.parse("C=64"), flooding=False))
    report = report_of(comp)
    (chain,) = report["matrix_chains"]  # type: ignore[misc]
    assert chain["source_order"] == "(A @ B) @ v"
    assert chain["chosen_order"] == "A @ (B @ v)"
    assert chain["layout"] == "cyclic"
    source, chosen = chain["source_cost"], chain["chosen_cost"]
    # Source: A @ B by 64 x 64 ciphertext products, then 64 rows summed over the slots.
    assert source["key_switches"] == 64 + 64 * 12 and source["ct_mults"] == 64 * 64 + 64
    # Chosen: two diagonal products of 22 key switches (b = 16, 4 giant groups).
    assert chosen["key_switches"] == 44 and chosen["ct_mults"] == 128
    assert chosen["key_switches"] < source["key_switches"]
    assert report["counts"]["executed"]["key_switch"] == 44  # type: ignore[index]
    text = render_text(report)
    assert "chosen  A @ (B @ v): depth 2, key switches 44," in text
    assert "source  (A @ B) @ v: depth 2, key switches 832," in text
    assert "diagonal<64, 64, 16> x cyclic<64> -> cyclic<64>; baby step 16" in text
    keys = report["keys"]["rotations"]  # type: ignore[index]
    assert keys == [*range(1, 16), 16, 32, 48]
    # A and B are one owner's whole matrices, not rows of individuals (regression: C was
    # taken for the individuals, "one value per individual" and a per-individual upload).
    assert report["sizes"]["upload_per_individual"] == 0  # type: ignore[index]
    (reveal,) = report["reveals"]  # type: ignore[misc]
    assert reveal["per_individual"] is False


@pytest.mark.parametrize(
    "name,sizes",
    [
        ("abv.hec", "C=64"),
        ("abv.hec", "C=5"),
        ("rect.hec", "R=33,C=7"),
        ("rect.hec", "R=5,C=17"),
        ("rect.hec", "R=8,C=8"),
    ],
)
def test_simulator_agrees_with_the_reference(name: str, sizes: str) -> None:
    comp = compile_file(HERE / name, Options(sizes=Sizes.parse(sizes), flooding=False))
    check = simulate_against_reference(comp, seed=4, noisy=True)
    for row in check["rows"]:
        bound = 1e-9 if row["mode"] == "exact" else 1e-2
        assert row["max_rel_error"] < bound, row


@pytest.mark.parametrize("name,sizes", [("slot_sum.hec", "C=12"), ("conversions.hec", "N=20,C=12")])
def test_conversions_agree_with_the_reference(name: str, sizes: str) -> None:
    """cyclic -> packed (a mask) before a slot sum or an inner product with a packed vector;
    packed -> cyclic (rotate-and-adds) for a computed packed vector the product needs."""
    comp = compile_file(HERE / name, Options(sizes=Sizes.parse(sizes), flooding=False))
    check = simulate_against_reference(comp, seed=2, noisy=True)
    for row in check["rows"]:
        bound = 1e-9 if row["mode"] == "exact" else 1e-3
        assert row["max_rel_error"] < bound, row
    report = report_of(comp)
    conversions = report["diagonal"]["conversions"]  # type: ignore[index]
    kinds = {(c["from"], c["to"]) for c in conversions}
    assert ("cyclic<16>", "packed") in kinds
    text = render_text(report)
    assert "conversion cyclic<16> -> packed: a mask (one plaintext product, one level)" in text
    if name == "conversions.hec":
        slots = report["diagonal"]["slots"]  # type: ignore[index]
        (back,) = [c for c in conversions if c["from"] == "packed"]
        assert back["to"] == "cyclic<16>" and 2 ** back["rotations"] == slots // 16


def test_a_ring_too_small_for_a_period_is_refused_with_its_location() -> None:
    with pytest.raises(UserError) as err:
        compile_file(HERE / "large.hec", Options(sizes=Sizes.parse("C=3000"), log_n=12))
    assert "needs 4096 slots" in str(err.value) and "--log-n 13" in (err.value.hint or "")
    assert err.value.location is not None and err.value.location.line == 3


def test_individuals_rows_are_never_diagonal() -> None:
    """Regression: G [N, M] @ b with N the individuals keeps the row-wise product (a
    replicated score per individual: rows are encrypted and streamed by their owners)."""
    comp = compile_file(HERE / "individuals.hec", Options(sizes=Sizes.parse("N=10,M=8")))
    report = report_of(comp)
    assert "diagonal" not in report
    assert report["counts"]["executed"]["rotate"] > 0  # type: ignore[index]


def test_the_verifier_refuses_a_packed_vector_and_a_diagonal_broadcast() -> None:
    m = he.EncodeOp("A", he.PtType.get(("C", "C"), "diagonal<8, 8, 4>"), None)
    v = he.EncodeOp("v", he.PtType.get(("C",), he.PACKED), None)
    em, ev = he.EncryptOp(m.result), he.EncryptOp(v.result)
    op = he.DiagMatvecOp(em.result, ev.result)
    with pytest.raises(VerifyException, match="cyclic<8>"):
        op.infer()
    b = he.BroadcastOp(em.result, ("C", "C"), (0, 1), he.PACKED)
    with pytest.raises(VerifyException, match="diagonal array does not broadcast"):
        b.infer()
    with pytest.raises(VerifyException, match="baby step must divide"):
        he.verify_shape(("C", "C"), "diagonal<8, 4, 8>")


def test_bfv_refuses_the_diagonal_method_where_it_is_written() -> None:
    """Regression: --scheme bfv and auto crashed ("no bfv form for he.diag_matvec")."""
    with pytest.raises(UserError) as err:
        compile_file(HERE / "integer.hec", Options(sizes=Sizes.parse("C=8"), scheme="bfv"))
    assert "diagonal method" in str(err.value) and "--scheme ckks" in (err.value.hint or "")
    assert err.value.location is not None and err.value.location.line == 6
    auto = compile_file(HERE / "integer.hec", Options(sizes=Sizes.parse("C=8"), scheme="auto"))
    refused = auto.alternatives["bfv"]
    assert isinstance(refused, str) and "diagonal method" in refused


def test_mlir_opt_verifies_the_diagonal_program_and_it_round_trips() -> None:
    """The ckks layer with diag_matvec, convert and the diagonal and cyclic layouts, in MLIR's
    own tools (the generated IRDL definitions) and back."""
    from compiler.ir_text import print_ir
    from targets.mlir.form import from_mlir, to_mlir
    from tests.mlir.common import mlir_opt

    for name, sizes in (("abv.hec", "C=8"), ("conversions.hec", "N=10,C=6")):
        comp = compile_file(HERE / name, Options(sizes=Sizes.parse(sizes), flooding=False))
        text = to_mlir(comp.module)
        result = mlir_opt(text)
        assert result.returncode == 0, result.stderr
        assert from_mlir(result.stdout, "mlir-opt").is_structurally_equivalent(comp.module)
        assert print_ir(from_mlir(text, "form")) == print_ir(comp.module)
