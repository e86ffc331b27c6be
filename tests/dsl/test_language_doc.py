"""docs/language.md shows real output: its worked example is
examples/gwas/chisq_numerators.hec, and the `hec check` answers it quotes are what hec prints."""

from __future__ import annotations

from pathlib import Path

from compiler.errors import UserError
from dsl.checker import check
from dsl.parser import parse_program

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs/language.md").read_text()


def fenced_blocks(text: str) -> list[str]:
    """The contents of the ``` fenced blocks of a markdown text, in order."""
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks


BLOCKS = fenced_blocks(DOC)


def test_worked_example_is_the_chisq_example() -> None:
    example = (ROOT / "examples/gwas/chisq_numerators.hec").read_text()
    program = BLOCKS[1]
    assert program.strip() in example
    # The quoted summary line is hec's.
    summary = check(parse_program(example, "examples/gwas/chisq_numerators.hec")).summary()
    assert summary in DOC


def test_quoted_error_is_the_real_error() -> None:
    program = BLOCKS[1].split("reveal chi2_num")[0] + "reveal freq = n11 / c1\n"
    quoted = next(b for b in BLOCKS if b.startswith("freq.hec:"))
    try:
        check(parse_program(program, "freq.hec"))
    except UserError as err:
        assert str(err).strip() == quoted.strip()
    else:
        raise AssertionError("the documented error is not raised")
