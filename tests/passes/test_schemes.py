"""The scheme-agnostic middle (issue 18): one HE layer lowered to CKKS or to BFV.

BFV compiles integer programs exactly (the simulator equals the plaintext reference), refuses
real-valued ones naming the input, and `--scheme auto` compares both schemes by the cost
model; the CKKS lowering through the HE layer keeps the programs it compiled before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver.pipeline import Options, compile_file, report_of, simulate_against_reference
from hec.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHISQ = ROOT / "examples" / "gwas" / "chisq.hec"
NUMERATORS = ROOT / "examples" / "gwas" / "chisq_numerators.hec"
MEANCOV = ROOT / "examples" / "stats" / "meancov.hec"
INTEGER_COV = ROOT / "examples" / "stats" / "meancov_int.hec"


@pytest.mark.parametrize(
    ("path", "sizes"),
    [(CHISQ, "N=300,M=70"), (NUMERATORS, "N=200,M=40"), (INTEGER_COV, "N=250,D=5")],
)
def test_bfv_simulation_is_exact(path: Path, sizes: str) -> None:
    comp = compile_file(path, Options(scheme="bfv", sizes=Sizes.parse(sizes)))
    result = simulate_against_reference(comp, seed=3)
    assert result["rows"]
    for row in result["rows"]:
        assert row["max_rel_error"] == 0.0, row
    budgets = result.get("noise_budget_bits")
    assert budgets and min(budgets.values()) > 0


def test_bfv_plain_modulus_holds_the_largest_value() -> None:
    comp = compile_file(NUMERATORS, Options(scheme="bfv", sizes=Sizes.parse("N=5000,M=16384")))
    params = comp.bfv_program.parameters()
    assert params is not None
    # The decrypted chi2_num is 2N·(n11·2N - c1·r1)^2 (BFV multiplies by the public 2N on the
    # server: the value is exact), which reaches 2N·(N^2)^2 = 6.25e18 for N = 5000 (half the
    # individuals cases with S = 2, half controls with S = 0): T = t_1·...·t_k must hold
    # twice that (the sign), beyond one prime below 2^60, so a CRT over two.
    assert params.plain_product > 2 * 10_000 * (5000**2) ** 2
    assert len(params.plain_moduli) == 2
    assert all(t % (2 << params.log_n) == 1 for t in params.plain_moduli)
    assert params.security_bits == 128
    # runtime/bfv takes primes of Q and P below 2^60 (regression: 2^60 + 57345 was refused)
    assert all(q < 2**60 for q in params.moduli + params.special_moduli)


def test_bfv_refuses_a_real_input_naming_it() -> None:
    with pytest.raises(UserError, match=r"input X has domain \[-10, 10\]"):
        compile_file(MEANCOV, Options(scheme="bfv", sizes=Sizes.parse("N=100,D=4")))


def test_bfv_refuses_a_mean_naming_the_value(tmp_path: Path) -> None:
    program = tmp_path / "mean.hec"
    program.write_text("param N <= 100\ninput x: secret[N] in {0, 1}\nreveal m = mean(x)\n")
    with pytest.raises(UserError, match=r"m multiplies a public scalar that is not an integer"):
        compile_file(program, Options(scheme="bfv"))


def test_exact_refuses_an_approximate_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--scheme", "ckks", "--exact", str(CHISQ)]) == 1
    assert "--exact: ckks is an approximate scheme" in capsys.readouterr().err
    assert main(["report", "--exact", str(MEANCOV)]) == 1
    assert "input X has domain" in capsys.readouterr().err


def test_auto_compares_both_schemes() -> None:
    comp = compile_file(CHISQ, Options(scheme="auto", sizes=Sizes.parse("N=5000,M=16384")))
    report = report_of(comp)
    assert set(report["schemes"]) == {"ckks", "bfv"}
    assert report["scheme_choice"].startswith(comp.scheme)
    chosen = report["schemes"][comp.scheme]["total_seconds"]
    assert all(s["total_seconds"] >= chosen for s in report["schemes"].values())


def test_auto_on_a_real_program_says_why_bfv_cannot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--scheme", "auto", str(MEANCOV), "--size", "N=100,D=4"]) == 0
    out = capsys.readouterr().out
    assert "bfv        cannot run the program: --scheme bfv: input X" in out
    assert "scheme chosen: ckks" in out
