"""The per-target chooser: the cheapest candidate by the target's order, and its reason."""

from __future__ import annotations

import pytest

from compiler.circuits.chooser import OPERATIONS, choose, cost_key
from compiler.errors import UserError


def test_fhew_prefers_bootstraps_and_bfv_depth() -> None:
    fhew = choose("add", 16, "fhew")
    bfv = choose("add", 16, "bfv")
    assert fhew.name == "ripple"
    assert bfv.metrics.and_depth < fhew.metrics.and_depth
    assert bfv.metrics.bootstraps > fhew.metrics.bootstraps
    for ch, target in ((fhew, "fhew"), (bfv, "bfv")):
        assert all(
            cost_key(ch.metrics, target) <= cost_key(m, target) for m in ch.candidates.values()
        )
    assert "fewest bootstraps" in fhew.reason and "ripple (31 bootstraps" in fhew.reason
    assert "smallest AND depth" in bfv.reason and "sklansky: (5, 57)" in bfv.reason


@pytest.mark.parametrize("op", OPERATIONS)
def test_every_operation_has_candidates(op: str) -> None:
    ch = choose(op, 4, "bfv")
    assert ch.candidates and ch.name in ch.candidates


def test_cla_candidates_follow_the_divisors_of_the_width() -> None:
    assert {n for n in choose("add", 6, "bfv").candidates if n.startswith("cla")} == {"cla/2"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", 8, "ckks"), "unknown target 'ckks'"),
        (("divmod", 8, "fhew"), "unknown operation 'divmod'"),
        (("add", 0, "fhew"), "width 0 is out of range"),
    ],
)
def test_bad_requests(args: tuple[str, int, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        choose(*args)
