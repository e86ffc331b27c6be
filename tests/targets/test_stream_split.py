"""The compute role decides per pass whether a chunk's reading and its arithmetic run over the
threads, from the chunks' measured times (runtime/program/arrays.h ChunkSplit; issue 29: the
chi-square compute took 0.108 s at 2 threads against 0.068 s at 1 when every chunk was split).
Whatever it decides, the results are those of one thread, bit for bit; its timing line says
how many chunks it split."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file
from driver.run import build_cpp
from tests.targets.chisq_roles import CHISQ, encrypted_chisq


def test_two_threads_give_one_threads_results_whatever_the_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    n, m = 200, 64
    comp = compile_file(CHISQ, Options(sizes=Sizes.parse(f"N={n},M={m}")))
    built = build_cpp(comp, CHISQ, tmp_path / "build")
    roles = encrypted_chisq(built.binary, tmp_path, n, m, seed=11)
    values, counts = {}, {}
    for threads in (1, 2):
        monkeypatch.setenv("HEC_THREADS", str(threads))
        out = roles.compute(tmp_path / "ct", tmp_path / f"res{threads}")
        found = re.search(r"chunks=(\d+) read_split=(\d+) arithmetic_split=(\d+)", out.stderr)
        assert found, out.stderr
        counts[threads] = tuple(int(x) for x in found.groups())
        values[threads] = roles.decrypt(tmp_path / f"res{threads}", tmp_path / f"dec{threads}",
                                        flooding=False)  # fmt: skip
    # One thread: 4 rows a chunk, nothing split. Two: 8 rows a chunk; the first chunk runs
    # split, and at least one trial chunk of each step.
    assert counts[1] == (n // 4, 0, 0)
    chunks, read_split, arithmetic_split = counts[2]
    assert chunks == n // 8 and read_split >= 2 and arithmetic_split >= 2
    assert values[1].keys() == values[2].keys()
    for name in values[1]:
        np.testing.assert_array_equal(values[1][name], values[2][name], err_msg=name)
