"""`hec gwas` on SNP blocks that can be run apart, resumed and spread over a Dask cluster
(issue 26; docs/scale-out.md).

`ScaleOutBackend` is the encrypted backend with the run split into n blocks of SNPs (a
partition of the M SNPs, boundaries on whole ciphertexts when the blocks allow it):

  (1) keys: `--keys DIR` keeps the key set (DIR/keys, DIR/parties) and reuses it when DIR
      already holds one; without it, a fresh key set in the run's scratch directory;
  (2) the block store (driver/blockstore.py, in PREFIX.blocks/ with --keys): every finished
      block's decrypted values with the key set's run id, the job digest and the digests of
      its inputs and data; a store holding another run's block is refused, naming it;
  (3) the blocks not yet finished (all of them, or only those --resume cannot verify, or only
      block k with --block k/n) are written to the bank as plaintext inputs and run as tasks
      on the engine (driver/cluster.py: this process, or Dask with --workers K/--scheduler):
      each task encrypts its block (data owner) and computes on it (server); the coordinator
      decrypts each finished block here and stores it;
  (4) the merge: every block read back from the store, verified, in order (none missing, none
      twice), so the results are those of the single-process run, bit for bit where the
      program reveals exact integers (packed counts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from compiler.errors import InternalError, UserError
from driver.blockstore import BlockStore, RunIdentity, digest_arrays, partition
from driver.cluster import (
    BlockDone,
    BlockTask,
    Engine,
    RowShard,
    encrypt_shared,
    make_engine,
)
from driver.interrupt import scratch_directory
from driver.roles import RoleSequence
from driver.storage import Location, check_writable, fetch, locate, upload
from gwas.backend import (
    Array,
    Block,
    CompiledProgram,
    EncryptedBackend,
    block_bytes,
    compact_integers,
    scratch_dir,
    write_input,
)
from gwas.memory import PhaseMeter


@dataclass
class ScaleOut:
    """The scale-out options of a gwas run (all off: the ordinary single-process run)."""

    block: tuple[int, int] | None = None  # --block k/n (k from 1)
    blocks: int = 0  # --blocks n: the partition's size (0: from --block, or the default)
    keys: Path | None = None  # --keys DIR
    resume: bool = False  # --resume
    workers: int = 0  # --workers K
    row_shards: int = 0  # --row-shards R: encryption tasks per block (0: one per worker)
    scheduler: str | None = None  # --scheduler ADDRESS
    store: str | None = None  # --store PATH|URL: the block store (default PREFIX.blocks)
    bank: str | None = None  # --bank PATH|URL: the tasks' shared files (default: scratch)

    @property
    def active(self) -> bool:
        return bool(self.flags())

    def flags(self) -> list[str]:
        """The scale-out options given (what makes the run `active`)."""
        given = {
            "--block": bool(self.block), "--blocks": bool(self.blocks),
            "--keys": self.keys is not None, "--resume": self.resume,
            "--workers": self.workers > 1, "--row-shards": bool(self.row_shards),
            "--scheduler": bool(self.scheduler), "--store": bool(self.store),
            "--bank": bool(self.bank),
        }  # fmt: skip
        return [flag for flag, on in given.items() if on]

    def check(self, backend: str) -> None:
        """Refuse combinations that cannot work, before any work."""
        if not self.active:
            return
        if backend != "encrypted":
            raise UserError(
                f"{', '.join(self.flags())} split the encrypted program's run; --backend "
                f"{backend} has nothing to split or resume"
            )
        if (self.block or self.resume or self.store) and self.keys is None:
            flag = "--resume" if self.resume else "--block" if self.block else "--store"
            raise UserError(
                f"{flag} needs --keys DIR: every block of a run must be encrypted under one "
                "key set, kept between the invocations",
                hint="e.g. --keys study.keys (created by the first run, reused by the next)",
            )
        if self.block and self.blocks and self.blocks != self.block[1]:
            raise UserError(f"--blocks {self.blocks} but --block {self.block[0]}/{self.block[1]}")
        if self.workers < 0 or self.blocks < 0 or self.row_shards < 0:
            raise UserError("--workers, --blocks and --row-shards take a positive number")
        if self.workers and self.scheduler:
            raise UserError(
                "--workers K starts a local cluster, --scheduler uses an existing one: give one"
            )

    def n_blocks(self, default: int) -> int:
        if self.block:
            return self.block[1]
        if self.blocks:
            return self.blocks
        # On a local cluster: at least one block per worker (equal blocks, equal workers).
        return max(default, self.workers)


def store_location(out: Path, store: str | None) -> Location:
    """The block store of a run kept with --keys: `--store` (a path or an fsspec URL), by
    default PREFIX.blocks next to the results."""
    if store:
        return locate(store, "--store")
    return locate(str(out.with_name(out.name + ".blocks")))


def stored_partition(directory: Location) -> int | None:
    """The number of blocks of the run whose blocks `directory` holds (None: none there)."""
    for name in directory.names():
        match = re.match(r"^block-\d+-of-(\d+)\.json$", name)
        if match:
            return int(match.group(1))
    return None


def _manifest_fields(manifest: Path) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in manifest.read_text().splitlines():
        key, _, value = line.partition(" ")
        fields.setdefault(key, value.strip())
    return fields


def _check_reusable(
    manifest: Path, root: Path, compiled: CompiledProgram, stream_dim: str | None
) -> None:
    """A kept key set serves one program and one number of individuals (the owners' rows are
    part of its manifest): another is refused here, naming both (the roles would refuse it
    too, later and less plainly)."""
    fields = _manifest_fields(manifest)
    program = compiled.source.stem
    rows = str(compiled.sizes[stream_dim]) if stream_dim else None
    made = (fields.get("program"), fields.get("rows"))
    if made != (program, rows):
        raise UserError(
            f"--keys {root}: the key set was made for program {made[0]} with {made[1]} "
            f"individuals; this run needs {program} with {rows}",
            hint="a key set serves one program and cohort: give another --keys directory",
        )


def read_run_id(manifest: Path) -> str:
    """The run id of a key set's manifest (runtime/program/manifest.h: "run_id HEX")."""
    try:
        for line in manifest.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "run_id" and value:
                return value.strip()
    except OSError as err:
        raise UserError(f"{manifest}: cannot read the key set's manifest ({err})") from err
    raise UserError(f"{manifest}: no run id (not a key set made by hec's keygen)")


@dataclass
class BlockRecord:
    """What happened to one block of this invocation (for the log and the tests)."""

    index: int
    skipped: bool  # finished before and verified (--resume)
    worker: str = ""
    seconds: dict[str, float] = field(default_factory=dict)


class ScaleOutBackend(EncryptedBackend):
    """The encrypted backend over a partition of the SNPs into blocks (see the module)."""

    def __init__(self, scale: ScaleOut, out: Path) -> None:
        super().__init__()
        self.scale = scale
        self.out = out
        self.ranges: list[tuple[int, int]] | None = None  # set by the caller for its run
        self.job = ""  # digest of what the run computes (program, sizes, SNPs, partition)
        self.records: list[BlockRecord] = []
        self._store: BlockStore | None = None
        self._inputs_digest: dict[int, str] = {}
        self.say: Callable[[str], None] = lambda text: print(text, file=sys.stderr)
        self._engine: Future[Engine] | None = None

    def start_engine(self) -> None:
        """Start the engine (a Dask cluster's processes take seconds to start) in the
        background, while the caller reads its inputs and compiles."""
        if self._engine is None:
            pool = ThreadPoolExecutor(1, thread_name_prefix="hec-engine")
            self._engine = pool.submit(make_engine, self.scale.workers, self.scale.scheduler)
            pool.shutdown(wait=False)

    def engine(self) -> Engine:
        """The engine, once started (its start-up error, e.g. an unreachable scheduler, is
        raised here)."""
        self.start_engine()
        assert self._engine is not None
        return self._engine.result()

    def close(self) -> None:
        """Stop the engine (a LocalCluster's processes) if one was started."""
        if self._engine is not None:
            engine, self._engine = self._engine, None
            with contextlib.suppress(Exception):  # one that never started has nothing to stop
                engine.result().close()

    def plan(self, compiled: CompiledProgram, m: int, default_blocks: int) -> list[int]:
        """Partition the M SNPs (sets `ranges` and `job`); returns the block indices this
        invocation runs (--block k/n: only k - 1)."""
        n = self.scale.n_blocks(default_blocks)
        if self.scale.resume and not self.scale.blocks:  # the partition of the stored blocks
            n = stored_partition(store_location(self.out, self.scale.store)) or n
        self.ranges = partition(m, n, compiled.columns_per_ciphertext)
        facts = {
            "program": compiled.source_sha256,
            "sizes": compiled.sizes,
            "precision_bits": compiled.precision_bits,
            "error_confidence": compiled.compilation.options.error_confidence,
            "bindings": self.bindings,
            "ranges": self.ranges,
        }
        self.job = hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()
        if self.scale.block:
            return [self.scale.block[0] - 1]
        return list(range(n))

    def finish(self) -> None:
        """The merged results are written: a kept block store is no longer needed."""
        if self._store is not None and self.scale.keys is not None:
            self._store.remove()

    def run(
        self,
        compiled: CompiledProgram,
        blocks: Iterable[Block],
        n_blocks: int,
        meter: PhaseMeter,
        progress: Callable[[str, int, int], None],
    ) -> Iterator[tuple[Block, dict[str, Array]]]:
        if self.ranges is None:  # a run not planned in blocks (the QC counts): as before
            yield from super().run(compiled, blocks, n_blocks, meter, progress)
            return
        if self.binary is None:
            raise InternalError("the generated program was not built")
        ranges = self.ranges
        widest = max(stop - start for start, stop in ranges)
        where, note = scratch_dir(block_bytes(compiled, widest))
        self.notes.append(note)
        with scratch_directory("hec-gwas-", where) as scratch:
            root = self.scale.keys or scratch / "run"
            store_dir = (
                store_location(self.out, self.scale.store)
                if self.scale.keys
                else locate(str(scratch / "blocks"))
            )
            roles = RoleSequence(self.binary, root, self._runner(meter))
            identity = RunIdentity(self._key_set(roles, root, compiled, progress), self.job,
                                   len(ranges))  # fmt: skip
            store = self._store = BlockStore(store_dir, identity)
            store.check_run()
            self._run_blocks(compiled, blocks, roles, root, store, scratch, meter, progress)
            if self.scale.block:  # one block of n: stored, merged by a later run
                return
            for index, (start, stop) in enumerate(ranges):
                stored = store.read(index, start, stop, None)
                yield Block(index, start, stop, {}), stored.values

    def _key_set(
        self,
        roles: RoleSequence,
        root: Path,
        compiled: CompiledProgram,
        progress: Callable[[str, int, int], None],
    ) -> str:
        """Step (1): the run id of the key set, made now or reused."""
        manifest = roles.keys / "manifest"
        if manifest.is_file():
            run_id = read_run_id(manifest)
            _check_reusable(manifest, root, compiled, self.stream_dim)
            self.notes.append(f"key set reused from {root} (run id {run_id[:16]})")
            return run_id
        if self.scale.keys is not None:
            if root.exists() and any(root.iterdir()):
                raise UserError(
                    f"--keys {root}: the directory is not empty but holds no key set "
                    f"({manifest} is missing)",
                    hint="give a new directory (keygen creates it) or one an earlier run made",
                )
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._keygen(roles, compiled, progress)
        run_id = read_run_id(manifest)
        where = f"kept in {root}" if self.scale.keys else "temporary"
        self.notes.append(f"key set made by this run ({where}, run id {run_id[:16]})")
        return run_id

    def _run_blocks(
        self,
        compiled: CompiledProgram,
        blocks: Iterable[Block],
        roles: RoleSequence,
        root: Path,
        store: BlockStore,
        scratch: Path,
        meter: PhaseMeter,
        progress: Callable[[str, int, int], None],
    ) -> None:
        """Steps (2)-(3): every block of `blocks` that is not finished, run on the engine."""
        assert self.binary is not None
        waited = time.perf_counter()
        engine = self.engine()
        waited = time.perf_counter() - waited
        if self.scale.workers or self.scale.scheduler:
            self.notes.append(f"the run waited {waited:.1f} s for the Dask cluster to be ready")
        self.notes.append(f"blocks computed by {engine.description}")
        if engine.dashboard:
            self.say(f"Dask dashboard: {engine.dashboard}")
            self.notes.append(f"Dask dashboard {engine.dashboard}")
        if self.scale.bank:  # an fsspec URL or a shared path: the tasks copy files in and out
            bank = locate(self.scale.bank, "--bank").child(f"hec-run-{uuid.uuid4().hex[:12]}")
            check_writable(bank)
            self.notes.append(
                f"bank {bank.url}: the tasks copy their files in and out (fsspec), removed "
                "at the end"
            )
            try:
                binary, key_root = _publish(bank, self.binary, roles)
                engine.check_access(
                    {
                        "the generated program": (binary, "x"),
                        "the key set's public part and signing keys": (key_root, "r"),
                        "the bank of inputs and ciphertexts": (bank.url, "w"),
                    }
                )
                self._run_tasks(compiled, blocks, engine, roles, store, bank, binary, key_root,
                                scratch, meter, progress)  # fmt: skip
            finally:
                with contextlib.suppress(UserError):
                    bank.remove(recursive=True)
            return
        bank = locate(str(scratch / "bank"))
        bank.makedirs()
        engine.check_access(
            {
                "the generated program": (str(self.binary), "x"),
                "the public key": (str(roles.keys / "public"), "r"),
                "the evaluation keys": (str(roles.keys / "eval"), "r"),
                "the data owner's signing key": (str(roles.owner_sign), "r"),
                "the server's signing key": (str(roles.server_sign), "r"),
                "the bank of inputs and ciphertexts": (bank.url, "w"),
            }
        )
        self._run_tasks(compiled, blocks, engine, roles, store, bank, str(self.binary), str(root),
                        scratch, meter, progress)  # fmt: skip

    def _run_tasks(
        self,
        compiled: CompiledProgram,
        blocks: Iterable[Block],
        engine: Engine,
        roles: RoleSequence,
        store: BlockStore,
        bank: Location,
        binary: str,
        root: str,
        scratch: Path,
        meter: PhaseMeter,
        progress: Callable[[str, int, int], None],
    ) -> None:
        """Step (3): the tasks of every unfinished block, their inputs written to `bank`;
        `binary` and `root`: the program and the key set as the workers reach them."""
        # Threads per role: on a local cluster, the machine's cores shared by its workers.
        threads = self.threads
        if not threads and self.scale.workers:
            threads = max(1, (os.cpu_count() or 1) // self.scale.workers)
        # Row shards: each block's rows split over this many encryption tasks (by default one
        # per worker, so that a single block's encryption, the heaviest phase, uses them all).
        n_rows = int(compiled.sizes[self.stream_dim]) if self.stream_dim else 0
        n_shards = min(self.scale.row_shards or engine.workers, n_rows) if n_rows else 1
        row_ranges: list[tuple[int, int] | None] = (
            list(partition(n_rows, n_shards)) if n_shards > 1 else [None]
        )
        if n_shards > 1:
            self.notes.append(f"each block's rows encrypted in {n_shards} row shards")
        shared_task: BlockTask | None = None
        submitted: list[int] = []

        def tasks() -> Iterator[BlockTask]:
            """Each block's inputs written to the bank and its task handed to the engine as
            soon as they are (a cluster encrypts block 1 while block 2 is read)."""
            nonlocal shared_task
            for block in blocks:
                arrays = {n: compact_integers(v) for n, v in block.inputs.items()}
                digest = digest_arrays(arrays)
                if self.scale.resume and store.finished(block.index, block.start, block.stop,
                                                        digest):  # fmt: skip
                    self.records.append(BlockRecord(block.index, skipped=True))
                    show()
                    continue
                work = bank.child(f"block{block.index}")
                alone, with_block = compiled.owner_split(block.shared)
                if shared_task is None:
                    once = [n for n in arrays if n in block.shared and n in alone]
                    shared_files = _write_inputs(bank.child("shared-in"),
                                                 {n: arrays[n] for n in once})  # fmt: skip
                    shared_task = BlockTask(
                        -1, binary, root, (RowShard(None, shared_files),),
                        bank.child("shared").url if once else "", bank.url, threads,
                    )  # fmt: skip
                    if once:  # the one result the engine kept (a URL bank: its attempt's)
                        with meter.phase("encrypt"):
                            shared_ct = engine.call(encrypt_shared, shared_task)
                        shared_task = dataclasses.replace(shared_task, shared_ct=shared_ct)
                mine = {n: a for n, a in arrays.items() if n not in block.shared or n in with_block}
                shards = tuple(
                    RowShard(
                        rows, _write_inputs(work.child(f"in-{k}"), _rows_of(mine, rows, n_rows))
                    )
                    for k, rows in enumerate(row_ranges)
                )
                self._inputs_digest[block.index] = digest
                submitted.append(block.index)
                yield BlockTask(
                    block.index, binary, root, shards, shared_task.shared_ct, work.url, threads
                )

        phase = "blocks"
        total = 1 if self.scale.block else len(self.ranges or ())
        started = time.perf_counter()
        # Reading the inputs and encrypting the shared ones run inside the loop, timed apart.
        apart_before = meter.seconds.get("inputs", 0.0) + meter.seconds.get("encrypt", 0.0)

        def show() -> None:  # blocks done (stored, or skipped), with their wall time so far
            count = len(self.records)
            running = time.perf_counter() - started
            try:
                progress(phase, count, total, "blocks", running=running)  # type: ignore[call-arg]
            except TypeError:  # a progress callback without units
                progress(phase, count, total)

        show()
        for done in engine.run_blocks(tasks()):
            self._store_block(compiled, done, roles, store, bank, scratch, meter)
            show()
        skipped = sum(r.skipped for r in self.records)
        if skipped:
            self.notes.append(f"--resume: {skipped} finished block(s) verified and skipped")
        wall = time.perf_counter() - started
        wall -= meter.seconds.get("inputs", 0.0) + meter.seconds.get("encrypt", 0.0) - apart_before
        meter.seconds[phase] = meter.seconds.get(phase, 0.0) + wall
        if submitted:
            self.notes.append(
                f"{len(submitted)} block(s) encrypted and computed in {wall:.2f} s wall "
                f"(encrypt {sum(r.seconds.get('encrypt', 0) for r in self.records):.2f} s, "
                f"compute {sum(r.seconds.get('compute', 0) for r in self.records):.2f} s "
                "summed over the tasks)"
            )

    def _store_block(
        self,
        compiled: CompiledProgram,
        done: BlockDone,
        roles: RoleSequence,
        store: BlockStore,
        bank: Location,
        scratch: Path,
        meter: PhaseMeter,
    ) -> None:
        """The coordinator decrypts a finished block and stores it (the one result the engine
        hands back per block: a retried task's lost attempt is never read)."""
        assert self.ranges is not None
        start, stop = self.ranges[done.index]
        dec = scratch / f"dec{done.index}"
        res = fetch(done.res, scratch / f"res{done.index}")  # a URL bank: copied here first
        values = roles.decrypt(res, dec, flooding=False)
        store.write(done.index, start, stop, self._inputs_digest[done.index], values)
        bank.child(f"block{done.index}").remove(recursive=True)
        shutil.rmtree(dec, ignore_errors=True)
        if res != Path(done.res):
            shutil.rmtree(res, ignore_errors=True)
        meter.note_subprocess_peak("blocks", done.peak_rss_bytes)
        self.records.append(BlockRecord(done.index, False, done.worker, dict(done.seconds)))


def _rows_of(
    arrays: dict[str, np.ndarray], rows: tuple[int, int] | None, n_rows: int
) -> dict[str, np.ndarray]:
    """Rows [begin, end) of every array whose leading axis is the stream dimension."""
    if rows is None:
        return arrays
    begin, end = rows
    return {n: a[begin:end] if a.ndim and a.shape[0] == n_rows else a for n, a in arrays.items()}


def _write_inputs(directory: Location, arrays: dict[str, np.ndarray]) -> dict[str, str]:
    """Each array as NAME.npy in `directory` (in the bank); returns name -> path or URL."""
    directory.makedirs()
    files: dict[str, str] = {}
    for name, value in arrays.items():
        target = directory.child(f"{name}.npy")
        if target.local is None:  # one object write
            buffer = io.BytesIO()
            np.save(buffer, value)
            target.write_atomic(buffer.getvalue())
        else:  # a local or shared file system (flushed by the task's reader, not here)
            write_input(target.local, value)
        files[name] = target.url
    return files


def _publish(bank: Location, binary: Path, roles: RoleSequence) -> tuple[str, str]:
    """What the workers need besides the block inputs, copied into the bank: the generated
    program and the key set without its secret key (public and evaluation keys, the
    manifest; the two signing keys, as with a shared file system). Returns their URLs."""
    program = bank.child("program", binary.name)
    upload(binary, program)
    key_root = bank.child("keyset")
    for entry in sorted(roles.keys.iterdir()):
        if entry.name != "secret":
            upload(entry, key_root.child("keys", entry.name))
    upload(roles.parties, key_root.child("parties"))
    return program.url, key_root.url
