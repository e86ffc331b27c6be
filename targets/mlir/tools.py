"""MLIR's and HEIR's command-line tools, found and run (docs/mlir.md).

`mlir-opt-19` and `mlir-cpu-runner-19` come from Debian's `mlir-19-tools`, the runner's
support libraries (`libmlir_runner_utils`, `libmlir_c_runner_utils`) from `libmlir-19`
(scripts/setup installs both); `heir-opt` from the `heir-py` wheel on PyPI. Each finder
returns None when the tool is missing, so callers (tests) can say what to install.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from compiler.errors import UserError

LLVM_VERSION = 19
_LLVM_LIB = Path(f"/usr/lib/llvm-{LLVM_VERSION}/lib")


def mlir_opt() -> str | None:
    return shutil.which(f"mlir-opt-{LLVM_VERSION}")


def mlir_cpu_runner() -> str | None:
    return shutil.which(f"mlir-cpu-runner-{LLVM_VERSION}")


def runner_libraries() -> list[str] | None:
    """The runner's support libraries (printMemref*), or None when libmlir-19 is missing."""
    found: list[str] = []
    for stem in ("libmlir_runner_utils", "libmlir_c_runner_utils"):
        candidates = sorted(_LLVM_LIB.glob(f"{stem}.so*"))
        if not candidates:
            return None
        found.append(str(candidates[0]))
    return found


def heir_opt() -> str | None:
    """heir-opt from the heir-py wheel (installed in this Python environment), else PATH."""
    try:
        import heir  # pyright: ignore[reportMissingImports]
    except ImportError:
        return shutil.which("heir-opt")
    path = Path(heir.__file__).resolve().parent / "heir-opt"
    return str(path) if path.is_file() else shutil.which("heir-opt")


class ToolError(UserError):
    """An external tool rejected its input (the message is the tool's own diagnostics)."""


def run_tool(
    tool: str | None, what: str, args: Sequence[str], text: str, timeout: float = 600
) -> str:
    """Run `tool args` on `text` (stdin); its stdout, or a ToolError with its stderr."""
    if tool is None:
        raise UserError(f"{what} is not installed", hint="scripts/setup installs it")
    proc = subprocess.run(
        [tool, *args], input=text, capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise ToolError(f"{what} failed (exit {proc.returncode}):\n{diagnostics(proc.stderr)}")
    return proc.stdout


def diagnostics(stderr: str, limit: int = 8) -> str:
    """The tool's `error:` lines (MLIR tools follow each with a dump of the op at fault)."""
    errors = [line for line in stderr.splitlines() if "error:" in line]
    if not errors:
        return stderr.strip()[:4000]
    more = f"\n... and {len(errors) - limit} more errors" if len(errors) > limit else ""
    return "\n".join(errors[:limit]) + more
