"""Fixtures of the reliability tests (issue 25): the chi-square program built once at a small
size (helpers in reliability_common.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options
from driver.run import Built, compile_cpp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reliability_common import ROOT, M, N


@pytest.fixture(scope="session")
def chisq(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return compile_cpp(
        ROOT / "examples/gwas/chisq_numerators.hec",
        tmp_path_factory.mktemp("chisq") / "prog",
        Options(sizes=Sizes.parse(f"N={N},M={M}")),
    )
