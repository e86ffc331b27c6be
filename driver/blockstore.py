"""Finished SNP blocks of a run on disk, written once, verified when read (issue 26).

A run split into n blocks (`--block k/n`, `--resume`, a Dask cluster) keeps each finished
block's decrypted values in a block store, a directory with two files per block:

    block-K-of-N.npz    the revealed values of the block (numpy's .npz, one array per value)
    block-K-of-N.json   what the block is: the run id of the key set's manifest, the job digest
                        (program, sizes, SNP list, individuals, partition), the block's index,
                        its SNP range, the SHA-256 of its plaintext inputs and of the .npz

The store is a `driver.storage.Location`: a local directory, or an fsspec URL (a shared file
system, an object store: `--store s3://bucket/study.blocks`). Each file is written atomically
(temporary name, flush, rename on a file system; one object write on an object store), the
.json last: a block whose
.json exists is complete, whatever interrupted the run. `read` verifies everything the .json
says (the .npz's digest included) before a block counts as finished, so a resumed run skips
only blocks it can prove are this run's, made from these inputs; `check_run` refuses a store
holding a block of another run, naming it. The merge (`read` of every index in order) is
deterministic: a block's values do not depend on where or how often it was computed.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from compiler.errors import UserError
from driver.storage import Location, locate

Array = npt.NDArray[np.float64]
FORMAT = 1
_NAME = re.compile(r"^block-(\d+)-of-(\d+)\.json$")


def parse_block_spec(text: str) -> tuple[int, int]:
    """`--block k/n` -> (k, n), 1 <= k <= n."""
    k_text, sep, n_text = text.partition("/")
    if not sep or not k_text.isdigit() or not n_text.isdigit():
        raise UserError(f"--block {text}: expected K/N, e.g. 2/8 (block 2 of 8)")
    k, n = int(k_text), int(n_text)
    if n < 1 or not 1 <= k <= n:
        raise UserError(f"--block {text}: K must be between 1 and N (N >= 1)")
    return k, n


def partition(m: int, n: int, align: int = 1) -> list[tuple[int, int]]:
    """`n` contiguous ranges [start, stop) covering 0..m once, as equal as possible, their
    boundaries multiples of `align` (a ciphertext's columns) when m holds n aligned pieces."""
    if n < 1 or m < n:
        raise UserError(f"{m} SNPs cannot be split into {n} blocks (at most {max(m, 1)})")
    units, unit = (-(-m // align), align) if align > 1 and m >= n * align else (m, 1)
    bounds = [min(m, (units * i // n) * unit) for i in range(n + 1)]
    bounds[-1] = m
    return list(itertools.pairwise(bounds))


def digest_arrays(arrays: Mapping[str, npt.NDArray[np.generic]]) -> str:
    """SHA-256 over the names, dtypes, shapes and bytes of `arrays` (sorted by name)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class RunIdentity:
    """What makes two blocks parts of one run: the key set's run id and the job's digest."""

    run_id: str
    job: str
    n_blocks: int


@dataclass(frozen=True)
class StoredBlock:
    index: int  # 0-based
    start: int
    stop: int
    values: dict[str, Array]


class BlockStore:
    """The finished blocks of one run in `directory` (created on the first write): a path,
    an fsspec URL, or a `Location`."""

    def __init__(self, directory: Location | Path | str, identity: RunIdentity) -> None:
        self.directory = directory if isinstance(directory, Location) else locate(str(directory))
        self.identity = identity

    def _stem(self, index: int) -> str:
        return f"block-{index + 1}-of-{self.identity.n_blocks}"

    def meta_path(self, index: int) -> Location:
        return self.directory.child(f"{self._stem(index)}.json")

    def data_path(self, index: int) -> Location:
        return self.directory.child(f"{self._stem(index)}.npz")

    def check_run(self) -> None:
        """Refuse a store holding a block of another run (another key set, other inputs or
        another partition), naming the block: merging it would mix two studies."""
        for name in self.directory.names():
            if not _NAME.match(name):
                continue
            meta = self.directory.child(name)
            try:
                fields = json.loads(meta.read_text())
                run_id, job = fields["run_id"], fields["job"]
                n = int(fields["n_blocks"])
            except (UserError, ValueError, KeyError, TypeError) as err:
                raise UserError(
                    f"{meta}: not a readable block record ({err})",
                    hint="remove it, or choose another --out",
                ) from err
            if run_id != self.identity.run_id:
                raise UserError(
                    f"{meta}: block from another run in the output (run id {run_id[:16]}, this "
                    f"run's keys are {self.identity.run_id[:16]})",
                    hint="remove it, choose another --out, or give the --keys it was made with",
                )
            if job != self.identity.job or n != self.identity.n_blocks:
                raise UserError(
                    f"{meta}: block from another run in the output (same keys, but other "
                    f"inputs, program or partition: {n} blocks, this run has "
                    f"{self.identity.n_blocks})",
                    hint="remove it or choose another --out",
                )

    def write(self, index: int, start: int, stop: int, inputs: str, values: Mapping[str, Array]):
        """Store block `index` (SNPs [start, stop), inputs digest `inputs`) atomically."""
        self.directory.makedirs()
        buffer = io.BytesIO()
        arrays: dict[str, Any] = {k: np.asarray(v) for k, v in values.items()}
        np.savez(buffer, **arrays)
        data = buffer.getvalue()
        self.data_path(index).write_atomic(data)
        record = {
            "format": FORMAT,
            "run_id": self.identity.run_id,
            "job": self.identity.job,
            "n_blocks": self.identity.n_blocks,
            "index": index,
            "start": start,
            "stop": stop,
            "inputs_sha256": inputs,
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        self.meta_path(index).write_atomic(json.dumps(record, indent=1).encode())

    def finished(self, index: int, start: int, stop: int, inputs: str | None) -> bool:
        """Whether block `index` is stored and verifies (`inputs`: its inputs' digest, None to
        skip that check); a damaged block does not count (it is computed again)."""
        try:
            self.read(index, start, stop, inputs)
        except UserError:
            return False
        return True

    def read(self, index: int, start: int, stop: int, inputs: str | None) -> StoredBlock:
        """Block `index`, verified: run, job, index, SNP range, inputs and data digest."""
        meta, data_path = self.meta_path(index), self.data_path(index)
        if not meta.is_file():
            raise UserError(f"{meta}: block {index + 1} of {self.identity.n_blocks} is missing")
        try:
            fields = json.loads(meta.read_text())
            data = data_path.read_bytes()
        except (UserError, ValueError) as err:
            raise UserError(f"{meta}: cannot read the block ({err})") from err
        expected = {
            "format": FORMAT,
            "run_id": self.identity.run_id,
            "job": self.identity.job,
            "n_blocks": self.identity.n_blocks,
            "index": index,
            "start": start,
            "stop": stop,
        }
        if inputs is not None:
            expected["inputs_sha256"] = inputs
        for key, value in expected.items():
            if fields.get(key) != value:
                raise UserError(
                    f"{meta}: {key} is {fields.get(key)!r}, this run's block {index + 1} has "
                    f"{value!r}"
                )
        if hashlib.sha256(data).hexdigest() != fields.get("sha256"):
            raise UserError(f"{data_path}: its SHA-256 does not match {meta.name} (damaged)")
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            values = {k: np.asarray(npz[k], dtype=np.float64) for k in npz.files}
        return StoredBlock(index, start, stop, values)

    def remove(self) -> None:
        """Delete this run's block files (after the merged results are written)."""
        for index in range(self.identity.n_blocks):
            self.meta_path(index).remove()
            self.data_path(index).remove()
        self.directory.remove_if_empty()
