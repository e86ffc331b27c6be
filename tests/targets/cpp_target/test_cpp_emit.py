"""The C++ emitter: readable code (each IR op as a comment above its call, the program's value
names), the streaming schedule (passes over the rows, accumulators), a program description
that carries the compiler's levels and scales, a Ninja file with the required flags, writes
only on change, and generated code that compiles warning-free against the runtime headers."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cpp_target_common import EXAMPLES, ROOT

from compiler.analysis.sizes import Sizes
from compiler.dialects import ckks
from compiler.ir_text import print_ir
from driver.pipeline import Compilation, Options, compile_file
from targets.cpp.emit import Emitted, emit, write_project

RUNTIME = ROOT / "runtime"
LIB = ROOT / "build" / "release" / "libhec_runtime.a"


@functools.cache
def emitted(path: str, sizes: str) -> tuple[Compilation, Emitted]:
    comp = compile_file(ROOT / path, Options(sizes=Sizes.parse(sizes)))
    return comp, emit(comp.module, path, RUNTIME, LIB)


@pytest.mark.parametrize(("path", "sizes"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_every_ckks_op_appears_as_a_comment_above_its_call(path: str, sizes: str) -> None:
    comp, e = emitted(path, sizes)
    printed = [
        ln.strip()
        for ln in print_ir(comp.program).splitlines()[1:]
        if ln.startswith("  ") and not ln.startswith("   ")
    ]
    lines = [ln.strip() for ln in e.cpp.splitlines()]
    checked = 0
    for op, text in zip(comp.program.block.ops, printed, strict=True):
        public = bool(op.results) and isinstance(op.results[0].type, ckks.PublicType)
        if isinstance(op, ckks.EncodeOp | ckks.ParamOp) or public:
            continue
        at = [i for i, ln in enumerate(lines) if ln.startswith(f"// {text}")]
        assert at, text
        below = lines[at[0] + 1]
        assert not below.startswith("//") or below.startswith("// input"), (text, below)
        checked += 1
    assert checked >= 5


def test_chisq_streams_in_one_pass_with_named_accumulators() -> None:
    _, e = emitted(*EXAMPLES[0])
    assert e.streaming and e.passes == 1
    assert "DotSink n11_sum(ops, 1, server.threads());" in e.cpp
    assert "SumSink c1_sum(ops, server.threads());" in e.cpp
    assert 'server.stream("compute pass 1/1", {"y", "S"}' in e.cpp
    assert "n11_sum.add(thread, v3, S);" in e.cpp
    # The statistics after the sums are global: computed once, outside the row loop.
    after = e.cpp.split(
        'const CtArray n11 = run_op("%n11 = ckks.dot", [&] { return n11_sum.finish(); });'
    )[1]
    # Each op runs through run_op, so a runtime error names the op and its IR value.
    assert (
        'const CtArray chi2_den = run_op("%chi2_den = ckks.mul", '
        "[&] { return mul(ops, v16, v20); });" in after
    )
    # No secret key anywhere in the server code.
    compute = e.cpp.split("void compute(Server& server)")[1]
    assert "secret" not in compute.lower()


def test_meancov_needs_a_second_pass_for_the_centred_data() -> None:
    _, e = emitted(*EXAMPLES[1])
    assert e.passes == 2
    first, second = e.cpp.split('"compute pass 2/2"')
    assert "SumSink v0_sum" in first and "DotSink scatter_sum" in first.split("pass 2 of 2")[1]
    # Xc is formed per row and dropped after its last use (the broadcast into the scatter).
    assert 'CtArray Xc = run_op("%Xc = ckks.sub", [&] { return sub(ops, v11, v9); });' in second
    assert "Xc = CtArray{};  // its last use" in second
    # mu (from pass 1) is computed between the passes, once.
    between = first.split('"compute pass 1/2"')[1]
    assert 'const CtArray mu = run_op("%mu = ckks.mul_const", [&] { return mul_const(ops, v0, ' in (
        between
    )


def test_spec_carries_levels_scales_domains_and_keys() -> None:
    comp, e = emitted(*EXAMPLES[2])
    params = comp.program.parameters()
    assert params is not None
    assert f"s.log_n = {params.log_n};" in e.cpp
    assert "s.relinearizes = true;" in e.cpp
    rotations = ", ".join(str(r) for r in sorted(comp.program.rotation_keys() or ()))
    assert f"s.rotations = {{{rotations}}};" in e.cpp
    for enc in comp.program.encrypts():
        ty = ckks.ct_type(enc.result)
        line = next(
            ln
            for ln in e.cpp.splitlines()
            if "s.inputs.push_back(" in ln and f'"{enc.source().sym_value}"' in ln
        )
        assert f", {ty.level_value}, {ty.scale_bits!r}," in line
    assert "Domain{{0.0, 1.0, 2.0}, 0.0, 0.0, true}" in e.cpp
    assert "Domain{{}, -1.0, 1.0, true}" in e.cpp


def test_special_primes_exactly_as_the_compiler_chose() -> None:
    """Regression: the emitter used to add a special prime P to programs that switch no key
    (the runtime refused hybrid parameters without P), which pushed the chi-square GWAS from
    n = 2^13 to 2^14 at high precision. P is now emitted only when parameter-selection chose
    one."""
    comp, chisq = emitted(*EXAMPLES[0])
    params = comp.program.parameters()
    assert params is not None and params.special_moduli == ()
    assert "s.special_moduli = {};" in chisq.cpp
    assert "no special primes" in chisq.cpp
    comp, grs = emitted(*EXAMPLES[2])
    params = comp.program.parameters()
    assert params is not None and params.special_moduli
    assert f"s.special_moduli = {{{params.special_moduli[0]}ULL" in grs.cpp


def test_insecure_is_stamped_in_the_generated_program() -> None:
    comp = compile_file(
        ROOT / EXAMPLES[0][0], Options(sizes=Sizes.parse(EXAMPLES[0][1]), log_n=11, insecure=True)
    )
    e = emit(comp.module, EXAMPLES[0][0], RUNTIME, LIB)
    assert "s.insecure = true;" in e.cpp
    assert "INSECURE parameters (compiled with --insecure)" in e.cpp


def test_ninja_file_flags_and_runtime_paths() -> None:
    _, e = emitted(*EXAMPLES[0])
    assert "-O2 -Wall -Wextra -fopenmp" in e.ninja
    assert f"runtime = {RUNTIME}" in e.ninja
    assert f"runtime_lib = {LIB}" in e.ninja
    assert "build chisq_numerators: link chisq_numerators.o | $runtime_lib" in e.ninja
    assert re.search(r"libs = \$runtime_lib -fopenmp .*sodium", e.ninja)


def test_files_are_rewritten_only_when_they_change(tmp_path: Path) -> None:
    _, e = emitted(*EXAMPLES[0])
    assert {p.name for p in write_project(e, tmp_path)} == {"chisq_numerators.cpp", "build.ninja"}
    before = (tmp_path / "chisq_numerators.cpp").stat().st_mtime_ns
    assert write_project(e, tmp_path) == []
    assert (tmp_path / "chisq_numerators.cpp").stat().st_mtime_ns == before
    _, other = emitted(EXAMPLES[0][0], "N=21,M=10")
    assert [p.name for p in write_project(other, tmp_path)] == ["chisq_numerators.cpp"]


def test_the_same_program_emits_the_same_code() -> None:
    comp = compile_file(ROOT / EXAMPLES[1][0], Options(sizes=Sizes.parse(EXAMPLES[1][1])))
    assert emit(comp.module, EXAMPLES[1][0], RUNTIME, LIB).cpp == emitted(*EXAMPLES[1])[1].cpp


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
@pytest.mark.parametrize(("path", "sizes"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_generated_code_compiles_without_warnings(path: str, sizes: str, tmp_path: Path) -> None:
    _, e = emitted(path, sizes)
    write_project(e, tmp_path)
    done = subprocess.run(
        [
            "g++",
            "-std=c++20",
            "-fsyntax-only",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fopenmp",
            f"-I{RUNTIME}",
            str(tmp_path / f"{e.name}.cpp"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
