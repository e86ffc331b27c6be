"""Property test of the whole pipeline: random well-formed programs (the strategy of
tests/dsl/programs.py) that the ckks lowering supports compile, and the exact simulator on the
compiled program agrees with the plaintext reference on the source: every pass kept the
meaning (slot sums over nonzero padding included: they are masked). Programs outside the
supported subset (public arrays, det/adj, layout conversions) must fail with a UserError, never
a crash. Under CI=true the examples are derandomized (tests/conftest.py); regressions it
found: test_regressions.py."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from compiler.types import FiniteSet, Interval, domain_interval
from driver.pipeline import Options, run_pipeline, sizes_for_run
from dsl.checker import check
from dsl.parser import parse_program
from dsl.reference import evaluate
from targets.sim.data import random_inputs
from targets.sim.simulator import simulate
from tests.dsl.programs import Generated, programs

SIZES = {"N": 5, "M": 6, "K": 3}


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(programs(), st.integers(0, 2**16))
def test_random_programs_keep_their_meaning(generated: Generated, seed: int) -> None:
    try:
        checked = check(parse_program(generated.text, "random.hec"))
    except UserError:
        return  # the checker's business (tests/dsl)
    try:
        sizes = ",".join(f"{k}={min(v, checked.params[k])}" for k, v in SIZES.items())
        comp = run_pipeline(checked, Options(sizes=Sizes.parse(sizes), insecure=True, log_n=12))
    except UserError:
        return  # outside the supported subset, reported as a user error
    sizes = sizes_for_run(comp)
    inputs = random_inputs(comp.program, sizes, seed=seed)
    rng = np.random.default_rng(seed)
    for name, b in checked.bindings.items():
        if b.kind == "input" and name not in inputs:  # declared but unused by the server
            shape = [d if isinstance(d, int) else sizes[d] for d in b.ty.shape]
            if isinstance(b.domain, FiniteSet):
                inputs[name] = rng.choice(np.array(b.domain.values), size=shape)
            else:
                box = Interval(-1.0, 1.0) if b.domain is None else domain_interval(b.domain)
                inputs[name] = rng.uniform(box.lo, box.hi, size=shape)
    reference = evaluate(checked, sizes, inputs)
    result = simulate(comp.program, sizes, inputs)
    for name, want in reference.revealed.items():
        got = result.outputs[name]
        scale = max(float(np.max(np.abs(want))), 1e-300)
        assert np.max(np.abs(got - want)) <= 1e-9 * scale, name
