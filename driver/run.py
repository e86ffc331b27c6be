"""`hec run`: run a program on .npy inputs and write what its receiver gets (DESIGN.md §6, §9).

Two back ends for the same job:
- `--sim`: compile, execute the ckks IR in the reference simulator (`targets/sim`, exact mode
  unless `--noisy`), then apply the client block with numpy/scipy (`compiler.stat_numpy`);
- encrypted (default): compile, emit and build the C++ program (`targets/cpp`), run its four
  roles in order in a scratch directory (keygen, encrypt, compute, decrypt), then apply the
  client block to the decrypted values.

Either way the output directory receives one `.npy` per revealed value and per client output,
and `summary.json` (program, sizes, back end, parameters, security, file list). Every file is
written under a temporary name and renamed when complete; a failed run removes what it wrote.
Sizes come from the input arrays (each symbolic dimension bound by the inputs' shapes, which
must agree); `--size` sets the bounds the program is compiled for (default: the data's sizes).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from compiler.analysis.actual_sizes import Promise
from compiler.analysis.sizes import Sizes, parse_sizes
from compiler.dialects import bfv, ckks, he
from compiler.errors import UserError
from compiler.stat_numpy import run_client
from driver.interrupt import scratch_directory
from driver.pipeline import Compilation, Options, compile_file, run_pipeline
from driver.roles import RoleOutput, RoleSequence
from dsl import ast
from dsl.bitslice import assemble_outputs, is_integer_program, plane_source, split_inputs
from dsl.checker import CheckedProgram, check
from dsl.parser import parse_file
from dsl.reference import run_client_block

if TYPE_CHECKING:
    from targets.cpp.emit import Emitted

Array = npt.NDArray[np.float64]
# A summary.json value (the run's facts, JSON-ready).
Json = None | bool | int | float | str | Sequence["Json"] | Mapping[str, "Json"]


def parse_inputs(items: Sequence[str]) -> dict[str, Path]:
    """`["y=y.npy", "S=S.npy"]` -> {"y": Path("y.npy"), ...}; each NAME given once."""
    out: dict[str, Path] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UserError(f"--input {item!r}: expected NAME=FILE.npy")
        if name in out:
            raise UserError(f"--input {name} is given twice ({out[name]} and {path})")
        out[name] = Path(path)
    return out


def load_npy(name: str, path: Path, keep_integers: bool = False) -> Array:
    """Read one input array; errors name the input and the file. Float64 (what the real-valued
    targets compute on) unless `keep_integers` and the file holds integers (an integer
    program's values beyond 2^53 stay exact)."""
    if not path.is_file():
        raise UserError(f"input '{name}': file {path} does not exist")
    try:
        value = np.load(path, allow_pickle=False)
    except Exception as err:  # numpy's header parser raises many kinds
        raise UserError(f"input '{name}': {path} is not a readable .npy file ({err})") from err
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise UserError(f"input '{name}': {path} must hold a numeric array")
    if keep_integers and value.dtype.kind in "biu":
        return value
    return np.asarray(value, dtype=np.float64)


def input_decls(checked: CheckedProgram) -> list[ast.InputDecl]:
    return [s for s in checked.program.statements if isinstance(s, ast.InputDecl)]


def infer_sizes(checked: CheckedProgram, arrays: Mapping[str, Array]) -> dict[str, int]:
    """Bind every size parameter from the shapes of the given inputs; refuse missing, unknown
    and inconsistent inputs with the names and shapes involved."""
    decls = {d.name: d for d in input_decls(checked)}
    unknown = sorted(set(arrays) - set(decls))
    if unknown:
        raise UserError(
            f"--input {unknown[0]}: the program has no input of that name",
            hint="inputs: " + ", ".join(decls),
        )
    missing = [n for n in decls if n not in arrays]
    if missing:
        raise UserError(f"missing input '{missing[0]}': give it as --input {missing[0]}=FILE.npy")
    sizes: dict[str, int] = {}
    where: dict[str, str] = {}
    for name in decls:
        shape = checked.bindings[name].ty.shape
        got = arrays[name].shape
        if len(got) != len(shape):
            raise UserError(
                f"input '{name}' has shape {got}, the program declares "
                f"[{', '.join(str(d) for d in shape)}] (rank {len(shape)})"
            )
        for axis, (dim, n) in enumerate(zip(shape, got, strict=True)):
            if isinstance(dim, int):
                if dim != n:
                    raise UserError(f"input '{name}' axis {axis} has length {n}, expected {dim}")
            elif dim in sizes and sizes[dim] != n:
                raise UserError(
                    f"size {dim} is {sizes[dim]} by {where[dim]} but {n} by input '{name}' "
                    f"axis {axis}"
                )
            else:
                sizes[dim] = n
                where[dim] = f"input '{name}' axis {axis}"
    for param, bound in checked.params.items():
        if param not in sizes:
            raise UserError(f"size parameter {param} is not the length of any input axis")
        if sizes[param] > bound:
            raise UserError(f"size {param} = {sizes[param]} exceeds its bound {param} <= {bound}")
    return {p: sizes[p] for p in checked.params}


def check_domains(checked: CheckedProgram, arrays: Mapping[str, Array]) -> None:
    """Every input value must lie in the input's declared domain (the ranges, scales and
    moduli were chosen for it): the first value outside is named with its index."""
    from compiler.types import FiniteSet, Interval

    for name, value in arrays.items():
        domain = checked.bindings[name].domain
        if not np.all(np.isfinite(value)):
            raise UserError(f"input '{name}' has non-finite values")
        if isinstance(domain, FiniteSet) and value.size:
            bad = ~np.isin(value, np.asarray(domain.values))
            text = "{" + ", ".join(f"{v:g}" for v in domain.values) + "}"
        elif isinstance(domain, Interval) and value.size:
            bad = (value < domain.lo) | (value > domain.hi)
            text = f"[{domain.lo:g}, {domain.hi:g}]"
        else:
            continue
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            raise UserError(
                f"input '{name}' has value {value[first]:g} at {first}, outside its domain {text}"
            )


def public_only(checked: CheckedProgram, arrays: Mapping[str, Array]) -> dict[str, Array]:
    """The inputs the client block may see: the public ones (never a secret input's data)."""
    return {n: v for n, v in arrays.items() if not checked.bindings[n].ty.secret}


@dataclass
class RunResult:
    outdir: Path
    revealed: dict[str, Array]
    client: dict[str, Array]
    summary: dict[str, Json] = field(default_factory=dict)


# Beyond 2^53 a float64 no longer holds every integer: an exact (BFV) revealed value with an
# entry beyond it is also written as NAME.txt (EXACT_TEXT_HEADER, then one decimal integer per
# line, C order), which holds any size losslessly; NAME.npy holds the nearest float64s.
FLOAT_EXACT_LIMIT = 2**53
EXACT_TEXT_HEADER = "# hec exact integers, C order, shape "


def needs_exact_text(value: npt.ArrayLike) -> bool:
    """Whether an integer array has an entry float64 cannot hold exactly."""
    a = np.asarray(value)
    if a.dtype.kind not in "iuO":
        return False
    return any(abs(int(v)) > FLOAT_EXACT_LIMIT for v in a.flat)


def exact_text(value: npt.ArrayLike) -> str:
    a = np.asarray(value)
    lines = [f"{EXACT_TEXT_HEADER}{list(a.shape)}", *(str(int(v)) for v in a.flat)]
    return "\n".join(lines) + "\n"


def read_exact_text(path: str | Path) -> npt.NDArray[np.object_]:
    """A NAME.txt of exact integers as an object array of Python ints of its shape."""
    head, *rows = Path(path).read_text().splitlines()
    if not head.startswith(EXACT_TEXT_HEADER):
        raise UserError(f"{path} is not a file of exact integers written by hec run")
    shape = tuple(json.loads(head[len(EXACT_TEXT_HEADER) :]))
    out = np.empty(len(rows), dtype=object)
    out[:] = [int(r) for r in rows]
    return out.reshape(shape)


def for_client(revealed: Mapping[str, Array]) -> dict[str, Array]:
    """The revealed values as the client block computes on them (float64 where a value holds
    Python integers: the client's statistics are floating-point)."""
    return {
        k: np.asarray(v, dtype=np.float64) if np.asarray(v).dtype == object else v
        for k, v in revealed.items()
    }


def write_outputs(
    outdir: Path,
    revealed: Mapping[str, Array],
    client: Mapping[str, Array],
    summary: dict[str, Json],
    keep_dtypes: bool = False,
) -> dict[str, Json]:
    """Write every array and summary.json atomically; on failure remove what was written.
    Returns the summary as written (with the file lists). Arrays are float64, or with
    `keep_dtypes` (an integer program's outputs: uint8, int16, bool, ...) their own dtype."""
    created = not outdir.exists()
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    try:
        files: dict[str, Json] = {}
        exact: dict[str, Json] = {}
        for name, value in [*revealed.items(), *client.items()]:
            target = outdir / f"{name}.npy"
            keep = keep_dtypes and np.asarray(value).dtype.kind in "biu"
            as_saved = np.asarray(value) if keep else np.asarray(value, dtype=np.float64)
            _atomic_write(target, lambda f, v=as_saved: np.save(f, v))
            written.append(target)
            files[name] = target.name
            if name in revealed and needs_exact_text(value):
                target = outdir / f"{name}.txt"
                text = exact_text(value)
                _atomic_write(target, lambda f, t=text: f.write(t.encode()))
                written.append(target)
                exact[name] = target.name
        summary = {**summary, "files": files}
        if exact:
            summary["exact_files"] = exact
        target = outdir / "summary.json"
        text = json.dumps(summary, indent=2) + "\n"
        _atomic_write(target, lambda f: f.write(text.encode()))
        written.append(target)
        return summary
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        if created and not any(outdir.iterdir()):
            outdir.rmdir()
        raise


def _atomic_write(target: Path, write: Callable[[IO[bytes]], object]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _params_summary(comp: Compilation) -> dict[str, Json]:
    if comp.scheme == "bfv":
        bfv_params = comp.bfv_program.parameters()
        if bfv_params is None:
            return {}
        return {
            "scheme": "bfv",
            "log_n": bfv_params.log_n,
            "plain_moduli": list(bfv_params.plain_moduli),
            "moduli_bits": [round(float(np.log2(q)), 2) for q in bfv_params.moduli],
            "special_moduli_bits": [round(float(np.log2(q)), 2) for q in bfv_params.special_moduli],
            "security_bits": bfv_params.security_bits,
            "insecure": bfv_params.insecure,
        }
    params = comp.program.parameters()
    if params is None:
        return {}
    return {
        "scheme": "ckks",
        "log_n": params.log_n,
        "moduli_bits": [round(float(np.log2(q)), 2) for q in params.output_moduli + params.moduli],
        "special_moduli_bits": [round(float(np.log2(q)), 2) for q in params.special_moduli],
        "security_bits": params.security_bits,
        "insecure": params.insecure,
    }


def _residue_moduli(comp: Compilation) -> tuple[int, ...]:
    """The plaintext moduli of a BFV compilation (one run each), or one entry (CKKS)."""
    if comp.scheme == "bfv":
        params = comp.bfv_program.parameters()
        if params is not None:
            return params.plain_moduli
    return (0,)


def _reconstruct(comp: Compilation, runs: Sequence[Mapping[str, Array]]) -> dict[str, Array]:
    """The revealed values from the decrypted residues of each run (one run: as decrypted)."""
    moduli = _residue_moduli(comp)
    if len(moduli) == 1:
        return dict(runs[0])
    from compiler.dialects import bfv

    return {name: bfv.reconstruct([r[name] for r in runs], moduli) for name in runs[0]}


def compile_sizes(
    checked: CheckedProgram, options: Options, run_sizes: Mapping[str, int], strict: bool
) -> Options:
    """The options a run compiles with: `--size` when given (each at least the data's size),
    else the data's sizes. `strict` adds the hint of `hec run --sim`."""
    for name, bound in options.sizes.items():
        if name in run_sizes and run_sizes[name] > bound:
            raise UserError(
                f"the inputs have {name} = {run_sizes[name]}, above --size {name}={bound}",
                hint=f"compile for the data: --size {name}={run_sizes[name]} (or omit --size)"
                if strict
                else "",
            )
    return options if options.sizes else replace(options, sizes=Sizes.of(run_sizes))


def _summary(
    comp: Compilation,
    path: str | Path,
    backend: str,
    run_sizes: Mapping[str, int],
    revealed: Mapping[str, Array],
    client: Mapping[str, Array],
) -> dict[str, Json]:
    params = _params_summary(comp)
    summary: dict[str, Json] = {
        "program": comp.stat_program.sym_name.data,
        "source": str(path),
        "backend": backend,
        "sizes": dict(run_sizes),
        "compiled_for": dict(comp.options.sizes),
        "params": params,
        "insecure": bool(params.get("insecure", False)),
        "revealed": sorted(revealed),
        "client": sorted(client),
    }
    return summary


def _client(
    comp: Compilation,
    sizes: Mapping[str, int],
    revealed: Mapping[str, Array],
    arrays: Mapping[str, Array],
) -> dict[str, Array]:
    """The client block on the revealed values and the public inputs: the compiled stat
    program's client region, or for bit slices (whose revealed values are integers the
    driver assembles) the program's own client block by the reference evaluator."""
    public = public_only(comp.checked, arrays)
    if comp.scheme == "bfv" and is_integer_program(comp.checked):
        return run_client_block(comp.checked, sizes, revealed, public)
    return run_client(comp.stat_program, sizes, for_client(revealed), public_inputs=public)


def run_sim(
    path: str | Path,
    inputs: Mapping[str, Path],
    outdir: str | Path,
    noisy: bool = False,
    seed: int = 0,
    options: Options | None = None,
) -> RunResult:
    """`hec run --sim`: compile for the data's sizes (or `options.sizes`), simulate, apply the
    client block, write the outputs."""
    from targets.sim.simulator import simulate

    checked = check(parse_file(str(path)))
    exact = is_integer_program(checked)
    arrays = {name: load_npy(name, p, keep_integers=exact) for name, p in inputs.items()}
    run_sizes = infer_sizes(checked, arrays)
    check_domains(checked, arrays)
    # One party sees everything (nothing is decrypted for anyone else): no flooding to budget.
    opts = replace(
        compile_sizes(checked, options or Options(), run_sizes, strict=True), flooding=False
    )
    comp = run_pipeline(checked, opts, out=io.StringIO())
    if comp.scheme == "bfv":
        from targets.sim.bfv_sim import simulate_bfv

        if is_integer_program(checked):  # bit slices: planes in, integers out
            slices = split_inputs(checked, arrays)
            revealed = simulate_bfv(comp.bfv_program, run_sizes, slices).outputs
            outputs = assemble_outputs(checked, revealed)
        else:
            outputs = simulate_bfv(comp.bfv_program, run_sizes, arrays).outputs
    else:
        outputs = simulate(comp.program, run_sizes, arrays, noisy=noisy, seed=seed).outputs
    client = _client(comp, run_sizes, outputs, arrays)
    backend = "simulator-noisy" if noisy else "simulator-exact"
    summary = _summary(comp, path, backend, run_sizes, outputs, client)
    if summary["insecure"]:
        summary["warning"] = "INSECURE parameters (compiled with --insecure)"
    out = Path(outdir)
    summary = write_outputs(out, outputs, client, summary, keep_dtypes=exact)
    return RunResult(out, dict(outputs), client, summary)


# ------------------------------------------------------------------------------------------
# The C++ target: hec compile and the encrypted hec run
# ------------------------------------------------------------------------------------------


@dataclass
class Built:
    """A compiled C++ program: where it lives and what was (re)built."""

    directory: Path
    binary: Path
    emitted: Emitted
    rewritten: list[Path]
    built: bool

    def describe(self) -> str:
        e = self.emitted
        plan = (
            f"streams over rows in {e.passes} pass(es)"
            if e.streaming
            else "reads inputs whole" + (f" ({e.note})" if e.note else "")
        )
        files = ", ".join(p.name for p in self.rewritten) or "none (unchanged)"
        state = f"built {self.binary}" if self.built else "not built (--no-build)"
        return f"program {e.name}: {plan}; files rewritten: {files}; {state}"


def _runtime_library() -> tuple[Path, Path]:
    """The runtime's source directory and its static library, built (or brought up to date)
    with CMake when the build directory exists."""
    import subprocess

    from driver.environment import REPO_ROOT, runtime_build_dir

    build = runtime_build_dir()
    lib = build / "libhec_runtime.a"
    if (build / "build.ninja").is_file():
        done = subprocess.run(
            ["cmake", "--build", str(build), "--target", "hec_runtime", "--", "-j2"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise UserError(f"building the runtime in {build} failed:\n{done.stdout[-4000:]}")
    if not lib.is_file():
        raise UserError(
            f"the runtime library {lib} is not built", hint="run scripts/setup (or scripts/test)"
        )
    return REPO_ROOT / "runtime", lib


def _system_libs() -> str:
    """Linker flags of the Debian libraries the runtime uses (libsodium, OpenSSL's libcrypto)."""
    import subprocess

    done = subprocess.run(
        ["pkg-config", "--libs", "libsodium", "libcrypto"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip()
    from targets.cpp.emit import SYSTEM_LIBS

    return SYSTEM_LIBS


def compile_cpp(
    path: str | Path, outdir: str | Path, options: Options, build: bool = True
) -> Built:
    """`hec compile`: compile `path`, emit C++ and build.ninja into `outdir`, run ninja."""
    return build_cpp(compile_file(path, options, out=io.StringIO()), path, outdir, build)


def promise_of(comp: Compilation) -> Promise:
    """The precision the compilation promised (the user's targets, before any raise the
    scale search needed), which the generated program checks again at the run's sizes."""
    targets = {k: float(v) for k, v in parse_sizes(comp.options.promised).items()}
    return Promise(targets, comp.options.precision_bits)


def build_cpp(
    comp: Compilation, source: str | Path, outdir: str | Path, build: bool = True
) -> Built:
    """Emit the C++ program of a finished compilation into `outdir` and build it (the compiler
    does not run again)."""
    from targets.cpp.emit import emit, write_project

    runtime_dir, lib = _runtime_library()
    emitted = emit(comp.module, str(source), runtime_dir, lib, _system_libs(), promise_of(comp))
    out = Path(outdir)
    rewritten = write_project(emitted, out)
    binary = out / emitted.name
    if build:
        ninja_build(out, binary)
    return Built(out, binary, emitted, rewritten, build)


def ninja_build(out: Path, binary: Path) -> None:
    """Build a generated program's directory with Ninja (rebuilds only what changed)."""
    import shutil
    import subprocess

    ninja = shutil.which("ninja")
    if ninja is None:
        raise UserError("ninja is not installed", hint="run scripts/setup")
    done = subprocess.run([ninja, "-C", str(out)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise UserError(f"building {binary} failed:\n{done.stdout[-6000:]}{done.stderr}")


def owner_inputs(program: he.ProgramRule) -> set[str]:
    """The inputs the compiled program's data owners encrypt (declared sources and plain
    encodes): an input the server never reads is not handed to the encrypt role, which would
    refuse a name it does not know."""
    names: set[str] = set()
    for op in program.block.ops:
        if isinstance(op, he.SourceRule) or (
            isinstance(op, he.EncodeRule) and op.expr_value is None and not op.digit_exprs
        ):
            names.add(op.sym_value)
    return names


def uncarried_sizes(
    program: ckks.ProgramOp | bfv.ProgramOp,
    checked: CheckedProgram,
    owned: set[str],
    sizes: Mapping[str, int],
) -> dict[str, int]:
    """The size parameters the compiled program reads (targets/cpp/emit.py `sizes_read`) that
    no encrypted input's shape carries (e.g. M in `x / (M + 1)` when the only [M] input is one
    the server never reads), with their values in `sizes`: keygen fixes them in the run
    manifest (`--size NAME=V`), since the server binds every other size from its uploads."""
    from targets.cpp.emit import sizes_read

    shapes = [checked.bindings[plane_source(name)].ty.shape for name in owned]
    carried = {d for shape in shapes for d in shape if isinstance(d, str)}
    read = sizes_read(program)
    return {p: int(sizes[p]) for p in checked.params if p in read - carried and p in sizes}


def run_encrypted(
    path: str | Path,
    inputs: Mapping[str, Path],
    outdir: str | Path,
    options: Options | None = None,
    work: str | Path | None = None,
) -> RunResult:
    """`hec run` without --sim: compile (once) and build the C++ program, then run keygen,
    encrypt, compute and decrypt in order in a scratch directory (`work`, kept when given),
    apply the client block, write the outputs."""
    checked = check(parse_file(str(path)))
    exact = is_integer_program(checked)
    arrays = {name: load_npy(name, p, keep_integers=exact) for name, p in inputs.items()}
    run_sizes = infer_sizes(checked, arrays)
    check_domains(checked, arrays)
    # Single-party: decrypt runs with --no-flooding below, so the targets hold without it.
    opts = replace(
        compile_sizes(checked, options or Options(), run_sizes, strict=False), flooding=False
    )
    comp = run_pipeline(checked, opts, out=io.StringIO())
    with contextlib.ExitStack() as stack:
        base = (
            stack.enter_context(scratch_directory("hec-run-")) if work is None else Path(str(work))
        )
        built = build_cpp(comp, path, base / "build")
        program = comp.bfv_program if comp.scheme == "bfv" else comp.program
        sliced = comp.scheme == "bfv" and is_integer_program(checked)
        if sliced:  # bit slices: each integer input's planes, written for the owners
            planes = base / "planes"
            planes.mkdir(parents=True, exist_ok=True)
            inputs = dict(inputs)
            for name, plane in split_inputs(checked, arrays).items():
                if name not in arrays:
                    np.save(planes / f"{name}.npy", plane)
                    inputs[name] = planes / f"{name}.npy"
        owned = owner_inputs(program)
        stream = built.emitted.stream_dim
        residues = _residue_moduli(comp)
        runs: list[tuple[dict[str, Array], RoleOutput]] = []
        timings: list[float] = []
        compute_seconds: list[float] = []  # the server role's wall time, per residue run
        for i in range(len(residues)):
            # One residue computation per plaintext modulus (a CRT over several: each its own
            # keys, ciphertexts and results under base/r<i>); one modulus: base itself.
            root = base if len(residues) == 1 else base / f"r{i}"
            cts, res, dec = root / "ct", root / "res", root / "dec"
            for scratch_dir in (cts, res, dec):  # a kept work directory: start clean
                shutil.rmtree(scratch_dir, ignore_errors=True)
            roles = RoleSequence(built.binary, root, residue=None if len(residues) == 1 else i)
            began = time.perf_counter()
            roles.keygen(
                run_sizes[stream] if stream else None,
                sizes=uncarried_sizes(program, checked, owned, run_sizes),
            )
            roles.encrypt({k: v for k, v in inputs.items() if k in owned}, cts)
            started = time.perf_counter()
            compute = roles.compute(cts, res)
            compute_seconds.append(time.perf_counter() - started)
            # one party: the ciphertexts are deleted with the run, so nothing to flood against
            runs.append((roles.decrypt(res, dec, flooding=False), compute))
            timings.append(time.perf_counter() - began)
        revealed = _reconstruct(comp, [r for r, _ in runs])
        if sliced:
            revealed = assemble_outputs(checked, revealed)
        compute = max((c for _, c in runs), key=lambda c: c.peak_rss_bytes)
        client = _client(comp, run_sizes, revealed, arrays)
        summary = _summary(comp, path, "encrypted", run_sizes, revealed, client)
        peak = [ln for ln in compute.stderr.splitlines() if "peak_rss_bytes=" in ln]
        summary["binary"] = str(built.binary) if work is not None else None
        if len(residues) > 1:
            summary["residue_seconds"] = [round(x, 3) for x in timings]
        summary["compute_seconds"] = round(sum(compute_seconds), 3)
        summary["compute_peak_rss_bytes"] = (
            int(peak[-1].split("peak_rss_bytes=")[1].rstrip(")")) if peak else None
        )
        if summary["insecure"]:
            summary["warning"] = "INSECURE parameters (compiled with --insecure)"
        out = Path(outdir)
        summary = write_outputs(out, revealed, client, summary, keep_dtypes=exact)
        return RunResult(out, revealed, client, summary)
