"""Progress bars on stderr for the long phases of a run (no dependency): redrawn in place on a
terminal, a line every 10% otherwise (logs and CI)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool = True, width: int = 30):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.width = width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._start: dict[str, float] = {}
        self._last_decile: dict[str, int] = {}

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if done == 0 or phase not in self._start:
            self._start[phase] = now
            self._last_decile[phase] = -1
        total = max(total, 1)
        frac = min(done / total, 1.0)
        filled = round(frac * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        text = f"{phase:<12} [{bar}] {done}/{total} blocks {now - self._start[phase]:6.1f}s"
        if self.tty:
            end = "\n" if done >= total else ""
            self.stream.write("\r" + text + end)
            self.stream.flush()
            return
        decile = int(frac * 10)
        if decile != self._last_decile[phase] or done >= total:
            if done >= total and self._last_decile[phase] == 10:
                return
            self._last_decile[phase] = 10 if done >= total else decile
            self.stream.write(text + "\n")
            self.stream.flush()
