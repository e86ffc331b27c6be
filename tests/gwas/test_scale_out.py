"""`hec gwas chisq` split into SNP blocks (issue 26, docs/scale-out.md): blocks run apart with
one reused key set (--keys, --block k/n), a resumed run that recomputes only the missing
blocks, a Dask cluster that loses a worker mid-run, and the errors of each (an unreachable
scheduler, a worker that cannot reach the run's files, blocks of another run). Results are
compared with the single-process run's .assoc byte for byte: the programs reveal exact
integer counts, so the merged results do not depend on how the blocks were run."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from gwas_fixtures import PlinkCohort, scaled_chisq

from compiler.errors import UserError
from driver.blockstore import BlockStore, RunIdentity, parse_block_spec, partition
from driver.cluster import DaskEngine
from gwas.chisq import ChisqResult
from gwas.scaleout import ScaleOut, ScaleOutBackend
from hec.cli import main


def _records(result: ChisqResult) -> ScaleOutBackend:
    assert isinstance(result.backend, ScaleOutBackend)
    return result.backend


def test_partition_covers_once_on_ciphertext_boundaries() -> None:
    assert partition(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert partition(40000, 4, 8192) == [(0, 8192), (8192, 16384), (16384, 24576), (24576, 40000)]
    assert partition(300, 4, 8192) == [(0, 75), (75, 150), (150, 225), (225, 300)]
    with pytest.raises(UserError, match="3 SNPs cannot be split into 4 blocks"):
        partition(3, 4)


@pytest.mark.parametrize(
    ("spec", "message"),
    [("3", "expected K/N"), ("0/4", "between 1 and N"), ("5/4", "between 1 and N"),
     ("a/b", "expected K/N")],
)  # fmt: skip
def test_block_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        parse_block_spec(spec)


def test_blocks_by_hand_then_resume_recomputes_only_the_missing(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, single_assoc: bytes
) -> None:
    """Blocks 1 and 2 of 4 run by hand under one --keys (a run stopped at half); --resume
    verifies them, recomputes only blocks 3 and 4, and merges: the single-process .assoc."""
    keys, out = tmp_path / "keys", tmp_path / "res"
    for k in (1, 2):
        result = scaled_chisq(
            complete_cohort, out, program_cache, ScaleOut(block=(k, 4), keys=keys)
        )
        assert result.files == []
        assert [r.index for r in _records(result).records] == [k - 1]
    stored = sorted(p.name for p in (tmp_path / "res.blocks").iterdir())
    assert stored == ["block-1-of-4.json", "block-1-of-4.npz", "block-2-of-4.json",
                      "block-2-of-4.npz"]  # fmt: skip
    assert not (tmp_path / "res.assoc").exists()
    result = scaled_chisq(complete_cohort, out, program_cache, ScaleOut(keys=keys, resume=True))
    records = _records(result).records
    assert sorted(r.index for r in records if r.skipped) == [0, 1]
    assert sorted(r.index for r in records if not r.skipped) == [2, 3]  # recomputed: 2 of 4
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc
    assert "--resume: 2 finished block(s) verified and skipped" in result.log_text
    assert "key set reused from" in result.log_text
    assert not (tmp_path / "res.blocks").exists()  # merged: the block files are gone


def test_row_shards_in_one_process(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, single_assoc: bytes
) -> None:
    """Each block's rows encrypted in 3 shards (encrypt --rows A:B), computed as one."""
    result = scaled_chisq(complete_cohort, tmp_path / "res", program_cache,
                    ScaleOut(blocks=2, row_shards=3))  # fmt: skip
    assert "each block's rows encrypted in 3 row shards" in result.log_text
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc


def test_resume_recomputes_a_damaged_block(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path, single_assoc: bytes
) -> None:
    """A stored block whose data no longer matches its digest is not trusted: recomputed."""
    keys, out = tmp_path / "keys", tmp_path / "res"
    for k in (1, 2):
        scaled_chisq(complete_cohort, out, program_cache, ScaleOut(block=(k, 2), keys=keys))
    npz = tmp_path / "res.blocks" / "block-2-of-2.npz"
    data = bytearray(npz.read_bytes())
    data[-30] ^= 0xFF
    npz.write_bytes(bytes(data))
    result = scaled_chisq(complete_cohort, out, program_cache, ScaleOut(keys=keys, resume=True))
    records = _records(result).records
    assert [(r.index, r.skipped) for r in sorted(records, key=lambda r: r.index)] == [
        (0, True), (1, False)
    ]  # fmt: skip
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc


def test_blocks_of_another_run_are_refused_naming_the_block(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path
) -> None:
    out = tmp_path / "res"
    scaled_chisq(complete_cohort, out, program_cache, ScaleOut(block=(1, 2), keys=tmp_path / "k1"))
    with pytest.raises(UserError, match=r"block-1-of-2\.json: block from another run"):
        scaled_chisq(
            complete_cohort, out, program_cache, ScaleOut(block=(2, 2), keys=tmp_path / "k2")
        )
    # Same keys, another partition: also another run.
    with pytest.raises(
        UserError, match=r"block-1-of-2\.json: block from another run .*this run has 3"
    ):
        scaled_chisq(complete_cohort, out, program_cache,
               ScaleOut(block=(1, 3), keys=tmp_path / "k1"))  # fmt: skip
    assert not (tmp_path / "res.assoc").exists()


def test_keys_of_another_program_are_refused(
    complete_cohort: PlinkCohort, missing_cohort: PlinkCohort, tmp_path: Path, program_cache: Path
) -> None:
    """Keys kept for chisq.hec on 200 individuals cannot encrypt chisq_missing.hec's inputs."""
    keys = tmp_path / "keys"
    scaled_chisq(complete_cohort, tmp_path / "a", program_cache, ScaleOut(keys=keys))
    with pytest.raises(UserError, match=rf"--keys {keys}: the key set was made for program "
                       "chisq with 200 individuals; this run needs chisq_missing"):  # fmt: skip
        scaled_chisq(missing_cohort, tmp_path / "b", program_cache, ScaleOut(keys=keys))


def test_keys_directory_without_a_key_set_is_refused(
    complete_cohort: PlinkCohort, tmp_path: Path, program_cache: Path
) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "notes.txt").write_text("not a key set")
    with pytest.raises(UserError, match=rf"--keys {keys}: the directory is not empty but holds "):
        scaled_chisq(complete_cohort, tmp_path / "a", program_cache, ScaleOut(keys=keys))


def test_block_store_refuses_a_foreign_record(tmp_path: Path) -> None:
    import numpy as np

    mine = BlockStore(tmp_path, RunIdentity("a" * 32, "job", 2))
    mine.write(0, 0, 5, "in", {"n11": np.arange(5.0)})
    assert mine.read(0, 0, 5, "in").values["n11"].tolist() == [0, 1, 2, 3, 4]
    with pytest.raises(UserError, match="inputs_sha256"):
        mine.read(0, 0, 5, "other inputs")
    theirs = BlockStore(tmp_path, RunIdentity("b" * 32, "job", 2))
    with pytest.raises(UserError, match=r"block-1-of-2\.json: block from another run"):
        theirs.check_run()


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        (ScaleOut(block=(1, 2)), "--block needs --keys DIR"),
        (ScaleOut(resume=True), "--resume needs --keys DIR"),
        (ScaleOut(workers=2, scheduler="tcp://127.0.0.1:1"), "give one"),
    ],
)
def test_option_errors(scale: ScaleOut, message: str) -> None:
    with pytest.raises(UserError, match=message):
        scale.check("encrypted")


def test_scale_out_refuses_the_simulator() -> None:
    with pytest.raises(UserError, match="--backend sim has nothing to split"):
        ScaleOut(workers=2).check("sim")


def test_cli_block_then_resume(
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    single_assoc: bytes,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["gwas", "chisq", "--bfile", str(complete_cohort.prefix), "--out",
            str(tmp_path / "res"), "--cache-dir", str(program_cache), "--no-progress",
            "--no-plots", "--keys", str(tmp_path / "keys")]  # fmt: skip
    assert main([*base, "--block", "2/2"]) == 0
    assert "block 2/2 stored in res.blocks/" in capsys.readouterr().out
    assert main([*base, "--resume"]) == 0
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_names_the_address() -> None:
    address = f"tcp://127.0.0.1:{_free_port()}"
    started = time.perf_counter()
    with pytest.raises(UserError, match=f"--scheduler {address}: no Dask scheduler answered"):
        DaskEngine(scheduler=address)
    assert time.perf_counter() - started < 30


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    """A LocalCluster of 2 worker processes, each under a nanny (which restarts it)."""
    import logging

    from distributed import LocalCluster

    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    ) as c:  # fmt: skip
        yield c


def test_worker_without_the_bank_path_is_named(cluster: object, tmp_path: Path) -> None:
    """The workers check every path of the run before the first block: one they cannot
    reach (here, a directory that exists for nobody) is named with the worker."""
    engine = DaskEngine(scheduler=cluster.scheduler_address)  # type: ignore[attr-defined]
    missing = tmp_path / "not-on-the-workers"
    try:
        with pytest.raises(UserError, match=rf"Dask worker tcp://\S+ cannot use {missing} "):
            engine.check_access({"the bank": (str(missing), "w")})
        engine.check_access({"the bank": (str(tmp_path), "w")})  # reachable: no error
    finally:
        engine.close()


def test_dask_run_survives_a_killed_worker(
    cluster: object,
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    single_assoc: bytes,
) -> None:
    """Acceptance: 2 workers, one killed (SIGKILL) while it runs a block's task (a row shard's
    encryption or the server pass); its nanny restarts it, the scheduler runs the task again,
    and the merged .assoc is the single-process one, every block stored exactly once."""
    from distributed import Client

    address = cluster.scheduler_address  # type: ignore[attr-defined]
    watcher = Client(address)
    pids = cast(dict[str, int], watcher.run(os.getpid))
    killed: list[tuple[int, str]] = []

    def kill_first_busy_worker() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            processing = cast(dict[str, list[str]], watcher.processing())
            for worker, keys in processing.items():
                busy = [k for k in keys if str(k).startswith(("hec-encrypt-", "hec-block-"))]
                if busy and worker in pids:
                    time.sleep(0.05)  # inside the task: its role is running
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pids[worker], signal.SIGKILL)
                    killed.append((pids[worker], str(busy[0])))
                    return
            time.sleep(0.01)

    thread = threading.Thread(target=kill_first_busy_worker, daemon=True)
    thread.start()
    try:
        result = scaled_chisq(complete_cohort, tmp_path / "res", program_cache,
                        ScaleOut(scheduler=address, blocks=6))  # fmt: skip
    finally:
        thread.join(timeout=5)
    assert killed, "no block task was seen running"
    records = _records(result).records
    assert sorted(r.index for r in records) == list(range(6))  # none missing, none twice
    killed_pid, killed_key = killed[0]
    killed_index = int(killed_key.split("-")[2])
    rerun = next(r for r in records if r.index == killed_index)
    assert not rerun.worker.endswith(f":{killed_pid}")  # it finished on another process
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc
    watcher.wait_for_workers(2, timeout=60)  # the nanny restarted the killed worker
    watcher.close()


def test_workers_flag_starts_a_local_cluster(
    complete_cohort: PlinkCohort,
    tmp_path: Path,
    program_cache: Path,
    single_assoc: bytes,
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = scaled_chisq(complete_cohort, tmp_path / "res", program_cache, ScaleOut(workers=2))
    assert "Dask LocalCluster of 2 worker processes" in result.log_text
    assert len(_records(result).records) == 2  # one block per worker
    assert (tmp_path / "res.assoc").read_bytes() == single_assoc


@pytest.mark.parametrize(
    ("scale", "flag"),
    [
        (ScaleOut(store="s3://bucket/run"), "--store"),
        (ScaleOut(bank="/shared/bank"), "--bank"),
        (ScaleOut(row_shards=2), "--row-shards"),
    ],
)
def test_scale_out_refusal_of_the_simulator_names_the_flag_given(
    scale: ScaleOut, flag: str
) -> None:
    """Regression: --store, --bank and --row-shards also make a run a scale-out run, but the
    refusal under --backend sim listed only the older flags, none of which the user gave."""
    with pytest.raises(UserError, match=rf"{flag} .*--backend sim has nothing to split"):
        scale.check("sim")
