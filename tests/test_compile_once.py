"""A command compiles each program once (issue 18): `hec compile`, `hec run` (simulated and
encrypted), `hec report` and `hec gwas` run the parameter search once per candidate the
compilation compares, and a program-cache hit in gwas runs no search at all.

The parameter search is scale-management's search over ring dimensions and scales
(`ScaleManagementPass.run`, then parameter-selection). Complex packing decides inside the one
compilation by running the search as a function on its candidates (the program unpacked and
packed: `ComplexPackingPass.estimate`) and the pipeline reuses the chosen candidate's search
(`SearchMemo`): two searches when packing is compared, one when no row can span two slot sets.
Before, `hec compile` searched twice or three times (plain, complex-packed, again for IR
printing), and `hec run` and gwas compiled again on top (four searches; two on a gwas cache
hit)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hec.cli import main
from passes.complex_packing import ComplexPackingPass
from passes.scale_management import ScaleManagementPass

ROOT = Path(__file__).resolve().parent.parent
NUMERATORS = str(ROOT / "examples" / "gwas" / "chisq_numerators.hec")  # complex-packed when wide
GRS = str(ROOT / "examples" / "stats" / "grs.hec")  # nothing to pack


@dataclass
class Searches:
    total: int = 0  # every run of the search (inside complex packing's estimates or not)
    estimates: int = 0  # complex packing's estimates (each one search, reused by the pipeline)


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> Iterator[Searches]:
    counts = Searches()
    search = ScaleManagementPass.run
    estimate = ComplexPackingPass.estimate

    def counted_search(self: ScaleManagementPass, program: object) -> None:
        counts.total += 1
        search(self, program)  # type: ignore[arg-type]

    def counted_estimate(self: ComplexPackingPass, program: object) -> object:
        counts.estimates += 1
        return estimate(self, program)  # type: ignore[arg-type]

    monkeypatch.setattr(ScaleManagementPass, "run", counted_search)
    monkeypatch.setattr(ComplexPackingPass, "estimate", counted_estimate)
    yield counts


def _inputs(tmp_path: Path, n: int, m: int) -> list[str]:
    rng = np.random.default_rng(3)
    np.save(tmp_path / "y.npy", rng.integers(0, 2, n).astype(np.float64))
    np.save(tmp_path / "S.npy", rng.integers(0, 3, (n, m)).astype(np.float64))
    return ["--input", f"y={tmp_path / 'y.npy'}", "--input", f"S={tmp_path / 'S.npy'}"]


@pytest.mark.parametrize(
    ("path", "size", "candidates"),
    [(NUMERATORS, "N=100,M=10000", 2), (GRS, "N=100,M=1000", 1)],
    ids=["packing-compared", "nothing-to-pack"],
)
def test_compile_and_report_search_once_per_candidate(
    searches: Searches, tmp_path: Path, path: str, size: str, candidates: int
) -> None:
    assert main(["compile", path, "--size", size, "-o", str(tmp_path / "c"), "--no-build"]) == 0
    assert searches.total == candidates
    assert searches.estimates == (candidates if candidates > 1 else 0)
    assert main(["report", path, "--size", size, "--json"]) == 0
    assert searches.total == 2 * candidates


def test_ir_printing_does_not_compile_again(searches: Searches) -> None:
    args = ["report", NUMERATORS, "--size", "N=100,M=10000", "--print-ir-after-all"]
    assert main(args) == 0
    assert searches.total == 2


def test_complex_packing_is_still_chosen_inside_the_compilation() -> None:
    """The decision moved into the compilation and must keep its outcome: chisq_numerators at
    N=100, M=10000 packs its genotype rows (two slot sets per ciphertext)."""
    from compiler.analysis.sizes import Sizes
    from driver.pipeline import Options, compile_file

    comp = compile_file(NUMERATORS, Options(sizes=Sizes.parse("N=100,M=10000")))
    assert comp.manifest.complex_packed
    plain = compile_file(
        NUMERATORS, Options(sizes=Sizes.parse("N=100,M=10000"), complex_packing=False)
    )
    assert not plain.manifest.complex_packed
    assert comp.manifest.columns_per_ciphertext == 2 * plain.manifest.columns_per_ciphertext


def test_run_searches_once(searches: Searches, tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, 20, 10)
    assert main(["run", NUMERATORS, *inputs, "--sim", "--out", str(tmp_path / "sim")]) == 0
    assert searches.total == 1  # rows of 10 columns: no packing to compare
    assert main(["run", NUMERATORS, *inputs, "--out", str(tmp_path / "enc")]) == 0
    assert searches.total == 2  # the encrypted run: one compilation, emitted and run
    sim, enc = (np.load(tmp_path / d / "chi2_den.npy") for d in ("sim", "enc"))
    np.testing.assert_allclose(enc, sim, rtol=1e-3)


def test_gwas_searches_once_and_a_cache_hit_not_at_all(
    searches: Searches, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(ROOT / "tests" / "gwas"))
    from gwas_fixtures import simulate_plink_cohort

    cohort = simulate_plink_cohort(tmp_path / "cohort", 20, 20, 30, 2, 0.0, 5)
    monkeypatch.setenv("HEC_THREADS", "1")
    args = ["gwas", "chisq", "--bfile", str(cohort.prefix), "--no-progress", "--no-plots"]
    args += ["--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--out", str(tmp_path / "cold")]) == 0
    assert searches.total == 1
    assert main([*args, "--out", str(tmp_path / "warm")]) == 0
    assert searches.total == 1, "a cache hit must not run the compiler"
    cold, warm = ((tmp_path / f"{r}.assoc").read_text() for r in ("cold", "warm"))
    assert cold.splitlines()[0] == warm.splitlines()[0]


def test_scheme_auto_searches_once_per_scheme(
    searches: Searches, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--scheme auto` compiles once per scheme: BFV's parameter search once, CKKS's once per
    packing candidate (two here: packing is weighed)."""
    from passes.bfv_parameters import BfvParametersPass

    bfv_searches = []
    search = BfvParametersPass.apply

    def counted(self: BfvParametersPass, ctx: object, module: object) -> None:
        bfv_searches.append(1)
        search(self, ctx, module)  # type: ignore[arg-type]

    monkeypatch.setattr(BfvParametersPass, "apply", counted)
    args = ["report", NUMERATORS, "--size", "N=100,M=10000", "--scheme", "auto", "--json"]
    assert main(args) == 0
    assert (len(bfv_searches), searches.total) == (1, 2)
