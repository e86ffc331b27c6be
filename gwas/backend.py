"""Execution backends of `hec gwas`: compile a .hec program once (cached on disk), then run
it block by block on the data and return the revealed values of each block.

`compile_cached` runs the compiler pipeline (driver/pipeline.py) for the run's sizes and keeps
the compiled IR, the source's stat IR (for the client block) and the report in a cache
directory keyed by the source's SHA-256, the sizes and the options, so a second run on data of
the same shape does not compile again: a cache hit restores the finished `Compilation` (and
builds its C++ program from it) without running the compiler. What gwas needs to know about
the compiled program (inputs, encrypted arrays, slots, packing) comes from the compilation's
manifest (driver/manifest.py), not from the scheme's IR.

Backends:
- `encrypted` (`EncryptedBackend`, the default): the C++ program generated for the compiled
  program (targets/cpp through `driver.run.build_cpp`, cached next to the compiled IR), its
  roles run locally in order by `driver.roles.RoleSequence`: `keygen` once (coordinator,
  after the parties' `signkey`), then per SNP block `encrypt`
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
import io
import itertools
import json
import os
import shutil
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from compiler.analysis.noise import DEFAULT_FAILURE_LOG2
from compiler.analysis.sizes import Sizes
from compiler.dialects import stat
from compiler.errors import InternalError, UserError
from compiler.ir_text import parse_ir, print_ir
from compiler.stat_numpy import run_client
from driver import __version__
from driver.manifest import Manifest, load_program, program_text
from driver.pipeline import Compilation, Options, compile_file, report_of
from driver.roles import RoleOutput, RoleSequence, RowProgress, Runner, role_threads, run_role
from driver.storage import flush_files, write_file_atomic
from dsl.checker import check
from dsl.parser import parse_file
from gwas.memory import PhaseMeter
from targets.sim.simulator import simulate

Array = npt.NDArray[np.float64]
Report = dict[str, Any]  # the compiler's report (targets/report), as JSON
CACHE_FORMAT = 3  # 2: complex packing (passes/complex_packing.py); 3: program.mlir
# The sources whose change changes what a compilation produces (part of the cache key, so a
# changed compiler never reuses a program an older one compiled).
COMPILER_PACKAGES = ("compiler", "dsl", "passes", "targets", "driver")
# The runtime's sources, which the cached binary links: a changed runtime (a new container
# format, a fixed kernel) must not be served by a binary linked against the old one (found at
# stop 36: a cached chi-square binary kept writing format-3 containers after the runtime moved
# to format 4).
RUNTIME_DIRS = ("core", "math", "ckks", "bfv", "fhew", "labhe", "program")
RUNTIME_SUFFIXES = (".h", ".cpp", ".cmake")


@functools.lru_cache(maxsize=1)
def compiler_digest() -> str:
    return tree_digest(Path(__file__).resolve().parents[1])


def tree_digest(root: Path) -> str:
    """SHA-256 over the compiler's Python sources and the runtime's sources under `root`."""
    h = hashlib.sha256()
    paths = [p for package in COMPILER_PACKAGES for p in sorted((root / package).rglob("*.py"))]
    runtime = root / "runtime"
    paths += [runtime / "CMakeLists.txt", runtime / "CMakePresets.json"]
    for d in RUNTIME_DIRS:
        paths += sorted(p for p in (runtime / d).rglob("*") if p.suffix in RUNTIME_SUFFIXES)
    for path in paths:
        if path.is_file():
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
    precision_bits: float
    compilation: Compilation  # the finished compilation (restored from the cache on a hit)
    report: Report
    cache_key: str
    cache_hit: bool

    @property
    def sizes(self) -> dict[str, int]:
        return dict(self.compilation.options.sizes)

    def promise_text(self) -> str:
        """The precision promise, as the .log states it."""
        return (
            f"precision target {self.precision_bits:g} bits per revealed value, relative to its "
            "range; each error bound fails with probability at most "
            f"2^{self.compilation.options.error_confidence:g} per value"
        )

    @property
    def manifest(self) -> Manifest:
        return self.compilation.manifest

    @property
    def stat_program(self) -> stat.ProgramOp:
        return self.compilation.stat_program

    @property
    def slots(self) -> int:
        return self.manifest.slots

    @property
    def complex_packed(self) -> bool:
        """The genotype rows are complex-packed (two slot sets per ciphertext)."""
        return self.manifest.complex_packed

    @property
    def columns_per_ciphertext(self) -> int:
        return self.manifest.columns_per_ciphertext

    def encrypted_sources(self) -> list[list[str]]:
        """Per encrypted input, the owner inputs it is computed from."""
        return [list(e.sources) for e in self.manifest.encrypted]

    def owner_split(self, shared: Iterable[str]) -> tuple[set[str], set[str]]:
        """The owner inputs by the encrypted arrays they enter, given the inputs every block
        shares: (those entering only arrays computed from shared inputs alone, which are
        encrypted once; those entering an array with a block's own inputs, encrypted with
        each block). An input may be in both."""
        shared = set(shared)
        groups = self.encrypted_sources()
        alone = {n for g in groups if all(x in shared for x in g) for n in g}
        with_block = {n for g in groups if not all(x in shared for x in g) for n in g}
        return alone, with_block

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
        return list(self.manifest.inputs)

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


def compile_options(
    sizes: Mapping[str, int],
    precision_bits: float,
    log_n: int,
    error_confidence: float = DEFAULT_FAILURE_LOG2,
    flooding: bool = False,
) -> Options:
    # hec gwas decrypts with --no-flooding (one party, or only rounded counts leave): the
    # precision targets hold without the flooding budget. `flooding`: the program's values are
    # decrypted with noise flooding (a multi-site study publishes what it computes from them:
    # docs/security.md), so the targets hold after it. `error_confidence`: log2 of each
    # revealed value's error-bound failure probability (--error-confidence).
    return Options(
        sizes=Sizes.of(sizes),
        precision_bits=precision_bits,
        log_n=log_n,
        flooding=flooding,
        error_confidence=error_confidence,
    )


def _cache_key(
    source_text: bytes,
    sizes: Mapping[str, int],
    precision_bits: float,
    log_n: int,
    error_confidence: float,
    flooding: bool = False,
) -> str:
    h = hashlib.sha256()
    h.update(source_text)
    meta = {
        "sizes": dict(sorted(sizes.items())),
        "precision_bits": precision_bits,
        "error_confidence": error_confidence,
        "log_n": log_n,
        "hec": __version__,
        "compiler": compiler_digest(),
        "format": CACHE_FORMAT,
        **({"flooding": True} if flooding else {}),
    }
    h.update(json.dumps(meta, sort_keys=True).encode())
    return h.hexdigest()[:32]


ENTRY_FILES = ("program.mlir", "stat.mlir", "source.hec", "report.json")


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


def _load_entry(source: Path, entry: Path, options: Options) -> tuple[Compilation, Report]:
    """The finished compilation an intact cache entry holds (the compiler does not run)."""
    checked = check(parse_file(str(source)))
    module = load_program((entry / "program.mlir").read_text())
    stat_module = parse_ir((entry / "stat.mlir").read_text())
    report: Report = json.loads((entry / "report.json").read_text())
    comp = Compilation(checked, stat_module, module, dict(options.sizes), options)
    comp.manifest  # noqa: B018 (an entry whose program has no manifest is rebuilt)
    return comp, report


def compile_cached(
    source: Path,
    sizes: Mapping[str, int],
    precision_bits: float,
    cache_dir: Path | None = None,
    log_n: int = 0,
    error_confidence: float = DEFAULT_FAILURE_LOG2,
    flooding: bool = False,
) -> CompiledProgram:
    """Compile `source` for `sizes`, or load the result of an earlier identical compilation.
    `log_n` forces the ring dimension (0: the compiler's choice); `error_confidence` is log2
    of each revealed value's error-bound failure probability; `flooding`: the precision
    targets hold after decryption's noise flooding. The entry is built under a
    lock (concurrent cold runs compile once), installed by an atomic rename, and verified by
    its recorded SHA-256 digests when loaded: a damaged entry is rebuilt."""
    text = source.read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    key = _cache_key(text, sizes, precision_bits, log_n, error_confidence, flooding)
    options = compile_options(sizes, precision_bits, log_n, error_confidence, flooding)
    root = cache_dir or default_cache_dir()
    entry = root / key
    with cache_lock(root, key):
        if entry.is_dir() and _entry_intact(entry):
            try:
                comp, report = _load_entry(source, entry, options)
                return CompiledProgram(source, digest, precision_bits, comp, report, key, True)
            except Exception:  # an entry that does not load is rebuilt
                pass
        if entry.exists():  # damaged or from an interrupted older version: rebuilt
            shutil.rmtree(entry, ignore_errors=True)
        comp = compile_file(source, options)
        report = report_of(comp)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
        try:
            (tmp / "program.mlir").write_text(program_text(comp.module))
            (tmp / "stat.mlir").write_text(print_ir(comp.stat_module))
            (tmp / "source.hec").write_bytes(text)
            (tmp / "report.json").write_text(json.dumps(report, indent=1))
            digests = {name: _sha256_file(tmp / name) for name in ENTRY_FILES}
            (tmp / "digests.json").write_text(json.dumps(digests, indent=1))
            tmp.rename(entry)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return CompiledProgram(source, digest, precision_bits, comp, report, key, False)


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
    write_file_atomic(target, built_binary.read_bytes(), 0o755)
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
        # log2 of each revealed value's error-bound failure probability (--error-confidence).
        self.error_confidence = DEFAULT_FAILURE_LOG2
        # Compile for decryption with noise flooding (a multi-site study's published values).
        self.flooding = False
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
        return compile_cached(
            source,
            sizes,
            precision_bits,
            cache_dir,
            error_confidence=self.error_confidence,
            flooding=self.flooding,
        )

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
        program = compiled.compilation.program
        progress("simulate", 0, n_blocks)
        for done, block in enumerate(blocks, start=1):
            sizes = {**compiled.sizes, "M": block.stop - block.start}
            with meter.phase("simulate"):
                result = simulate(
                    program, sizes, block.inputs, noisy=True, seed=self.seed + block.index
                )
            progress("simulate", done, n_blocks)
            yield block, result.outputs


def write_input(path: Path, value: npt.NDArray[Any]) -> None:
    """A plaintext input of the encrypting role as `path` (.npy). Serialized first and written
    by Python: a short write then fails with its errno (numpy's tofile only says "N requested
    and M written"), reported naming the file."""
    buffer = io.BytesIO()
    np.save(buffer, value)
    try:
        path.write_bytes(buffer.getbuffer())
    except OSError as err:
        raise UserError(
            f"cannot write {path} (the plaintext input of the encrypting role): "
            f"{err.strerror or err}"
        ) from err


def compact_integers(value: Array) -> npt.NDArray[np.float64] | npt.NDArray[np.int8]:
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
        from driver.run import build_cpp

        # The program runs under exactly the parameters the compiler chose (the runtime takes
        # parameter sets without special primes when no key is switched).
        compiled = compile_cached(
            source, sizes, precision_bits, cache_dir, 0, self.error_confidence, self.flooding
        )
        root = cache_dir or default_cache_dir()
        entry = root / compiled.cache_key
        # One build at a time per cache (the runtime library and ninja are not safe to run
        # twice at once in one directory); the run then executes its own installed copy. The
        # C++ program is emitted from the finished compilation: a cache hit compiles nothing.
        with cache_lock(root, "build"):
            built = build_cpp(compiled.compilation, source, entry / "cpp")
            self.binary = install_binary(built.binary, entry / "bin")
        self.stream_dim = built.emitted.stream_dim
        self.notes.append(f"generated program {self.binary} ({built.describe()})")
        return compiled

    def _runner(self, meter: PhaseMeter) -> Runner:
        """How the role sequence runs a role here: timed under its phase (signkey under
        keygen), with the run's thread count, its peak resident set noted."""

        def run(binary: Path, args: Sequence[str], on_progress: RowProgress | None) -> RoleOutput:
            phase = "keygen" if args[0] == "signkey" else args[0]
            with meter.phase(phase), role_threads(self.threads):
                out = run_role(binary, *args, on_progress=on_progress)
            meter.note_subprocess_peak(phase, out.peak_rss_bytes)
            return out

        return run

    def _keygen(
        self,
        roles: RoleSequence,
        compiled: CompiledProgram,
        progress: Callable[[str, int, int], None],
    ) -> None:
        """The coordinator's keygen (and the parties' signing keys) for one data owner holding
        every row, bound to the run's facts."""
        progress("keygen", 0, 1)
        rows = int(compiled.sizes[self.stream_dim]) if self.stream_dim else None
        roles.keygen(rows, self.bindings)
        progress("keygen", 1, 1)

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
            raise UserError(
                f"{where or tempfile.gettempdir()}: {free / 2**30:.2f} GiB free, one SNP block's "
                f"ciphertexts need {need / 2**30:.2f} GiB (the report's upload estimate)",
                hint="set HEC_SCRATCH to a directory with more room",
            )
        from driver.interrupt import scratch_directory

        if self.binary is None:
            raise InternalError("the generated program was not built")
        with scratch_directory("hec-gwas-", where) as root:
            roles = RoleSequence(self.binary, root, self._runner(meter))
            self._keygen(roles, compiled, progress)
            for phase in ("encrypt", "compute", "decrypt"):
                progress(phase, 0, n_blocks)
            shared_ct = root / "shared"
            for done, block in enumerate(blocks, start=1):
                work = root / f"block{block.index}"
                plain, cts, res, dec = (work / d for d in ("in", "ct", "res", "dec"))
                with meter.phase("inputs"):
                    plain.mkdir(parents=True)
                    files: dict[str, Path] = {}
                    for name, value in block.inputs.items():
                        files[name] = plain / f"{name}.npy"
                        write_input(files[name], compact_integers(value))
                # A data owner's inputs that do not depend on the SNP block (the phenotype) are
                # encrypted once; every block's ciphertext directory links to them.
                # Owner inputs by the encrypted arrays they enter: an array computed only from
                # shared inputs is encrypted once, any other with the block's inputs.
                alone, with_block = compiled.owner_split(block.shared)
                if not shared_ct.exists():
                    once = [n for n in block.inputs if n in block.shared and n in alone]
                    if once:
                        roles.encrypt({n: files[n] for n in once}, shared_ct)
                    else:
                        shared_ct.mkdir()
                mine = {
                    n: files[n] for n in block.inputs if n not in block.shared or n in with_block
                }
                rows_done = self._row_progress(progress, "encrypt", done, n_blocks)
                roles.encrypt(mine, cts, on_progress=rows_done)
                # The upload is complete when it is on disk: the kernel's write-back of the
                # block's files is waited for here, in the data owners' phase, instead of
                # running on the cores the server is using (measured: the server pass at 2
                # threads took up to a third longer while the flusher was still writing).
                with meter.phase("encrypt"):
                    flush_files(cts)
                    flush_files(shared_ct)
                self.upload_bytes += sum(f.stat().st_size for f in cts.glob("*.cts"))
                if done == 1:
                    self.upload_bytes += sum(f.stat().st_size for f in shared_ct.glob("*.cts"))
                for f in shared_ct.iterdir():
                    (cts / f.name).symlink_to(f)
                shutil.rmtree(plain)
                progress("encrypt", done, n_blocks)
                rows_done = self._row_progress(progress, "compute", done, n_blocks)
                roles.compute(cts, res, on_progress=rows_done)
                progress("compute", done, n_blocks)
                # every role runs here and the result ciphertexts are deleted with the block:
                # no one can pair them with the revealed values (docs/security.md)
                outputs = roles.decrypt(res, dec, flooding=False)
                progress("decrypt", done, n_blocks)
                shutil.rmtree(work)
                yield block, outputs


BACKENDS: dict[str, Callable[[], Backend]] = {"encrypted": EncryptedBackend, "sim": SimBackend}
