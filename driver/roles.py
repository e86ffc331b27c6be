"""The role sequence of a generated program, written once (issue 18: one driver).

A generated C++ program (targets/cpp) is run as four parties in order (DESIGN.md §9):

    keygen (coordinator) -> signkey (data owner, server) -> encrypt (each data owner)
        -> compute (server) -> decrypt (coordinator)

`hec run` (driver/run.py), `hec gwas` (gwas/backend.py) and the benchmarks (bench/) all run it
through `RoleSequence`, which fixes the one layout of a run's scratch directory (`keys/` from
keygen: `public`, `eval`, `secret`; `parties/`: the signing keys, 0700) and the one subprocess
wrapper, `run_role`: the role runs in its own process group (stopped with hec when it is
interrupted: driver/interrupt.py), its peak resident set is measured, its per-row progress is
passed on, and a failure becomes a `UserError` carrying the role's own message.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from compiler.errors import InternalError, UserError

Array = npt.NDArray[np.float64]
# (phase printed by the role, rows done, rows): a role's per-row progress.
RowProgress = Callable[[str, int, int], None]

_PEAK = re.compile(r"peak_rss_bytes=(\d+)")
_ROW_PROGRESS = re.compile(r"^\[([^\]]+)\] (\d+)/(\d+) ", re.M)


@dataclass(frozen=True)
class RoleOutput:
    """What a finished role left: its stderr (timing lines, messages), its stdout, and its peak
    resident set in bytes (the largest of the peak it prints and its sampled VmHWM)."""

    stderr: str
    stdout: str
    peak_rss_bytes: int


def _vm_hwm(pid: int) -> int:
    """Peak resident set (VmHWM) of a running process in bytes; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def run_role(
    binary: Path | None,
    *args: str,
    on_progress: RowProgress | None = None,
    wrap: Sequence[str] = (),
    poll_seconds: float = 0.005,
) -> RoleOutput:
    """Run one role of a generated program: `[*wrap, binary, *args]` (`wrap`: a measuring
    wrapper, e.g. a process that reports its child's kernel accounting on stdout). HEC_QUIET is
    set unless the caller set it (or progress is wanted). The peak resident set is the largest
    of the peak the role prints (`peak_rss_bytes=`) and its VmHWM sampled while it runs (the
    kernel's per-child maximum would also count the launching Python process's pages, which the
    child shares until exec). With `on_progress`, the role prints its per-row progress
    ("[phase] rows/N ...", at most once a second) and each line is passed on while it runs."""
    from driver.interrupt import check, start_child, stop

    if binary is None:
        raise InternalError("the generated program was not built")
    quiet = os.environ.get("HEC_QUIET", "0" if on_progress else "1")
    env = {**os.environ, "HEC_QUIET": quiet}
    peak = 0
    with tempfile.TemporaryFile() as err_file, tempfile.TemporaryFile() as out_file:
        proc = start_child([*wrap, str(binary), *args], out_file, err_file, env)
        read_at = 0
        polls = 0
        try:
            while True:
                try:
                    proc.wait(timeout=poll_seconds)
                    break
                except subprocess.TimeoutExpired:
                    peak = max(peak, _vm_hwm(proc.pid))
                check()
                polls += 1
                if on_progress is not None and polls % 40 == 0:  # about every 0.2 s
                    with open(err_file.fileno(), "rb", closefd=False) as fh:
                        fh.seek(read_at)
                        chunk = fh.read()
                    end = chunk.rfind(b"\n") + 1
                    read_at += end
                    for m in _ROW_PROGRESS.finditer(chunk[:end].decode(errors="replace")):
                        on_progress(m.group(1), int(m.group(2)), int(m.group(3)))
            check()
        except BaseException:
            stop(proc)
            raise
        err_file.seek(0)
        err = err_file.read().decode(errors="replace")
        out_file.seek(0)
        out = out_file.read().decode(errors="replace")
    if proc.returncode != 0:
        message = "\n".join(
            line for line in err.strip().splitlines() if not _ROW_PROGRESS.match(line)
        )
        if proc.returncode < 0:  # killed: say by what (it may have printed nothing)
            try:
                killed = f"killed by {signal.Signals(-proc.returncode).name}"
            except ValueError:
                killed = f"killed by signal {-proc.returncode}"
            message = f"{message} ({killed})" if message else killed
        role = " ".join(args[:3] if args[0] == "--residue" else args[:1])
        raise UserError(f"{binary.name} {role} failed: {message}")
    reported = [int(x) for x in _PEAK.findall(err)]
    return RoleOutput(err, out, max([peak, *reported]))


@contextmanager
def role_threads(threads: int) -> Iterator[None]:
    """HEC_THREADS for the roles run inside (0: leave the runtime's default)."""
    old = os.environ.get("HEC_THREADS")
    if threads > 0:
        os.environ["HEC_THREADS"] = str(threads)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HEC_THREADS", None)
        else:
            os.environ["HEC_THREADS"] = old


# How a sequence runs one role: (binary, arguments (the role's name first), progress callback).
# The default is `run_role`; gwas wraps it to time each role under its phase.
Runner = Callable[[Path, Sequence[str], RowProgress | None], RoleOutput]


def _default_runner(binary: Path, args: Sequence[str], progress: RowProgress | None) -> RoleOutput:
    return run_role(binary, *args, on_progress=progress)


def read_revealed(directory: Path) -> dict[str, Array]:
    """The decrypted values the decrypt role wrote: one `.npy` per revealed value."""
    return {f.stem: np.load(f) for f in sorted(directory.glob("*.npy"))}


class RoleSequence:
    """The roles of one generated program in a run's scratch directory `root`.

    Layout: `root/keys` (keygen's output: `public` for the data owners, `eval` for the server,
    `secret` for the coordinator) and, when `signed`, `root/parties` (0700: the data owner's
    and the server's signing keys, `owner.sign` and `server.sign`, made by `signkey`; keygen
    binds their public halves into the run's manifest and encrypt/compute sign what they
    write). Unsigned sequences (benchmarks that time the arithmetic alone) skip signkey.
    `residue`: for a BFV program over several plaintext moduli (a CRT), the residue
    computation every role of this sequence runs (`--residue I` before the role)."""

    def __init__(
        self,
        binary: Path,
        root: Path,
        runner: Runner | None = None,
        signed: bool = True,
        keys: Path | None = None,
        residue: int | None = None,
    ) -> None:
        self.binary = binary
        self.residue = residue
        self.root = root
        self.runner: Runner = runner or _default_runner
        self.signed = signed
        self.keys = keys or root / "keys"  # another name when one root holds two programs' keys
        self.parties = root / "parties"
        self.owner_sign = self.parties / "owner.sign"
        self.server_sign = self.parties / "server.sign"

    def _run(self, *args: str, on_progress: RowProgress | None = None) -> RoleOutput:
        prefix = () if self.residue is None else ("--residue", str(self.residue))
        return self.runner(self.binary, (*prefix, *args), on_progress)

    def keygen(
        self,
        stream_rows: int | None = None,
        bindings: Mapping[str, str] | None = None,
        sizes: Mapping[str, int] | None = None,
    ) -> RoleOutput:
        """The parties' signing keys (when signed), then keygen: one data owner holding every
        row (`stream_rows`: the stream dimension's size, None when the program streams
        nothing), both parties' public signing keys, the facts the run is bound to
        (`--bind KEY=VALUE`, e.g. the SNP list's digest) and the sizes no upload carries
        (`--size NAME=V`, driver.run.uncarried_sizes). A kept directory starts clean."""
        import shutil

        for d in (self.keys, self.parties):
            shutil.rmtree(d, ignore_errors=True)
        args = ["keygen", "--out", str(self.keys)]
        if self.signed:
            self.parties.mkdir(mode=0o700, parents=True)
            self._run("signkey", "--out", str(self.owner_sign))
            self._run("signkey", "--out", str(self.server_sign))
            args += ["--owner", f"owner=0:{stream_rows}" if stream_rows else "owner"]
            args += ["--owner-key", f"owner={self.owner_sign}.pub"]
            args += ["--server-key", f"{self.server_sign}.pub"]
        for key, value in (bindings or {}).items():
            args += ["--bind", f"{key}={value}"]
        for name, value in (sizes or {}).items():
            args += ["--size", f"{name}={value}"]
        return self._run(*args)

    def encrypt(
        self,
        inputs: Mapping[str, Path],
        out: Path,
        on_progress: RowProgress | None = None,
        rows: tuple[int, int] | None = None,
    ) -> RoleOutput:
        """A data owner encrypts `inputs` (name -> .npy) under the public key into `out`;
        `rows`: the rows [begin, end) of the stream dimension this owner holds (a site of a
        multi-site study), by default all."""
        args = ["encrypt", "--pk", str(self.keys / "public")]
        if self.signed:
            args += ["--sign", str(self.owner_sign)]
        for name, path in inputs.items():
            args += ["--input", f"{name}={Path(path).resolve()}"]
        if rows is not None:
            args += ["--rows", f"{rows[0]}:{rows[1]}"]
        return self._run(*args, "--out", str(out), on_progress=on_progress)

    def compute(self, cts: Path, out: Path, on_progress: RowProgress | None = None) -> RoleOutput:
        """The server evaluates the program on the ciphertexts in `cts` (evaluation keys
        only, never the secret key) into `out`."""
        args = ["compute", "--eval", str(self.keys / "eval")]
        if self.signed:
            args += ["--sign", str(self.server_sign)]
        return self._run(*args, "--in", str(cts), "--out", str(out), on_progress=on_progress)

    def decrypt(self, res: Path, out: Path, *, flooding: bool = True) -> dict[str, Array]:
        """The coordinator decrypts the results in `res` into `out`; returns the values.
        `flooding=False` (decrypt --no-flooding) only where every party is this process and
        the result ciphertexts are deleted with the run (`hec run`, `hec gwas`): the values
        then keep their full precision, and nobody holds the ciphertexts a key-recovery
        attack needs (docs/security.md, "Noise flooding")."""
        extra = [] if flooding else ["--no-flooding"]
        self._run(
            "decrypt",
            "--sk",
            str(self.keys / "secret"),
            "--in",
            str(res),
            "--out",
            str(out),
            *extra,
        )
        return read_revealed(out)
