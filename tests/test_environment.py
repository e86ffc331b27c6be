"""CPU feature parsing that decides which NTT path the runtime reports."""

from __future__ import annotations

from pathlib import Path

from driver.environment import cpu_features


def test_ifma_needs_avx512f_and_ifma(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu sse2 avx2 avx512f avx512ifma\n")
    f = cpu_features(info)
    assert (f.avx2, f.avx512f, f.avx512ifma) == (True, True, True)
    assert f.ntt_path == "avx512-ifma"


def test_portable_without_ifma(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text("flags : fpu sse2 avx2 avx512f\n")
    assert cpu_features(info).ntt_path == "portable"


def test_missing_cpuinfo_is_portable(tmp_path: Path) -> None:
    assert cpu_features(tmp_path / "absent").ntt_path == "portable"
