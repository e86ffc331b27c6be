"""Facts about this installation that the CLI reports and the pipeline needs.

Where the repository and the runtime build live, and which CPU paths the runtime can use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RUNTIME_DIR = REPO_ROOT / "runtime"


def runtime_build_dir(preset: str = "release") -> Path:
    """Directory of the runtime's CMake build for `preset` (HEC_RUNTIME_BUILD overrides)."""
    override = os.environ.get("HEC_RUNTIME_BUILD")
    if override:
        return Path(override)
    return REPO_ROOT / "build" / preset


@dataclass(frozen=True)
class CpuFeatures:
    """The instruction-set extensions the runtime dispatches on."""

    avx2: bool
    avx512f: bool
    avx512ifma: bool

    @property
    def ntt_path(self) -> str:
        return "avx512-ifma" if self.avx512f and self.avx512ifma else "portable"


def cpu_features(cpuinfo: Path = Path("/proc/cpuinfo")) -> CpuFeatures:
    """Read the CPU flags of the first processor from /proc/cpuinfo."""
    flags: set[str] = set()
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    return CpuFeatures(
        avx2="avx2" in flags, avx512f="avx512f" in flags, avx512ifma="avx512ifma" in flags
    )
