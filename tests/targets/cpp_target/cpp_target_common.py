"""Shared helpers of the C++-target tests: the examples at small sizes, random inputs saved as
.npy files, and the plaintext reference on them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from compiler.analysis.sizes import Sizes
from driver.pipeline import Options, compile_file, sizes_for_run
from dsl.checker import check
from dsl.parser import parse_file
from dsl.reference import ReferenceResult, evaluate
from targets.sim.data import random_inputs

ROOT = Path(__file__).resolve().parents[3]

# (example, sizes) small enough for the fast tier; lra needs a ring of 2^16 even at small sizes
# (tests/targets/test_lra.py runs it in the simulator), so it is not here.
EXAMPLES = [
    ("examples/gwas/chisq_numerators.hec", "N=20,M=10"),
    ("examples/stats/meancov.hec", "N=20,D=3"),
    ("examples/stats/grs.hec", "N=6,M=10"),
]


def example_inputs(
    path: str, sizes: str, directory: Path, seed: int = 3
) -> tuple[dict[str, Path], ReferenceResult, dict[str, npt.NDArray[np.float64]]]:
    """Random inputs within the declared domains, saved as `directory/NAME.npy` (genotypes as
    uint8, the rest float64), and the plaintext reference on them."""
    comp = compile_file(ROOT / path, Options(sizes=Sizes.parse(sizes)))
    run_sizes = sizes_for_run(comp)
    data = random_inputs(comp.program, run_sizes, seed=seed)
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    for name, value in data.items():
        target = directory / f"{name}.npy"
        is_count = np.all(value == np.round(value)) and value.min() >= 0 and value.max() <= 2
        np.save(target, value.astype(np.uint8) if is_count else value)
        files[name] = target
    reference = evaluate(check(parse_file(str(ROOT / path))), run_sizes, data)
    return files, reference, data


def rel_error(got: npt.ArrayLike, want: npt.ArrayLike) -> float:
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    scale = np.max(np.abs(w)) or 1.0
    return float(np.max(np.abs(g - w)) / scale)
