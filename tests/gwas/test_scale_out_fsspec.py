"""The scale-out run's shared files through fsspec (issue 26, driver/storage.py): the block
store at a URL (`--store`), the bank of a Dask run at a URL (`--bank`: the tasks copy their
files in and out, no shared file system), the object-store rules (one whole-object write, no
rename) on an in-process object store (`memory://`), and the errors of each (an unknown
protocol, a missing protocol package, an unreachable location, on the coordinator or on a
worker), each naming the location. Results are compared with the single-process .assoc byte
for byte, as in test_scale_out.py."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gwas_fixtures import PlinkCohort, scaled_chisq

from compiler.errors import UserError
from driver.blockstore import BlockStore, RunIdentity
from driver.cluster import DaskEngine
from driver.roles import RoleSequence
from driver.storage import check_writable, fetch, locate, upload
from gwas.chisq import ChisqOptions, run_chisq
from gwas.scaleout import ScaleOut, ScaleOutBackend


@pytest.fixture
def memory_root() -> Iterator[str]:
    """A fresh directory of fsspec's in-process object store (not shared with other
    processes, so used here without workers)."""
    import uuid

    url = f"memory://hec-test-{uuid.uuid4().hex[:8]}"
    yield url
    locate(url).remove(recursive=True)


def test_block_store_on_an_object_store(memory_root: str) -> None:
    """memory:// is not a local file system: every file is one object write (no temporary
    name, no rename), listing is by prefix; a block still verifies, a damaged one does not,
    another run's is refused naming it, and remove() leaves nothing."""
    store = BlockStore(f"{memory_root}/res.blocks", RunIdentity("a" * 32, "job", 2))
    assert store.directory.local is None
    store.write(1, 5, 9, "in", {"n11": np.arange(4.0)})
    assert store.directory.names() == ["block-2-of-2.json", "block-2-of-2.npz"]  # no temp files
    assert store.read(1, 5, 9, "in").values["n11"].tolist() == [0, 1, 2, 3]
    assert not store.finished(0, 0, 5, None)  # block 1 is not there
    with pytest.raises(UserError, match=r"block-1-of-2\.json: block 1 of 2 is missing"):
        store.read(0, 0, 5, None)
    data = bytearray(store.data_path(1).read_bytes())
    data[-30] ^= 0xFF
    store.data_path(1).write_atomic(bytes(data))
    with pytest.raises(UserError, match=r"block-2-of-2\.npz: its SHA-256 does not match"):
        store.read(1, 5, 9, "in")
    theirs = BlockStore(f"{memory_root}/res.blocks", RunIdentity("b" * 32, "job", 2))
    with pytest.raises(
        UserError, match=rf"{memory_root}/res\.blocks/block-2-of-2\.json: block from another run"
    ):
        theirs.check_run()
    store.remove()
    assert not store.directory.exists()


def test_local_atomic_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = locate(f"file://{tmp_path}/d").child("x.bin")
    target.fs.makedirs(str(tmp_path / "d"), exist_ok=True)
    target.write_atomic(b"one")
    target.write_atomic(b"two")  # replaces the file whole
    assert target.local == tmp_path / "d" / "x.bin"
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["x.bin"]
    assert target.read_bytes() == b"two"


def test_fetch_and_upload_copy_a_tree(tmp_path: Path, memory_root: str) -> None:
    """What a task does with a URL bank: its files copied to local scratch and back."""
    (tmp_path / "a" / "sub").mkdir(parents=True)
    (tmp_path / "a" / "x").write_bytes(b"1")
    (tmp_path / "a" / "sub" / "y").write_bytes(b"22")
    upload(tmp_path / "a", locate(f"{memory_root}/bank/a"))
    back = fetch(f"{memory_root}/bank/a", tmp_path / "b")
    assert sorted(str(p.relative_to(back)) for p in back.rglob("*")) == ["sub", "sub/y", "x"]
    assert (back / "sub" / "y").read_bytes() == b"22"
    assert fetch(str(tmp_path / "a")) == tmp_path / "a"  # a plain path: used in place


def test_block_by_block_with_the_store_at_a_file_url(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, single_assoc: bytes
) -> None:
    """--block 1/2 and --resume with --store file://...: the blocks are kept there (not in
    PREFIX.blocks/) and merged into the single-process .assoc."""
    keys, out, store = tmp_path / "keys", tmp_path / "res", f"file://{tmp_path}/shared/b"
    scaled_chisq(
        complete_cohort, out, program_cache, ScaleOut(block=(1, 2), keys=keys, store=store)
    )
    assert sorted(p.name for p in (tmp_path / "shared" / "b").iterdir()) == [
        "block-1-of-2.json", "block-1-of-2.npz"
    ]  # fmt: skip
    assert not (tmp_path / "res.blocks").exists()
    result = scaled_chisq(complete_cohort, out, program_cache,
                    ScaleOut(keys=keys, resume=True, store=store))  # fmt: skip
    assert isinstance(result.backend, ScaleOutBackend)
    records = sorted(result.backend.records, key=lambda r: r.index)
    assert [(r.index, r.skipped) for r in records] == [(0, True), (1, False)]
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc
    assert not (tmp_path / "shared" / "b").exists()  # merged: the blocks are removed


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    import logging

    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    ) as c:  # fmt: skip
        yield c


def test_dask_run_with_the_bank_at_a_url(
    cluster: object,
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    single_assoc: bytes,
) -> None:
    """--bank file://...: the workers (other processes) get the program, the public part of
    the key set and each block's inputs from the bank through fsspec, run their roles on
    local copies and write ciphertexts and results back (the path every URL protocol takes);
    the coordinator fetches the results. The secret key is never in the bank, and the bank's
    run directory is removed at the end."""
    bank = tmp_path / "bank"
    seen: list[str] = []

    def watch() -> None:  # what the bank holds while the run is going
        for p in bank.rglob("*"):
            seen.append(str(p.relative_to(bank)))

    address = cluster.scheduler_address  # type: ignore[attr-defined]
    scale = ScaleOut(scheduler=address, blocks=3, bank=f"file://{bank}")
    opts = ChisqOptions(
        bfile=str(complete_cohort.prefix), out=str(tmp_path / "res"), cache_dir=program_cache,
        progress=False, plots=False, scale=scale,
    )  # fmt: skip
    import threading

    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.05):
            try:
                watch()
            except FileNotFoundError:  # a block's directory removed during the walk: again
                continue

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        result = run_chisq(opts)
    finally:
        stop.set()
        thread.join(timeout=5)
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc
    assert f"bank file://{bank}/hec-run-" in result.log_text
    assert isinstance(result.backend, ScaleOutBackend)
    workers = {r.worker for r in result.backend.records}
    assert sorted(r.index for r in result.backend.records) == [0, 1, 2]
    assert any(s.endswith("/keyset/keys/eval") or "/keyset/keys/eval/" in s for s in seen)
    assert not any("secret" in s for s in seen)  # the secret key never leaves the coordinator
    assert any("/ct/" in s for s in seen)  # ciphertexts went through the bank
    assert list(bank.iterdir()) == []  # the run's directory in the bank is gone
    assert all(not w.endswith(f":{__import__('os').getpid()}") for w in workers)


def test_unknown_protocol_is_named(tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"--store nosuch://x/b: no fsspec file system for the "
                       "protocol 'nosuch'"):  # fmt: skip
        locate("nosuch://x/b", "--store")


@pytest.mark.skipif(importlib.util.find_spec("s3fs") is not None, reason="s3fs is installed")
def test_missing_protocol_package_is_named() -> None:
    with pytest.raises(UserError, match=r"--bank s3://bucket/run: the file system of this URL "
                       "needs a package that is not installed here"):  # fmt: skip
        locate("s3://bucket/run", "--bank")


def test_unwritable_bank_is_named_before_any_work(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path
) -> None:
    """A --bank the coordinator cannot create files in is refused naming it (here a path
    under a regular file)."""
    (tmp_path / "file").write_text("")
    bank = f"file://{tmp_path}/file/bank"
    with pytest.raises(UserError, match=rf"--bank {bank}/hec-run-\w+: cannot create"):
        scaled_chisq(
            complete_cohort, tmp_path / "res", program_cache, ScaleOut(blocks=2, bank=bank)
        )
    assert not (tmp_path / "res.assoc").exists()


def test_unwritable_store_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    store = BlockStore(locate(f"file://{tmp_path}/file/b", "--store"), RunIdentity("a", "j", 1))
    with pytest.raises(UserError, match=rf"--store file://{tmp_path}/file/b: cannot create"):
        store.write(0, 0, 1, "in", {"x": np.zeros(1)})


def test_worker_without_access_to_a_bank_url_is_named(cluster: object, tmp_path: Path) -> None:
    """The workers check a URL bank through fsspec, as they check paths: one they cannot
    write is named with the worker."""
    (tmp_path / "file").write_text("")
    engine = DaskEngine(scheduler=cluster.scheduler_address)  # type: ignore[attr-defined]
    bad = f"file://{tmp_path}/file/bank"
    try:
        with pytest.raises(UserError, match=rf"Dask worker tcp://\S+ cannot use {bad} \(the bank"):
            engine.check_access({"the bank": (bad, "w")})
        with pytest.raises(UserError, match=r"cannot use nosuch://x \(the program\): .*'nosuch'"):
            engine.check_access({"the program": ("nosuch://x", "x")})
        engine.check_access({"the bank": (f"file://{tmp_path}", "w")})  # reachable: no error
    finally:
        engine.close()


def test_store_needs_keys() -> None:
    with pytest.raises(UserError, match="--store needs --keys DIR"):
        ScaleOut(store="file:///tmp/x").check("encrypted")


def test_check_writable_probe_leaves_nothing(memory_root: str) -> None:
    location = locate(f"{memory_root}/bank")
    check_writable(location)
    assert location.names() == []


@pytest.fixture
def s3_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An S3 emulator on loopback (moto's server, no network beyond 127.0.0.1), for s3fs in
    this process and in the Dask workers started after it (they inherit the environment).
    Skipped where s3fs or moto is not installed (neither is a dependency of hec)."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1",
                       "AWS_ENDPOINT_URL_S3": endpoint}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    import fsspec

    fsspec.filesystem("s3", skip_instance_cache=True).mkdir("hec-test")
    try:
        yield endpoint
    finally:
        server.stop()


def test_dask_run_with_the_bank_and_the_store_on_s3(
    s3_endpoint: str,
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    single_assoc: bytes,
) -> None:
    """An object store across processes: the bank (--bank s3://...) read and written by two
    Dask worker processes through s3fs, the block store (--store s3://...) by the coordinator,
    one block by hand then --resume: the single-process .assoc; nothing left in the bucket."""
    import logging

    import fsspec
    from distributed import LocalCluster

    keys, out = tmp_path / "keys", tmp_path / "res"
    store, bank = "s3://hec-test/study.blocks", "s3://hec-test/bank"
    scaled_chisq(complete_cohort, out, program_cache,
           ScaleOut(block=(1, 3), keys=keys, store=store))  # fmt: skip
    s3 = fsspec.filesystem("s3", skip_instance_cache=True)
    assert sorted(p.rsplit("/", 1)[-1] for p in s3.ls("hec-test/study.blocks")) == [
        "block-1-of-3.json", "block-1-of-3.npz"
    ]  # fmt: skip
    workers = LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )  # fmt: skip
    try:
        result = scaled_chisq(complete_cohort, out, program_cache,
                        ScaleOut(keys=keys, resume=True, store=store, bank=bank,
                                 scheduler=workers.scheduler_address))  # fmt: skip
    finally:
        workers.close()
    assert isinstance(result.backend, ScaleOutBackend)
    records = sorted(result.backend.records, key=lambda r: r.index)
    assert [(r.index, r.skipped) for r in records] == [(0, True), (1, False), (2, False)]
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc
    s3.invalidate_cache()
    assert s3.ls("hec-test") == []  # the bank's run directory and the merged blocks removed


def test_fetched_program_and_keys_are_kept_for_two_runs(
    memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker keeps the program and key set it fetched (one fetch per run, not per task), the
    newest CACHED of them: an older run's are deleted from its scratch."""
    from driver import storage

    monkeypatch.setenv("HEC_SCRATCH", str(tmp_path))
    monkeypatch.setattr(storage, "_FETCHED", {})
    urls = []
    for i in range(storage.CACHED + 2):
        locate(f"{memory_root}/run{i}/program").write_atomic(b"binary %d" % i)
        urls.append(f"{memory_root}/run{i}/program")
    copies = [fetch(u, cache=True) for u in urls]
    assert fetch(urls[-1], cache=True) == copies[-1]  # fetched once
    assert [c.exists() for c in copies] == [False, False] + [True] * storage.CACHED
    assert copies[-1].read_bytes() == b"binary %d" % (storage.CACHED + 1)


def test_bank_at_a_plain_path_is_used_in_place(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, single_assoc: bytes
) -> None:
    """--bank DIR (a shared file system mounted at the same path everywhere): the program and
    the key set's public part are copied there with their permissions (the program
    executable, the signing keys private) and the roles use the files in place."""
    bank = tmp_path / "bank"
    seen: dict[str, int] = {}
    from driver import cluster as engines

    original = engines._roles

    def spy(task: engines.BlockTask) -> RoleSequence:
        roles = original(task)
        seen[str(roles.binary)] = roles.binary.stat().st_mode & 0o777
        seen[str(roles.owner_sign)] = roles.owner_sign.stat().st_mode & 0o777
        return roles

    engines._roles = spy
    try:
        scaled_chisq(
            complete_cohort, tmp_path / "res", program_cache, ScaleOut(blocks=2, bank=str(bank))
        )
    finally:
        engines._roles = original
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc
    assert all(p.startswith(str(bank)) for p in seen)  # the bank's copies, in place
    modes = sorted(seen.values())
    assert modes[0] & 0o077 == 0  # the signing key: the owner's only
    assert all(m & 0o100 for p, m in seen.items() if "program" in p)  # executable
    assert list(bank.iterdir()) == []


def test_remove_that_fails_is_a_user_error_naming_the_location(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: `Location.remove` let any error but FileNotFoundError out raw, so the scale-out
    run's `suppress(UserError)` around removing the bank caught nothing and a permission error
    there became a traceback hiding the run's own outcome. It is a UserError naming the place."""
    target = locate(str(tmp_path / "bank"))
    target.makedirs()

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(target.fs, "rm", refuse)
    with pytest.raises(UserError, match=rf"{tmp_path}/bank: cannot remove"):
        target.remove(recursive=True)


def test_uploaded_signing_key_is_never_readable_by_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: `upload` wrote each file under the umask's mode (0644) and narrowed it to the
    source's 0600 only after the rename, so a signing key copied into a --bank on a shared file
    system could be read by others meanwhile. The temporary file now has the final mode from
    the start (checked at its fsync, before it gets its name)."""
    import os

    key = tmp_path / "owner.sign"
    key.write_bytes(b"secret")
    key.chmod(0o600)
    modes: list[int] = []
    fsync = os.fsync

    def spy(fd: int) -> None:
        modes.append(os.fstat(fd).st_mode & 0o777)
        fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    upload(key, locate(str(tmp_path / "bank")).child("parties", "owner.sign"))
    assert modes == [0o600]
    assert (tmp_path / "bank" / "parties" / "owner.sign").stat().st_mode & 0o777 == 0o600


def test_failed_server_pass_leaves_no_copies_on_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: with a URL bank, `compute_block` copied the block's ciphertexts into a local
    attempt directory and removed it only after a successful upload: a failing compute role
    (or fetch) left the copies (a block's upload: gigabytes) in a long-lived worker's scratch.
    The failure is still the role's message."""
    from driver import storage
    from driver.cluster import BlockTask, Encrypted, compute_block

    monkeypatch.setenv("HEC_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setattr(storage, "_FETCHED", {})
    bank = tmp_path / "bank"
    program = bank / "program" / "prog"
    program.parent.mkdir(parents=True)
    program.write_text("#!/bin/sh\necho 'the server pass failed here' >&2\nexit 3\n")
    (bank / "keyset" / "keys").mkdir(parents=True)
    (bank / "keyset" / "parties").mkdir()
    (bank / "ct").mkdir()
    (bank / "ct" / "x.cts").write_bytes(b"ciphertext")
    task = BlockTask(0, f"file://{program}", f"file://{bank}/keyset", (), "", f"file://{bank}")
    with pytest.raises(UserError, match="the server pass failed here"):
        compute_block(task, Encrypted(f"file://{bank}/ct", "w", 0.0, 0))
    assert list(storage.worker_cache().glob("attempt-*")) == []


def test_removing_a_local_store_never_deletes_a_file_written_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: `BlockStore.remove` listed the directory and, when it looked empty, removed
    it recursively, so a file another process wrote between the two (a block of a concurrent
    --block run sharing the store) was deleted with it. On a local file system the directory
    is removed only if it is empty at that moment (rmdir), as before fsspec. The late file is
    written at the last moment before the directory goes: after a listing, or before rmdir."""
    import os

    from driver.storage import Location

    store = BlockStore(tmp_path / "res.blocks", RunIdentity("a" * 32, "job", 2))
    store.write(0, 0, 5, "in", {"n11": np.arange(5.0)})
    late = tmp_path / "res.blocks" / "block-1-of-3.json"
    listed, rmdir = Location.names, os.rmdir

    def names_then_a_late_write(self: Location) -> list[str]:
        out = listed(self)
        if self.local == tmp_path / "res.blocks":
            late.write_text("{}")
        return out

    def late_write_then_rmdir(path: str | os.PathLike[str], *args: object, **kw: object) -> None:
        if Path(path) == tmp_path / "res.blocks":
            late.write_text("{}")
        rmdir(path)

    monkeypatch.setattr(Location, "names", names_then_a_late_write)
    monkeypatch.setattr(os, "rmdir", late_write_then_rmdir)
    store.remove()
    assert late.exists()
    assert not store.meta_path(0).exists() and not store.data_path(0).exists()
