"""The labeled target's compiler half: the degree analysis (and its located refusals), the
lowering to a labeled plan, and the plan's exact integer reference against numpy (issue 24)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.degree import reveal_degrees
from compiler.analysis.sizes import Sizes
from compiler.dialects import stat
from compiler.errors import UserError
from compiler.labhe_plan import LabheProgram, check_bits_per_entry, evaluate_plain
from driver.labhe import compile_labhe_file, fixed_point_tolerance, labhe_report
from driver.pipeline import Options
from dsl.checker import check
from dsl.lower import lower
from dsl.parser import parse_file
from hec.cli import main

ROOT = Path(__file__).resolve().parents[2]
MEANCOV = ROOT / "examples/stats/meancov.hec"
GRS = ROOT / "examples/stats/grs.hec"
CHISQ = ROOT / "examples/stats/chisq_numerators.hec"


def _options(sizes: str, **kw: object) -> Options:
    return Options(sizes=Sizes.parse(sizes), scheme="labhe", **kw)  # type: ignore[arg-type]


def _stat(path: Path) -> stat.ProgramOp:
    op = lower(check(parse_file(str(path)))).body.block.first_op
    assert isinstance(op, stat.ProgramOp)
    return op


def test_degrees_of_the_examples() -> None:
    assert reveal_degrees(_stat(MEANCOV)) == {"means": 1, "scatter": 2, "sumsq": 2}
    assert reveal_degrees(_stat(CHISQ)) == {"c1": 1, "r1": 1, "t": 2}
    # G^2 is computed by G's provider (owner side): G^2 @ a is degree 2, else 3.
    assert reveal_degrees(_stat(GRS)) == {"score": 2}
    assert reveal_degrees(_stat(GRS), owner_side_inputs=False) == {"score": 3}


def test_degree_three_is_refused_at_its_location(tmp_path: Path) -> None:
    src = tmp_path / "cubic.hec"
    src.write_text(
        "param N <= 10\ninput x: secret[N] in [-1.0, 1.0]\ninput y: secret[N] in {0, 1}\n"
        "reveal ok = x @ y + sum(x * x * y)\nreveal s3 = sum(x * y * y)\n"
    )
    with pytest.raises(UserError) as err:
        compile_labhe_file(src, _options("N=4"))
    text = str(err.value)
    assert f"{src}:5:13" in text
    assert "'s3' has degree 3" in text and "degree <= 2" in text


def test_public_input_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "pub.hec"
    src.write_text(
        "param N <= 10\ninput w: public[N]\ninput x: secret[N] in {0, 1}\nreveal s = sum(x)\n"
    )
    with pytest.raises(UserError, match="public input 'w'"):
        compile_labhe_file(src, _options("N=4"))


def test_meancov_plan_contracts_the_centred_data() -> None:
    comp = compile_labhe_file(MEANCOV, _options("N=100,D=3"))
    text = comp.plan.text()
    assert text.startswith("hec-labhe-plan 1\nprogram meancov\n")
    assert "v 0 input X 32768 2 100 3\n" in text
    x = comp.plan.input("X").register
    over_rows = [s for s in comp.plan.steps if s.op == "contract" and s.args == (x, x)]
    assert [s.words[0] for s in over_rows] == ["ba,bc->ac", "ab,ab->b"]  # scatter, squares
    # The centring is expanded: no level-1 step touches the n x d array element by element.
    assert not [s for s in comp.plan.steps if not s.level2 and s.shape == (100, 3) and s.id != x]
    widest = max(r.bound for r in comp.plan.reveals)
    shapes = [comp.plan.steps[r.register].shape for r in comp.plan.reveals]
    assert comp.plan.message_bits == (2 * widest + 1).bit_length() + check_bits_per_entry(shapes)


def test_exact_integer_reference_equals_numpy_on_integers() -> None:
    """Integer-valued inputs are exact at the fixed-point scale: the plan's results equal
    numpy's (float64 of exact rationals)."""
    comp = compile_labhe_file(MEANCOV, _options("N=50,D=3"))
    x = np.random.default_rng(5).integers(-10, 11, (50, 3)).astype(float)
    got = evaluate_plain(comp.plan, {"X": x})
    xc = x - x.mean(axis=0)
    np.testing.assert_array_equal(got["means"], x.mean(axis=0))
    np.testing.assert_allclose(got["scatter"], xc.T @ xc, rtol=1e-15, atol=1e-12)
    np.testing.assert_allclose(got["sumsq"], np.sum(xc**2, axis=0), rtol=1e-15, atol=1e-12)


def test_exact_integer_reference_within_fixed_point_scale_on_reals() -> None:
    comp = compile_labhe_file(MEANCOV, _options("N=40,D=2"))
    x = np.random.default_rng(6).uniform(-10, 10, (40, 2))
    got = evaluate_plain(comp.plan, {"X": x})
    xc = x - x.mean(axis=0)
    tol = fixed_point_tolerance(comp, "scatter")
    assert np.max(np.abs(got["scatter"] - xc.T @ xc)) <= tol
    assert 0 < tol < 0.1


def test_grs_and_chisq_references() -> None:
    comp = compile_labhe_file(GRS, _options("N=7,M=5"))
    rng = np.random.default_rng(7)
    g = rng.integers(0, 3, (7, 5)).astype(float)
    a, b, c = rng.uniform(-1, 1, 5), rng.uniform(-1, 1, 5), np.array(1.5)
    got = evaluate_plain(comp.plan, {"G": g, "a": a, "b": b, "c": c})
    assert any(i.source == "G" for i in comp.plan.inputs)  # G^2, uploaded by G's provider
    assert np.max(np.abs(got["score"] - ((g**2) @ a + g @ b + c))) < 1e-4
    comp = compile_labhe_file(CHISQ, _options("N=30,M=4"))
    y = rng.integers(0, 2, 30).astype(float)
    s = rng.integers(0, 3, (30, 4)).astype(float)
    got = evaluate_plain(comp.plan, {"y": y, "S": s})
    d = 60
    np.testing.assert_array_equal(got["t"], (y @ s) * d - s.sum(axis=0) * 2 * y.sum())


def test_result_size_does_not_depend_on_rows() -> None:
    """Level-2 results are one 384-byte ciphertext per entry at any n; level-1 results (the
    means) are a values of ceil(k/8) bytes, k growing with log2(n) through the bounds."""
    small = labhe_report(compile_labhe_file(MEANCOV, _options("N=10,D=3")))
    large = labhe_report(compile_labhe_file(MEANCOV, _options("N=100000,D=3")))
    level2 = {o["name"]: o["result_bytes"] for o in large["outputs"] if o["level"] == 2}
    assert level2 == {"scatter": 9 * 384, "sumsq": 3 * 384}
    assert level2 == {o["name"]: o["result_bytes"] for o in small["outputs"] if o["level"] == 2}
    assert large["sizes"]["result_depends_on_rows"] is False


def test_report_cli_and_modulus_choice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--scheme", "labhe", str(MEANCOV), "--size", "N=10,D=2"]) == 0
    out = capsys.readouterr().out
    assert "128-bit security" in out and "independent of the number of rows" in out
    assert main(["report", "--scheme", "labhe", "--modulus-bits", "2048", str(MEANCOV)]) == 0
    assert "BELOW 128-BIT SECURITY" in capsys.readouterr().out
    assert main(["report", "--scheme", "labhe", "--modulus-bits", "1024", str(MEANCOV)]) == 1
    assert "expected 3072" in capsys.readouterr().err
    # auto compares the RLWE schemes (ckks, bfv) and labhe by the cost model
    assert main(["report", "--scheme", "auto", str(CHISQ), "--size", "N=10,M=2"]) == 0
    out = capsys.readouterr().out
    assert "scheme chosen:" in out and "\n  labhe " in out


MEAN_SRC = "param N <= 4096\ninput x: secret[N] in [-10.0, 10.0]\nreveal m = mean(x)\n"


def test_auto_compares_labhe_in_the_same_currency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--scheme auto` estimates labeled HE's time and bytes beside ckks's and bfv's and says
    why it chose; a mean over many values costs labeled HE no ciphertext work at the server."""
    src = tmp_path / "mean.hec"
    src.write_text(MEAN_SRC)
    assert main(["report", "--scheme", "auto", "--json", str(src), "--size", "N=1024"]) == 0
    report = json.loads(capsys.readouterr().out)
    labhe, ckks = report["schemes"]["labhe"], report["schemes"]["ckks"]
    for key in ("encrypt_seconds", "compute_seconds", "upload_bytes", "download_bytes"):
        assert labhe[key] > 0 and ckks[key] > 0
    # 1024 uploads of a 384-byte ciphertext (3072 bits) and a ceil(k/8)-byte a.
    assert labhe["upload_bytes"] % 1024 == 0 and labhe["upload_bytes"] // 1024 > 384
    best = min(report["schemes"], key=lambda k: report["schemes"][k].get("total_seconds", 1e99))
    assert report["scheme_choice"].startswith(f"{best}: the lowest estimated time")
    # The text report shows the comparison and the choice.
    assert main(["report", "--scheme", "auto", str(src), "--size", "N=1024"]) == 0
    out = capsys.readouterr().out
    assert "\n  labhe " in out and "\n  ckks " in out and f"scheme chosen: {best}" in out
    # compile follows the choice.
    out_dir = tmp_path / "built"
    assert (
        main(
            [
                "compile",
                "--scheme",
                "auto",
                str(src),
                "--size",
                "N=1024",
                "-o",
                str(out_dir),
                "--no-build",
            ]
        )
        == 0
    )
    described = capsys.readouterr().out
    assert ("labeled HE" in described) == (best == "labhe")


def test_auto_says_why_labhe_cannot_run_a_degree_three_program(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "cubic.hec"
    src.write_text(
        "param N <= 64\ninput x: secret[N] in [-1.0, 1.0]\ninput y: secret[N] in [-1.0, 1.0]\n"
        "input z: secret[N] in [-1.0, 1.0]\nreveal s3 = sum(x * y * z)\n"
    )
    assert main(["report", "--scheme", "auto", "--json", str(src)]) == 0
    report = json.loads(capsys.readouterr().out)
    why = report["schemes"]["labhe"]["unavailable"]
    assert "'s3' has degree 3" in why
    assert report["scheme"] != "labhe" and "labhe not considered" in report["scheme_choice"]


def test_labhe_cost_model_scales() -> None:
    """Server work grows with the rows, the result bytes do not; Paillier's ring (N^2) and a
    3072-bit modulus cost more than 2048-bit Joye-Libert."""
    from compiler.analysis.cost import labhe_cost, labhe_products

    cov = ROOT / "bench/labhe_cov.hec"

    def plan(n: int, d: int) -> LabheProgram:
        return compile_labhe_file(cov, _options(f"N={n},D={d}", modulus_bits=2048)).plan

    small, large = plan(4096, 8), plan(8192, 8)
    a, b = labhe_cost(small, "jl", 2048), labhe_cost(large, "jl", 2048)
    assert 1.5 < b.compute_s / a.compute_s < 2.5
    assert 1.9 < b.encrypt_s / a.encrypt_s < 2.1
    assert a.download_bytes == b.download_bytes == 64 * 256
    assert labhe_cost(small, "paillier", 2048).total_s > 3 * a.total_s
    assert labhe_cost(small, "jl", 3072).compute_s > 2 * a.compute_s
    # 36 multi-exponentiations (the upper triangle of 8 x 8), each about 8 windows of 9 bits
    # (65-bit exponents: N X.T X - s s^T over N, 1 check bit per entry) over 8192 (off the
    # diagonal) or 4096 bases: 2 to 3 million products.
    assert small.message_bits == 65
    products, _ = labhe_products(small)
    assert 2.0e6 < products < 3.0e6
