"""Helpers of the reliability tests (issue 25): running the chi-square program's roles the way
two data owners, a server and a coordinator would, each party with its own Ed25519 signing
key, and the plaintext reference."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dsl.checker import check
from dsl.parser import parse_file
from dsl.reference import evaluate

ROOT = Path(__file__).resolve().parents[2]
N, M = 40, 10
HALF = N // 2


def role(
    binary: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HEC_QUIET": "1", **(env or {})},
    )


def ok(binary: Path, *args: str) -> str:
    done = role(binary, *args)
    assert done.returncode == 0, done.stderr
    return done.stderr


def refused(binary: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """The role must fail with exit 1 and a one-line message."""
    done = role(binary, *args, env=env)
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


@dataclass
class Run:
    """One run: keys (KEYDIR), the parties' signing keys, and each owner's half of the data."""

    binary: Path
    base: Path
    keys: Path
    sign: dict[str, Path]
    y: np.ndarray
    S: np.ndarray

    def owner_files(self, owner: str) -> list[str]:
        """--input arguments of owner A (rows 0:HALF) or B (rows HALF:N)."""
        rows = slice(0, HALF) if owner == "A" else slice(HALF, N)
        d = self.base / f"in-{owner}"
        d.mkdir(exist_ok=True)
        np.save(d / "y.npy", self.y[rows])
        np.save(d / "S.npy", self.S[rows].astype(np.uint8))
        return ["--input", f"y={d / 'y.npy'}", "--input", f"S={d / 'S.npy'}"]

    def encrypt(self, owner: str, out: Path, *extra: str) -> None:
        ok(self.binary, "encrypt", "--pk", str(self.keys / "public"), "--owner", owner,
           "--sign", str(self.sign[owner]), *self.owner_files(owner), "--out", str(out),
           *extra)  # fmt: skip

    def compute_args(self, ct: Path, res: Path) -> list[str]:
        return ["compute", "--eval", str(self.keys / "eval"), "--sign", str(self.sign["server"]),
                "--in", str(ct), "--out", str(res)]  # fmt: skip

    def decrypt_args(self, res: Path, dec: Path, *, flooding: bool = False) -> list[str]:
        """Unflooded by default: these tests compare values with the reference
        (test_flooding.py decrypts with flooding)."""
        args = ["decrypt", "--sk", str(self.keys / "secret"), "--in", str(res), "--out", str(dec)]
        return args if flooding else [*args, "--no-flooding"]


def new_run(binary: Path, base: Path, seed: int = 1) -> Run:
    base.mkdir(parents=True)
    sign = {}
    for party in ("A", "B", "server"):
        sign[party] = base / f"{party}.sign"
        ok(binary, "signkey", "--out", str(sign[party]))
    keys = base / "keys"
    ok(binary, "keygen", "--out", str(keys), "--owner", f"A=0:{HALF}", "--owner",
       f"B={HALF}:{N}", "--owner-key", f"A={sign['A']}.pub", "--owner-key",
       f"B={sign['B']}.pub", "--server-key", f"{sign['server']}.pub")  # fmt: skip
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, N).astype(np.float64)
    S = rng.integers(0, 3, (N, M)).astype(np.float64)
    return Run(binary, base, keys, sign, y, S)


def reference(y: np.ndarray, S: np.ndarray) -> dict[str, np.ndarray]:
    """The revealed values in plaintext (the program's own reference semantics)."""
    checked = check(parse_file(str(ROOT / "examples/gwas/chisq_numerators.hec")))
    result = evaluate(checked, {"N": len(y), "M": S.shape[1]}, {"y": y, "S": S})
    return {k: np.asarray(v, dtype=np.float64) for k, v in result.revealed.items()}
