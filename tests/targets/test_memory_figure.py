"""The report's server memory figure against the compute role's measured peak (issue 18).

The report used to say the chi-square server holds every array at once (5.6 GB at N = 5000);
the runtime streams the rows and peaks at a few MiB. The figure is now the streaming
schedule's (compiler/analysis/streaming.py): keys, accumulators, one chunk of rows, global
values and the runtime's baseline. This test runs the generated program and requires the
figure within 30% of the compute role's peak resident set: at production size (slow tier:
N = 5000, M = 16384, the acceptance case) and at a small size in the fast tier.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, report_of
from driver.roles import RoleSequence
from driver.run import build_cpp
from tests.targets.chisq_roles import CHISQ, ROOT, encrypted_chisq


def _measure(tmp_path: Path, n: int, m: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    comp = compile_file(CHISQ, Options(sizes=Sizes.parse(f"N={n},M={m}")))
    predicted = report_of(comp)["sizes"]["server_memory"]
    # The role runs with the threads the figure is for (the report's default: every core).
    monkeypatch.setenv("HEC_THREADS", str(predicted["threads"]))
    built = build_cpp(comp, CHISQ, tmp_path / "build")
    roles = encrypted_chisq(built.binary, tmp_path, n, m, seed=5)
    out = roles.compute(tmp_path / "ct", tmp_path / "res")
    return int(predicted["total"]), out.peak_rss_bytes


def test_memory_figure_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    predicted, measured = _measure(tmp_path, 400, 2048, monkeypatch)
    assert measured > 0
    assert abs(predicted / measured - 1) <= 0.3, (predicted, measured)


@pytest.mark.slow
def test_memory_figure_chisq_at_5000(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    predicted, measured = _measure(tmp_path, 5000, 16384, monkeypatch)
    assert abs(predicted / measured - 1) <= 0.3, (predicted, measured)


# Issue 29's calibration check found the figure short where the runtime held more than the
# schedule said: grs.hec's per-person scores (every row's ciphertext, held until the results
# are written, and a copy of them made to write them: 37 MiB estimated, 103 measured) and
# meancov_int's BFV dot (a partial sum per element beside the sum, and the HPS multiply's
# scratch: 35 against 55). The figure now counts what the runtime holds, and the runtime no
# longer copies its results or keeps the partials when every thread has its own element.
EXAMPLES = [
    ("stats/grs.hec", "ckks", {"N": 128, "M": 64}),
    ("stats/meancov_int.hec", "bfv", {"N": 40, "D": 16}),
]


@pytest.mark.parametrize(("name", "scheme", "sizes"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_memory_figure_examples(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    scheme: str,
    sizes: dict[str, int],
) -> None:
    from targets.sim.data import random_inputs

    source = ROOT / "examples" / name
    comp = compile_file(source, Options(scheme=scheme, sizes=Sizes.of(sizes), flooding=False))  # type: ignore[arg-type]
    predicted = report_of(comp)["sizes"]["server_memory"]
    monkeypatch.setenv("HEC_THREADS", str(predicted["threads"]))
    built = build_cpp(comp, source, tmp_path / "build")
    program = comp.bfv_program if scheme == "bfv" else comp.program
    data = {}
    for input_name, value in random_inputs(program, sizes, seed=3).items():
        data[input_name] = tmp_path / f"{input_name}.npy"
        np.save(data[input_name], np.asarray(value))
    roles = RoleSequence(built.binary, tmp_path, signed=False)
    roles.keygen(stream_rows=sizes["N"])
    roles.encrypt(data, tmp_path / "ct")
    measured = roles.compute(tmp_path / "ct", tmp_path / "res").peak_rss_bytes
    assert abs(predicted["total"] / measured - 1) <= 0.3, (predicted, measured)
