"""Wall time and peak resident memory per phase of a run, for the .log and the benchmark.

Linux keeps a process's peak resident set (VmHWM in /proc/self/status); writing "5" to
/proc/self/clear_refs resets it to the current resident set, so the peak of each phase is
measured on its own. Where the reset is not permitted, the peak is the process's peak so
far, and `per_phase_peaks` says so.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def peak_rss_bytes() -> int:
    """The process's peak resident set since the last reset, in bytes."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak_rss() -> bool:
    try:
        _CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


class PhaseMeter:
    """Accumulates seconds and the largest peak resident set of each named phase."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.peak_rss: dict[str, int] = {}
        self.per_phase_peaks = True
        self.subprocess_phases: set[str] = set()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if not reset_peak_rss():
            self.per_phase_peaks = False
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
            if name not in self.subprocess_phases:
                self.peak_rss[name] = max(self.peak_rss.get(name, 0), peak_rss_bytes())

    def note_subprocess_peak(self, name: str, peak: int) -> None:
        """A phase run by a child process: its peak is the child's, not this process's."""
        if name not in self.subprocess_phases:
            self.subprocess_phases.add(name)
            self.peak_rss[name] = 0
        self.peak_rss[name] = max(self.peak_rss[name], peak)

    def overall_peak(self) -> int:
        return max(self.peak_rss.values(), default=peak_rss_bytes())
