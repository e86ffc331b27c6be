"""The BLAKE3 known answers embedded in runtime/tests/core/blake3_test.cpp are recomputed with
the BLAKE3 team's own binding (the `blake3` package), so the table cannot rot: every entry's
length and digest must be what the package gives for the test-vector input (byte i = i mod 251).
"""

from __future__ import annotations

import re
from pathlib import Path

import blake3

TEST = Path(__file__).resolve().parent.parent / "runtime" / "tests" / "core" / "blake3_test.cpp"
ENTRY = re.compile(r'\{(\d+), "([0-9a-f]{64})"\}')


def vector_input(length: int) -> bytes:
    return bytes(i % 251 for i in range(length))


def table() -> list[tuple[int, str]]:
    text = TEST.read_text()
    body = text[text.index("const Vector kVectors[] = {") :]
    body = body[: body.index("};")]
    return [(int(n), d) for n, d in ENTRY.findall(body)]


def test_table_covers_the_official_lengths_and_large_ones() -> None:
    lengths = {n for n, _ in table()}
    official = {0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 2049, 3072, 3073, 4096, 4097, 5120}
    official |= {5121, 6144, 6145, 7168, 7169, 8192, 8193, 16384, 31744, 102400}
    assert official <= lengths
    assert max(lengths) > 16 << 20


def test_embedded_digests_are_the_blake3_package_s() -> None:
    rows = table()
    longest = vector_input(max(n for n, _ in rows))
    for length, digest in rows:
        assert blake3.blake3(longest[:length]).hexdigest() == digest, length
