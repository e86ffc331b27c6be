"""`bench/run calibration-check`: the report's estimated computation time and peak memory against
the generated program's measured ones (issue 29: after `hec calibrate`, within +-30% for
chisq.hec at three sizes and for two other examples).

For each case: compile at the sizes (128-bit secure parameters chosen by the compiler, no
flooding), build, keygen, then run encrypt and compute REPEATS times at one thread
(HEC_THREADS=1) on random inputs of the program's domains; the measured computation time is
the median CPU seconds of the compute role (user + system, from the kernel's accounting of the
finished child: on a shared machine CPU time is what waiting for a core distorts least), its
peak memory the largest resident set (ru_maxrss). The estimates are the report's, at the same
thread count: `cost.compute_seconds` (one core) and `sizes.server_memory.total`, under the
profile given (default: the one `hec calibrate` stored, else the shipped default) and, for
comparison, under the shipped default. Each row records the load average when it was measured.

FHEW cases (add8, mul8: `hec run --scheme fhew` on random 8-bit inputs): the report's
`estimate` at one thread against the median of the compute role's own seconds (wall, one
thread); time only, the report has no FHEW memory estimate.

Usage: bench/run calibration-check [--profile PATH] [--repeats 3] [--quick] [--only NAME]
  --quick: one chi-square size and one other example (a smoke run); --only: the cases of one
  example (chisq, meancov, grs, meancov_int, add8, mul8). The sizes keep each compute role
  to seconds: meancov.hec uploads 6.4 MiB per individual at D = 16, grs.hec key-switches 17
  times per individual.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row

from compiler.analysis import profile as prof
from compiler.analysis.sizes import Sizes
from driver.calibrate import RoleRun, run_program
from driver.pipeline import Options, compile_file, report_of
from targets.sim.data import random_inputs

# (name, source, scheme, sizes)
CASES = [
    ("chisq", "examples/gwas/chisq.hec", "ckks", {"N": 500, "M": 4096}),
    ("chisq", "examples/gwas/chisq.hec", "ckks", {"N": 1000, "M": 8192}),
    ("chisq", "examples/gwas/chisq.hec", "ckks", {"N": 2000, "M": 16384}),
    ("meancov", "examples/stats/meancov.hec", "ckks", {"N": 200, "D": 4}),
    ("grs", "examples/stats/grs.hec", "ckks", {"N": 128, "M": 64}),
    ("meancov_int", "examples/stats/meancov_int.hec", "bfv", {"N": 40, "D": 16}),
    # FHEW gate programs: the report's `estimate` (compiler/analysis/cost.py
    # fhew_compute_estimate, from the profile's one-bootstrap time) against the compute role's
    # own seconds at one thread (wall: its gates run on that one core); no memory estimate.
    ("add8", "examples/circuits/add8.hec", "fhew", {"N": 64}),
    ("mul8", "examples/circuits/mul8.hec", "fhew", {"N": 8}),
]


def _options(scheme: str, sizes: dict[str, int]) -> Options:
    return Options(scheme=scheme, sizes=Sizes.of(sizes), flooding=False)  # type: ignore[arg-type]


def estimates(
    source: Path, scheme: str, sizes: dict[str, int], profile: prof.Profile
) -> tuple[float, int]:
    """The report's computation seconds and server peak bytes at one thread under `profile`
    (FHEW: no memory estimate, 0)."""
    prof.use(profile)
    try:
        if scheme == "fhew":
            from driver.fhew import compile_fhew_file

            return compile_fhew_file(source, _options(scheme, sizes)).estimate(1).seconds, 0
        comp = compile_file(source, _options(scheme, sizes))
        report = report_of(comp, threads=1)
        return float(report["cost"]["compute_seconds"]), int(
            report["sizes"]["server_memory"]["total"]
        )
    finally:
        prof.use(None)


def measure(
    source: Path,
    scheme: str,
    sizes: dict[str, int],
    work: Path,
    repeats: int,
    profile: prof.Profile,
) -> RoleRun:
    if scheme == "fhew":
        return measure_fhew(source, sizes, work, repeats)
    prof.use(profile)
    try:
        comp = compile_file(source, _options(scheme, sizes))
        program = comp.bfv_program if scheme == "bfv" else comp.program
        inputs = random_inputs(program, sizes, seed=3)
        data = {}
        for name, value in inputs.items():
            data[name] = work / f"{name}.npy"
            np.save(data[name], np.asarray(value))
        rows = max(sizes.values()) if "N" not in sizes else sizes["N"]
        run, _ = run_program(source, scheme, sizes, data, work, repeats, rows)
        return run
    finally:
        prof.use(None)


def measure_fhew(source: Path, sizes: dict[str, int], work: Path, repeats: int) -> RoleRun:
    """`hec run --scheme fhew` of a circuit on random 8-bit inputs, REPEATS fresh runs at one
    thread: the median of the compute role's own seconds (peak memory not measured: 0)."""
    from driver.fhew import run_fhew

    rng = np.random.default_rng(3)
    seconds: list[float] = []
    saved = dict(os.environ)
    os.environ.update({"HEC_THREADS": "1", "OMP_NUM_THREADS": "1"})
    try:
        for r in range(repeats):
            inputs = {}
            for name in ("a", "b"):
                inputs[name] = work / f"{name}.npy"
                np.save(inputs[name], rng.integers(0, 256, sizes["N"], dtype=np.uint8))
            res = run_fhew(source, inputs, work / f"out{r}", _options("fhew", sizes),
                           work=work / f"run{r}")  # fmt: skip
            seconds.append(float(res.summary["compute"]["seconds"]))  # type: ignore[index]
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return RoleRun(encrypt_cpu=0.0, compute_cpu=statistics.median(seconds), compute_peak=0)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--profile", default=None, help="cost profile (default: as hec resolves)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=sorted({c[0] for c in CASES}))
    args = parser.parse_args()
    profile = prof.resolve(args.profile)
    default = prof.default()
    cases = [CASES[0], CASES[5]] if args.quick else CASES
    if args.only:
        cases = [c for c in cases if c[0] == args.only]
    lines: list[str] = []
    results = []
    print(f"profile: {profile.source} ({profile.created}; {profile.machine.get('cpu', '')})")
    print(
        f"{'case':<28} {'est s':>8} {'cpu s':>8} {'ratio':>6} {'default':>8} "
        f"{'est MiB':>8} {'peak MiB':>8} {'ratio':>6}  load"
    )
    with tempfile.TemporaryDirectory(dir=os.environ.get("HEC_SCRATCH")) as tmp:
        for i, (name, rel, scheme, sizes) in enumerate(cases):
            source = ROOT / rel
            est_s, est_b = estimates(source, scheme, sizes, profile)
            def_s, _ = estimates(source, scheme, sizes, default)
            work = Path(tmp) / f"case{i}"
            work.mkdir()
            run = measure(source, scheme, sizes, work, args.repeats, profile)
            load = round(os.getloadavg()[0], 2)
            size_text = ",".join(f"{k}={v}" for k, v in sizes.items())
            case = f"{name} {scheme} {size_text}"
            t_ratio = est_s / run.compute_cpu
            m_ratio = est_b / run.compute_peak if run.compute_peak else 1.0
            print(
                f"{case:<28} {est_s:>8.3f} {run.compute_cpu:>8.3f} {t_ratio:>6.2f} "
                f"{def_s / run.compute_cpu:>8.2f} {est_b / 2**20:>8.1f} "
                f"{run.compute_peak / 2**20:>8.1f} {m_ratio:>6.2f}  {load}",
                flush=True,
            )
            ok = abs(t_ratio - 1) <= 0.3 and abs(m_ratio - 1) <= 0.3
            results.append(ok)
            lines.append(
                Row(
                    "calibration-check", f"{case} compute time", est_s, run.compute_cpu, "s"
                ).as_json()
            )
            if run.compute_peak:  # (FHEW cases: time only)
                lines.append(
                    Row(
                        "calibration-check",
                        f"{case} peak memory",
                        est_b / 2**20,
                        run.compute_peak / 2**20,
                        "MiB",
                    ).as_json()
                )
            lines.append(
                json.dumps(
                    {
                        "bench": "calibration-check",
                        "case": case,
                        "estimated_seconds": est_s,
                        "measured_cpu_seconds": run.compute_cpu,
                        "default_profile_seconds": def_s,
                        "estimated_peak_bytes": est_b,
                        "measured_peak_bytes": run.compute_peak,
                        "within_30pct": ok,
                        "load": load,
                        "profile": profile.source,
                    }
                )
            )
    print(f"\nwithin +-30%: {sum(results)} of {len(results)} cases")
    print()
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
