"""Where the SNP blocks of a run are computed: in this process, or as tasks on a Dask cluster
(dask.distributed; issue 26, docs/scale-out.md).

The unit of work is one block's server-side half (`encrypt_and_compute`: the data owner's
`encrypt` of the block's rows, then the server's `compute`), run from files in the run's bank:
a directory every worker reaches at the same path (one machine, or a shared file system), used
in place, or an fsspec URL (`--bank`), whose files a task copies into its worker's scratch and
back (driver/storage.py). The coordinator's halves stay in the calling process: keygen before,
and `decrypt` of each finished block after, so the secret key never leaves it.

Engines:
- `LocalEngine`: the tasks run one after the other in this process (the single-process run,
  and `--block k/n`).
- `DaskEngine`: `--workers K` starts a LocalCluster of K worker processes (each under a nanny,
  which restarts a worker that dies); `--scheduler ADDRESS` connects to an existing cluster
  (dask-jobqueue on Slurm, dask-kubernetes, `dask scheduler` + `dask worker` by hand). A task
  lost with its worker is run again on another one; each attempt writes into its own
  directory, so a lost attempt and its retry never share a file, and the caller keeps the
  one result the scheduler hands back per block.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from compiler.errors import UserError
from driver.roles import RoleOutput, RoleSequence, role_threads
from driver.storage import (
    check_writable,
    fetch,
    flush_files,
    is_url,
    locate,
    upload,
    worker_cache,
)

# Seconds to wait for an existing scheduler to answer before the run is refused.
CONNECT_TIMEOUT = 5.0


@dataclass(frozen=True)
class RowShard:
    """Rows [begin, end) of a block's inputs (None: every row), encrypted by one task."""

    rows: tuple[int, int] | None
    inputs: Mapping[str, str]  # owner input name -> .npy in the bank holding those rows


@dataclass(frozen=True)
class BlockTask:
    """One block's encryption (one task per row shard) and server pass, as plain data a
    worker can receive."""

    index: int
    binary: str  # the generated program
    root: str  # the key set's directory (keys/ and parties/ of driver.roles.RoleSequence)
    shards: tuple[RowShard, ...]  # the block's rows, in order, covering them once
    shared_ct: str  # ciphertexts of the inputs every block shares (linked in), or ""
    work: str  # the block's directory in the bank
    threads: int = 0  # HEC_THREADS of the roles (0: the runtime's default)

    @property
    def remote(self) -> bool:
        """The bank is an fsspec URL: the task copies its files in and out (driver/storage.py)
        instead of using them in place."""
        return is_url(self.work)


@dataclass(frozen=True)
class Encrypted:
    """A finished encryption of one row shard: its ciphertext directory."""

    ct: str
    worker: str
    seconds: float
    peak_rss_bytes: int


@dataclass(frozen=True)
class BlockDone:
    """A finished task: where its results are and how long its roles took."""

    index: int
    res: str  # the result ciphertexts (the compute role's output directory)
    worker: str  # host:pid of the process that ran it
    seconds: Mapping[str, float] = field(default_factory=dict)
    peak_rss_bytes: int = 0


def _attempt_name() -> str:
    return f"attempt-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _attempt_dir(work: Path) -> Path:
    return work / _attempt_name()


def _roles(task: BlockTask) -> RoleSequence:
    """The roles of the task's program: in place, or (a URL bank) from copies of the program
    and the key set's public part fetched once per worker process."""
    if not task.remote:
        return RoleSequence(Path(task.binary), Path(task.root))
    binary = fetch(task.binary, cache=True)
    binary.chmod(0o700)
    root = fetch(task.root, cache=True)
    for path in [root, *root.rglob("*")]:  # the signing keys stay private on the worker too
        path.chmod(0o700 if path.is_dir() else 0o600)
    return RoleSequence(binary, root)


def _local_attempt() -> Path:
    """A scratch directory of this worker for one attempt of a task whose bank is a URL."""
    directory = worker_cache() / _attempt_name()
    directory.mkdir(parents=True)
    return directory


def _encrypt_remote(
    task: BlockTask, roles: RoleSequence, part: RowShard, name: str
) -> tuple[str, RoleOutput]:
    """A URL bank: the inputs of `part` fetched into this worker's scratch, encrypted there,
    the ciphertexts uploaded to a new attempt's directory `name` in the task's bank directory
    (returned with the role's output); the scratch is removed whatever happens."""
    local = _local_attempt()
    try:
        inputs = {k: fetch(v, local / "in" / f"{k}.npy") for k, v in part.inputs.items()}
        with role_threads(task.threads):
            out = roles.encrypt(inputs, local / "ct", rows=part.rows)
        target = locate(task.work).child(_attempt_name(), name)
        upload(local / "ct", target)
    finally:
        shutil.rmtree(local, ignore_errors=True)
    return target.url, out


def encrypt_shared(task: BlockTask) -> str:
    """The inputs every block shares (the phenotype), encrypted once into `task.shared_ct`
    (written under an attempt's name and renamed: a retry never sees half a directory)."""
    roles = _roles(task)
    if task.remote:  # the attempt's own directory in the bank; the caller keeps the one the
        return _encrypt_remote(task, roles, task.shards[0], "shared")[0]  # scheduler hands back
    final = Path(task.shared_ct)
    if final.is_dir():
        return str(final)
    attempt = _attempt_dir(final.parent)
    inputs = {k: Path(v) for k, v in task.shards[0].inputs.items()}
    with role_threads(task.threads):
        roles.encrypt(inputs, attempt)
    flush_files(attempt)
    try:
        attempt.rename(final)
    except OSError:  # another attempt got there first: its files are as good
        shutil.rmtree(attempt, ignore_errors=True)
    return str(final)


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def encrypt_rows(task: BlockTask, shard: int) -> Encrypted:
    """A data owner encrypts row shard `shard` of the block (`encrypt --rows A:B`: files named
    by their rows, so the shards of a block sit side by side in the server's input)."""
    part = task.shards[shard]
    roles = _roles(task)
    t0 = time.perf_counter()
    if task.remote:  # inputs fetched, ciphertexts written back to the bank
        url, out = _encrypt_remote(task, roles, part, "ct")
        return Encrypted(url, _worker_name(), time.perf_counter() - t0, out.peak_rss_bytes)
    cts = _attempt_dir(Path(task.work)) / "ct"
    inputs = {k: Path(v) for k, v in part.inputs.items()}
    with role_threads(task.threads):
        out = roles.encrypt(inputs, cts, rows=part.rows)
    flush_files(cts)
    return Encrypted(str(cts), _worker_name(), time.perf_counter() - t0, out.peak_rss_bytes)


def compute_block(task: BlockTask, *encrypted: Encrypted) -> BlockDone:
    """The server computes on the block's ciphertexts (every row shard, and the shared
    inputs' ciphertexts), linked into one directory of this attempt; the results are small
    and kept for the coordinator, the links removed. With a URL bank the ciphertexts are
    copied into this worker's scratch, which is removed whatever happens."""
    roles = _roles(task)
    if not task.remote:
        return _compute_attempt(task, roles, _attempt_dir(Path(task.work)), encrypted)
    attempt = _local_attempt()
    try:
        done = _compute_attempt(task, roles, attempt, encrypted)
        target = locate(task.work).child(attempt.name, "res")  # the results back to the bank
        upload(Path(done.res), target)
    finally:
        shutil.rmtree(attempt, ignore_errors=True)
    return dataclasses.replace(done, res=target.url)


def _compute_attempt(
    task: BlockTask, roles: RoleSequence, attempt: Path, encrypted: Sequence[Encrypted]
) -> BlockDone:
    """The server pass of one attempt in the local directory `attempt`: results in
    `attempt/res`."""
    cts, res = attempt / "ct", attempt / "res"
    cts.mkdir(parents=True)
    for directory in [*(e.ct for e in encrypted), task.shared_ct]:
        if directory and task.remote:  # copies of the bank's files
            source = locate(directory)
            for name in source.names():
                fetch(source.child(name).url, cts / name)
        elif directory:
            for f in Path(directory).iterdir():
                (cts / f.name).symlink_to(f)
    t0 = time.perf_counter()
    with role_threads(task.threads):
        out = roles.compute(cts, res)
    seconds = {
        "encrypt": sum(e.seconds for e in encrypted),
        "compute": time.perf_counter() - t0,
    }
    shutil.rmtree(cts, ignore_errors=True)
    peak = max([out.peak_rss_bytes, *(e.peak_rss_bytes for e in encrypted)])
    return BlockDone(task.index, str(res), _worker_name(), seconds, peak)


def encrypt_and_compute(task: BlockTask) -> BlockDone:
    """Every row shard of the block encrypted, then the server pass, one after the other."""
    return compute_block(task, *(encrypt_rows(task, i) for i in range(len(task.shards))))


def check_paths(paths: Mapping[str, tuple[str, str]]) -> list[str]:
    """On a worker: every path it needs, as `name -> (path, mode)` with mode "r" (readable),
    "x" (an executable file) or "w" (a directory it can create files in). Returns one line
    per path it cannot use (empty: all fine)."""
    problems: list[str] = []
    for name, (path, mode) in paths.items():
        if is_url(path):  # through fsspec: the protocol's package and the location, here
            try:
                location = locate(path)
                if mode == "w":
                    check_writable(location)
                elif not location.exists():
                    problems.append(f"{path} ({name}): does not exist here")
            except UserError as err:
                problems.append(f"{path} ({name}): {err.message}")
            continue
        p = Path(path)
        if not p.exists():
            problems.append(f"{path} ({name}): does not exist here")
        elif mode == "x" and not os.access(p, os.X_OK):
            problems.append(f"{path} ({name}): not executable here")
        elif mode == "r" and not os.access(p, os.R_OK):
            problems.append(f"{path} ({name}): not readable here")
        elif mode == "w":
            probe = p / f".probe-{socket.gethostname()}-{os.getpid()}"
            try:
                probe.write_bytes(b"")
                probe.unlink()
            except OSError as err:
                problems.append(f"{path} ({name}): cannot write here ({err.strerror or err})")
    return problems


class Engine(ABC):
    """Runs block tasks and hands back each one's result once."""

    description: str = ""
    dashboard: str | None = None
    workers: int = 1  # worker processes (at the start)

    @abstractmethod
    def call(self, fn: Callable[[BlockTask], Any], task: BlockTask) -> Any:
        """Run one task and wait for its result."""

    @abstractmethod
    def run_blocks(self, tasks: Iterable[BlockTask]) -> Iterator[BlockDone]:
        """Encrypt (row shard by row shard) and compute every block; yield each block's result
        once, in the order they finish. `tasks` is consumed as it comes (a cluster starts a
        block while the caller prepares the next)."""

    def check_access(self, paths: Mapping[str, tuple[str, str]]) -> None:
        """Refuse the run, naming the path and the worker, when a worker cannot use a path
        (this process: the run itself made them)."""
        return None

    def close(self) -> None:
        return None


class LocalEngine(Engine):
    description = "this process, one block after the other"
    workers = 1

    def call(self, fn: Callable[[BlockTask], Any], task: BlockTask) -> Any:
        return fn(task)

    def run_blocks(self, tasks: Iterable[BlockTask]) -> Iterator[BlockDone]:
        for task in tasks:
            yield encrypt_and_compute(task)


class DaskEngine(Engine):
    """Tasks on a Dask cluster: an embedded LocalCluster of `workers` processes, or the
    scheduler at `scheduler`."""

    def __init__(self, workers: int = 0, scheduler: str | None = None) -> None:
        import logging

        from distributed import Client, LocalCluster

        self._cluster: Any = None
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=CONNECT_TIMEOUT)
            except (OSError, TimeoutError, ValueError) as err:
                raise UserError(
                    f"--scheduler {scheduler}: no Dask scheduler answered within "
                    f"{CONNECT_TIMEOUT:g} s ({type(err).__name__}: {err})",
                    hint="start one (dask scheduler) or check the address, e.g. tcp://HOST:8786",
                ) from err
            self.description = f"Dask cluster at {scheduler}"
        else:
            self._cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address="127.0.0.1:0",
                silence_logs=logging.ERROR,
            )
            self.client = Client(self._cluster)
            self.description = (
                f"Dask LocalCluster of {workers} worker processes at "
                f"{self._cluster.scheduler_address}"
            )
        info = self.client.scheduler_info()
        self.workers = max(1, len(info.get("workers", {})))
        services = info.get("services", {})
        self.dashboard = self.client.dashboard_link if "dashboard" in services else None

    def call(self, fn: Callable[[BlockTask], Any], task: BlockTask) -> Any:
        return self.client.submit(fn, task, pure=False).result()

    def run_blocks(self, tasks: Iterable[BlockTask]) -> Iterator[BlockDone]:
        """Per block: one encryption task per row shard, then the server's task, which Dask
        starts when the block's shards are encrypted (the futures are its arguments). Each
        block is submitted as soon as `tasks` yields it."""
        from distributed import as_completed

        futures: list[Any] = []
        blocks = as_completed()
        try:
            for t in tasks:
                tag = uuid.uuid4().hex
                shards = [
                    self.client.submit(
                        encrypt_rows, t, i, pure=False, key=f"hec-encrypt-{t.index}-{i}-{tag}"
                    )
                    for i in range(len(t.shards))
                ]
                block = self.client.submit(
                    compute_block, t, *shards, pure=False, key=f"hec-block-{t.index}-{tag}"
                )
                futures += [*shards, block]
                blocks.add(block)
            for future in blocks:
                yield future.result()
        finally:
            for future in futures:
                future.cancel()

    def check_access(self, paths: Mapping[str, tuple[str, str]]) -> None:
        answers = cast(dict[str, list[str]], self.client.run(check_paths, dict(paths)))
        for worker, problems in sorted(answers.items()):
            if problems:
                raise UserError(
                    f"Dask worker {worker} cannot use {problems[0]}"
                    + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""),
                    hint="the workers must reach the run's files at the same paths: set "
                    "HEC_SCRATCH (and --keys, --cache-dir) to a shared file system",
                )
        if not answers:
            raise UserError(f"{self.description}: the cluster has no worker")

    def close(self) -> None:
        self.client.close()
        if self._cluster is not None:
            self._cluster.close()


def make_engine(workers: int, scheduler: str | None) -> Engine:
    """The engine the options ask for: a Dask cluster for --scheduler or --workers K > 1."""
    if scheduler or workers > 1:
        return DaskEngine(workers, scheduler)
    return LocalEngine()
