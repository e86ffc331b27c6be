"""MLIR text in and out for the hec IR: a parsing context with our dialects registered, the
printer, and the parser (which verifies what it reads).

Layers above `compiler/` (passes, targets, tests) use these so that every stage reads and
writes the same text; a scheme dialect is added with `parse_ir(text, Ckks)`.
"""

from __future__ import annotations

import io
import re

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.ir import Dialect, Operation, SSAValue
from xdsl.parser import Parser
from xdsl.printer import Printer

from compiler.dialects import he, stat


def ir_context(*dialects: Dialect) -> Context:
    """A context that parses builtin, stat, the HE layer (whose types the scheme dialects use)
    and the given dialects."""
    ctx = Context()
    loaded: list[str] = []
    for dialect in (Builtin, stat.Stat, he.He, *dialects):
        if dialect.name in loaded:
            continue
        loaded.append(dialect.name)
        ctx.load_dialect(dialect)
    return ctx


def print_ir(op: Operation, generic: bool = False) -> str:
    """MLIR text of `op`: the custom assembly forms, or the generic form of every op."""
    buffer = io.StringIO()
    Printer(stream=buffer, print_generic_format=generic).print_op(op)
    return buffer.getvalue() + "\n"


def parse_ir(text: str, *dialects: Dialect) -> ModuleOp:
    """Parse MLIR text (custom or generic form) into a verified module."""
    module = Parser(ir_context(*dialects), text).parse_module()
    for op in module.walk():
        if isinstance(op, stat.ProgramOp | stat.ClientOp):
            op.block  # noqa: B018 (gives an empty `{}` region its block back)
    module.verify()
    return module


def value_names(program: Operation) -> dict[SSAValue, str]:
    """The printed IR name (`%x`, `%28`) of every first result of the ops in `program`'s
    body, as `print_ir` names them (for messages that name a value)."""
    lines = [ln.strip() for ln in print_ir(program).splitlines()[1:]]
    body = [ln for ln in lines if ln and not ln.startswith("}")]
    ops = [op for region in program.regions for block in region.blocks for op in block.ops]
    names: dict[SSAValue, str] = {}
    for op, line in zip(ops, body, strict=False):
        m = re.match(r"(%[A-Za-z0-9_.$-]+)\s*=", line)
        if m is not None and op.results:
            names[op.results[0]] = m.group(1)
    return names
