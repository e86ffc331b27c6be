"""Execution backends of `hec gwas`: compile a .hec program once (cached on disk), then run
it block by block on the data and return the revealed values of each block.

`compile_cached` runs the compiler pipeline (driver/pipeline.py) for the run's sizes and keeps
the compiled ckks IR, the source's stat IR (for the client block) and the report in a cache
directory keyed by the source's SHA-256, the sizes and the options, so a second run on data of
the same shape does not compile again.

Backends:
- `encrypted` (`EncryptedBackend`, the default): the C++ program generated for the compiled
  program (targets/cpp through `driver.run.compile_cpp`, cached next to the compiled IR), its
  four roles run locally in order: `keygen` once (coordinator), then per SNP block `encrypt`
  (data owners, public key only), `compute` (server, evaluation keys only), `decrypt`
  (coordinator). Keys and ciphertexts live in a 0700 temporary directory removed at the end,
  also when the run is interrupted (driver/interrupt.py); every file is bound to the run's
  manifest and signed by the party that made it (runtime/program/manifest.h).
- `sim` (`SimBackend`): the reference simulator in noisy mode (targets/sim): the compiled
  program's arithmetic on plaintext numpy arrays with the CKKS errors injected at their
  analytic magnitudes. It is a SIMULATION of the encrypted computation: nothing is
  encrypted, and every output it produces says so.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from compiler.dialects import ckks, stat
from compiler.errors import InternalError
from compiler.ir_text import parse_ir, print_ir
from compiler.stat_numpy import run_client
from driver import __version__
from driver.pipeline import Options, compile_file, report_of
from gwas.memory import PhaseMeter
from targets.sim.simulator import simulate

Array = npt.NDArray[np.float64]
CACHE_FORMAT = 2  # 2: complex packing (passes/complex_packing.py)
# The sources whose change changes what a compilation produces (part of the cache key, so a
# changed compiler never reuses a program an older one compiled).
COMPILER_PACKAGES = ("compiler", "dsl", "passes", "targets", "hec")


@functools.lru_cache(maxsize=1)
def compiler_digest() -> str:
    h = hashlib.sha256()
    root = Path(__file__).resolve().parents[1]
    for package in COMPILER_PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def default_cache_dir() -> Path:
    env = os.environ.get("HEC_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hec" / "programs"


# The largest float64 SNP block (individuals x SNPs) a run holds in memory at once, and the
# ciphertext bytes a block's files may take (CompiledProgram.block_width).
BLOCK_BYTES = 1 << 30
BLOCK_CT_BYTES = 16 << 30


@dataclass
class CompiledProgram:
    """A program compiled for one size binding: what every backend starts from."""

    source: Path
    source_sha256: str
    sizes: dict[str, int]
    precision_bits: float
    module: Any  # the ckks ModuleOp
    stat_module: Any  # the source's stat ModuleOp (its client block runs after decryption)
    report: dict[str, Any]
    cache_key: str
    cache_hit: bool

    @property
    def program(self) -> ckks.ProgramOp:
        for op in self.module.walk():
            if isinstance(op, ckks.ProgramOp):
                return op
        raise InternalError("compiled module has no ckks.program")

    @property
    def stat_program(self) -> stat.ProgramOp:
        op = self.stat_module.body.block.first_op
        if not isinstance(op, stat.ProgramOp):
            raise InternalError("stat module has no stat.program")
        return op

    @property
    def slots(self) -> int:
        params = self.program.parameters()
        if params is None:
            raise InternalError("compiled program has no parameters")
        return params.slots

    @property
    def complex_packed(self) -> bool:
        """The genotype rows are complex-packed (two slot sets per ciphertext)."""
        return any(
            ckks.ct_type(e.result).layout_name == ckks.COMPLEX for e in self.program.encrypts()
        )

    @property
    def coeff_group(self) -> int:
        """Columns per coefficient when the program packs counts (coeff layout), else 0."""
        groups = [
            e.group_value
            for e in self.program.block.ops
            if isinstance(e, ckks.EncodeOp) and ckks.pt_type(e.result).layout_name == ckks.COEFF
        ]
        return max(groups, default=0)

    @property
    def columns_per_ciphertext(self) -> int:
        if self.coeff_group:  # 2 slots coefficients of `group` columns each
            return 2 * self.slots * self.coeff_group
        return self.slots * (2 if self.complex_packed else 1)

    def encrypted_sources(self) -> list[list[str]]:
        """Per encrypted input, the owner inputs it is computed from."""
        return [e.source().sources() for e in self.program.encrypts()]

    def block_width(self, rows: int, columns: int) -> int:
        """SNPs per block: a whole number of slot sets (of pairs of them when the genotypes are
        complex-packed), as many as the columns need but at
        most BLOCK_BYTES of float64 inputs (rows x width) and about BLOCK_CT_BYTES of
        ciphertexts per block. Fewer blocks mean fewer reads of the inputs every block shares
        (the phenotype, encrypted once); the caps keep the plaintext block and the block's
        ciphertext files (written, read, deleted block by block) bounded whatever the
        cohort. Measured at N = 5000, M = 16384, 2 threads (ciphertext files written by one
        thread per file): one 13 GiB block 15.6-17.7 s to encrypt and 1.49-1.65 s to compute,
        two 6.5 GiB blocks 16.7 s and 1.8 s (the phenotype read twice)."""
        # A complex-packed input holds two slot sets per ciphertext: blocks of whole pairs.
        slots = self.columns_per_ciphertext
        wanted = max(1, -(-columns // slots))
        affordable = max(1, BLOCK_BYTES // (8 * max(1, rows) * slots))
        sizes = self.report["sizes"]
        m = int(self.sizes.get("M", columns)) or columns
        per_set = int(sizes["upload_per_individual"]) * max(1, rows) * slots / m
        ct_affordable = max(1, int(BLOCK_CT_BYTES // max(per_set, 1)))
        return slots * min(wanted, affordable, ct_affordable)

    @property
    def input_names(self) -> list[str]:
        names: list[str] = []
        for op in self.program.block.ops:
            if isinstance(op, ckks.EncodeOp) and op.sym_value not in names:
                names.append(op.sym_value)
        return names

    def revealed_abs_error(self, name: str) -> float:
        """The absolute error the report promises for revealed value `name`: its range's
        largest magnitude times 2^-precision_bits."""
        for out in self.report["outputs"]:
            if out["name"] == name:
                lo, hi = out["range"]
                return max(abs(lo), abs(hi)) * 2.0 ** -float(out["precision_bits"])
        raise InternalError(f"no output {name} in the report")

    def client(self, sizes: Mapping[str, int], revealed: Mapping[str, Array]) -> dict[str, Array]:
        """The program's client block on decrypted values (division by zero gives inf/nan,
        which the caller maps to PLINK's NA)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return run_client(self.stat_program, sizes, revealed)


def compile_options(sizes: Mapping[str, int], precision_bits: float, log_n: int) -> Options:
    size_text = ",".join(f"{k}={v}" for k, v in sizes.items())
    return Options(sizes=size_text, precision_bits=precision_bits, log_n=log_n)


def _cache_key(
    source_text: bytes, sizes: Mapping[str, int], precision_bits: float, log_n: int
) -> str:
    h = hashlib.sha256()
    h.update(source_text)
    meta = {
        "sizes": dict(sorted(sizes.items())),
        "precision_bits": precision_bits,
        "log_n": log_n,
        "hec": __version__,
        "compiler": compiler_digest(),
        "format": CACHE_FORMAT,
    }
    h.update(json.dumps(meta, sort_keys=True).encode())
    return h.hexdigest()[:32]


ENTRY_FILES = ("ckks.mlir", "stat.mlir", "source.hec", "report.json")


@contextmanager
def cache_lock(root: Path, name: str) -> Iterator[None]:
    """An exclusive lock (fcntl) on `root/.NAME.lock`: one process at a time builds or
    repairs what the lock guards; readers of finished, verified entries need none."""
    import fcntl

    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{name}.lock").open("a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _entry_intact(entry: Path) -> bool:
    """Every file of a cache entry matches the digest recorded when it was installed."""
    try:
        recorded = json.loads((entry / "digests.json").read_text())
        return all(_sha256_file(entry / name) == recorded[name] for name in ENTRY_FILES)
    except (OSError, ValueError, KeyError, TypeError):
        return False


def compile_cached(
    source: Path,
    sizes: Mapping[str, int],
    precision_bits: float,
    cache_dir: Path | None = None,
    log_n: int = 0,
) -> CompiledProgram:
    """Compile `source` for `sizes`, or load the result of an earlier identical compilation.
    `log_n` forces the ring dimension (0: the compiler's choice). The entry is built under a
    lock (concurrent cold runs compile once), installed by an atomic rename, and verified by
    its recorded SHA-256 digests when loaded: a damaged entry is rebuilt."""
    text = source.read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    key = _cache_key(text, sizes, precision_bits, log_n)
    root = cache_dir or default_cache_dir()
    entry = root / key
    with cache_lock(root, key):
        if entry.is_dir() and _entry_intact(entry):
            try:
                module = parse_ir((entry / "ckks.mlir").read_text(), ckks.Ckks)
                stat_module = parse_ir((entry / "stat.mlir").read_text())
                report = json.loads((entry / "report.json").read_text())
                return CompiledProgram(
                    source, digest, dict(sizes), precision_bits, module, stat_module, report,
                    key, True,
                )  # fmt: skip
            except Exception:  # an entry that does not load is rebuilt
                pass
        if entry.exists():  # damaged or from an interrupted older version: rebuilt
            shutil.rmtree(entry, ignore_errors=True)
        comp = compile_file(source, compile_options(sizes, precision_bits, log_n))
        report = report_of(comp)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
        try:
            (tmp / "ckks.mlir").write_text(print_ir(comp.module))
            (tmp / "stat.mlir").write_text(print_ir(comp.stat_module))
            (tmp / "source.hec").write_bytes(text)
            (tmp / "report.json").write_text(json.dumps(report, indent=1))
            digests = {name: _sha256_file(tmp / name) for name in ENTRY_FILES}
            (tmp / "digests.json").write_text(json.dumps(digests, indent=1))
            tmp.rename(entry)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return CompiledProgram(
        source,
        digest,
        dict(sizes),
        precision_bits,
        comp.module,
        comp.stat_module,
        report,
        key,
        False,
    )


def install_binary(built_binary: Path, bin_dir: Path) -> Path:
    """Copy a freshly built program to `bin_dir/NAME-SHA16` (temporary name, fsync, rename):
    a run executes an installed file that no later build touches (a build writes its own
    directory only), so a concurrent rebuild never hits a running binary ("Text file busy").
    An installed file whose content does not match its name is replaced."""
    sha = _sha256_file(built_binary)
    bin_dir.mkdir(parents=True, exist_ok=True)
    target = bin_dir / f"{built_binary.name}-{sha[:16]}"
    if target.is_file() and _sha256_file(target) == sha:
        return target
    tmp = bin_dir / f".{target.name}.tmp-{os.getpid()}"
    try:
        shutil.copyfile(built_binary, tmp)
        tmp.chmod(0o755)
        with tmp.open("rb") as f:
            os.fsync(f.fileno())
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    for old in bin_dir.glob(f"{built_binary.name}-*"):
        if old != target and not old.name.startswith("."):
            old.unlink(missing_ok=True)
    return target


@dataclass
class Block:
    """One SNP block: the columns [start, stop) and the program's inputs for them."""

    index: int
    start: int
    stop: int
    inputs: dict[str, Array]
    shared: frozenset[str] = frozenset()  # inputs equal in every block (encrypted only once)


class Backend(ABC):
    """Runs a compiled program over SNP blocks and hands back each block's revealed values."""

    name: str
    encrypts: bool
    description: str

    def __init__(self) -> None:
        self.notes: list[str] = []  # what the log should say about this run's backend
        self.seed = 0
        # Facts the run's manifest is bound to (keygen --bind), e.g. the SNP list's digest.
        self.bindings: dict[str, str] = {}

    def compile(
        self,
        source: Path,
        sizes: Mapping[str, int],
        precision_bits: float,
        cache_dir: Path | None,
    ) -> CompiledProgram:
        """Compile (or load from the cache) what this backend runs."""
        return compile_cached(source, sizes, precision_bits, cache_dir)

    @abstractmethod
    def phases(self) -> list[str]:
        """The phases this backend times, in order."""

    @abstractmethod
    def run(
        self,
        compiled: CompiledProgram,
        blocks: Iterable[Block],
        n_blocks: int,
        meter: PhaseMeter,
        progress: Callable[[str, int, int], None],
    ) -> Iterator[tuple[Block, dict[str, Array]]]:
        """Yield (block, revealed values of that block) for every block, in order."""


class SimBackend(Backend):
    """The reference simulator in noisy mode: a simulation of the encrypted computation."""

    name = "sim"
    encrypts = False
    description = (
        "SIMULATION of the encrypted computation (reference simulator, noisy mode: the compiled "
        "CKKS program run on plaintext numbers with encoding, encryption, rescale and "
        "key-switch errors injected at their analytic magnitudes). Nothing is encrypted."
    )

    def phases(self) -> list[str]:
        return ["simulate"]

    def run(
        self,
        compiled: CompiledProgram,
        blocks: Iterable[Block],
        n_blocks: int,
        meter: PhaseMeter,
        progress: Callable[[str, int, int], None],
    ) -> Iterator[tuple[Block, dict[str, Array]]]:
        program = compiled.program
        progress("simulate", 0, n_blocks)
        for done, block in enumerate(blocks, start=1):
            sizes = {**compiled.sizes, "M": block.stop - block.start}
            with meter.phase("simulate"):
                result = simulate(
                    program, sizes, block.inputs, noisy=True, seed=self.seed + block.index
                )
            progress("simulate", done, n_blocks)
            yield block, result.outputs


_PEAK = re.compile(r"peak_rss_bytes=(\d+)")


def _vm_hwm(pid: int) -> int:
    """Peak resident set (VmHWM) of a running process in bytes; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


_ROW_PROGRESS = re.compile(r"^\[([^\]]+)\] (\d+)/(\d+) ", re.M)
RowProgress = Callable[[str, int, int], None]


def run_role_measured(
    binary: Path | None,
    *args: str,
    poll_seconds: float = 0.005,
    on_progress: RowProgress | None = None,
) -> int:
    """Run one role of a generated program (as `driver.run.run_role` does: HEC_QUIET unless set,
    a failure becomes a UserError with the role's message) and return its peak resident set in
    bytes: the largest of the peak the role prints (`peak_rss_bytes=`) and its VmHWM sampled
    while it runs. (The kernel's per-child maximum would also count the launching Python
    process's pages, which the child shares until exec.) With `on_progress`, the role prints
    its per-row progress ("[phase] rows/N ...", at most once a second) and each line is passed
    on as (phase, rows done, rows) while the role runs."""
    from compiler.errors import UserError

    if binary is None:
        raise InternalError("the generated program was not built")
    from driver.interrupt import check, start_child, stop

    quiet = os.environ.get("HEC_QUIET", "0" if on_progress else "1")
    env = {**os.environ, "HEC_QUIET": quiet}
    peak = 0
    with tempfile.TemporaryFile() as err_file:
        # Its own process group, killed with hec: an interruption stops it (and everything it
        # started) before the scratch directory is removed.
        proc = start_child([str(binary), *args], subprocess.DEVNULL, err_file, env)
        read_at = 0
        polls = 0
        try:
            while True:
                try:
                    proc.wait(timeout=poll_seconds)
                    break
                except subprocess.TimeoutExpired:
                    peak = max(peak, _vm_hwm(proc.pid))
                check()
                polls += 1
                if on_progress is not None and polls % 40 == 0:  # about every 0.2 s
                    with open(err_file.fileno(), "rb", closefd=False) as fh:
                        fh.seek(read_at)
                        chunk = fh.read()
                    end = chunk.rfind(b"\n") + 1
                    read_at += end
                    for m in _ROW_PROGRESS.finditer(chunk[:end].decode(errors="replace")):
                        on_progress(m.group(1), int(m.group(2)), int(m.group(3)))
            check()
        except BaseException:
            stop(proc)
            raise
        err_file.seek(0)
        err = err_file.read().decode(errors="replace")
    if proc.returncode != 0:
        message = "\n".join(
            line for line in err.strip().splitlines() if not _ROW_PROGRESS.match(line)
        )
        raise UserError(f"{binary.name} {args[0]} failed: {message}")
    reported = [int(x) for x in _PEAK.findall(err)]
    return max([peak, *reported])


def _flush_files(directory: Path) -> None:
    """fdatasync every regular file in `directory` (not following symbolic links)."""
    for f in directory.iterdir():
        if f.is_symlink() or not f.is_file():
            continue
        fd = os.open(f, os.O_RDONLY)
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)


def compact_integers(value: Array) -> npt.NDArray[Any]:
    """`value` as int8 when every entry is an integer in [-128, 127] (genotype counts,
    phenotypes, masks: an eighth of the float64 file the encrypting role reads), else
    unchanged. The role converts to double exactly either way."""
    if value.size and np.all(np.isfinite(value)):
        lo, hi = float(value.min()), float(value.max())
        if lo >= -128 and hi <= 127 and np.array_equal(value, np.rint(value)):
            return value.astype(np.int8)
    return value


def block_bytes(compiled: CompiledProgram, width: int) -> int:
    """The ciphertext bytes one SNP block of `width` columns uploads (from the report's
    per-individual upload for the compiled M, scaled to the block)."""
    sizes = compiled.report["sizes"]
    axes = sizes["individual_axes"]
    rows = int(compiled.sizes.get(axes[0], 1)) if axes else 1
    m = int(compiled.sizes.get("M", width)) or width
    per_row = int(sizes["upload_per_individual"]) * min(1.0, width / m)
    return int(per_row * rows) + int(sizes["upload_other"])


def scratch_dir(need_bytes: int) -> tuple[str | None, str]:
    """Where a run keeps its ciphertext files (`need_bytes`: one block's): HEC_SCRATCH when
    set, else the default temporary directory (TMPDIR). Measured on the development machine
    (ext4 on a fast virtual disk), the disk's page cache beat RAM-backed /dev/shm for both
    roles, even for 13 GiB blocks past the kernel's dirty-page limit: tmpfs reads walk 4 KiB
    pages (the server pass took 20% longer); on a slow disk HEC_SCRATCH=/dev/shm avoids
    write-back throttling. Returns the directory (None: the default) and a sentence for the
    log."""
    explicit = os.environ.get("HEC_SCRATCH")
    gib = need_bytes / 2**30
    if explicit:
        return explicit, f"ciphertext files in {explicit} (HEC_SCRATCH; {gib:.1f} GiB per block)"
    where = tempfile.gettempdir()
    return None, f"ciphertext files in {where} ({gib:.1f} GiB per block; HEC_SCRATCH moves them)"


@contextmanager
def _threads(threads: int) -> Iterator[None]:
    """HEC_THREADS for the generated program's roles (0: leave the runtime's default)."""
    old = os.environ.get("HEC_THREADS")
    if threads > 0:
        os.environ["HEC_THREADS"] = str(threads)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HEC_THREADS", None)
        else:
            os.environ["HEC_THREADS"] = old


class EncryptedBackend(Backend):
    """The generated C++ program: real CKKS encryption under 128-bit secure parameters."""

    name = "encrypted"
    encrypts = True
    description = (
        "encrypted: the C++ program generated from the compiled CKKS program (targets/cpp) runs "
        "its four roles locally: keygen (coordinator), encrypt (data owners: public key only), "
        "compute (server: evaluation keys only, never the secret key), decrypt (coordinator)."
    )

    def __init__(self) -> None:
        super().__init__()
        self.binary: Path | None = None
        self.stream_dim: str | None = None
        self.threads = 0
        # Ciphertext bytes the encrypt role wrote (every block, the shared inputs once): what
        # the data owners upload, to set next to the report's figure.
        self.upload_bytes = 0

    def phases(self) -> list[str]:
        return ["keygen", "encrypt", "compute", "decrypt"]

    @staticmethod
    def _row_progress(
        progress: Callable[..., None], phase: str, block: int, n_blocks: int
    ) -> RowProgress:
        """Row-batch progress of a role inside block `block` of `n_blocks`, shown on the
        phase's own bar (its time is the phase's time so far)."""

        started = time.perf_counter()

        def report(_role_phase: str, rows: int, total: int) -> None:
            unit = f"rows (block {block}/{n_blocks})"
            running = time.perf_counter() - started
            try:
                progress(phase, rows, total, unit, running=running)
            except TypeError:  # a progress callback without units
                progress(phase, rows, total)

        return report

    def compile(
        self,
        source: Path,
        sizes: Mapping[str, int],
        precision_bits: float,
        cache_dir: Path | None,
    ) -> CompiledProgram:
        from driver.run import compile_cpp

        # The program runs under exactly the parameters the compiler chose (the runtime takes
        # parameter sets without special primes when no key is switched).
        compiled = compile_cached(source, sizes, precision_bits, cache_dir, 0)
        root = cache_dir or default_cache_dir()
        entry = root / compiled.cache_key
        # One build at a time per cache (the runtime library and ninja are not safe to run
        # twice at once in one directory); the run then executes its own installed copy.
        with cache_lock(root, "build"):
            built = compile_cpp(source, entry / "cpp", compile_options(sizes, precision_bits, 0))
            self.binary = install_binary(built.binary, entry / "bin")
        self.stream_dim = built.emitted.stream_dim
        self.notes.append(f"generated program {self.binary} ({built.describe()})")
        return compiled

    def _role(
        self, meter: PhaseMeter, phase: str, *args: str, on_progress: RowProgress | None = None
    ) -> None:
        with meter.phase(phase), _threads(self.threads):
            peak = run_role_measured(self.binary, *args, on_progress=on_progress)
        meter.note_subprocess_peak(phase, peak)

    def run(
        self,
        compiled: CompiledProgram,
        blocks: Iterable[Block],
        n_blocks: int,
        meter: PhaseMeter,
        progress: Callable[[str, int, int], None],
    ) -> Iterator[tuple[Block, dict[str, Array]]]:
        pending = iter(blocks)
        first = next(pending, None)
        if first is None:
            return
        blocks = itertools.chain([first], pending)
        need = block_bytes(compiled, first.stop - first.start)
        where, note = scratch_dir(need)
        self.notes.append(note)
        free = shutil.disk_usage(where or tempfile.gettempdir()).free
        if free < need:
            from compiler.errors import UserError

            raise UserError(
                f"{where or tempfile.gettempdir()}: {free / 2**30:.2f} GiB free, one SNP block's "
                f"ciphertexts need {need / 2**30:.2f} GiB (the report's upload estimate)",
                hint="set HEC_SCRATCH to a directory with more room",
            )
        from driver.interrupt import scratch_directory
        from driver.run import Parties

        with scratch_directory("hec-gwas-", where) as root:
            keys = root / "keys"
            progress("keygen", 0, 1)
            with meter.phase("keygen"):
                parties = Parties.make(
                    self.binary or Path(), root / "parties", lambda *a: run_role_measured(
                        self.binary, *a)
                )  # fmt: skip
            rows = int(compiled.sizes[self.stream_dim]) if self.stream_dim else None
            self._role(meter, "keygen", *parties.keygen_args(keys, rows, self.bindings))
            progress("keygen", 1, 1)
            for phase in ("encrypt", "compute", "decrypt"):
                progress(phase, 0, n_blocks)
            shared_ct = root / "shared"
            for done, block in enumerate(blocks, start=1):
                work = root / f"block{block.index}"
                plain, cts, res, dec = (work / d for d in ("in", "ct", "res", "dec"))
                with meter.phase("inputs"):
                    plain.mkdir(parents=True)
                    files = {}
                    for name, value in block.inputs.items():
                        files[name] = plain / f"{name}.npy"
                        np.save(files[name], compact_integers(value))
                # A data owner's inputs that do not depend on the SNP block (the phenotype) are
                # encrypted once; every block's ciphertext directory links to them.
                # Owner inputs by the encrypted arrays they enter: an array computed only from
                # shared inputs is encrypted once, any other with the block's inputs.
                groups = compiled.encrypted_sources()
                alone = {n for g in groups if all(x in block.shared for x in g) for n in g}
                with_block = {n for g in groups if not all(x in block.shared for x in g) for n in g}
                if not shared_ct.exists():
                    once = [n for n in block.inputs if n in block.shared and n in alone]
                    if once:
                        args = [a for n in once for a in ("--input", f"{n}={files[n]}")]
                        self._role(meter, "encrypt", "encrypt", "--pk", str(keys / "public"),
                                   "--sign", str(parties.owner_sign),
                                   *args, "--out", str(shared_ct))  # fmt: skip
                    else:
                        shared_ct.mkdir()
                args = [
                    a
                    for n in block.inputs
                    if n not in block.shared or n in with_block
                    for a in ("--input", f"{n}={files[n]}")
                ]
                rows = self._row_progress(progress, "encrypt", done, n_blocks)
                self._role(meter, "encrypt", "encrypt", "--pk", str(keys / "public"),
                           "--sign", str(parties.owner_sign), *args,
                           "--out", str(cts), on_progress=rows)  # fmt: skip
                # The upload is complete when it is on disk: the kernel's write-back of the
                # block's files is waited for here, in the data owners' phase, instead of
                # running on the cores the server is using (measured: the server pass at 2
                # threads took up to a third longer while the flusher was still writing).
                with meter.phase("encrypt"):
                    _flush_files(cts)
                    _flush_files(shared_ct)
                self.upload_bytes += sum(f.stat().st_size for f in cts.glob("*.cts"))
                if done == 1:
                    self.upload_bytes += sum(f.stat().st_size for f in shared_ct.glob("*.cts"))
                for f in shared_ct.iterdir():
                    (cts / f.name).symlink_to(f)
                shutil.rmtree(plain)
                progress("encrypt", done, n_blocks)
                rows = self._row_progress(progress, "compute", done, n_blocks)
                self._role(meter, "compute", "compute", "--eval", str(keys / "eval"),
                           "--sign", str(parties.server_sign),
                           "--in", str(cts), "--out", str(res), on_progress=rows)  # fmt: skip
                progress("compute", done, n_blocks)
                self._role(meter, "decrypt", "decrypt", "--sk", str(keys / "secret"),
                           "--in", str(res), "--out", str(dec))  # fmt: skip
                progress("decrypt", done, n_blocks)
                outputs = {f.stem: np.load(f) for f in sorted(dec.glob("*.npy"))}
                shutil.rmtree(work)
                yield block, outputs


BACKENDS: dict[str, Callable[[], Backend]] = {"encrypted": EncryptedBackend, "sim": SimBackend}
