"""Interruption and child processes of `hec run` and `hec gwas` (issue 25).

A run keeps secrets in its scratch directory (the secret key, the plaintext inputs handed to
the encrypting role, ciphertexts). On SIGINT, SIGTERM or SIGHUP the handler installed by
`handling_signals` raises `Interrupted` in the main thread; every role started by `start_child`
is then stopped (its whole process group: SIGTERM, then SIGKILL after a grace period) before
the exception unwinds through the `with` blocks that remove the scratch directories. Each child
runs in its own process group (so a Ctrl-C on the terminal reaches only hec, which stops the
children in order) and asks the kernel to kill it if hec dies (PR_SET_PDEATHSIG), so no role
keeps running as an orphan. A scratch directory is created 0700 and named with hec's process
id; `sweep_stale` removes those of processes that no longer exist (left by a SIGKILL, which no
handler sees).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import IO

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_SECONDS = 3.0
_PR_SET_PDEATHSIG = 1
_SIG_IGN = 1  # the C library's SIG_IGN handler value


class Interrupted(BaseException):
    """A handled signal arrived; unwinds like KeyboardInterrupt (not caught by `except
    Exception`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_pending: list[int] = []  # the signal received, kept until it has been raised where it counts


def _raise(signum: int, _frame: FrameType | None) -> None:
    # Later signals during the clean-up are ignored: the clean-up must finish.
    for s in HANDLED:
        signal.signal(s, signal.SIG_IGN)
    _pending.append(signum)
    raise Interrupted(signum)


def interrupted() -> bool:
    """Whether a handled signal has arrived: code that handles `Exception`s (a failure log)
    asks, since a signal can come back as another exception (`handling_signals`)."""
    return bool(_pending)


def check() -> None:
    """Raise `Interrupted` if a signal arrived: the handler's own exception can be swallowed
    when it lands in code that ignores exceptions (an at-fork callback of `subprocess`, a
    destructor), so the places that start and wait for roles check again."""
    if _pending:
        raise Interrupted(_pending[0])


@contextlib.contextmanager
def handling_signals() -> Iterator[None]:
    """Turn SIGINT/SIGTERM/SIGHUP into `Interrupted` while the block runs (main thread only;
    elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in HANDLED}
    previous_hook = sys.unraisablehook
    _pending.clear()
    for s in HANDLED:
        signal.signal(s, _raise)
    sys.unraisablehook = _quiet_interruption
    try:
        yield
        check()  # a signal whose exception was swallowed still ends the run as interrupted
    except Interrupted:
        raise
    except BaseException as err:
        # Once a signal has arrived, whatever unwinds is the interruption: the handler's
        # exception can come back replaced by another one from C code that mishandles an
        # error raised in a callback. numpy's `ndarray.tofile` (under `np.save`) asks
        # `isinstance(f, os.PathLike)`, whose ABC check runs Python code, so the handler can
        # raise there; numpy takes the failed check (-1) for "true" and calls `os.fspath(f)`,
        # which raises "TypeError: expected str, bytes or os.PathLike object, not
        # BufferedWriter" in place of `Interrupted` (tests/reliability/test_signals.py).
        if _pending:
            raise Interrupted(_pending[0]) from err
        raise
    finally:
        _pending.clear()  # the interruption is the exception now unwinding
        for s, h in previous.items():
            signal.signal(s, h)
        sys.unraisablehook = previous_hook


def _quiet_interruption(unraisable: sys.UnraisableHookArgs) -> None:
    """The handler's exception swallowed where Python cannot raise (an at-fork callback such
    as logging's `_releaseLock` around a subprocess start, a destructor) is printed by Python
    as "Exception ignored in ... Traceback"; the interruption is recorded (`_pending`) and
    raised again by `check`, so it says nothing here. Anything else goes to Python's hook."""
    if isinstance(unraisable.exc_value, Interrupted):
        return
    sys.__unraisablehook__(unraisable)


def _child_setup() -> None:
    # In the child, before exec: die with the parent (even if it is SIGKILLed), and ignore
    # SIGXFSZ (subprocess has just restored its default action, which kills the role without
    # a word), so that a write beyond a file-size limit fails with EFBIG and the role names the
    # file it could not write, as it does for a full disk.
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        libc.signal(signal.SIGXFSZ, _SIG_IGN)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a child and everything in its process group, and reap it."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def start_child(
    args: Sequence[str],
    stdout: IO[bytes] | int | None,
    stderr: IO[bytes] | int | None,
    env: Mapping[str, str] | None,
) -> subprocess.Popen[bytes]:
    """Start a role in its own process group, dying with hec."""
    check()
    proc = subprocess.Popen(
        list(args),
        stdout=stdout,
        stderr=stderr,
        env=env,
        start_new_session=True,
        preexec_fn=_child_setup,  # only prctl: safe between fork and exec
    )
    try:
        check()
    except BaseException:
        stop(proc)
        raise
    return proc


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(prefix: str, where: str | None = None) -> list[Path]:
    """Remove scratch directories `<prefix><pid>-*` (in `where` or TMPDIR) whose process is
    gone: what a SIGKILLed run left. Returns the removed paths."""
    base = Path(where or tempfile.gettempdir())
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for d in base.glob(f"{prefix}*-*"):
            pid_text = d.name[len(prefix) :].split("-", 1)[0]
            if not pid_text.isdigit() or not d.is_dir() or d.stat().st_uid != os.getuid():
                continue
            if int(pid_text) != os.getpid() and not _pid_alive(int(pid_text)):
                shutil.rmtree(d, ignore_errors=True)
                removed.append(d)
    return removed


@contextlib.contextmanager
def scratch_directory(prefix: str, where: str | None = None) -> Iterator[Path]:
    """A 0700 scratch directory `<prefix><pid>-XXXX` removed when the block ends, however it
    ends (stale ones of dead runs are swept first)."""
    sweep_stale(prefix, where)
    path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=where))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
