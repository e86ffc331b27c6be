"""A built chi-square program (examples/gwas/chisq.hec) keyed and encrypted on random data,
for tests that run its compute role (the memory figure, the stream split)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from driver.roles import RoleSequence

ROOT = Path(__file__).resolve().parents[2]
CHISQ = ROOT / "examples" / "gwas" / "chisq.hec"


def encrypted_chisq(binary: Path, root: Path, n: int, m: int, seed: int) -> RoleSequence:
    """Keygen (one unsigned data owner holding the n rows) and encrypt of random phenotypes
    and genotypes into root / "ct"; returns the role sequence, ready for compute."""
    rng = np.random.default_rng(seed)
    np.save(root / "y.npy", rng.integers(0, 2, n).astype(np.int8))
    np.save(root / "S.npy", rng.binomial(2, 0.3, size=(n, m)).astype(np.int8))
    roles = RoleSequence(binary, root, signed=False)
    roles.keygen(stream_rows=n)
    roles.encrypt({"y": root / "y.npy", "S": root / "S.npy"}, root / "ct")
    return roles
