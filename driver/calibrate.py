"""`hec calibrate`: measure this machine's runtime and store the cost profile the cost model and
the report use (compiler/analysis/profile.py).

Every figure is a median of repeated runs, measured in CPU seconds of one thread
(HEC_THREADS=1: the cost model counts seconds of one core; CPU time is what a shared machine
distorts least), through the runtime itself:

1. the NTT (hec_bench_ntt, Google Benchmark): ns per butterfly by ring dimension, forward and
   inverse averaged, on the kernel path the runtime dispatches to on this CPU;
2. CKKS operations (hec_bench_ckks) at one parameter set per ring dimension: the pointwise cost
   per coefficient from `add` (2 polynomials x limbs), and the measured / modelled ratios
   (with the NTT and pointwise costs just measured) of `rotate` (a key switch by limbs,
   special primes and dnum), `mul_norelin` (the tensor product) and `rescale`;
3. BFV (hec_bench_bfv): the ratios of `multiply` (HPS) and `rotate` (key switch);
4. FHEW (hec_bench_fhew): one bootstrapped GINX NAND, at 1 and 2 threads (CPU and wall);
5. the roles of a generated program (a column sum of an N x M integer matrix, compiled for
   CKKS and for BFV) at two sizes: the encrypt role's CPU seconds per coefficient-limb written
   and the compute role's per byte read are the slopes between the sizes (the modelled
   arithmetic subtracted), the compute role's fixed cost per run the line's value at no data,
   and the process's baseline resident set is the compute role's peak less the report's
   modelled ciphertexts and keys.

The profile records the machine (CPU model, ISA, CPUs: its id), the runtime's digest (SHA-256
of libhec_runtime.a), the load average before and after, and the raw measurements.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from compiler.analysis import profile as prof
from compiler.analysis.cost import Units, key_switch_parts
from compiler.errors import UserError
from driver.environment import cpu_features, runtime_build_dir

BENCH_BINARIES = ("hec_bench_ntt", "hec_bench_ckks", "hec_bench_bfv", "hec_bench_fhew")

# One CKKS parameter set per ring dimension, each within the 128-bit HE Standard bound:
# (log_n, first-prime bits, scaling-prime bits, limbs, dnum, special primes, their bits).
CKKS_SETS = (
    (12, 40, 26, 2, 2, 1, 40),
    (13, 45, 35, 4, 4, 1, 60),
    (14, 50, 40, 6, 3, 2, 60),
    (15, 60, 50, 12, 3, 4, 60),
    (16, 60, 50, 16, 4, 4, 60),
)
# BFV: (log_n, limbs of 60 bits, dnum, special primes); the sets of `bench/run bfv`, up to
# 2^15 (a BFV program at 2^15 used to take its factors from 2^14, the nearest measured ring).
BFV_SETS = ((13, 2, 2, 1), (14, 4, 2, 2), (15, 8, 2, 3))

# The calibration program: reading and adding, as every streamed program's server does.
PROGRAM = """\
param N <= 1000000
param M <= 1000000
input X: secret[N, M] in {0, 1, 2}
reveal s = sum(X, axis=0)
"""
E2E_SIZES = ((400, 8192), (1600, 8192))

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(u.ru_utime + u.ru_stime, u.ru_maxrss * 1024)
sys.exit(done.returncode)
"""


def _loadavg() -> float:
    return round(os.getloadavg()[0], 2)


@functools.cache
def runtime_digest(build: Path | None = None) -> str:
    """SHA-256 (16 hex digits) of the runtime library generated programs link, "" if none."""
    lib = (build or runtime_build_dir()) / "libhec_runtime.a"
    if not lib.exists():
        return ""
    h = hashlib.sha256()
    with lib.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def profile_description() -> dict[str, Any]:
    """What the report says about the profile in use, with a warning when the runtime was
    rebuilt since the profile was measured."""
    p = prof.active()
    out = p.describe()
    now = runtime_digest()
    if not p.is_default and p.runtime_digest and now and now != p.runtime_digest:
        out["stale"] = (
            f"the runtime was rebuilt since ({p.runtime_digest} then, {now} now): run "
            "`hec calibrate` again"
        )
    return out


def bench_directory() -> Path:
    """The runtime's `bench` preset build (its timing tools), next to the release build."""
    for d in (runtime_build_dir("bench"), runtime_build_dir().parent / "bench"):
        if all((d / b).exists() for b in BENCH_BINARIES):
            return d
    raise UserError(
        "hec calibrate needs the runtime's timing tools (" + ", ".join(BENCH_BINARIES) + "), "
        f"not found in {runtime_build_dir('bench')} or {runtime_build_dir().parent / 'bench'}",
        hint="build them: cd runtime && cmake --preset bench && cmake --build ../build/bench",
    )


def _env(threads: int) -> dict[str, str]:
    return dict(os.environ, HEC_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


def _run_json_lines(args: Sequence[str], threads: int = 1) -> list[dict[str, Any]]:
    try:
        out = subprocess.run(
            list(args), check=True, capture_output=True, text=True, env=_env(threads)
        )
    except subprocess.CalledProcessError as err:
        last = (err.stderr or "").strip().splitlines()[-1:] or [""]
        raise UserError(
            f"hec calibrate: {Path(args[0]).name} failed (exit {err.returncode}): {last[0]}"
        ) from err
    return [json.loads(x) for x in out.stdout.splitlines() if x.strip().startswith("{")]


@dataclass
class Measured:
    """What calibration measured, and what the profile's model tables are derived from."""

    raw: list[dict[str, Any]]
    tables: dict[str, dict[str, float]]
    baseline: int = 0


def measure_ntt(bench: Path, log_ns: Sequence[int], m: Measured) -> None:
    path = 1 if cpu_features().ntt_path == "avx512-ifma" else 0
    sizes = "|".join(str(x) for x in log_ns)
    args = [
        str(bench / "hec_bench_ntt"),
        f"--benchmark_filter=BM_Ntt(Forward|Inverse)/logN:({sizes})/path:{path}$",
        "--benchmark_format=json",
        "--benchmark_repetitions=5",
        "--benchmark_report_aggregates_only=true",
        "--benchmark_min_time=0.05",
    ]
    try:
        out = subprocess.run(args, check=True, capture_output=True, text=True, env=_env(1))
    except subprocess.CalledProcessError as err:
        raise UserError(f"hec calibrate: hec_bench_ntt failed (exit {err.returncode})") from err
    by_log_n: dict[int, list[float]] = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        log_n = int(b["name"].split("logN:")[1].split("/")[0])
        by_log_n.setdefault(log_n, []).append(float(b["ns_per_butterfly"]))
        m.raw.append({"op": b["run_name"], "ns_per_butterfly": b["ns_per_butterfly"]})
    m.tables["ntt_ns_per_butterfly"] = {
        str(k): statistics.fmean(v) for k, v in sorted(by_log_n.items())
    }


FACTOR_TABLES = (
    "ckks_key_switch_factor",
    "ckks_tensor_factor",
    "ckks_rescale_factor",
    "bfv_multiply_factor",
    "bfv_key_switch_factor",
)


def _profile(m: Measured, factors_one: bool = False) -> prof.Profile:
    """A profile of what is measured so far (the default's figures for the rest); with
    `factors_one`, every measured / modelled factor 1: the model as written."""
    tables = {k: {str(kk): vv for kk, vv in v.items()} for k, v in prof.default().tables.items()}
    tables.update(m.tables)
    if factors_one:
        tables.update({k: {"0": 1.0} for k in FACTOR_TABLES})
    return prof.parse(_document(m, tables, []), "calibrating")


def _units(m: Measured, log_n: int, scheme: str = "ckks") -> Units:
    return Units(log_n, _profile(m, factors_one=True), scheme)


def measure_ckks(bench: Path, sets: Sequence[tuple[int, ...]], m: Measured) -> None:
    for log_n, first, scale, limbs, dnum, special, special_bits in sets:
        repeats = 15 if log_n <= 14 else 5
        args = [str(bench / "hec_bench_ckks"), "--clock", "cpu", "--log-n", str(log_n)]
        args += ["--first-bits", str(first), "--scale-bits", str(scale)]
        args += ["--levels", str(limbs - 1), "--special", str(special)]
        args += ["--special-bits", str(special_bits)]
        args += ["--dnum", str(dnum), "--repeats", str(repeats)]
        t = {r["op"]: float(r["seconds"]) for r in _run_json_lines(args)}
        n = 1 << log_n
        pointwise = t["add"] / (2 * limbs * n) * 1e9
        m.tables.setdefault("pointwise_ns_per_coefficient", {})[str(log_n)] = pointwise
        u = _units(m, log_n)
        ks = sum(key_switch_parts(u, limbs, special, dnum))
        m.tables.setdefault("ckks_key_switch_factor", {})[str(log_n)] = t["rotate"] / ks
        m.tables.setdefault("ckks_tensor_factor", {})[str(log_n)] = t["mul_norelin"] / (
            u.pointwise(4 * limbs)
        )
        m.tables.setdefault("ckks_rescale_factor", {})[str(log_n)] = t["rescale"] / u.ntt(4 * limbs)
        m.raw.append(
            {
                "bench": "ckks",
                "log_n": log_n,
                "limbs": limbs,
                "dnum": dnum,
                "special": special,
                "seconds": t,
                "load": _loadavg(),
            }
        )


def measure_bfv(bench: Path, sets: Sequence[tuple[int, ...]], m: Measured) -> None:
    for log_n, limbs, dnum, special in sets:
        args = [str(bench / "hec_bench_bfv"), "--log-n", str(log_n), "--limbs", str(limbs)]
        args += ["--q-bits", "60", "--t", "65537", "--dnum", str(dnum)]
        args += ["--special", str(special), "--repeats", "9"]
        t = {r["op"]: float(r["seconds"]) for r in _run_json_lines(args) if "op" in r}
        u = _units(m, log_n, "bfv")
        aux = limbs * 60 / 50 + 1  # as bfv_cost counts HPS's auxiliary basis
        multiply = u.ntt(8 * (limbs + aux)) + u.pointwise(3 * (limbs + aux) * (limbs + 2))
        m.tables.setdefault("bfv_multiply_factor", {})[str(log_n)] = t["multiply"] / multiply
        ks = sum(key_switch_parts(u, limbs, special, dnum))
        m.tables.setdefault("bfv_key_switch_factor", {})[str(log_n)] = t["rotate"] / ks
        m.raw.append(
            {
                "bench": "bfv",
                "log_n": log_n,
                "limbs": limbs,
                "dnum": dnum,
                "special": special,
                "seconds": t,
                "load": _loadavg(),
            }
        )


def measure_fhew(bench: Path, m: Measured, threads: Sequence[int] = (1, 2)) -> None:
    gate: dict[str, float] = {}
    for t in threads:
        rows = _run_json_lines([str(bench / "hec_bench_fhew"), "ginx", "7", "-"], threads=t)
        r = rows[-1]
        if not r.get("correct"):
            raise UserError("hec calibrate: the FHEW bench decrypted a wrong NAND")
        # One thread: its CPU time (what one core spends); more: the wall time (the gate's
        # parallel speed-up is what more threads buy).
        gate[str(t)] = (r["nand_cpu_ms_median"] if t == 1 else r["nand_ms_median"]) * 1e-3
        m.raw.append({"bench": "fhew", "threads": t, "result": r, "load": _loadavg()})
    m.tables["fhew_gate_seconds"] = gate


# --- the roles of a generated program -------------------------------------------------------


@dataclass(frozen=True)
class RoleRun:
    encrypt_cpu: float
    compute_cpu: float
    compute_peak: int


def _role_runner(binary: Path, args: Sequence[str], progress: Any) -> Any:
    from driver.roles import RoleOutput, run_role

    out = run_role(binary, *args, wrap=[sys.executable, "-c", WRAPPER], on_progress=progress)
    cpu, peak = out.stdout.strip().splitlines()[-1].split()
    return RoleOutput(out.stderr, f"{cpu} {peak}", int(peak))


def run_program(
    source: Path,
    scheme: str,
    sizes: Mapping[str, int],
    data: Mapping[str, Path],
    work: Path,
    repeats: int,
    rows: int,
) -> tuple[RoleRun, Any]:
    """Compile `source` for `sizes`, build, keygen, then encrypt and compute `repeats` times at
    one thread: medians of the roles' CPU seconds, the compute role's peak resident set, and
    the compilation (for the model's figures)."""
    from compiler.analysis.sizes import Sizes
    from driver.pipeline import Options, compile_file
    from driver.roles import RoleSequence, role_threads
    from driver.run import build_cpp

    options = Options(
        scheme=scheme,  # type: ignore[arg-type]
        sizes=Sizes.of(dict(sizes)),
        flooding=False,
    )
    comp = compile_file(source, options)
    built = build_cpp(comp, source, work / "build")
    roles = RoleSequence(built.binary, work, _role_runner, signed=False)
    enc, cmp_, peak = [], [], []
    with role_threads(1):
        roles.keygen(stream_rows=rows)
        for _ in range(repeats):
            out = roles.encrypt(data, work / "ct")
            enc.append(float(out.stdout.split()[0]))
            out = roles.compute(work / "ct", work / "res")
            cmp_.append(float(out.stdout.split()[0]))
            peak.append(int(out.stdout.split()[1]))
    return RoleRun(statistics.median(enc), statistics.median(cmp_), max(peak)), comp


def measure_roles(m: Measured, work: Path, repeats: int = 3) -> None:
    """Encrypt per word, read per byte (CKKS and BFV) and the runtime's baseline memory."""
    from driver.pipeline import cost_of, report_of

    source = work / "calibrate.hec"
    source.write_text(PROGRAM)
    rng = np.random.default_rng(1)
    calibrating = _profile(m)
    encrypt: dict[str, float] = {}
    read: dict[str, float] = {}
    fixed: dict[str, float] = {}
    baselines: list[int] = []
    for scheme in ("ckks", "bfv"):
        points = []
        for n, cols in E2E_SIZES:
            d = work / f"{scheme}-{n}"
            d.mkdir(parents=True, exist_ok=True)
            x = d / "X.npy"
            np.save(x, rng.integers(0, 3, size=(n, cols)).astype(np.int8))
            prof.use(calibrating)
            try:
                run, comp = run_program(
                    source, scheme, {"N": n, "M": cols}, {"X": x}, d, repeats, n
                )
                cost = cost_of(comp)
                # The modelled arithmetic: the compute estimate less its reads and fixed cost.
                reads = cost.upload_bytes * calibrating.by_scheme("read_ns_per_byte", scheme)
                arithmetic = cost.compute_s - reads * 1e-9
                arithmetic -= calibrating.by_scheme("compute_fixed_seconds", scheme)
                words = cost.upload_bytes / 8 / 2  # coefficient-limbs: 2 polynomials each
                if scheme == "ckks":
                    mem = report_of(comp, threads=1)
                    modelled = mem["sizes"]["server_memory"]
                    baselines.append(run.compute_peak - (modelled["total"] - modelled["baseline"]))
            finally:
                prof.use(None)
            points.append((run, cost.upload_bytes, words, arithmetic))
            m.raw.append(
                {
                    "bench": "roles",
                    "scheme": scheme,
                    "sizes": {"N": n, "M": cols},
                    "encrypt_cpu_s": run.encrypt_cpu,
                    "compute_cpu_s": run.compute_cpu,
                    "compute_peak_bytes": run.compute_peak,
                    "upload_bytes": cost.upload_bytes,
                    "modelled_arithmetic_s": arithmetic,
                    "load": _loadavg(),
                }
            )
        (r0, b0, w0, a0), (r1, b1, w1, a1) = points
        encrypt[scheme] = (r1.encrypt_cpu - r0.encrypt_cpu) / (w1 - w0) * 1e9
        read[scheme] = ((r1.compute_cpu - a1) - (r0.compute_cpu - a0)) / (b1 - b0) * 1e9
        # What the line through the two sizes leaves at no data: starting, keys, results.
        fixed[scheme] = max(r0.compute_cpu - a0 - read[scheme] * b0 * 1e-9, 0.0)
        for name, value in (("encrypt", encrypt[scheme]), ("read", read[scheme])):
            if not value > 0:
                raise UserError(
                    f"hec calibrate: the {scheme} {name} cost did not grow with the data "
                    f"({value:.3g} ns); the machine is too busy to measure (load {_loadavg()})",
                    hint="run it again when the machine is quieter",
                )
    m.tables["encrypt_ns_per_word"] = encrypt
    m.tables["read_ns_per_byte"] = read
    m.tables["compute_fixed_seconds"] = fixed
    m.baseline = max(min(baselines), 1 << 20)


# --- the profile ----------------------------------------------------------------------------


def _document(
    m: Measured,
    tables: Mapping[str, Mapping[str, float]],
    load: Sequence[float],
) -> dict[str, Any]:
    model: dict[str, Any] = {k: dict(v) for k, v in tables.items()}
    model["runtime_baseline_bytes"] = m.baseline or prof.default().runtime_baseline_bytes
    return {
        "format": prof.FORMAT,
        "version": prof.VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": prof.machine_info(),
        "runtime_digest": runtime_digest(),
        "load": list(load),
        "model": model,
        "measurements": m.raw,
    }


def calibrate(
    out: Path,
    log: Callable[[str], None] = print,
    max_log_n: int = 16,
    fhew: bool = True,
) -> dict[str, Any]:
    """Measure, write the profile to `out` (atomically), return its JSON object."""
    bench = bench_directory()
    load = [_loadavg()]
    m = Measured([], {})
    log(f"hec calibrate: runtime tools in {bench}; load average {load[0]}")
    sets = [s for s in CKKS_SETS if s[0] <= max_log_n]
    log_ns = sorted({s[0] for s in sets} | {s[0] for s in BFV_SETS if s[0] <= max_log_n})
    start = time.perf_counter()
    measure_ntt(bench, log_ns, m)
    log(f"  NTT ns per butterfly: {_fmt(m.tables['ntt_ns_per_butterfly'])}")
    measure_ckks(bench, sets, m)
    log(f"  pointwise ns per coefficient: {_fmt(m.tables['pointwise_ns_per_coefficient'])}")
    for k in ("ckks_key_switch_factor", "ckks_tensor_factor", "ckks_rescale_factor"):
        log(f"  {k} (measured / modelled): {_fmt(m.tables[k])}")
    measure_bfv(bench, [s for s in BFV_SETS if s[0] <= max_log_n], m)
    for k in ("bfv_multiply_factor", "bfv_key_switch_factor"):
        log(f"  {k} (measured / modelled): {_fmt(m.tables[k])}")
    if fhew:
        measure_fhew(bench, m)
    else:
        m.tables["fhew_gate_seconds"] = {
            str(k): v for k, v in prof.default().tables["fhew_gate_seconds"].items()
        }
        m.raw.append({"bench": "fhew", "skipped": "--no-fhew: the default's figure"})
    log(f"  FHEW GINX NAND seconds by threads: {_fmt(m.tables['fhew_gate_seconds'])}")
    with tempfile.TemporaryDirectory(
        prefix="hec-calibrate-", dir=os.environ.get("HEC_SCRATCH")
    ) as tmp:
        measure_roles(m, Path(tmp))
    log(f"  encrypt ns per coefficient-limb: {_fmt(m.tables['encrypt_ns_per_word'])}")
    log(f"  server read ns per byte: {_fmt(m.tables['read_ns_per_byte'])}")
    log(f"  compute role fixed seconds per run: {_fmt(m.tables['compute_fixed_seconds'])}")
    log(f"  runtime baseline resident set: {m.baseline / 2**20:.1f} MiB")
    load.append(_loadavg())
    doc = _document(m, m.tables, load)
    prof.parse(doc, str(out))  # what is written must read back
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_name(out.name + ".tmp")
    tmp_out.write_text(json.dumps(doc, indent=1) + "\n")
    tmp_out.replace(out)
    log(
        f"wrote {out} ({time.perf_counter() - start:.0f} s; load average {load[0]} before, "
        f"{load[1]} after)"
    )
    return doc


def _fmt(table: Mapping[str, float]) -> str:
    return ", ".join(f"{k}: {v:.3g}" for k, v in table.items())
