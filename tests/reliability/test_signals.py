"""Regression tests of issue 25's interruption findings: SIGTERM or SIGKILL of `hec gwas
chisq` left `keys/secret`, the plaintext genotype and phenotype .npy files and the ciphertexts
in TMPDIR, the encrypting child kept running as an orphan, Ctrl-C printed a traceback, and a
SIGTERM in the write phase left a partial `.assoc.tmp-PID`. Here `hec gwas chisq` is
interrupted at five points of its run (each point detected from the files it creates), with
SIGINT, SIGTERM and SIGHUP: each time it exits 128 + the signal with one line on stderr, no
role is left running, and nothing of the run is left on disk."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "gwas"))
from gwas_fixtures import PlinkCohort, simulate_plink_cohort  # noqa: E402


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> PlinkCohort:
    return simulate_plink_cohort(tmp_path_factory.mktemp("cohort"), 150, 150, 1900, 100, 0.0, 5)


@pytest.fixture(scope="module")
def warm_cache(cohort: PlinkCohort, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding the compiled program (so that the interrupted runs start at once),
    filled by one complete run, which must leave its scratch space empty too."""
    base = tmp_path_factory.mktemp("warm")
    cache, scratch = base / "cache", base / "tmp"
    scratch.mkdir()
    proc = _start(cohort, base / "out", cache, scratch)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert list(scratch.iterdir()) == []
    return cache


def _start(cohort: PlinkCohort, out: Path, cache: Path, scratch: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(scratch), "HEC_THREADS": "1"}
    env.pop("HEC_SCRATCH", None)
    return subprocess.Popen(
        [sys.executable, "-m", "hec", "gwas", "chisq", "--bfile", str(cohort.prefix),
         "--out", str(out), "--cache-dir", str(cache), "--no-progress", "--no-plots"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
    )  # fmt: skip


def _exists(scratch: Path, pattern: str) -> bool:
    return any(True for _ in scratch.glob(pattern))


POINTS: dict[str, Callable[[Path, Path], bool]] = {
    # the coordinator's keys exist
    "keygen": lambda s, o: _exists(s, "hec-gwas-*/keys/secret"),
    # the plaintext genotypes handed to the encrypting role
    "plaintext": lambda s, o: _exists(s, "hec-gwas-*/block*/in/*.npy"),
    # ciphertexts being written
    "encrypt": lambda s, o: _exists(s, "hec-gwas-*/block*/ct/*.rows-*"),
    # the server's results being written
    "compute": lambda s, o: _exists(s, "hec-gwas-*/block*/res"),
    # decrypted values
    "decrypt": lambda s, o: _exists(s, "hec-gwas-*/block*/dec"),
}
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTERM, signal.SIGINT]


def _roles_running(binary_dir: Path) -> list[int]:
    """Processes whose executable lies in the program cache (the generated program's roles)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            exe = str((proc / "exe").readlink())
        except OSError:
            continue
        if exe.startswith(str(binary_dir)):
            pids.append(int(proc.name))
    return pids


@pytest.mark.parametrize(
    ("point", "signum"), list(zip(POINTS, SIGNALS, strict=True)), ids=list(POINTS)
)
def test_interrupted_gwas_leaves_nothing(
    cohort: PlinkCohort, warm_cache: Path, tmp_path: Path, point: str, signum: int
) -> None:
    scratch, out_dir = tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    out_dir.mkdir()
    proc = _start(cohort, out_dir / "run", warm_cache, scratch)
    deadline = time.monotonic() + 300
    reached = False
    while proc.poll() is None and time.monotonic() < deadline:
        if POINTS[point](scratch, out_dir):
            proc.send_signal(signum)
            reached = True
            break
        time.sleep(0.0005)
    _, err = proc.communicate(timeout=120)
    assert reached, f"the run ended before reaching {point}: {err}"
    assert proc.returncode == 128 + signum, (proc.returncode, err)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("hec: interrupted by"), err
    assert "Traceback" not in err
    assert _roles_running(warm_cache) == []
    left = [str(p.relative_to(scratch)) for p in scratch.rglob("*")]
    assert left == [], f"left behind in TMPDIR after {point}: {left[:10]}"
    assert [p.name for p in out_dir.iterdir()] == []


class _SignallingWriter(io.BufferedWriter):
    """A file whose `__class__` lookup (made by `isinstance` checks) sends SIGTERM to this
    process: the signal's handler then runs inside that check, deterministically."""

    @property
    def __class__(self) -> type:  # pyright: ignore[reportIncompatibleMethodOverride]
        os.kill(os.getpid(), signal.SIGTERM)
        return io.BufferedWriter


def test_signal_inside_numpy_tofile_is_an_interruption(tmp_path: Path) -> None:
    """Regression (flaky in CI: test_interrupted_gwas_leaves_nothing[plaintext] ended with
    "TypeError: expected str, bytes or os.PathLike object, not BufferedWriter" and a traceback
    instead of exit 143 and one line). `np.save` writes through `ndarray.tofile`, which asks
    `isinstance(f, os.PathLike)`: an ABC check that runs Python code, where a signal's handler
    can raise; numpy takes the failed check (-1) for "true" and calls `os.fspath(f)`, whose
    TypeError replaces the handler's exception. The file here makes the signal arrive inside
    that check every time; the run must still end as `Interrupted`."""
    from driver.interrupt import Interrupted, handling_signals

    writer = _SignallingWriter(io.FileIO(tmp_path / "x.npy", "wb"))
    with pytest.raises(Interrupted) as caught, handling_signals(), writer:
        np.zeros(16, dtype=np.uint8).tofile(writer)
    assert caught.value.signum == signal.SIGTERM
    # numpy's TypeError is what came out of tofile: the mechanism is still the one above
    assert isinstance(caught.value.__cause__, TypeError), caught.value.__cause__


def test_exception_replacing_the_interruption_still_interrupts() -> None:
    """The mechanism above, deterministically: code that turns the handler's exception into
    another one (as numpy's does) still ends the block with `Interrupted`, the other exception
    chained as its cause; without a signal, exceptions pass through unchanged."""
    from driver.interrupt import Interrupted, handling_signals

    with pytest.raises(Interrupted) as caught, handling_signals():
        try:
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(5)  # the handler raises before this ends
        except Interrupted as err:
            raise TypeError("expected str, bytes or os.PathLike object") from err
    assert caught.value.signum == signal.SIGHUP
    assert isinstance(caught.value.__cause__, TypeError)
    with pytest.raises(TypeError), handling_signals():
        raise TypeError("not an interruption")


def test_interrupted_run_writes_no_failure_log(tmp_path: Path) -> None:
    """Regression (1 of 30 interruptions at "plaintext" left PREFIX.log): the numpy TypeError
    that replaced the interruption is an `Exception`, so `hec gwas`'s failure handler wrote the
    failure log before the exception reached `handling_signals`. Once a signal has arrived, no
    failure log is written."""
    import datetime

    from driver.interrupt import Interrupted, handling_signals
    from gwas.chisq import write_failure_log

    log = tmp_path / "run.log"
    started = datetime.datetime.now(datetime.UTC)
    with pytest.raises(Interrupted), handling_signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises before this ends
        except Interrupted as err:
            replaced = TypeError("expected str, bytes or os.PathLike object, not BufferedWriter")
            write_failure_log(log, "gwas chisq", "hec gwas chisq", started, [], replaced)
            raise replaced from err
    assert list(tmp_path.iterdir()) == []
    write_failure_log(log, "gwas chisq", "hec gwas chisq", started, [], ValueError("no signal"))
    assert "error: no signal" in log.read_text()


def test_sigkilled_gwas_leaves_no_role_and_its_scratch_is_swept(
    cohort: PlinkCohort, warm_cache: Path, tmp_path: Path
) -> None:
    """SIGKILL cannot be handled: killed while the encrypting role runs, `hec gwas` takes its
    roles with it (PR_SET_PDEATHSIG: was an orphan that kept running) and leaves its 0700
    scratch directory, which the next run removes before it starts (`sweep_stale`, called by
    every `scratch_directory`)."""
    from driver.interrupt import sweep_stale

    scratch, out_dir = tmp_path / "tmp", tmp_path / "out"
    scratch.mkdir()
    out_dir.mkdir()
    proc = _start(cohort, out_dir / "run", warm_cache, scratch)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if POINTS["encrypt"](scratch, out_dir) and _roles_running(warm_cache):
            proc.kill()
            break
        time.sleep(0.0005)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    for _ in range(100):  # the kernel kills the roles as hec dies; give them time to exit
        if not _roles_running(warm_cache):
            break
        time.sleep(0.05)
    assert _roles_running(warm_cache) == []
    left = list(scratch.iterdir())
    assert len(left) == 1 and left[0].name.startswith(f"hec-gwas-{proc.pid}-")
    assert left[0].stat().st_mode & 0o777 == 0o700
    assert sweep_stale("hec-gwas-", str(scratch)) == left
    assert list(scratch.iterdir()) == []


def test_interruption_swallowed_in_an_at_fork_hook_prints_nothing() -> None:
    """Regression (CI, stop 38: test_interrupted_gwas_leaves_nothing[compute] printed 8 lines):
    SIGTERM arrived while logging's at-fork hook `_releaseLock` ran around a subprocess start;
    the handler's `Interrupted` there cannot propagate, and Python printed it as "Exception
    ignored in ... Traceback" before the run ended as interrupted. A destructor is such a place
    too, deterministically: the interruption is recorded and raised by `check`, silently. In a
    child Python (pytest replaces the hook that prints)."""
    code = textwrap.dedent(
        """
        import os, signal, sys
        from driver.interrupt import Interrupted, check, handling_signals

        class SignalsWhenCollected:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGTERM)

        try:
            with handling_signals():
                SignalsWhenCollected()  # collected at once: the handler raises in __del__
                check()
        except Interrupted as e:
            sys.exit(e.exit_code)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 128 + signal.SIGTERM, (done.returncode, done.stderr)
    assert done.stderr == "", done.stderr
