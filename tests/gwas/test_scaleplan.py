"""The arithmetic of the scale-out wall-time model and cluster plan (gwas/scaleplan.py,
docs/scale.md), on made-up calibrations: no timing here (bench/run gwas-scale-plan measures)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gwas.scaleplan import (
    Calibration,
    Compiled,
    blocks_wall,
    calibration_of,
    compiled_for,
    describe,
    fit,
    from_log,
    plan,
)

SMALL = Compiled(log_n=12, primes=2, columns_per_ciphertext=12288, upload_per_individual=0,
                 snps=24576)  # fmt: skip


def _cal(**changes: float) -> Calibration:
    base = Calibration(
        individuals=2000, snps=24576, blocks=2, workers=2, wall_seconds=30.0,
        encrypt_seconds=8.0, compute_seconds=2.0, coordinator_seconds=12.0, log_n=12, primes=2,
        ciphertexts_per_block=1,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)


def test_blocks_wall_spreads_encryption_over_workers_and_passes_over_blocks() -> None:
    assert blocks_wall(8.0, 2.0, 4, 2) == 5.0  # B >= W: t_block x B / W
    assert blocks_wall(8.0, 2.0, 1, 4) == 8.0 / 4 + 2.0  # one block: its pass is one task


def test_calibration_splits_the_wall_time() -> None:
    cal = _cal()
    assert cal.block_seconds == 5.0
    assert cal.blocks_seconds == 5.0
    assert cal.fixed_seconds == 30.0 - 12.0 - 5.0


def test_plan_reproduces_the_calibration_and_scales_blocks_and_snps() -> None:
    cal = _cal()
    same = plan(cal, 2000, 24576, SMALL, 2)
    assert same.cost_ratio == 1.0
    assert same.wall(2) == pytest.approx(30.0)
    # Three times the SNPs in three times the blocks (same parameters): the coordinator and
    # the tasks three times, the fixed part once.
    bigger = plan(cal, 2000, 73728, SMALL, 6)
    assert bigger.wall(2) == pytest.approx(13.0 + 3 * 12.0 + 3 * 10.0 / 2)
    assert bigger.wall(6) == pytest.approx(13.0 + 3 * 12.0 + 3 * 10.0 / 6)


def test_blocks_smaller_than_a_ciphertext_each_pay_a_whole_one() -> None:
    cal = _cal()
    wide = Compiled(12, 2, 73728, 0, 73728)  # one ciphertext holds every SNP
    assert plan(cal, 2000, 73728, wide).blocks == 1
    one, six = plan(cal, 2000, 73728, wide), plan(cal, 2000, 73728, wide, 6)
    assert six.encrypt_seconds == pytest.approx(6 * one.encrypt_seconds)


def test_cost_ratio_and_bank_of_a_larger_ring() -> None:
    cal = _cal()
    big = Compiled(log_n=15, primes=11, columns_per_ciphertext=557056,
                   upload_per_individual=5767168, snps=500000)  # fmt: skip
    p = plan(cal, 100_000, 500_000, big)
    assert p.cost_ratio == pytest.approx((11 * 2**15 * 15) / (2 * 2**12 * 12))
    assert p.blocks == 1
    assert p.bank_bytes == 5767168 * 100_000
    assert p.input_bytes == 100_000 * 500_000
    assert p.bytes_per_individual_per_snp == pytest.approx(5767168 / 500_000)
    # Task seconds: 5 s per block of 2000 individuals x 1 ciphertext, times the cost ratio.
    per_ct = 10.0 / (2000 * 2)
    assert p.encrypt_seconds + p.compute_seconds == pytest.approx(per_ct * p.cost_ratio * 100_000)
    assert p.coordinator_seconds == pytest.approx(12.0 * (100_000 * 500_000) / (2000 * 24576))


def test_workers_for_a_target_is_the_fewest_that_finish() -> None:
    cal = _cal(coordinator_seconds=0.0, wall_seconds=18.0)  # fixed 13 s
    p = plan(cal, 2000, 24576 * 50, SMALL, 100)  # 100 blocks of 5 s: 500 task seconds
    assert p.wall(10) == pytest.approx(13.0 + 50.0)
    w = p.workers_for(63.0)
    assert w == 10
    assert p.wall(w - 1) > 63.0
    assert p.workers_for(13.5) is None  # below fixed + one block's server pass (1 s)
    assert p.bandwidth(10) == pytest.approx(2 * (p.bank_bytes + p.input_bytes) / 50.0)


def test_describe_names_the_unreachable_target() -> None:
    p = plan(_cal(), 100_000, 500_000, Compiled(15, 11, 557056, 5767168, 500000))
    lines = describe(p, (0.001, 1000.0))
    assert "wall 0.001 h: not reachable by adding workers" in lines[2]
    assert "tasks alone in 0.001 h: not reachable" in lines[3]
    assert lines[4].startswith("wall 1000 h: 1 workers")
    assert lines[5].startswith("  tasks alone in 1000 h (coordinator phases spread too): 1 workers")


def test_workers_for_the_tasks_alone_leave_the_coordinator_out() -> None:
    cal = _cal(coordinator_seconds=100.0, wall_seconds=118.0)  # fixed 13 s
    p = plan(cal, 2000, 24576 * 50, SMALL, 100)  # 500 task seconds, coordinator 5000 s
    assert p.workers_for(1000.0) is None
    assert p.workers_for_tasks(50.0) == 10


def test_from_log_reads_the_phases_and_the_tasks_line() -> None:
    log = (
        "  4 block(s) encrypted and computed in 8.60 s wall (encrypt 15.65 s, compute 3.53 s "
        "summed over the tasks)\n"
        "phases (peak resident set of each phase):\n"
        "  read            0.637 s   peak 170.7 MiB\n"
        "  scan            5.143 s   peak 520.1 MiB\n"
        "  compile         5.590 s   peak 189.9 MiB\n"
        "  inputs          2.615 s   peak 532.3 MiB\n"
        "  blocks          8.596 s   peak 50.5 MiB (the role's process)\n"
        "  write           0.380 s   peak 238.9 MiB\n"
    )
    cal = from_log(log, 1000, 32768, 2, 28.0, Compiled(13, 2, 32768, 262144, 32768))
    assert (cal.blocks, cal.encrypt_seconds, cal.compute_seconds) == (4, 15.65, 3.53)
    assert cal.coordinator_seconds == pytest.approx(0.637 + 5.143 + 2.615 + 0.380)
    assert cal.ciphertexts_per_block == 1  # 8192 SNPs of a 32768-column ciphertext
    assert calibration_of(cal.as_dict()) == cal
    with pytest.raises(ValueError, match="no line of the blocks' tasks"):
        from_log("phases:\n", 1000, 32768, 2, 28.0, Compiled(13, 2, 32768, 262144, 32768))


def test_the_full_size_program_uploads_about_12_bytes_per_snp(program_cache: Path) -> None:
    """chisq.hec at N = 100,000, M = 500,000 (compiled, not run): one ciphertext of 2^15 slots
    and 11 primes per individual holds every SNP (packed counts)."""
    c = compiled_for(100_000, 500_000, program_cache)
    assert (c.log_n, c.primes) == (15, 11)
    assert c.ciphertexts(500_000) == 1
    assert 10 < c.upload_per_individual / 500_000 < 13


def test_fit_splits_the_coordinator_into_a_constant_and_a_part_in_m() -> None:
    small = _cal(snps=24576, blocks=2, coordinator_seconds=10.0)
    large = _cal(snps=36864, blocks=3, coordinator_seconds=13.0, wall_seconds=40.0)
    cal = fit(small, large)
    assert cal.coordinator_fixed_seconds == pytest.approx(10.0 - 3.0 / 12288 * 24576)  # 4 s
    assert cal.blocks == 3 and cal.wall_seconds == 40.0  # the larger run
    # Twice the larger run's SNPs: the constant once, the rest twice.
    p = plan(cal, 2000, 73728, SMALL, 6)
    assert p.coordinator_seconds == pytest.approx(4.0 + 2 * 9.0)
    with pytest.raises(ValueError, match="one N and one ring"):
        fit(large, small)
    # A slope steeper than the runs allow leaves no negative constant.
    assert fit(small, _cal(snps=36864, coordinator_seconds=40.0)).coordinator_fixed_seconds == 0


def test_command_line_plan_from_a_saved_calibration(
    tmp_path: Path, program_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from gwas.scaleplan import main

    saved = tmp_path / "cal.json"
    saved.write_text(json.dumps(_cal().as_dict()))
    assert main([str(saved), "--individuals", "100000", "--snps", "500000", "--hours", "8",
                 "--cache-dir", str(program_cache)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert re.match(r"N = 100,000, M = 500,000: \d+\.\d\d bytes per individual per SNP", out)
    assert "wall 8 h: " in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{not json", "not a saved calibration"),
        ("[1, 2]", "not a saved calibration"),
        ('{"individuals": 1000}', "not a saved calibration"),
    ],
)
def test_command_line_refuses_a_bad_calibration_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    """Regression: a missing, unparsable or incomplete calibration file ended
    `python -m gwas.scaleplan` in a traceback (FileNotFoundError, JSONDecodeError, TypeError);
    it is a one-line error naming the file, exit status 2."""
    from gwas.scaleplan import main

    saved = tmp_path / "cal.json"
    if content is not None:
        saved.write_text(content)
    with pytest.raises(SystemExit) as exit_:
        main([str(saved)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{saved}: {message}" in err
    assert "Traceback" not in err
