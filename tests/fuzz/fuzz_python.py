"""atheris harnesses (coverage-guided fuzzing of Python code) for hec's front end and input
readers: the language (parser and checker), PLINK .bim/.fam/.bed filesets, phenotype and
covariate files, and the .npy reader of `hec run`. Each may raise `UserError` (a message for
the user) on any input; every other exception is a finding.

Run: `python tests/fuzz/fuzz_python.py TARGET [libFuzzer flags] [CORPUS_DIR ...]` with TARGET
one of frontend, plink, pheno, npy (scripts/fuzz runs all four from tests/fuzz/corpus/).
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path
from typing import Any

import atheris  # pyright: ignore[reportMissingTypeStubs]
import numpy as np

# Only the code the chosen target exercises is instrumented (atheris adds a callback to every
# branch of an instrumented module; numpy, scipy, xdsl and lark stay uninstrumented, and so do
# hec's packages the target never runs): instrumenting every hec package made each execution
# several times slower for no finding of ours. The target is known before the imports.
_TARGET = sys.argv[1] if len(sys.argv) >= 2 else ""
_INSTRUMENTED = {
    "frontend": ["dsl"],
    "plink": ["gwas"],
    "pheno": ["gwas"],
    "npy": ["driver.run"],
}.get(_TARGET, ["compiler", "dsl", "gwas", "hec", "driver"])
with atheris.instrument_imports(include=_INSTRUMENTED):  # pyright: ignore[reportAttributeAccessIssue]
    from compiler.errors import UserError
    from driver.run import load_npy
    from dsl.checker import check
    from dsl.parser import parse_program
    from gwas.plink import open_fileset, read_pheno

# Scratch files in memory (tmpfs) where there is one: every execution writes its input to a
# file, and on a busy disk each open cost milliseconds.
_SHM = Path("/dev/shm")
SCRATCH = Path(tempfile.mkdtemp(prefix="hec-atheris-", dir=_SHM if _SHM.is_dir() else None))


def frontend(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    try:
        check(parse_program(text, "fuzz.hec"))
    except UserError:
        pass
    except RecursionError:
        pass  # nesting deeper than Python's stack: refused by the interpreter, not a crash


def _fileset(fdp: Any) -> str:
    prefix = SCRATCH / "f"
    for ext in (".bim", ".fam", ".bed"):
        Path(f"{prefix}{ext}").write_bytes(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 400)))
    return str(prefix)


def plink(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)  # pyright: ignore[reportAttributeAccessIssue]
    try:
        fileset = open_fileset(_fileset(fdp))
        if fileset.n_variants:
            fileset.read_block(0, min(2, fileset.n_variants))
    except UserError:
        pass


VALID_FAM = "f1 i1 0 0 1 2\nf2 i2 0 0 2 1\nf3 i3 f1 0 1 -9\n"
VALID_BIM = "1 rs1 0 100 A G\n1 rs2 0 200 C T\n"


def _pheno_fileset() -> str:
    """The valid fileset every pheno execution reads against, written once."""
    prefix = SCRATCH / "p"
    Path(f"{prefix}.fam").write_text(VALID_FAM)
    Path(f"{prefix}.bim").write_text(VALID_BIM)
    Path(f"{prefix}.bed").write_bytes(bytes([0x6C, 0x1B, 0x01, 0, 0]))
    return str(prefix)


_PHENO_PREFIX = _pheno_fileset()


def pheno(data: bytes) -> None:
    path = SCRATCH / "pheno.txt"
    path.write_bytes(data)
    with contextlib.suppress(UserError):
        read_pheno(path, open_fileset(_PHENO_PREFIX))


def npy(data: bytes) -> None:
    path = SCRATCH / "x.npy"
    path.write_bytes(data)
    with contextlib.suppress(UserError):
        load_npy("x", path)


TARGETS = {"frontend": frontend, "plink": plink, "pheno": pheno, "npy": npy}


def seeds(root: Path) -> None:
    """Write the seed corpora (committed under tests/fuzz/corpus/)."""
    repo = Path(__file__).resolve().parents[2]
    (root / "frontend").mkdir(parents=True, exist_ok=True)
    for src in sorted((repo / "examples").rglob("*.hec")):
        (root / "frontend" / src.name).write_bytes(src.read_bytes())
    (root / "plink").mkdir(parents=True, exist_ok=True)
    bim, fam, bed = VALID_BIM.encode(), VALID_FAM.encode(), bytes([0x6C, 0x1B, 0x01, 0, 0])
    # FuzzedDataProvider.ConsumeIntInRange(0, 400) takes 2 bytes, big-endian, from the END.
    blob = bim + fam + bed + len(bed).to_bytes(2, "big") + len(fam).to_bytes(2, "big")
    (root / "plink" / "valid").write_bytes(blob + len(bim).to_bytes(2, "big"))
    (root / "pheno").mkdir(parents=True, exist_ok=True)
    (root / "pheno" / "valid").write_text("FID IID pheno\nf1 i1 2\nf2 i2 1\nf3 i3 -9\n")
    (root / "npy").mkdir(parents=True, exist_ok=True)
    for name, value in {
        "f8": np.arange(6.0).reshape(2, 3),
        "u1": np.array([0, 1, 2], "u1"),
    }.items():
        buf = io.BytesIO()
        np.save(buf, value)
        (root / "npy" / name).write_bytes(buf.getvalue())


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "--seeds":
        seeds(Path(sys.argv[2]))
        return
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(TARGETS)}}} [libFuzzer flags] [CORPUS...]")
    target = TARGETS[sys.argv[1]]
    atheris.Setup([sys.argv[0], *sys.argv[2:]], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
