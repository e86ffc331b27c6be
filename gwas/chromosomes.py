"""Chromosome codes as PLINK 1.9 reads them, and how each chromosome's genotypes count alleles.

PLINK 1.9 accepts 1-22, X, Y, XY (pseudo-autosomal), MT (also M), their numeric codes 23-26,
0 (unplaced), each with an optional `chr` prefix and letters in either case, and prints the
numeric code in its reports (`chrX` → 23). Anything else needs `--allow-extra-chr`, which hec
does not offer: such a code is an error naming the file and line.

Allele counting in `--assoc` (measured against plink1.9 v1.90b6.26 on a simulated fileset):
autosomes, XY and 0 are diploid; on X a male (sex 1) carries one allele and his heterozygous
calls are missing; on Y only males are counted, haploid, heterozygous calls missing; MT is
haploid for everyone, heterozygous calls missing.
"""

from __future__ import annotations

import enum

NAMED = {"X": "23", "Y": "24", "XY": "25", "MT": "26", "M": "26"}
NUMBERS = {str(c) for c in range(27)}


class Ploidy(enum.Enum):
    DIPLOID = "diploid"  # autosomes, XY, 0
    X = "X"  # males haploid
    Y = "Y"  # males haploid, others not counted
    HAPLOID = "haploid"  # MT: everyone haploid


def plink_code(text: str) -> str | None:
    """The numeric code PLINK 1.9 prints for chromosome `text`, or None when PLINK would
    refuse it without --allow-extra-chr."""
    name = text
    if name[:3].lower() == "chr":
        name = name[3:]
    upper = name.upper()
    if upper in NAMED:
        return NAMED[upper]
    if name.isdigit():
        number = str(int(name))
        if number in NUMBERS:
            return number
    return None


def ploidy(code: str) -> Ploidy:
    """How chromosome `code` (a PLINK numeric code) counts alleles in `--assoc`."""
    if code == "23":
        return Ploidy.X
    if code == "24":
        return Ploidy.Y
    if code == "26":
        return Ploidy.HAPLOID
    return Ploidy.DIPLOID


ACCEPTED = "1-22, X, Y, XY, MT (or M), 23-26 and 0, with or without a 'chr' prefix"
