"""Regression tests of issue 25's "inputs that cannot crash": bad options, unwritable or full
output directories and bad input files are refused before the first encryption, in one line
naming the option or file (they used to end in tracebacks after the whole encrypted run, or
were silently ignored); programs beyond the checker's limits get a located error instead of
an InternalError or xDSL VerifyException."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hec.cli import main

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gwas"))
from gwas_fixtures import PlinkCohort, simulate_plink_cohort  # noqa: E402


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> PlinkCohort:
    return simulate_plink_cohort(tmp_path_factory.mktemp("c"), 20, 20, 18, 2, 0.0, 3)


def _hec(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hec", *args], capture_output=True, text=True, check=False,
        cwd=ROOT, env={**os.environ, **(env or {})},
    )  # fmt: skip


def _one_line_refusal(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode in (1, 2), (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    text = done.stderr.strip()
    for needle in needles:
        assert needle in text, text
    return text


@pytest.mark.parametrize("bits", ["nan", "0", "-3", "inf", "x"])
def test_bad_precision_bits_are_refused(cohort: PlinkCohort, tmp_path: Path, bits: str) -> None:
    done = _hec("gwas", "chisq", "--bfile", str(cohort.prefix), "--out", str(tmp_path / "o"),
                "--precision-bits", bits)  # fmt: skip
    assert done.returncode == 2
    _one_line_refusal(done, "--precision-bits", bits)
    assert list(tmp_path.iterdir()) == []


def test_negative_threads_are_refused(cohort: PlinkCohort, tmp_path: Path) -> None:
    done = _hec("gwas", "chisq", "--bfile", str(cohort.prefix), "--out", str(tmp_path / "o"),
                "--threads", "-3")  # fmt: skip
    _one_line_refusal(done, "--threads", "-3")


def test_duplicate_size_is_refused(tmp_path: Path) -> None:
    done = _hec("report", str(ROOT / "examples/gwas/chisq.hec"), "--size", "N=10,N=20")
    _one_line_refusal(done, "size N is given twice")


def test_precision_bits_of_hec_compile(tmp_path: Path) -> None:
    done = _hec("report", str(ROOT / "examples/gwas/chisq.hec"), "--precision-bits", "nan")
    _one_line_refusal(done, "--precision-bits")


@pytest.mark.parametrize(
    ("source", "where", "what"),
    [
        ("param N <= 1e38\ninput x: secret[N] in [0, 1]\nreveal s = sum(x)\n", ":1:12:", "1e+38"),
        (
            "param N <= 100\ninput x: secret[N] in [0, 1]\nreveal s = sum(x)^64\n",
            ":3:19:",
            "at most 63",
        ),
    ],
)
def test_programs_beyond_the_limits_get_located_errors(
    tmp_path: Path, source: str, where: str, what: str
) -> None:
    path = tmp_path / "p.hec"
    path.write_text(source)
    done = _hec("report", str(path))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert where in done.stderr and what in done.stderr


def test_read_only_output_directory_is_refused_before_work(
    cohort: PlinkCohort, tmp_path: Path
) -> None:
    """Was: a traceback after the whole encrypted run."""
    out = tmp_path / "ro"
    out.mkdir()
    out.chmod(0o500)
    try:
        if os.access(out, os.W_OK) and os.geteuid() == 0:
            # root ignores mode bits: make the directory unwritable another way
            subprocess.run(["chattr", "+i", str(out)], check=False, capture_output=True)
        probe = out / ".probe"
        try:
            probe.write_text("")
            probe.unlink()
            pytest.skip("cannot make a read-only directory here (root without chattr)")
        except OSError:
            pass
        done = _hec("gwas", "chisq", "--bfile", str(cohort.prefix), "--out", str(out / "r"),
                    "--no-progress", env={"HEC_CACHE_DIR": str(tmp_path / "cache")})  # fmt: skip
        _one_line_refusal(done, "--out", "cannot write in")
        assert not (tmp_path / "cache").exists(), "refused only after compiling"
    finally:
        subprocess.run(["chattr", "-i", str(out)], check=False, capture_output=True)
        out.chmod(0o700)


def test_full_output_directory_is_refused_before_work(cohort: PlinkCohort, tmp_path: Path) -> None:
    """A size-limited file system (tmpfs of 64 KiB) that cannot hold the outputs."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
        capture_output=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        (mnt / "filler").write_bytes(b"\0" * 60 * 1024)
        done = _hec("gwas", "chisq", "--bfile", str(cohort.prefix), "--out", str(mnt / "r"),
                    "--no-progress", env={"HEC_CACHE_DIR": str(tmp_path / "cache")})  # fmt: skip
        _one_line_refusal(done, "MiB free", "the outputs need")
        assert not (tmp_path / "cache").exists()
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_non_numeric_bp_is_refused_before_work(cohort: PlinkCohort, tmp_path: Path) -> None:
    """Was: a traceback after the encrypted run, or with --no-plots written into .assoc."""
    prefix = tmp_path / "bad"
    for ext in (".bed", ".fam"):
        shutil.copy(str(cohort.prefix) + ext, str(prefix) + ext)
    lines = Path(str(cohort.prefix) + ".bim").read_text().splitlines()
    fields = lines[3].split()
    fields[3] = "12x4"
    lines[3] = "\t".join(fields)
    Path(str(prefix) + ".bim").write_text("\n".join(lines) + "\n")
    done = _hec("gwas", "chisq", "--bfile", str(prefix), "--out", str(tmp_path / "r"),
                "--no-plots", "--no-progress",
                env={"HEC_CACHE_DIR": str(tmp_path / "cache")})  # fmt: skip
    _one_line_refusal(done, ".bim", fields[1], "'12x4'")
    assert not (tmp_path / "cache").exists()
    # Only the failure log of the run is left (no .assoc, no plot).
    assert [p.name for p in tmp_path.glob("r*")] in ([], ["r.log"])


def test_duplicate_snp_ids_are_reported(cohort: PlinkCohort, tmp_path: Path) -> None:
    prefix = tmp_path / "dup"
    for ext in (".bed", ".fam"):
        shutil.copy(str(cohort.prefix) + ext, str(prefix) + ext)
    lines = Path(str(cohort.prefix) + ".bim").read_text().splitlines()
    first = lines[0].split()[1]
    fields = lines[5].split()
    fields[1] = first
    lines[5] = "\t".join(fields)
    Path(str(prefix) + ".bim").write_text("\n".join(lines) + "\n")
    code = main(["gwas", "chisq", "--bfile", str(prefix), "--out", str(tmp_path / "r"),
                 "--backend", "sim", "--no-plots", "--no-progress",
                 "--cache-dir", str(tmp_path / "cache")])  # fmt: skip
    assert code == 0
    log = (tmp_path / "r.log").read_text()
    assert f"1 SNP ID(s) appear more than once ({first})" in log


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlinkCohort, Path]:
    """A cohort whose run writes a 32 KiB secret key, a 64 KiB public key, 120 KiB of
    plaintext genotypes and MiBs of ciphertexts, and a cache holding its program (filled by
    one unlimited run, so that the limited runs below fail in the run, not in the
    C++ build)."""
    base = tmp_path_factory.mktemp("fsize")
    cohort = simulate_plink_cohort(base / "c", 150, 150, 400, 10, 0.0, 4)
    done = _hec("gwas", "chisq", "--bfile", str(cohort.prefix), "--out", str(base / "w"),
                "--no-progress", "--no-plots", "--cache-dir", str(base / "cache"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return cohort, base / "cache"


@pytest.mark.parametrize(
    ("limit", "failing"),
    [(20_000, "/keys/secret"), (80_000, "/in/S.npy"), (2_000_000, ".cts")],
    ids=["keys", "plaintext", "ciphertexts"],
)
def test_file_size_limit_reached_during_the_run(
    warm: tuple[PlinkCohort, Path], tmp_path: Path, limit: int, failing: str
) -> None:
    """A disk that fills during the run, simulated without root by RLIMIT_FSIZE (every write
    past `limit` bytes fails with EFBIG, in hec and in the roles it starts): the run fails with
    exit 1 and one line naming the file it could not write (was: a numpy traceback for the
    plaintext inputs, and a role killed by SIGXFSZ with an empty message), and leaves nothing
    in TMPDIR and no output but the failure log. The limits hit the secret key (keygen), the
    plaintext genotypes (hec itself) or the ciphertexts (the encrypting role)."""
    cohort, cache = warm
    scratch, out = tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    out.mkdir()

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "hec", "gwas", "chisq", "--bfile", str(cohort.prefix),
         "--out", str(out / "r"), "--no-progress", "--no-plots", "--cache-dir", str(cache)],
        capture_output=True, text=True, check=False, cwd=ROOT, preexec_fn=limited,
        env={**os.environ, "TMPDIR": str(scratch), "HEC_THREADS": "1"},
    )  # fmt: skip
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "File too large" in lines[0] and str(scratch) in lines[0], lines[0]
    assert failing in lines[0], lines[0]
    assert [str(p.relative_to(scratch)) for p in scratch.rglob("*")] == []
    assert [p.name for p in out.iterdir()] in ([], ["r.log"])
