"""Secret vectors packed into slots (issue 19, fact 5): a secret `[N]` vector whose N is no
matrix's row axis uploads ceil(N / slots) ciphertexts, not one per entry; a sum over it whose
padding slots are not zero (x - mean(x), S + 1) is masked first (one plaintext product). A
vector along a row axis (`y @ S`) stays one replicated ciphertext per entry."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from compiler.analysis.counts import ciphertext_file_bytes
from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from compiler.errors import UserError
from driver.pipeline import Options, compile_file, report_of, sizes_for_run
from dsl.reference import evaluate
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate

MOMENTS = """param N <= 20000
input x: secret[N] in [10.0, 60.0]
xc = x - mean(x)
reveal m2 = sum(xc^2)
reveal m3 = sum(xc^3)
reveal s = sum(x)
"""


def _compile(tmp_path: Path, text: str, sizes: str, **kw: object):
    path = tmp_path / "p.hec"
    path.write_text(text)
    return compile_file(path, Options(sizes=Sizes.parse(sizes), **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize("flooding", [False, True], ids=["single-party", "flooded"])
def test_a_secret_vector_uploads_ceil_n_over_slots_ciphertexts(
    tmp_path: Path, flooding: bool
) -> None:
    n = 20000
    comp = _compile(tmp_path, MOMENTS, f"N={n}", flooding=flooding)
    program = comp.program
    params = program.parameters()
    assert params is not None
    (enc,) = [op for op in program.block.ops if isinstance(op, ckks.EncryptOp)]
    ty = ckks.ct_type(enc.result)
    assert ty.layout_name == ckks.PACKED and ty.dims == ("N",)
    count = math.ceil(n / params.slots)
    sizes = report_of(comp)["sizes"]
    assert sizes["upload_other"] == count * ciphertext_file_bytes(params, ty.level_value)
    assert sizes["upload_per_individual"] == 0
    # one mask per centred sum (m2, m3 share xc^2's operand chain or not: at least one)
    masks = [op for op in program.block.ops if isinstance(op, ckks.MulConstOp) and op.is_masked]
    assert masks


def test_a_vector_along_a_row_axis_stays_replicated(tmp_path: Path) -> None:
    text = """param N <= 1000
param M <= 100
input S: secret[N, M] in {0, 1, 2}
input y: secret[N] in {0, 1}
reveal n1 = y @ S
"""
    comp = _compile(
        tmp_path, text, "N=100,M=50", flooding=False, owner_side=False, packed_counts=False
    )
    layouts = {
        op.sym_value: ckks.pt_type(op.result).layout_name
        for op in comp.program.block.ops
        if isinstance(op, ckks.EncodeOp)
    }
    assert layouts["y"] == ckks.REPLICATED and layouts["S"] == ckks.PACKED


@pytest.mark.parametrize("n", [300, 9000], ids=["one-partial-block", "two-blocks"])
def test_centred_moments_of_a_packed_vector_meet_their_promise(tmp_path: Path, n: int) -> None:
    comp = _compile(tmp_path, MOMENTS, f"N={n}", flooding=False)
    sizes = sizes_for_run(comp)
    promised = {o["name"]: o for o in report_of(comp)["outputs"]}
    for seed in range(3):
        data = random_inputs(comp.program, sizes, seed=seed)
        want = evaluate(comp.checked, sizes, data).revealed
        exact = simulate(comp.program, sizes, data).outputs
        noisy = simulate(comp.program, sizes, data, noisy=True, seed=seed + 5).outputs
        for name, value in want.items():
            assert np.allclose(exact[name], value, rtol=1e-9, atol=1e-9), name
            o = promised[name]
            bound = max(abs(o["range"][0]), abs(o["range"][1]))
            err = float(np.max(np.abs(noisy[name] - value)))
            assert 0.0 < err <= bound * 2.0 ** -o["precision_bits"], (name, err)


def test_a_row_sum_with_a_constant_is_masked(tmp_path: Path) -> None:
    # Refused before ("the padding slots ... would enter the sum"): S + 1 fills the padding.
    text = """param N <= 100
param M <= 8
input S: secret[N, M] in {0, 1, 2}
reveal g = sum(S + 1, axis=1)
"""
    comp = _compile(tmp_path, text, "N=10,M=8", flooding=False)
    sizes = sizes_for_run(comp)
    data = random_inputs(comp.program, sizes, seed=3)
    got = simulate(comp.program, sizes, data).outputs["g"]
    assert np.allclose(got, np.sum(np.asarray(data["S"]) + 1, axis=1), rtol=1e-12)


def test_bfv_refuses_a_masked_sum_with_its_location(tmp_path: Path) -> None:
    text = """param N <= 100
input x: secret[N] in {0, 1, 2}
reveal t = sum(x + 1)
"""
    with pytest.raises(UserError) as info:
        _compile(tmp_path, text, "N=10", scheme="bfv")
    message = str(info.value)
    assert ":3:" in message and "masking plaintext vector" in message, message
    assert "--scheme ckks" in message
