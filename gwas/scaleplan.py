"""The wall-time model of a scaled-out `hec gwas chisq` run, and the cluster plan it gives for a
study size (issue 26, docs/scale.md).

A run on an engine of W workers (gwas/scaleout.py) is, in wall time,

    T = fixed + coordinator + blocks
    fixed        start-up, cached compile, keygen, the cluster's start: independent of N and M
    coordinator  the coordinator's plaintext phases, one process (read, scan, writing the
                 blocks' inputs to the bank, decrypt, statistics, write): a constant (`fit`
                 of two runs finds it) and a part in proportion to N x M
    blocks       the tasks: per block, its encryption (split into row shards, run in
                 parallel) and its server pass (one task). With B >= W blocks of equal work,
                 blocks = t_block x B / W (t_block: one block's task seconds); with B < W the
                 encryption still spreads over W workers, the B server passes cannot:
                 blocks = encrypt / W + compute / B

`Calibration` holds what one run at a scaled-down size measures (`from_log` reads it from the
run's .log); `plan` carries it to another size: that size's compiled parameters (ring
dimension, primes, SNP columns per ciphertext) from the compiler, the task seconds per
individual and ciphertext scaled by the cost of one encryption (primes x n log2 n: 1 where the
parameters are the calibration's), the coordinator's seconds by N x M, the fixed seconds as
they are; `Plan.wall(W)` is T on W workers (bench/run gwas-scale-plan checks it against a
measured run), `Plan.workers_for` the workers a target wall time needs, `Plan.bandwidth` the
bytes per second the bank then serves.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

# Phases of a run's .log that the coordinator runs on plaintext, in proportion to N x M.
COORDINATOR_PHASES = ("read", "scan", "inputs", "decrypt", "client", "write")
_PHASE = re.compile(r"^  (\w+) +([0-9.]+) s   peak", re.M)
_TASKS = re.compile(
    r"(\d+) block\(s\) encrypted and computed in ([0-9.]+) s wall \(encrypt ([0-9.]+) s, "
    r"compute ([0-9.]+) s summed over the tasks\)"
)


@dataclass(frozen=True)
class Calibration:
    """One run measured at a scaled-down size (N individuals, M SNPs in `blocks` blocks on
    `workers` workers), with the compiled parameters its tasks ran."""

    individuals: int
    snps: int
    blocks: int
    workers: int
    wall_seconds: float  # the whole command
    encrypt_seconds: float  # summed over every block's encryption tasks
    compute_seconds: float  # summed over the server passes
    coordinator_seconds: float  # COORDINATOR_PHASES
    log_n: int
    primes: int
    ciphertexts_per_block: int  # per individual and encrypted input set
    # The share of coordinator_seconds that does not grow with N x M (`fit` of two runs; 0
    # from one run): on a machine whose cores the coordinator shares, the cluster's start
    # slows its first phases by a constant.
    coordinator_fixed_seconds: float = 0.0

    @property
    def block_seconds(self) -> float:
        """t_block: one block's task seconds (encryption shards and server pass)."""
        return (self.encrypt_seconds + self.compute_seconds) / self.blocks

    @property
    def blocks_seconds(self) -> float:
        return blocks_wall(self.encrypt_seconds, self.compute_seconds, self.blocks, self.workers)

    @property
    def fixed_seconds(self) -> float:
        """What the model does not scale: the wall time less the coordinator and the tasks."""
        return self.wall_seconds - self.coordinator_seconds - self.blocks_seconds

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def fit(small: Calibration, large: Calibration) -> Calibration:
    """Two runs at one N and one set of parameters (M and blocks of `large` larger): `large`
    with the fixed share of its coordinator seconds, from the straight line through the two
    runs' coordinator seconds against M (clamped to [0, small's seconds])."""
    if (small.individuals, small.log_n, small.primes) != (
        large.individuals,
        large.log_n,
        large.primes,
    ) or large.snps <= small.snps:
        raise ValueError("fit needs two runs of one N and one ring, the second with more SNPs")
    slope = (large.coordinator_seconds - small.coordinator_seconds) / (large.snps - small.snps)
    fixed = min(max(small.coordinator_seconds - slope * small.snps, 0.0), small.coordinator_seconds)
    return replace(large, coordinator_fixed_seconds=fixed)


def blocks_wall(encrypt: float, compute: float, blocks: int, workers: int) -> float:
    """Wall seconds of the tasks on `workers` (see the module): the encryption spreads over
    every worker (row shards), the server passes over at most one worker per block."""
    if blocks >= workers:
        return (encrypt + compute) / workers
    return encrypt / workers + compute / blocks


def from_log(
    log: str, individuals: int, snps: int, workers: int, wall_seconds: float, compiled: Compiled
) -> Calibration:
    """The calibration a finished run's .log text holds (its phases and its tasks' line)."""
    phases = {m.group(1): float(m.group(2)) for m in _PHASE.finditer(log)}
    tasks = _TASKS.search(log)
    if tasks is None:
        raise ValueError("the log has no line of the blocks' tasks (a run without blocks?)")
    blocks = int(tasks.group(1))
    return Calibration(
        individuals, snps, blocks, workers, wall_seconds, float(tasks.group(3)),
        float(tasks.group(4)), sum(phases.get(p, 0.0) for p in COORDINATOR_PHASES),
        compiled.log_n, compiled.primes, compiled.ciphertexts(snps // blocks),
    )  # fmt: skip


@dataclass(frozen=True)
class Compiled:
    """The compiled parameters that set a run's cost: the ring, the primes, the SNP columns
    one ciphertext holds, and the ciphertext bytes one individual uploads for all M SNPs."""

    log_n: int
    primes: int
    columns_per_ciphertext: int
    upload_per_individual: int
    snps: int

    def ciphertexts(self, width: int) -> int:
        """Ciphertexts per individual (and encrypted input set) of a block of `width` SNPs."""
        return max(1, -(-width // self.columns_per_ciphertext))

    @property
    def encryption_cost(self) -> float:
        """Relative cost of one encryption: primes x n log2 n (NTTs of every prime)."""
        return self.primes * 2**self.log_n * self.log_n


def compiled_for(individuals: int, snps: int, cache_dir: Path | None = None) -> Compiled:
    """chisq.hec compiled for N and M (cached; a few seconds): what the plan scales by."""
    from gwas.backend import compile_cached
    from gwas.chisq import DEFAULT_PRECISION_BITS

    source = Path(__file__).parent / "programs" / "chisq.hec"
    c = compile_cached(source, {"N": individuals, "M": snps}, DEFAULT_PRECISION_BITS, cache_dir)
    params = c.report["params"]
    return Compiled(
        int(params["log_n"]), int(params["primes"]), c.columns_per_ciphertext,
        int(c.report["sizes"]["upload_per_individual"]), snps,
    )  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """A cluster plan for one study size (seconds, bytes)."""

    individuals: int
    snps: int
    bytes_per_individual_per_snp: float
    bank_bytes: int  # the ciphertexts the data owners upload (the report's figure)
    input_bytes: int  # the plaintext block inputs in the bank (one byte per genotype)
    blocks: int  # one per ciphertext of each individual (smaller blocks add ciphertexts)
    cost_ratio: float  # one encryption at the study's parameters / at the calibration's
    encrypt_seconds: float  # summed over the tasks
    compute_seconds: float
    coordinator_seconds: float
    fixed_seconds: float

    def blocks_wall(self, workers: int) -> float:
        return blocks_wall(self.encrypt_seconds, self.compute_seconds, self.blocks, workers)

    def wall(self, workers: int) -> float:
        return self.fixed_seconds + self.coordinator_seconds + self.blocks_wall(workers)

    def workers_for(self, wall_seconds: float, most: int = 1_000_000) -> int | None:
        """The fewest workers that finish within `wall_seconds` (None: no number does, the
        coordinator's share and the server passes alone take longer)."""
        if self.wall(most) > wall_seconds:
            return None
        lo, hi = 1, most
        while lo < hi:  # wall() falls as workers grow
            mid = (lo + hi) // 2
            if self.wall(mid) <= wall_seconds:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def workers_for_tasks(self, wall_seconds: float, most: int = 1_000_000) -> int | None:
        """The fewest workers whose tasks alone finish within `wall_seconds` (the coordinator's
        plaintext phases left out: what the encrypted part needs once they are spread too)."""
        alone = Plan(**{**asdict(self), "coordinator_seconds": 0.0, "fixed_seconds": 0.0})
        return alone.workers_for(wall_seconds, most)

    def bandwidth(self, workers: int) -> float:
        """Bytes per second the bank serves during the tasks: the inputs written by the
        coordinator and read by the encryption, the ciphertexts written by it and read by the
        server passes."""
        return 2 * (self.bank_bytes + self.input_bytes) / self.blocks_wall(workers)


def plan(
    cal: Calibration, individuals: int, snps: int, compiled: Compiled, blocks: int = 0
) -> Plan:
    """The plan for N = `individuals`, M = `snps` (`compiled`: chisq.hec for that size) in
    `blocks` blocks (0: one per ciphertext of an individual, the fewest that keep every
    block's encryption whole ciphertexts; more blocks than that add ciphertexts)."""
    per_ct = (cal.encrypt_seconds + cal.compute_seconds) / (
        cal.individuals * cal.ciphertexts_per_block * cal.blocks
    )
    share = cal.encrypt_seconds / (cal.encrypt_seconds + cal.compute_seconds)
    ratio = compiled.encryption_cost / (cal.primes * 2**cal.log_n * cal.log_n)
    blocks = blocks or compiled.ciphertexts(snps)
    task = per_ct * ratio * individuals * blocks * compiled.ciphertexts(-(-snps // blocks))
    genotypes = individuals * snps / (cal.individuals * cal.snps)
    growing = cal.coordinator_seconds - cal.coordinator_fixed_seconds
    return Plan(
        individuals, snps, compiled.upload_per_individual / snps,
        compiled.upload_per_individual * individuals, individuals * snps, blocks, ratio,
        task * share, task * (1 - share), cal.coordinator_fixed_seconds + growing * genotypes,
        cal.fixed_seconds,
    )  # fmt: skip


def describe(p: Plan, hours: tuple[float, ...] = (1.0, 8.0)) -> list[str]:
    """The plan as lines for people (docs/scale.md shows them)."""
    gb = 1e9
    lines = [
        f"N = {p.individuals:,}, M = {p.snps:,}: {p.bytes_per_individual_per_snp:.2f} bytes per "
        f"individual per SNP, bank {p.bank_bytes / gb:,.0f} GB of ciphertexts + "
        f"{p.input_bytes / gb:,.0f} GB of plaintext block inputs; {p.blocks} block(s)",
        f"task seconds: encrypt {p.encrypt_seconds:,.0f}, server passes {p.compute_seconds:,.0f} "
        f"(one encryption costs {p.cost_ratio:.1f}x the calibration's); coordinator "
        f"{p.coordinator_seconds:,.0f} s, fixed {p.fixed_seconds:,.0f} s",
    ]
    floor = p.fixed_seconds + p.coordinator_seconds + p.compute_seconds / p.blocks
    for h in hours:
        w = p.workers_for(h * 3600)
        if w is None:
            lines.append(
                f"wall {h:g} h: not reachable by adding workers (coordinator, fixed and the "
                f"server passes take {floor / 3600:.2f} h)"
            )
        else:
            lines.append(
                f"wall {h:g} h: {w:,} workers (predicted {p.wall(w) / 3600:.2f} h), the bank "
                f"serving {p.bandwidth(w) / gb:.2f} GB/s"
            )
        t = p.workers_for_tasks(h * 3600)
        if t is None:
            lines.append(f"  tasks alone in {h:g} h: not reachable (one server pass is longer)")
        else:
            lines.append(
                f"  tasks alone in {h:g} h (coordinator phases spread too): {t:,} workers, the "
                f"bank serving {p.bandwidth(t) / gb:.2f} GB/s"
            )
    return lines


def calibration_of(values: dict[str, float | int]) -> Calibration:
    """A `Calibration` from its `as_dict()` (e.g. a benchmark's saved JSON)."""
    fields = Calibration.__dataclass_fields__
    return Calibration(**{k: v for k, v in values.items() if k in fields})  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    """`python -m gwas.scaleplan CALIBRATION.json [--individuals N] [--snps M] [--hours H..]`:
    the plan from a saved calibration (bench/run gwas-scale-plan --save FILE writes one)."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m gwas.scaleplan", description=main.__doc__)
    ap.add_argument("calibration", type=Path)
    ap.add_argument("--individuals", type=int, default=100_000)
    ap.add_argument("--snps", type=int, default=500_000)
    ap.add_argument("--hours", type=float, nargs="+", default=[1.0, 8.0])
    ap.add_argument("--cache-dir", type=Path, help="compiled-program cache directory")
    args = ap.parse_args(argv)
    try:
        cal = calibration_of(json.loads(args.calibration.read_text()))
    except OSError as err:
        ap.error(f"{args.calibration}: cannot read ({err.strerror or err})")
    except (ValueError, TypeError, AttributeError) as err:  # bad JSON, missing fields
        ap.error(
            f"{args.calibration}: not a saved calibration (bench/run gwas-scale-plan --save "
            f"writes one): {err}"
        )
    compiled = compiled_for(args.individuals, args.snps, args.cache_dir)
    p = plan(cal, args.individuals, args.snps, compiled)
    print("\n".join(describe(p, tuple(args.hours))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
