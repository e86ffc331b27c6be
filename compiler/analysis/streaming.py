"""The server's streaming schedule and the memory it holds (DESIGN.md §6, principle 1).

The leading size parameter of the largest encrypted input (the individuals N) is the stream
dimension. A value whose leading array axis is that dimension is a ROW value, computed row by
row; a `dot` or `reduce` over that axis of row values is a SINK (an accumulator that folds the
rows in); everything else is a GLOBAL value computed once. A row op that needs a global value
derived from a sum over rows runs in a later pass over the rows, so the schedule is a
sequence of passes. A program whose row values do something the row form cannot express (a
transpose of the streamed axis) is not streamed: every input is read whole.

`schedule` is what the C++ emitter generates from and what the report states; `server_memory`
is the bytes the server holds at its peak under that schedule, as the runtime
(runtime/program) allocates them: the evaluation keys, one accumulator per element of every
sink (a dot's at degree 2), the rows of one chunk (CHUNK_ROWS_PER_THREAD rows per thread, every
streamed input's ciphertexts of a row, the row values the sinks hold for every row of the chunk
until it is folded, and the other row values the row bodies form, one row per thread), the
revealed values (held from when they are formed until the results are written: a per-row
output for every row), the scratch of folding a dot (BFV: the HPS multiply's, per thread), the
global values live at once, and the process itself (RUNTIME_BASELINE: code, libraries, the
context's NTT tables). Without streaming it is every array held at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xdsl.ir import Operation, SSAValue

from compiler.analysis.counts import Shapes, coeff_group
from compiler.dialects import ckks, he

CHUNK_ROWS_PER_THREAD = 4  # runtime/program: Server::stream reads 4 rows (or 1 grid block)
# per thread per chunk
RUNTIME_BASELINE = 5 << 20  # measured: a generated program reading one key file (`info`), 5.3 MiB

SLOT_LAYOUTS = (ckks.PACKED, ckks.COMPLEX, ckks.COEFF)


@dataclass
class Schedule:
    stream_dim: str | None
    row: set[SSAValue] = field(default_factory=set)  # row values
    stage: dict[SSAValue, int] = field(default_factory=dict)  # globals: when available
    row_stage: dict[SSAValue, int] = field(default_factory=dict)  # row values: earliest pass
    sinks: dict[Operation, int] = field(default_factory=dict)  # sink op -> its pass
    collects: dict[he.DecryptRule, int] = field(default_factory=dict)  # decrypt of row values
    passes: int = 0
    fallback: str = ""  # why the program is not streamed ("" when it is, or has no rows)


class NotStreamableError(Exception):
    pass


def _ct(value: SSAValue) -> he.CiphertextType | None:
    ty = value.type
    return ty if isinstance(ty, he.CiphertextType) else None


def rowable(ty: he.CiphertextType, dim: str) -> bool:
    """A ciphertext array whose leading axis is `dim` and is an array axis (not the slots)."""
    if not ty.dims or ty.dims[0] != dim:
        return False
    if he.diagonal_of(ty.layout_name) is not None or he.cyclic_of(ty.layout_name) is not None:
        return False  # a diagonal's or cyclic vector's slots mix the rows
    return not (ty.layout_name in SLOT_LAYOUTS and len(ty.dims) == 1)


def _encrypts(program: Operation) -> list[Operation]:
    return [op for op in program.walk() if isinstance(op, he.EncryptRule)]


def choose_stream_dim(program: Operation) -> str | None:
    best: tuple[int, str] | None = None
    for enc in _encrypts(program):
        ty = _ct(enc.results[0])
        assert ty is not None
        if ty.dims and isinstance(ty.dims[0], str) and rowable(ty, ty.dims[0]):
            rank = len(ty.dims)
            if best is None or rank > best[0]:
                best = (rank, ty.dims[0])
    return best[1] if best else None


def schedule(program: ckks.ProgramOp | he.ProgramRule) -> Schedule:
    dim = choose_stream_dim(program)
    if dim is None:
        return _global_schedule(program, None, "")
    try:
        return _row_schedule(program, dim)
    except NotStreamableError as why:
        return _global_schedule(program, None, str(why))


def _global_schedule(program: ckks.ProgramOp | he.ProgramRule, dim: str | None, why: str):
    s = Schedule(dim, fallback=why)
    for op in program.block.ops:
        for r in op.results:
            s.stage[r] = 0
    return s


def _is_sink(op: Operation) -> bool:
    if isinstance(op, he.ReduceRule | he.DotRule):
        return op.axis_value == 0
    # A row sum of a grid array (docs/layout.md): the row blocks fold into an accumulator,
    # rotated once at the end.
    if isinstance(op, he.SumSlotsRule):
        return op.axis_value == 0
    return False


def _row_schedule(program: ckks.ProgramOp | he.ProgramRule, dim: str) -> Schedule:
    s = Schedule(dim)
    for op in program.block.ops:
        if isinstance(op, he.EncodeRule | he.ParamRule):
            for r in op.results:
                s.stage[r] = 0
            continue
        if isinstance(op, he.EncryptRule):
            ty = _ct(op.results[0])
            assert ty is not None
            if rowable(ty, dim):
                s.row.add(op.results[0])
                s.row_stage[op.results[0]] = 0
            else:
                s.stage[op.results[0]] = 0
            continue
        ct_operands = [o for o in op.operands if _ct(o) is not None]
        rows = [o for o in ct_operands if o in s.row]
        decrypt = isinstance(op, he.DecryptRule)
        broadcast = isinstance(op, he.BroadcastRule)
        if not rows:
            # A global op, unless it broadcasts a global into a row value.
            stage = max((s.stage.get(o, 0) for o in op.operands), default=0)
            result = _ct(op.results[0]) if op.results else None
            if broadcast and result is not None and rowable(result, dim):
                assert isinstance(op, he.BroadcastRule)
                if 0 not in op.dims_tuple:
                    s.row.add(op.results[0])
                    s.row_stage[op.results[0]] = stage
                    continue
            if not decrypt:
                for r in op.results:
                    s.stage[r] = stage
            continue
        if len(rows) != len(ct_operands):
            raise NotStreamableError(f"{op.name} mixes row values and global arrays")
        stage = max(
            [s.row_stage[o] for o in rows]
            + [s.stage.get(o, 0) for o in op.operands if o not in s.row]
        )
        if _is_sink(op):
            s.sinks[op] = stage
            s.stage[op.results[0]] = stage + 1
            continue
        if isinstance(op, he.DecryptRule):
            s.collects[op] = stage
            continue
        if isinstance(op, he.TransposeRule):
            raise NotStreamableError("a transpose moves the streamed axis")
        if isinstance(op, he.GatherRule):
            raise NotStreamableError("a gather picks elements across the streamed axis")
        if broadcast:
            assert isinstance(op, he.BroadcastRule)
            if op.dims_tuple[:1] != (0,):
                raise NotStreamableError("a broadcast moves the streamed axis")
        result = _ct(op.results[0])
        assert result is not None
        if not rowable(result, dim):
            raise NotStreamableError(f"{op.name} turns a row value into {result.dims}")
        s.row.add(op.results[0])
        s.row_stage[op.results[0]] = stage
    s.passes = 1 + max([*s.sinks.values(), *s.collects.values()], default=-1)
    if s.passes == 0:
        raise NotStreamableError("no sum over the streamed axis")
    return s


@dataclass(frozen=True)
class ServerMemory:
    """Bytes the server holds at its peak under the schedule (see the module docstring)."""

    streamed: bool
    keys: int
    accumulators: int
    chunk: int
    globals_peak: int
    baseline: int
    outputs: int = 0  # the revealed values held until the results are written
    scratch: int = 0  # folding the dots (per thread)

    @property
    def total(self) -> int:
        return (
            self.keys
            + self.accumulators
            + self.chunk
            + self.globals_peak
            + self.baseline
            + self.outputs
            + self.scratch
        )


def server_memory(
    program: ckks.ProgramOp | he.ProgramRule,
    sizes: Mapping[str, int],
    slots: int,
    ciphertext_bytes: Mapping[SSAValue, int],
    keys: int,
    threads: int,
    dot_scratch: int = 0,
    dot_slices: bool = False,
) -> ServerMemory:
    """`ciphertext_bytes[v]`: the bytes of ONE ciphertext of value v (scheme-specific: its
    level's limbs, its degree); `keys`: the evaluation keys' bytes; `threads`: the server's.
    `dot_scratch`: the bytes one thread holds while it folds a row of a dot (BFV: the HPS
    multiply's scratch and the product; CKKS folds in place, 0); `dot_slices`: a dot with
    fewer elements than threads splits each element's rows over the threads, each slice with
    its own partial sum (BFV's DotSink)."""
    group = coeff_group(program) if isinstance(program, ckks.ProgramOp) else 1
    shapes = Shapes(sizes, slots, group)
    s = schedule(program)
    ops = list(program.block.ops)

    def count(v: SSAValue, row: bool) -> int:
        ty = _ct(v)
        assert ty is not None
        grid = he.grid_of(ty.layout_name)
        if row and grid is not None and grid.row_axis == 0:
            ty = ty.with_(dims=(grid.rows, *ty.dims[1:]))  # one block of R rows of it
        elif row:
            ty = ty.with_(dims=ty.dims[1:] or (1,))  # one row of it
        return shapes.count(ty)

    streamed = s.stream_dim is not None and not s.fallback
    accumulators = chunk = outputs = scratch = 0
    n_threads = max(threads, 1)
    if streamed:
        for sink in s.sinks:
            result = sink.results[0]
            accumulators += count(result, False) * ciphertext_bytes[result]
            if isinstance(sink, he.DotRule):
                scratch = max(scratch, n_threads * dot_scratch)
                elements = count(result, False)
                if dot_slices and elements < n_threads:
                    accumulators += elements * n_threads * ciphertext_bytes[result]
        # A per-row output: every row's value, held until the results are written.
        for d in s.collects:
            outputs += count(d.operands[0], False) * ciphertext_bytes[d.operands[0]]
        rows = CHUNK_ROWS_PER_THREAD * max(threads, 1)
        grids = [he.grid_of(t.layout_name) for v in s.row if (t := _ct(v)) is not None]
        rows_per_block = max((g.rows for g in grids if g is not None), default=0)
        if rows_per_block and s.stream_dim is not None:
            # Blocks of R rows (docs/layout.md): one block per thread (runtime/program/server.h),
            # at most every block there is.
            n = shapes.dim(s.stream_dim)
            rows = min(max(threads, 1), -(-n // rows_per_block))
        per_row = sum(
            count(v, True) * ciphertext_bytes[v]
            for v in s.row
            if isinstance(v.owner, he.EncryptRule)
        )
        # The row values the bodies form (a broadcast forms none: it shares its operand's
        # ciphertexts). The sinks hold their operands for every row of the chunk until it is
        # folded; the others live one row per thread at a time.
        formed = {v for v in s.row if not isinstance(v.owner, he.EncryptRule | he.BroadcastRule)}
        held = {_storage(o) for sink in s.sinks for o in sink.operands if o in s.row} & formed
        chunk = (
            rows * per_row
            + rows * sum(count(v, True) * ciphertext_bytes[v] for v in held)
            + n_threads * sum(count(v, True) * ciphertext_bytes[v] for v in formed - held)
        )
    # Global values: the bytes of those alive at once, at their peak along program order.
    last_use: dict[SSAValue, int] = {}
    for i, op in enumerate(ops):
        for v in op.operands:
            # A revealed global is held (the server's results) until they are written.
            last_use[v] = len(ops) if isinstance(op, he.DecryptRule) else i
    live: dict[SSAValue, int] = {}
    peak = 0
    for i, op in enumerate(ops):
        for r in op.results:
            if _ct(r) is None or (streamed and (r in s.row or op in s.sinks)):
                continue
            if isinstance(op, he.BroadcastRule | he.TransposeRule | ckks.LevelDownOp):
                continue
            if isinstance(op, he.GatherRule) and not any(op.negate_flags):
                continue
            live[r] = count(r, False) * ciphertext_bytes[r]
        peak = max(peak, sum(live.values()))
        for v in [v for v in live if last_use.get(v, -1) <= i]:
            del live[v]
    return ServerMemory(
        streamed, keys, accumulators, chunk, peak, RUNTIME_BASELINE, outputs, scratch
    )


def _storage(v: SSAValue) -> SSAValue:
    """The value whose ciphertexts `v` shares: a broadcast's operand (runtime/program's
    broadcast copies pointers, not ciphertexts), followed back; else `v` itself."""
    while isinstance(v.owner, he.BroadcastRule):
        v = v.owner.operands[0]
    return v
