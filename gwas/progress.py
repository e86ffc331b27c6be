"""Progress on stderr for the phases of a run (no dependency): each phase is announced when it
starts, so something shows from the first second; a phase that runs in steps (blocks) shows a
bar with its own elapsed time (the phase's, not the run's) and an estimate of the time left.
Redrawn in place on a terminal, a line every 10% otherwise (logs and CI)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    def __init__(
        self,
        stream: TextIO | None = None,
        enabled: bool = True,
        width: int = 30,
        seconds: Callable[[str], float] | None = None,
    ):
        """`seconds(phase)`: the time spent in that phase so far (e.g. a PhaseMeter's); without
        it, the wall time since the phase's first report."""
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.seconds = seconds
        self._start: dict[str, float] = {}
        self._last_decile: dict[str, int] = {}

    def _elapsed(self, phase: str) -> float:
        if self.seconds is not None:
            return self.seconds(phase)
        return time.perf_counter() - self._start.get(phase, time.perf_counter())

    def _write(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write("\r\033[K" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, phase: str) -> None:
        """A phase without steps begins."""
        if not self.enabled:
            return
        self._start[phase] = time.perf_counter()
        self._write(f"{phase:<12} ...", final=False)

    def finish(self, phase: str) -> None:
        if not self.enabled:
            return
        self._write(f"{phase:<12} done in {self._elapsed(phase):.1f}s", final=True)

    def __call__(
        self, phase: str, done: int, total: int, unit: str = "blocks", running: float = 0.0
    ) -> None:
        """`done` of `total` steps of `phase`; `running`: seconds of a step still under way
        (added to the phase's time, e.g. a role's rows while the meter has not counted it)."""
        if not self.enabled:
            return
        if done == 0 or phase not in self._start:
            self._start.setdefault(phase, time.perf_counter())
            self._last_decile[phase] = -1
        total = max(total, 1)
        frac = min(done / total, 1.0)
        filled = round(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = self._elapsed(phase) + running
        eta = ""
        if 0 < done < total:
            eta = f"  ETA {elapsed / done * (total - done):6.1f}s"
        text = f"{phase:<12} [{bar}] {done}/{total} {unit} {elapsed:6.1f}s{eta}"
        if self.tty:
            self._write(text, final=done >= total)
            return
        decile = int(frac * 10)
        if decile != self._last_decile[phase] or done >= total:
            if done >= total and self._last_decile[phase] == 10:
                return
            self._last_decile[phase] = 10 if done >= total else decile
            self._write(text, final=True)
