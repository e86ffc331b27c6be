"""Negative tests of the checker passes: each one must raise on IR that breaks its invariant
(and pass on the compiled examples, which the pipeline already runs them on)."""

from __future__ import annotations

import dataclasses

import pytest
from xdsl.context import Context

from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from compiler.errors import InternalError, UserError
from driver.pipeline import Compilation, Options, compile_file
from passes.check_degrees import CheckDegreesPass
from passes.check_levels import CheckLevelsPass
from passes.check_scales import CheckScalesPass
from passes.check_security import CheckSecurityPass

CHISQ = "examples/gwas/chisq_numerators.hec"


@pytest.fixture
def chisq() -> Compilation:
    return compile_file(CHISQ, Options(sizes=Sizes.parse("N=100,M=1000")))


def test_checkers_accept_the_compiled_program(chisq: Compilation) -> None:
    for p in (CheckLevelsPass(), CheckScalesPass(), CheckDegreesPass(), CheckSecurityPass()):
        p.apply(Context(), chisq.module)


def test_check_security_rejects_too_many_bits_for_the_ring(chisq: Compilation) -> None:
    params = chisq.program.parameters()
    assert params is not None
    chisq.program.set_parameters(dataclasses.replace(params, log_n=params.log_n - 2))
    with pytest.raises(UserError, match="exceeds the 128-bit bound"):
        CheckSecurityPass().apply(Context(), chisq.module)


def test_check_security_accepts_a_stamped_insecure_program(chisq: Compilation) -> None:
    params = chisq.program.parameters()
    assert params is not None
    chisq.program.set_parameters(
        dataclasses.replace(params, log_n=10, security_bits=0, insecure=True)
    )
    CheckSecurityPass().apply(Context(), chisq.module)


def test_check_levels_rejects_a_chain_too_short(chisq: Compilation) -> None:
    params = chisq.program.parameters()
    assert params is not None
    chisq.program.set_parameters(dataclasses.replace(params, moduli=()))
    with pytest.raises(InternalError, match="check-levels"):
        CheckLevelsPass().apply(Context(), chisq.module)


def test_check_levels_rejects_an_input_encrypted_too_high() -> None:
    # z is first used at level 0; encrypt it at level 1 and drop it right away.
    comp = compile_file("tests/passes/level-assignment.hec", Options(sizes=Sizes.parse("N=100")))
    program = comp.program
    for op in program.block.ops:
        if isinstance(op, ckks.EncodeOp) and op.sym_value == "z":
            ty = ckks.pt_type(op.result)
            op.result._type = ckks.PtType.get(ty.dims, ty.layout_name, 1, ty.scale)  # pyright: ignore[reportPrivateUsage]
    encrypt = next(o for o in program.encrypts() if o.source().sym_value == "z")
    ckks.retype(encrypt)
    with pytest.raises(InternalError, match="encrypted at level 1 but first used at level 0"):
        CheckLevelsPass().apply(Context(), comp.module)


def test_check_scales_rejects_an_output_modulus_too_small(chisq: Compilation) -> None:
    params = chisq.program.parameters()
    assert params is not None
    chisq.program.set_parameters(
        dataclasses.replace(params, output_moduli=params.output_moduli[:1])
    )
    with pytest.raises(InternalError, match="check-scales"):
        CheckScalesPass().apply(Context(), chisq.module)


def test_check_degrees_rejects_degrees_above_the_limit(chisq: Compilation) -> None:
    with pytest.raises(InternalError, match="degree-4"):
        CheckDegreesPass(max_degree=2).apply(Context(), chisq.module)
