"""`bench/run labhe`: labeled HE (Joye-Libert, 2048-bit modulus as in the paper) against the
figures of Barbosa, Catalano and Fiore (ESORICS 2017, Tables 1-4) and against hec's own CKKS
compilation of the same program, in the same run.

Programs: bench/labhe_mean.hec (column means) and bench/labhe_cov.hec (scatter of the centred
columns, the covariance numerators), X uniform in [-10, 10] at the compiler's fixed-point scale.
For each size the compiler writes the labeled plans (hec --scheme labhe), and
build/bench/hec_bench_labhe encrypts n x d values once and times the server's evaluation,
the offline and online decryption (medians over --repeats), checking every decrypted value
against the plaintext evaluation of the plan (exact). Encryption per value is measured on a
sample. The CKKS reference is the generated CKKS program of the same source (hec compile),
timed role by role (its `compute` role is the server).

The paper's figures were measured on other hardware; the labHE(JL13) ratios say how far
apart the two implementations are, not a same-machine comparison. Rows against the paper use
the CPU seconds of our evaluation summed over its threads (the work, a single-core
equivalent: this machine's 2 cores are shared, so wall time mostly measures waiting for a
core); the wall times are shown beside them and are what the CKKS rows compare (both wall).
Figures of the paper not quoted in issue 24 are shown as "-" (not invented).
Target: our Eval <= 0.1 x the paper's at the same modulus size.

Usage: bench/run labhe [--quick] [--max-log-n 20] [--repeats 3] [--no-ckks] [--modulus-bits 2048]
  --quick: n in {2^10, 2^14}, d = 2 and covariance d in {2, 8} only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, Row, print_rows

# Barbosa-Catalano-Fiore, labHE(JL13), 2048-bit modulus (as quoted in issue 24).
PAPER = {
    "encrypt_per_value_s": 0.35e-3,
    ("mean", 1 << 20, 2): 1.24,
    ("cov", 1 << 20, 2): 2391.0,
    ("cov_decrypt", 1 << 20, 2): 4.7,
    ("cov", 4096, 24): 625.0,
    "ciphertext_bytes": 272,
}


def compile_plan(program: str, n: int, d: int, bits: int, out: Path) -> Path:
    from compiler.analysis.sizes import Sizes
    from driver.labhe import compile_labhe_file
    from driver.pipeline import Options

    comp = compile_labhe_file(
        ROOT / "bench" / f"labhe_{program}.hec",
        Options(sizes=Sizes.of({"N": n, "D": d}), scheme="labhe", modulus_bits=bits),
    )
    path = out / f"{program}-{n}-{d}.plan"
    path.write_text(comp.plan.text())
    return path


def run_labhe(plans: list[Path], n: int, d: int, bits: int, repeats: int) -> list[dict]:
    binary = ROOT / "build" / "bench" / "hec_bench_labhe"
    args = [str(binary), "--n", str(n), "--d", str(d), "--modulus-bits", str(bits)]
    args += ["--repeats", str(repeats)]
    for p in plans:
        args += ["--plan", str(p)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"hec_bench_labhe failed: {done.stderr}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def measure(rows: list[dict], what: str, plan: str | None = None) -> float:
    for r in rows:
        if r["measure"] == what and (plan is None or r.get("plan") == plan):
            return float(r["value"])
    raise KeyError(what)


def run_ckks(n: int, d: int, work: Path) -> float | None:
    """Seconds of the server role (compute) of hec's CKKS program for labhe_cov.hec; None
    (with the reason in `facts`) when the CKKS compiler refuses or fails."""
    from compiler.analysis.sizes import Sizes
    from compiler.errors import InternalError, UserError
    from driver.pipeline import Options
    from driver.roles import RoleSequence
    from driver.run import compile_cpp

    src = ROOT / "bench" / "labhe_cov.hec"
    try:
        built = compile_cpp(src, work / "build", Options(sizes=Sizes.of({"N": n, "D": d})))
    except (UserError, InternalError) as err:
        print(f"# CKKS n={n} d={d}: not compiled ({type(err).__name__}: {err})", flush=True)
        return None
    rng = np.random.default_rng(n * 31 + d)
    x = work / "X.npy"
    np.save(x, rng.uniform(-10.0, 10.0, (n, d)))
    # Unsigned: the server's arithmetic alone, as the labeled scheme's evaluation is timed.
    roles = RoleSequence(built.binary, work, signed=False)
    roles.keygen()
    roles.encrypt({"X": x}, work / "ct")
    start = time.perf_counter()
    roles.compute(work / "ct", work / "res")
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--max-log-n", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-ckks", action="store_true")
    ap.add_argument("--modulus-bits", type=int, default=2048)
    args = ap.parse_args()
    bits = args.modulus_bits
    log_ns = [10, 14] if args.quick else [10, 14, 18, 20]
    log_ns = [k for k in log_ns if k <= args.max_log_n]
    dims = [2, 8] if args.quick else [2, 8, 24]
    rows: list[Row] = []

    def add(row: Row) -> None:
        # Each row as soon as it is measured (a long run stopped early keeps what it has); the
        # table and the JSON lines of every row follow at the end.
        rows.append(row)
        ref = "-" if row.reference is None else f"{row.reference:.4g}"
        print(f"# {row.case}: {row.ours:.4g} {row.unit} (reference {ref})", flush=True)

    print(
        f"# labeled HE over Joye-Libert, {bits}-bit modulus; reference = Barbosa-Catalano-Fiore's"
        " figures (OTHER HARDWARE) or hec's CKKS server role (same machine, same run)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="hec-bench-labhe-") as tmp:
        out = Path(tmp)
        # Covariance at n = 4096 first (the paper's Table 4), then n = 2^10 ... 2^20, d = 2.
        for d in dims:
            n = 4096
            plan = [compile_plan("cov", n, d, bits, out)]
            m = run_labhe(plan, n, d, bits, args.repeats if d <= 2 else 1)
            ev = measure(m, "eval_s", "labhe_cov")
            cpu = measure(m, "eval_cpu_s", "labhe_cov")
            paper = PAPER.get(("cov", n, d))
            add(Row("labhe", f"cov n=4096 d={d} Eval CPU (all threads)", cpu, paper, "s"))
            add(Row("labhe", f"cov n=4096 d={d} Eval wall", ev, None, "s"))
            print(
                f"# cov n=4096 d={d}: result {int(measure(m, 'result_bytes', 'labhe_cov'))} bytes",
                flush=True,
            )
            if not args.no_ckks and d <= 8:
                ck = run_ckks(n, d, out / f"ckks-{n}-{d}")
                if ck is not None:
                    add(Row("labhe", f"cov n=4096 d={d} Eval vs hec CKKS compute", ev, ck, "s"))
        first = True
        for k in log_ns:
            n = 1 << k
            plans = [compile_plan("mean", n, 2, bits, out), compile_plan("cov", n, 2, bits, out)]
            # Big cases once: 2^20 x 2 values take many minutes to encrypt on 2 shared cores.
            m = run_labhe(plans, n, 2, bits, args.repeats if n <= 1 << 14 else 1)
            if first:
                enc = measure(m, "encrypt_offline_per_value_cpu_s") + measure(
                    m, "encrypt_online_per_value_s"
                )
                add(
                    Row(
                        "labhe",
                        "encrypt per value (offline + online)",
                        enc * 1e3,
                        PAPER["encrypt_per_value_s"] * 1e3,
                        "ms",
                    )
                )
                add(
                    Row(
                        "labhe",
                        "upload per value (a, Enc(b))",
                        measure(m, "upload_bytes_per_value"),
                        PAPER["ciphertext_bytes"],
                        "bytes",
                    )
                )
                first = False
            for prog in ("mean", "cov"):
                name = f"labhe_{prog}"
                cpu = measure(m, "eval_cpu_s", name)
                paper = PAPER.get((prog, n, 2))
                add(Row("labhe", f"{prog} n=2^{k} d=2 Eval CPU (all threads)", cpu, paper, "s"))
                add(
                    Row(
                        "labhe",
                        f"{prog} n=2^{k} d=2 Eval wall",
                        measure(m, "eval_s", name),
                        None,
                        "s",
                    )
                )
                dec = measure(m, "decrypt_offline_s", name) + measure(m, "decrypt_online_s", name)
                ref = PAPER.get(("cov_decrypt", n, 2)) if prog == "cov" else None
                add(Row("labhe", f"{prog} n=2^{k} d=2 decrypt (off + on)", dec, ref, "s"))
                print(
                    f"# {prog} n=2^{k} d=2: result {int(measure(m, 'result_bytes', name))} "
                    f"bytes; encrypting all {2 * n} values took "
                    f"{measure(m, 'encrypt_all_s'):.1f} s",
                    flush=True,
                )
            if not args.no_ckks and n <= 1 << 14:
                ck = run_ckks(n, 2, out / f"ckks-{n}-2")
                if ck is not None:
                    add(
                        Row(
                            "labhe",
                            f"cov n=2^{k} d=2 Eval vs hec CKKS compute",
                            measure(m, "eval_s", "labhe_cov"),
                            ck,
                            "s",
                        )
                    )
    print_rows("labeled HE (labHE over Joye-Libert) against the paper and hec's CKKS", rows)


if __name__ == "__main__":
    main()
