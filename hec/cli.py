"""The `hec` command line: one subcommand per user-facing job.

Each subcommand is a `Command`: a name, a one-line help, a function that adds its arguments
and a function that runs it and returns the exit code. `hec --help` lists exactly the
commands registered in `COMMANDS`.
"""

from __future__ import annotations

import argparse
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from compiler.analysis.sizes import Sizes
from compiler.errors import UserError
from driver import MAX_PRECISION_BITS
from driver.environment import cpu_features, runtime_build_dir
from hec import __version__

if TYPE_CHECKING:
    from driver.pipeline import Compilation, Options


def error_confidence(text: str) -> float:
    """argparse type of --error-confidence: a probability in (0, 2^-4], as 2^-40 or 1e-12;
    returns its log2."""
    import math

    try:
        value = 2.0 ** float(text[2:]) if text.startswith("2^") else float(text)
    except (ValueError, OverflowError):
        value = math.nan
    if not (0.0 < value <= 2.0**-4):
        raise argparse.ArgumentTypeError(
            f"{text!r}: the failure probability must be in (0, 2^-4], written 2^-40 or 1e-12"
        )
    return math.log2(value)


# log2 of the default failure probability of an error bound: compiler.analysis.noise's
# DEFAULT_FAILURE_LOG2 (not imported here, to keep the CLI's start-up light).
DEFAULT_ERROR_CONFIDENCE = -32.0


def _error_confidence_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--error-confidence",
        type=error_confidence,
        default=DEFAULT_ERROR_CONFIDENCE,
        metavar="P",
        help="failure probability of each revealed value's error bound: 2^-40 or 1e-12 "
        f"(default 2^{DEFAULT_ERROR_CONFIDENCE:g}; docs/precision.md)",
    )


def precision_bits(text: str) -> float:
    """argparse type of --precision-bits: a finite number in (0, 50]."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or value > MAX_PRECISION_BITS:
        raise argparse.ArgumentTypeError(
            f"{text!r}: bits of precision must be a number in (0, {MAX_PRECISION_BITS:g}]"
        )
    return value


def thread_count(text: str) -> int:
    """argparse type of --threads: a non-negative integer (0: every core)."""
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of threads (0: all)")
    return int(text)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _env_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print as JSON")


def _env_run(args: argparse.Namespace) -> int:
    import json
    from importlib.metadata import PackageNotFoundError, version

    features = cpu_features()
    deps: dict[str, str | None] = {}
    for dist in ("lark", "xdsl", "numpy", "scipy", "bed-reader", "pgenlib", "cyvcf2"):
        try:
            deps[dist] = version(dist)
        except PackageNotFoundError:
            deps[dist] = None
    build = runtime_build_dir()
    facts = {
        "hec": __version__,
        "python": platform.python_version(),
        "dependencies": deps,
        "cpu": {
            "avx2": features.avx2,
            "avx512f": features.avx512f,
            "avx512ifma": features.avx512ifma,
        },
        "ntt_path": features.ntt_path,
        "runtime_build": str(build),
        "runtime_built": (build / "CMakeCache.txt").is_file(),
    }
    if args.json:
        print(json.dumps(facts, indent=2))
        return 0
    print(f"hec {facts['hec']} on Python {facts['python']}")
    for dist, ver in deps.items():
        print(f"  {dist:<12} {ver or 'MISSING'}")
    print(
        f"  cpu          avx2={features.avx2} avx512f={features.avx512f} "
        f"avx512ifma={features.avx512ifma} -> NTT path {features.ntt_path}"
    )
    built = "built" if facts["runtime_built"] else "not built (run scripts/test)"
    print(f"  runtime      {build} ({built})")
    return 0


def _file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a .hec program")


def _check_run(args: argparse.Namespace) -> int:
    from dsl.checker import check
    from dsl.parser import parse_file

    checked = check(parse_file(args.file))
    print(checked.summary())
    return 0


def _ir_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", help="a .hec program, or hec IR as MLIR text (.mlir: read back, verified)"
    )
    parser.add_argument(
        "--layer",
        choices=("stat", "scheme"),
        default="stat",
        help="stat: the program as lowered from the source; scheme: the compiled ckks "
        "program for --size (default stat)",
    )
    parser.add_argument(
        "--size", default="", metavar="N=100,M=64", help="sizes to compile for (--layer scheme)"
    )
    form = parser.add_mutually_exclusive_group()
    form.add_argument(
        "--generic",
        action="store_true",
        help="the MLIR form: generic ops, types as IRDL parameters, what mlir-opt-19 "
        "--irdl-file=targets/mlir/irdl/hec.irdl.mlir parses and verifies (docs/mlir.md)",
    )
    form.add_argument(
        "--upstream",
        action="store_true",
        help="the stat program lowered to func/arith/math/tensor/linalg for --size "
        "(its plaintext meaning; mlir-opt-19 lowers it to LLVM)",
    )
    form.add_argument(
        "--heir",
        action="store_true",
        help="the ckks program for --size in HEIR's ckks/lwe dialects (heir-opt reads it)",
    )
    form.add_argument(
        "--compare-heir",
        action="store_true",
        help="compile the program for --size with hec and with HEIR (heir-opt --mlir-to-ckks "
        "on its --upstream form) and print both op counts side by side",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="(--layer scheme) accept parameters beyond the 128-bit table",
    )
    parser.add_argument(
        "--no-flooding",
        action="store_true",
        help="(--layer scheme, --heir, --compare-heir) compile for single-party use, without "
        "the decrypt role's noise flooding (as hec report --no-flooding)",
    )


def _heir_comparison(comp: Compilation) -> dict[str, Any]:
    """hec's compilation `comp` next to HEIR's compilation of the same program and sizes."""
    from driver.pipeline import sizes_for_run
    from targets.mlir.heir import compare_with_heir

    return compare_with_heir(comp.program, comp.stat_module, sizes_for_run(comp))


def _compare_heir(args: argparse.Namespace) -> int:
    from driver.pipeline import Options, compile_file
    from targets.report.report import render_heir_comparison

    options = Options(
        sizes=Sizes.parse(args.size), insecure=args.insecure, flooding=not args.no_flooding
    )
    comp = compile_file(args.file, options, sys.stderr)
    print(f"program {comp.program.sym_name.data}")
    print("\n".join(render_heir_comparison(_heir_comparison(comp))))
    return 0


def _ir_run(args: argparse.Namespace) -> int:
    from compiler.ir_text import print_ir
    from targets.mlir.form import from_mlir, to_mlir

    if args.compare_heir:
        return _compare_heir(args)
    if args.file.endswith(".mlir") or args.file == "-":
        if args.upstream or args.heir or args.layer != "stat" or args.size:
            raise UserError(
                "an .mlir input is printed as it is: --layer, --size, --upstream and --heir "
                "apply to .hec programs"
            )
        name = "<stdin>" if args.file == "-" else args.file
        try:
            text = sys.stdin.read() if args.file == "-" else _read_text(args.file)
        except OSError as err:
            raise UserError(f"cannot read {args.file}: {err.strerror}") from None
        module = from_mlir(text, name)
    else:
        module = _ir_module(args)
    if args.upstream:
        from targets.mlir.upstream import lower_to_upstream

        sys.stdout.write(lower_to_upstream(module, _ir_sizes(args)).text)
    elif args.heir:
        from targets.mlir.heir import export_heir

        sys.stdout.write(export_heir(module, _ir_sizes(args)).text)
    elif args.generic:
        sys.stdout.write(to_mlir(module))
    else:
        sys.stdout.write(print_ir(module))
    return 0


def _read_text(path: str) -> str:
    from pathlib import Path

    return Path(path).read_text()


def _ir_sizes(args: argparse.Namespace) -> dict[str, int]:
    """The given sizes; each size parameter not given takes its bound (checked by the
    lowering, which names the parameters)."""
    return dict(Sizes.parse(args.size))


def _ir_module(args: argparse.Namespace):
    from driver.pipeline import Options, compile_file
    from dsl.bitslice import is_integer_program
    from dsl.checker import check
    from dsl.lower import lower
    from dsl.parser import parse_file

    checked = check(parse_file(args.file))
    # An integer program's stat form is its BFV bit slices (docs/circuits.md); its FHEW circuit
    # is NAME.bool.mlir of `hec compile --scheme fhew`.
    scheme = "bfv" if is_integer_program(checked) else "ckks"
    if (args.layer == "stat" or args.upstream) and not args.heir:
        return lower(checked, scheme=scheme)
    # HEIR has no conjugation: the HEIR export is compiled without complex packing.
    options = Options(
        sizes=Sizes.parse(args.size),
        insecure=args.insecure,
        complex_packing=not args.heir,
        flooding=not args.no_flooding,
        scheme=scheme,
    )
    return compile_file(args.file, options, out=sys.stderr).module


def _compile_arguments(parser: argparse.ArgumentParser) -> None:
    _file_argument(parser)
    _profile_argument(parser)
    parser.add_argument(
        "--size", default="", metavar="N=5000,M=16384", help="sizes to compile (and run) for"
    )
    parser.add_argument(
        "--precision-bits",
        type=precision_bits,
        default=19.0,
        help="bits of precision every output keeps, relative to its range (default 19)",
    )
    parser.add_argument(
        "--precision", default="", metavar="NAME=BITS,...", help="per-output precision targets"
    )
    parser.add_argument(
        "--relative-precision",
        type=precision_bits,
        default=None,
        metavar="BITS",
        help="bits of precision relative to each revealed VALUE (not its range bound), for "
        "outputs whose range is bounded away from 0; an output that can be 0 is an error",
    )
    _error_confidence_argument(parser)
    parser.add_argument("--log-n", type=int, default=0, help="force the ring dimension 2^LOG_N")
    parser.add_argument(
        "--grid-rows",
        type=grid_rows,
        default=None,
        metavar="R|auto",
        help="rows R of the grid layout (docs/layout.md): auto (default) chosen by the cost "
        "model, 1 the packed and replicated layouts; the same for every command, encrypted "
        "runs included",
    )
    parser.add_argument(
        "--key-memory",
        type=float,
        default=0.0,
        metavar="MIB",
        help="budget for the evaluation keys in MiB: the slot sums take the fastest rotation "
        "plan whose keys fit (default: no budget; the fewest keys within 10%% of the fastest)",
    )
    parser.add_argument(
        "--no-staged-sums",
        action="store_true",
        help="sum slots by the rotate-and-add tree (by default in doubly hoisted stages "
        "chosen by the cost model; passes/rotation_keys.py)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="accept parameters beyond the 128-bit table (stamped on every output)",
    )
    parser.add_argument(
        "--no-complex-packing",
        action="store_true",
        help="keep every secret row in real slots (by default a row of two or more slot sets "
        "that is only summed over individuals is packed two slot sets per ciphertext when "
        "that uploads fewer bytes)",
    )
    parser.add_argument(
        "--no-owner-side",
        action="store_true",
        help="let the server form every product (by default a product of one data owner's own "
        "rows that feeds a sum over individuals is formed by the owner before encrypting)",
    )
    parser.add_argument(
        "--no-packed-counts",
        action="store_true",
        help="encrypt every revealed count apart (by default the integer sums of a program "
        "that only adds are packed into one exact integer per coefficient)",
    )
    parser.add_argument(
        "--scheme",
        choices=("ckks", "bfv", "labhe", "fhew", "auto"),
        default=None,
        help="target scheme: ckks (default: approximate, reals); bfv: exact integers (inputs "
        "with integer domains); labhe: labeled HE (Barbosa-Catalano-Fiore) for programs whose "
        "revealed values have degree <= 2; fhew: integer and Boolean programs (u8, i16, bool, "
        "...) as FHEW gate programs; auto: ckks or bfv, whichever the cost model "
        "estimates faster at the sizes of the run",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help="require an exact scheme (bfv, or labhe): an error when the program is not integral",
    )
    parser.add_argument(
        "--labhe-scheme",
        choices=("jl", "paillier"),
        default="jl",
        help="(labhe) the linear scheme: jl = Joye-Libert (default) or paillier",
    )
    parser.add_argument(
        "--modulus-bits",
        type=int,
        default=3072,
        help="(labhe) modulus size: 3072 (128-bit security, default) or 2048 (112 bits)",
    )
    parser.add_argument(
        "--no-flooding",
        action="store_true",
        help="hold the precision targets without the decrypt role's noise flooding (which "
        "costs every CKKS output 31.5 bits): only for single-party use, decrypting with "
        "decrypt --no-flooding (hec run always does; docs/security.md)",
    )
    parser.add_argument("--print-ir-after-all", action="store_true", help="print IR after passes")
    parser.add_argument(
        "--print-ir-after", action="append", default=[], metavar="PASS", help="print IR after PASS"
    )
    parser.add_argument("--json", action="store_true", help="print as JSON")


def _compile(args: argparse.Namespace):
    from driver.pipeline import compile_file

    return compile_file(args.file, _options_of(args), out=sys.stderr if args.json else sys.stdout)


def _resolve_integer_auto(args: argparse.Namespace, sizes: dict[str, int] | None = None) -> None:
    """--scheme auto on an integer or Boolean program: FHEW or BFV bit slices, whichever the
    cost model estimates faster at the sizes (`sizes`, else --size, else the declared bounds);
    the choice and its reason go to stderr, and the command goes on as for that scheme."""
    if getattr(args, "scheme", None) != "auto":
        return
    from driver.bitslices import choose_integer_scheme
    from dsl.bitslice import is_integer_program
    from dsl.checker import check
    from dsl.parser import parse_file

    checked = check(parse_file(args.file))
    if not is_integer_program(checked):
        return
    options = _options_of(args)
    if sizes is not None:
        options = replace(options, sizes=Sizes.of(sizes))
    scheme, reason = choose_integer_scheme(checked, options)
    print(f"--scheme auto chose {scheme}: {reason}", file=sys.stderr)
    args.scheme = scheme


def _labhe_chosen(args: argparse.Namespace) -> bool:
    """--scheme labhe, or --scheme auto when the cost model prefers labeled HE to ckks and bfv
    (compiled at the sizes given, declared bounds elsewhere)."""
    scheme = getattr(args, "scheme", None)
    if scheme == "labhe":
        return True
    if scheme == "auto" or (scheme is None and getattr(args, "exact", False)):
        return _compile(args).labhe is not None
    return False


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    _compile_arguments(parser)
    parser.add_argument(
        "--compare-heir",
        action="store_true",
        help="also compile the program with HEIR (heir-opt --mlir-to-ckks, seconds to minutes) "
        "and report both executed op counts, rings and levels side by side, or HEIR's error "
        "(docs/mlir.md; meant for small sizes)",
    )


def _report_run(args: argparse.Namespace) -> int:
    _resolve_integer_auto(args)
    import json

    from driver.labhe import compile_labhe_file, labhe_report, render_labhe_text
    from driver.pipeline import report_of
    from targets.report.report import render_text

    if args.compare_heir and args.scheme in ("labhe", "bfv"):
        raise UserError(
            f"--compare-heir compares ckks compilations; this report is for --scheme {args.scheme}"
        )
    if args.scheme == "labhe":
        report = labhe_report(compile_labhe_file(args.file, _options_of(args)))
        print(json.dumps(report, indent=2) if args.json else render_labhe_text(report), end="")
        return 0
    if args.scheme == "fhew":
        from driver.fhew import compile_fhew_file, fhew_report, render_fhew_text

        if args.compare_heir:
            raise UserError("--compare-heir compares ckks compilations; this report is for fhew")
        report = fhew_report(compile_fhew_file(args.file, _options_of(args)))
        print(json.dumps(report, indent=2) if args.json else render_fhew_text(report), end="")
        return 0
    comp = _compile(args)
    if comp.labhe is not None:  # --scheme auto chose labeled HE
        if args.compare_heir:
            raise UserError(
                "--compare-heir compares ckks compilations; --scheme auto chose labhe",
                hint="pass --scheme ckks",
            )
        report = labhe_report(comp.labhe)
        report["schemes"] = report_of(comp)["schemes"]
        report["scheme_choice"] = comp.choice
        print(json.dumps(report, indent=2) if args.json else render_labhe_text(report), end="")
        return 0

    report = report_of(comp)
    if args.compare_heir:
        report["heir_comparison"] = _heir_comparison(comp)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        sys.stdout.write(render_text(report))
    return 0


def _simulate_arguments(parser: argparse.ArgumentParser) -> None:
    _compile_arguments(parser)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs and noise")
    parser.add_argument(
        "--noisy", action="store_true", help="also run the noisy mode (analytic CKKS errors)"
    )


def _simulate_run(args: argparse.Namespace) -> int:
    _resolve_integer_auto(args)
    import json

    from driver.pipeline import simulate_against_reference

    if args.scheme == "fhew":
        raise UserError(
            "hec simulate runs the CKKS and BFV reference simulators",
            hint="for the fhew target: hec run FILE --scheme fhew --sim (the netlist simulator)",
        )
    if args.scheme not in (None, "ckks", "bfv"):
        raise UserError(
            "hec simulate runs the CKKS and BFV reference simulators",
            hint="for the labeled target: hec run --scheme labhe --sim (its exact integer "
            "reference)",
        )
    comp = _compile(args)
    result = simulate_against_reference(comp, seed=args.seed, noisy=args.noisy)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"program {comp.stat_program.sym_name.data} ({comp.scheme}) at sizes "
        f"{result['sizes']} (seed {args.seed})"
    )
    print(f"  {'value':<14} {'mode':<6} {'max rel. error':>16} {'median':>12}  vs plaintext")
    for row in result["rows"]:
        print(
            f"  {row['name']:<14} {row['mode']:<6} {row['max_rel_error']:>16.3e} "
            f"{row['median_rel_error']:>12.3e}"
        )
    return 0


# --- hec compile / hec run (targets/cpp, driver/run.py) -----------------------------------------


def grid_rows(text: str) -> int:
    """--grid-rows: `auto` (0: the cost model chooses) or a number of rows."""
    if text == "auto":
        return 0
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a number of rows (a power of two) or auto"
        ) from None


def _options_of(args: argparse.Namespace) -> Options:
    """The command's options, built once: the sizes parsed here into their typed value."""
    from driver.pipeline import Options

    # The cost model's choice unless R is given, the same default for every command: what
    # the report and the simulator describe is what the C++ target runs.
    rows = getattr(args, "grid_rows", None)
    if rows is None:
        rows = 0
    return Options(
        grid_rows=rows,
        sizes=Sizes.parse(args.size),
        precision_bits=args.precision_bits,
        precision=args.precision,
        relative_precision=args.relative_precision,
        error_confidence=args.error_confidence,
        log_n=args.log_n,
        key_memory_mib=args.key_memory,
        staged_sums=not args.no_staged_sums,
        insecure=args.insecure,
        complex_packing=not args.no_complex_packing,
        owner_side=not args.no_owner_side,
        packed_counts=not args.no_packed_counts,
        flooding=not args.no_flooding,
        scheme=args.scheme or ("auto" if args.exact else "ckks"),
        exact=args.exact,
        labhe_linear=args.labhe_scheme,
        modulus_bits=args.modulus_bits,
        print_ir_after_all=args.print_ir_after_all,
        print_ir_after=tuple(args.print_ir_after),
    )


def _cpp_compile_arguments(parser: argparse.ArgumentParser) -> None:
    _compile_arguments(parser)
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    parser.add_argument(
        "--no-build", action="store_true", help="write the C++ and build.ninja, do not run ninja"
    )


def _cpp_compile_run(args: argparse.Namespace) -> int:
    _resolve_integer_auto(args)
    from driver.run import compile_cpp

    if args.scheme == "fhew":
        from pathlib import Path

        from driver.fhew import compile_fhew_file

        comp = compile_fhew_file(args.file, _options_of(args))
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        target = out / f"{comp.name}.gates"
        target.write_text(comp.gate_text)
        circuit = out / f"{comp.name}.bool.mlir"
        circuit.write_text(comp.bool_text)
        print(
            f"program {comp.name}: FHEW gate program {target} ({comp.cover.bootstraps} "
            f"bootstraps in {comp.cover.levels} levels per element), its circuit in the bool "
            f"dialect {circuit}; run it with hec run --scheme fhew"
        )
        return 0
    if _labhe_chosen(args):
        from driver.labhe import compile_labhe_cpp

        print(
            compile_labhe_cpp(
                args.file, args.output, _options_of(args), not args.no_build
            ).describe()
        )
        return 0
    built = compile_cpp(args.file, args.output, _options_of(args), build=not args.no_build)
    print(built.describe())
    return 0


def _run_arguments(parser: argparse.ArgumentParser) -> None:
    _compile_arguments(parser)
    parser.add_argument(
        "--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input array"
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument("--sim", action="store_true", help="run in the reference simulator")
    parser.add_argument("--noisy", action="store_true", help="(--sim) inject CKKS noise")
    parser.add_argument("--seed", type=int, default=0, help="(--sim --noisy) noise seed")
    parser.add_argument(
        "--build-dir", default="", metavar="DIR", help="where to compile and keep the roles' files"
    )
    parser.add_argument(
        "--providers", type=int, default=1, help="(labhe) data providers sharing each input's rows"
    )
    parser.add_argument(
        "--owner",
        action="append",
        default=[],
        metavar="NAME=I",
        help="(labhe, fhew) input NAME belongs wholly to data owner I (fhew: each input not "
        "named is its own owner, encrypting with the public key in its own process)",
    )


def _run_run(args: argparse.Namespace) -> int:
    import json

    from driver.run import parse_inputs, run_encrypted, run_sim

    inputs = parse_inputs(args.input)
    if getattr(args, "scheme", None) == "auto":  # at the data's sizes
        from driver.run import infer_sizes, load_npy
        from dsl.checker import check
        from dsl.parser import parse_file

        arrays = {name: load_npy(name, p) for name, p in inputs.items()}
        _resolve_integer_auto(args, infer_sizes(check(parse_file(args.file)), arrays))
    owners: dict[str, int] = {}
    for item in args.owner:
        name, _, who = item.partition("=")
        if not name or not who.isdigit():
            raise UserError(f"--owner {item!r}: expected NAME=I")
        owners[name] = int(who)
    if args.scheme == "fhew":
        from driver.fhew import run_fhew

        result = run_fhew(
            args.file,
            inputs,
            args.out,
            _options_of(args),
            sim=args.sim,
            work=args.build_dir or None,
            owners=owners,
        )
    elif _labhe_chosen(args):
        from driver.labhe import run_labhe

        result = run_labhe(
            args.file,
            inputs,
            args.out,
            _options_of(args),
            sim=args.sim,
            work=args.build_dir or None,
            providers=args.providers,
            owners=owners,
        )
    elif args.sim:
        result = run_sim(
            args.file,
            inputs,
            args.out,
            noisy=args.noisy,
            seed=args.seed,
            options=_options_of(args),
        )
    else:
        result = run_encrypted(
            args.file, inputs, args.out, options=_options_of(args), work=args.build_dir or None
        )
    if args.json:
        print(json.dumps(result.summary, indent=2))
    else:
        s = result.summary
        print(f"program {s['program']} at sizes {s['sizes']} ({s['backend']})")
        if s.get("insecure"):
            print(f"  WARNING: {s.get('warning', 'INSECURE parameters (--insecure)')}")
        exact = s.get("exact_files") or {}
        assert isinstance(exact, dict)
        for name in sorted(result.revealed) + sorted(result.client):
            line = f"  {name:<14} -> {result.outdir / (name + '.npy')}"
            if name in exact:  # beyond 2^53: the exact integers in decimal text beside it
                line += f" (nearest float64; exact integers: {result.outdir / str(exact[name])})"
            print(line)
        compute = s.get("compute")
        if isinstance(compute, dict):  # --scheme fhew: the server's role, as the runtime counted
            took = compute.get("seconds")
            print(
                f"  server: {compute.get('bootstraps')} bootstraps over "
                f"{compute.get('evaluations')} element(s)"
                + (f" in {took:.2f} s" if isinstance(took, int | float) else "")
            )
        encrypted = s.get("owners")  # --scheme fhew: one encrypt role per data owner
        for owner in encrypted if isinstance(encrypted, list) else []:
            if isinstance(owner, dict):
                names = owner.get("inputs")
                print(
                    f"  data owner {owner.get('owner')}: encrypted "
                    f"{', '.join(map(str, names)) if isinstance(names, list) else names} "
                    f"({owner.get('ciphertexts')} ciphertexts) with the public key"
                )
        seconds = s.get("residue_seconds")
        if isinstance(seconds, list):
            each = ", ".join(f"{x:.2f}" for x in seconds if isinstance(x, float | int))
            print(f"  {len(seconds)} residue computations (CRT), seconds each: {each}")
    return 0


def _profile_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        default=None,
        metavar="PATH",
        help="the cost profile the cost model and the report's estimates use: a file from "
        "`hec calibrate`, or 'default' for the shipped one (default: $HEC_PROFILE, else "
        "the profile `hec calibrate` stored for this user, else the shipped one)",
    )


def _calibrate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        dest="out",
        default=None,
        metavar="PATH",
        help="where to store the profile (default $XDG_CONFIG_HOME/hec/profile.json, "
        "~/.config/hec/profile.json)",
    )
    parser.add_argument(
        "--max-log-n",
        type=int,
        choices=range(13, 17),
        default=16,
        help="the largest ring dimension 2^K measured (default 16)",
    )
    parser.add_argument(
        "--no-fhew", action="store_true", help="skip the FHEW gate (keeps the default's figure)"
    )


def _calibrate_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from compiler.analysis.profile import user_profile_path
    from driver.calibrate import calibrate

    out = Path(args.out) if args.out else user_profile_path()
    calibrate(out, max_log_n=args.max_log_n, fhew=not args.no_fhew)
    return 0


COMMANDS: list[Command] = [
    Command(
        "env",
        "show versions, CPU features and where the runtime is built",
        _env_arguments,
        _env_run,
    ),
    Command(
        "check",
        "check a program (names, shapes, secrecy, domains) and summarize it",
        _file_argument,
        _check_run,
    ),
    Command(
        "ir",
        "print a program's IR (stat or scheme layer) as MLIR text, for hec or for MLIR's tools",
        _ir_arguments,
        _ir_run,
    ),
    Command(
        "simulate",
        "compile for --size and run the ckks program in the reference simulator",
        _simulate_arguments,
        _simulate_run,
    ),
    Command(
        "report",
        "compile for --size and report parameters, costs, precision and what is revealed",
        _report_arguments,
        _report_run,
    ),
    Command(
        "compile",
        "compile to a C++ program (one subcommand per party) and build it with ninja",
        _cpp_compile_arguments,
        _cpp_compile_run,
    ),
    Command(
        "run",
        "run a program on .npy inputs: encrypted (all four roles locally) or --sim",
        _run_arguments,
        _run_run,
    ),
    Command(
        "calibrate",
        "measure this machine's runtime (medians, one thread) and store the cost profile the "
        "cost model and the report's time and memory estimates use",
        _calibrate_arguments,
        _calibrate_run,
    ),
]


# --- hec gwas / hec demo (gwas/, issue #8) ----------------------------------------------------
def _gwas_common_arguments(parser: argparse.ArgumentParser) -> None:
    from gwas import BACKEND_NAMES, DEFAULT_BACKEND, DEFAULT_PRECISION_BITS

    parser.add_argument(
        "--backend",
        choices=BACKEND_NAMES,
        default=DEFAULT_BACKEND,
        help="how the program runs: 'encrypted' runs the generated C++ program (keygen, "
        "encrypt, compute, decrypt); 'sim' is the reference simulator in noisy mode, a "
        f"SIMULATION of the encrypted computation, not encryption (default {DEFAULT_BACKEND})",
    )
    parser.add_argument(
        "--threads",
        type=thread_count,
        default=0,
        help="threads of the encrypted roles (default: all)",
    )
    parser.add_argument(
        "--precision-bits",
        type=precision_bits,
        default=DEFAULT_PRECISION_BITS,
        help=f"bits of precision of every revealed value (default {DEFAULT_PRECISION_BITS:g})",
    )
    _error_confidence_argument(parser)
    parser.add_argument("--cache-dir", default=None, help="compiled-program cache directory")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def _gwas_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="test", metavar="TEST", title="tests", required=True)
    chisq = sub.add_parser(
        "chisq",
        help="allelic chi-square test and odds ratio (PLINK 1.9 --assoc)",
        description="Allelic chi-square test and odds ratio of every SNP of a PLINK 1 binary "
        "fileset, computed by examples/gwas/chisq.hec (chisq_missing.hec when calls are "
        "missing); writes PREFIX.assoc, PREFIX.manhattan.png, PREFIX.qq.png and PREFIX.log.",
    )
    _gwas_data_arguments(chisq)
    chisq.add_argument(
        "--counts", action="store_true", help="C_A C_U (allele counts) in place of F_A F_U"
    )
    chisq.add_argument(
        "--ci", type=float, metavar="LEVEL", help="SE and LEVEL confidence limits of OR (0.95)"
    )
    chisq.add_argument(
        "--adjust", action="store_true", help="also write PREFIX.assoc.adjusted (PLINK --adjust)"
    )
    chisq.add_argument("--out", required=True, metavar="PREFIX", help="output prefix")
    chisq.add_argument("--seed", type=int, default=0, help="noise seed of --backend sim")
    chisq.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    _gwas_common_arguments(chisq)
    _scale_out_arguments(chisq)
    linear = sub.add_parser(
        "linear",
        help="quantitative-trait association (PLINK 1.9 --assoc on a quantitative phenotype)",
        description="Least-squares slope of a quantitative phenotype on the minor-allele count "
        "of every SNP, computed by examples/gwas/linear.hec under encryption; writes "
        "PREFIX.qassoc (NMISS BETA SE R2 T P), PREFIX.manhattan.png, PREFIX.qq.png, PREFIX.log.",
    )
    _gwas_data_arguments(linear)
    linear.add_argument("--out", required=True, metavar="PREFIX", help="output prefix")
    linear.add_argument("--seed", type=int, default=0, help="noise seed of --backend sim")
    linear.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    _gwas_common_arguments(linear)
    _scale_out_arguments(linear)
    logistic = sub.add_parser(
        "logistic",
        help="logistic regression with covariates (PLINK 1.9 --logistic --covar --hide-covar)",
        description="Case/control test of every SNP adjusted for covariates by the semi-parallel "
        "method (the covariate-only model fitted once, one Newton step per SNP), computed by "
        "gwas/programs/logistic.hec under encryption; writes PREFIX.assoc.logistic (CHR SNP BP "
        "A1 TEST NMISS OR STAT P, the ADD rows), PREFIX.manhattan.png, PREFIX.qq.png, "
        "PREFIX.log.",
    )
    _gwas_data_arguments(
        logistic,
        covar_help="covariate file (FID IID value...; header FID IID NAME... optional; -9 and "
        "NA are missing values, refused); standardized, an intercept added",
    )
    logistic.add_argument(
        "--covar-name", metavar="A,B,...", help="the covariate columns to use (needs a header)"
    )
    logistic.add_argument(
        "--check-plaintext", action="store_true",
        help="also compute the statistic in float64 on the plaintext data and report the "
        "agreement in the .log",
    )  # fmt: skip
    logistic.add_argument("--out", required=True, metavar="PREFIX", help="output prefix")
    logistic.add_argument("--seed", type=int, default=0, help="noise seed of --backend sim")
    logistic.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    _gwas_common_arguments(logistic)


def _scale_out_arguments(parser: argparse.ArgumentParser) -> None:
    """SNP blocks run apart, resumed, or on a Dask cluster (docs/scale-out.md)."""
    g = parser.add_argument_group("scale-out (SNP blocks; docs/scale-out.md)")
    g.add_argument(
        "--keys", metavar="DIR",
        help="keep the key set in DIR (made by the first run, reused by later ones); needed "
        "by --block and --resume; finished blocks are kept in PREFIX.blocks/",
    )  # fmt: skip
    g.add_argument(
        "--block", metavar="K/N",
        help="run only block K of N (SNPs split into N blocks), store it in PREFIX.blocks/; "
        "merge with a later --resume run",
    )  # fmt: skip
    g.add_argument(
        "--blocks", type=int, default=0, metavar="N", help="split the SNPs into N blocks"
    )
    g.add_argument(
        "--resume", action="store_true",
        help="skip the blocks PREFIX.blocks/ holds (each verified first), compute the rest, "
        "and merge",
    )  # fmt: skip
    g.add_argument(
        "--workers", type=int, default=0, metavar="K",
        help="run the blocks on a Dask LocalCluster of K worker processes (K > 1)",
    )  # fmt: skip
    g.add_argument(
        "--row-shards", type=int, default=0, metavar="R",
        help="encrypt each block's rows in R tasks (default: one per Dask worker)",
    )  # fmt: skip
    g.add_argument(
        "--scheduler", metavar="ADDRESS",
        help="run the blocks on the Dask cluster whose scheduler is at ADDRESS "
        "(tcp://HOST:8786)",
    )  # fmt: skip
    g.add_argument(
        "--store", metavar="PATH|URL",
        help="keep the finished blocks here instead of PREFIX.blocks/: a path or an fsspec "
        "URL (file://, s3://, ...); needs --keys",
    )  # fmt: skip
    g.add_argument(
        "--bank", metavar="PATH|URL",
        help="where the block tasks exchange their files (inputs, ciphertexts, results): a "
        "path or an fsspec URL the workers reach; the tasks copy files in and out, so no "
        "shared file system is needed (default: the run's scratch, used in place)",
    )  # fmt: skip


def _scale_of(args: argparse.Namespace):
    from pathlib import Path

    from driver.blockstore import parse_block_spec
    from gwas.scaleout import ScaleOut

    if not hasattr(args, "workers"):
        return ScaleOut()
    return ScaleOut(
        block=parse_block_spec(args.block) if args.block else None,
        blocks=args.blocks,
        keys=Path(args.keys).resolve() if args.keys else None,
        resume=args.resume,
        workers=args.workers,
        row_shards=args.row_shards,
        scheduler=args.scheduler,
        store=args.store,
        bank=args.bank,
    )


def _gwas_data_arguments(parser: argparse.ArgumentParser, covar_help: str | None = None) -> None:
    """The input, phenotype and filter options, spelled and read as PLINK 1.9 does
    (`covar_help`: what --covar does for a test that uses covariates)."""
    src = parser.add_argument_group("genotypes (exactly one)")
    src.add_argument("--bfile", metavar="PREFIX", help="PLINK 1 fileset PREFIX.bed/.bim/.fam")
    src.add_argument("--pfile", metavar="PREFIX", help="PLINK 2 fileset PREFIX.pgen/.pvar/.psam")
    src.add_argument("--vcf", metavar="FILE", help="VCF (.vcf or .vcf.gz); FID = IID = sample ID")
    src.add_argument("--bcf", metavar="FILE", help="BCF (read through cyvcf2)")
    ph = parser.add_argument_group("phenotype")
    ph.add_argument(
        "--pheno",
        metavar="FILE",
        help="phenotype file (FID IID value...; header FID IID or #FID IID)",
    )
    ph.add_argument("--pheno-name", metavar="NAME", help="the --pheno column named NAME")
    ph.add_argument("--mpheno", type=int, metavar="N", help="the N-th --pheno value column")
    ph.add_argument(
        "--1",
        dest="one_based",
        action="store_true",
        help="case/control coded 0 = control, 1 = case",
    )
    ph.add_argument(
        "--allow-no-sex", action="store_true", help="keep phenotypes of samples of unknown sex"
    )
    ph.add_argument("--update-sex", metavar="FILE", help="FID IID SEX per line")
    ph.add_argument(
        "--covar", metavar="FILE",
        help=covar_help
        or "covariate file: the --assoc tests use no covariate, so it is ignored with a "
        "warning, as plink1.9 does",
    )  # fmt: skip
    flt = parser.add_argument_group("filters and quality control (PLINK 1.9's order)")
    flt.add_argument("--keep", metavar="FILE", help="keep only these samples (FID IID)")
    flt.add_argument("--remove", metavar="FILE", help="remove these samples (FID IID)")
    flt.add_argument("--extract", metavar="FILE", help="keep only these SNPs (one ID a line)")
    flt.add_argument("--exclude", metavar="FILE", help="remove these SNPs")
    flt.add_argument("--chr", dest="chrom", metavar="CODES", help="chromosomes, e.g. 1-4,X,MT")
    flt.add_argument("--from-bp", type=int, metavar="BP", help="first position (with --chr)")
    flt.add_argument("--to-bp", type=int, metavar="BP", help="last position (with --chr)")
    flt.add_argument(
        "--mind", type=float, nargs="?", const=0.1, metavar="F",
        help="remove samples missing more than F of their calls (default F 0.1)",
    )  # fmt: skip
    flt.add_argument(
        "--geno", type=float, nargs="?", const=0.1, metavar="F",
        help="remove SNPs missing more than F of their calls (default F 0.1)",
    )  # fmt: skip
    flt.add_argument(
        "--maf", type=float, nargs="?", const=0.01, metavar="F",
        help="remove SNPs with minor-allele frequency below F (default F 0.01)",
    )  # fmt: skip
    flt.add_argument(
        "--hwe", type=float, metavar="P", help="remove SNPs with Hardy-Weinberg exact P below P"
    )


def _selection_of(args: argparse.Namespace):
    from gwas.filters import Selection

    return Selection(
        keep=args.keep,
        remove=args.remove,
        extract=args.extract,
        exclude=args.exclude,
        chrom=args.chrom,
        from_bp=args.from_bp,
        to_bp=args.to_bp,
        mind=args.mind,
        geno=args.geno,
        maf=args.maf,
        hwe=args.hwe,
    )


def _gwas_options(args: argparse.Namespace):
    from pathlib import Path

    from gwas.chisq import ChisqOptions

    return ChisqOptions(
        bfile=args.bfile,
        out=args.out,
        pheno=args.pheno,
        pfile=args.pfile,
        vcf=args.vcf,
        bcf=args.bcf,
        pheno_name=args.pheno_name,
        mpheno=args.mpheno,
        one_based=args.one_based,
        allow_no_sex=args.allow_no_sex,
        update_sex=args.update_sex,
        covar=args.covar,
        selection=_selection_of(args),
        counts=getattr(args, "counts", False),
        ci=getattr(args, "ci", None),
        adjust=getattr(args, "adjust", False),
        backend=args.backend,
        precision_bits=args.precision_bits,
        error_confidence=args.error_confidence,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        progress=not args.no_progress,
        plots=not args.no_plots,
        seed=args.seed,
        threads=args.threads,
        command_line="hec " + " ".join(sys.argv[1:]),
        scale=_scale_of(args),
    )


def _announce(args: argparse.Namespace, what: str) -> None:
    """A first line on stderr before the compiler and numerical libraries load (seconds on a
    busy machine), so a run shows progress from its first second."""
    if not getattr(args, "no_progress", False):
        print(f"{what}: loading hec ...", file=sys.stderr, flush=True)


def _gwas_run(args: argparse.Namespace) -> int:
    _announce(args, f"hec gwas {args.test}")
    from gwas.chisq import backend_label, run_chisq

    if args.test == "linear":
        return _linear_run(args)
    if args.test == "logistic":
        return _logistic_run(args)
    result = run_chisq(_gwas_options(args))
    print(f"hec gwas chisq: {backend_label(result.backend)}")
    if args.block:  # one block of a run split by hand: nothing merged yet
        for note in result.notes:
            print(f"  {note}")
        return 0
    if not result.backend.encrypts:
        print(
            "  a simulation of the encrypted computation (CKKS noise on plaintext); nothing "
            "was encrypted"
        )
    print(
        f"  {result.n_included} individuals ({result.n_cases} cases, {result.n_controls} "
        f"controls), {len(result.chisq)} SNPs, program {result.program.name}, "
        f"lambda {result.lam:.4f}"
    )
    for path in result.files:
        print(f"  wrote {path}")
    return 0


def _linear_run(args: argparse.Namespace) -> int:
    from gwas.linear import run_linear

    result = run_linear(_gwas_options(args))
    kind = "encrypted" if result.backend_encrypts else "SIMULATION (nothing encrypted)"
    print(f"hec gwas linear: {kind}")
    if args.block:  # one block of a run split by hand: nothing merged yet
        for note in result.notes:
            print(f"  {note}")
        return 0
    print(f"  {result.n_included} individuals, {len(result.p)} SNPs")
    for path in result.files:
        print(f"  wrote {path}")
    return 0


def _logistic_run(args: argparse.Namespace) -> int:
    from gwas.logistic import LogisticOptions, run_logistic

    common = _gwas_options(args)
    names = [n for n in args.covar_name.split(",") if n] if args.covar_name else None
    result = run_logistic(LogisticOptions(common, names, args.check_plaintext))
    kind = "encrypted" if result.backend_encrypts else "SIMULATION (nothing encrypted)"
    print(f"hec gwas logistic: {kind}")
    print(
        f"  {result.n_included} individuals ({result.n_cases} cases), {len(result.p)} SNPs, "
        f"covariates {', '.join(result.covariates)} and an intercept, lambda {result.lam:.4f}"
    )
    if result.check:
        print(f"  --check-plaintext: R^2 of STAT {result.check['r2']:.9f}")
    for path in result.files:
        print(f"  wrote {path}")
    return 0


def _site_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="step", metavar="STEP", title="steps", required=True)
    st = sub.add_parser("setup", help="coordinator: shared SNP list, site rows, program, keys")
    st.add_argument("--study", required=True, metavar="DIR", help="study directory to create")
    st.add_argument("--snps", required=True, metavar="FILE.bim", help="the shared SNP list")
    st.add_argument(
        "--site", action="append", default=[], metavar="NAME=ROWS",
        help="a site and the largest number of samples it will analyse (repeat per site)",
    )  # fmt: skip
    st.add_argument(
        "--qc", action="store_true",
        help="sites also upload the counts --geno/--hwe/--maf need (examples/gwas/qc.hec); A1 "
        "then follows PLINK's founders rule",
    )  # fmt: skip
    st.add_argument(
        "--test", choices=("chisq", "logistic"), default="chisq",
        help="chisq (default): the allelic chi-square of hec gwas chisq; logistic: hec gwas "
        "logistic with covariates, the covariate fit pooled over the sites in rounds",
    )  # fmt: skip
    st.add_argument(
        "--covar-name", metavar="A,B,...",
        help="--test logistic: the covariates (header names of every site's --covar file)",
    )  # fmt: skip
    st.add_argument(
        "--covar-range", action="append", default=[], metavar="NAME=LO:HI",
        help="--test logistic: a covariate's declared range, mapped onto [-1, 1] at every site "
        "(repeat per covariate; a value outside is refused)",
    )  # fmt: skip
    st.add_argument("--cache-dir", default=None, help="compiled-program cache directory")
    fit = sub.add_parser(
        "fit", help="a site (logistic): one round of the covariate fit at the current theta"
    )
    fit.add_argument("--study", required=True, metavar="DIR", help="the study directory")
    fit.add_argument("--site", required=True, metavar="NAME", help="this site's name")
    _gwas_data_arguments(fit, covar_help="this site's covariate file (FID IID, header naming "
                         "the study's covariates)")  # fmt: skip
    fit.add_argument("--out", required=True, metavar="DIR", help="upload directory to write")
    fit.add_argument("--cache-dir", default=None, help="compiled-program cache directory")
    sp = sub.add_parser(
        "step", help="coordinator (logistic): decrypt a round's pooled sums, publish the next theta"
    )
    sp.add_argument("--study", required=True, metavar="DIR")
    sp.add_argument("--results", required=True, metavar="DIR", help="the round's server results")
    sp.add_argument("--cache-dir", default=None, help="compiled-program cache directory")
    pr = sub.add_parser("prepare", help="a site: align to the shared list, encrypt, one upload")
    pr.add_argument("--study", required=True, metavar="DIR", help="the study directory")
    pr.add_argument("--site", required=True, metavar="NAME", help="this site's name")
    covar_help = ("a logistic study: this site's covariate file (FID IID, header naming the "
                  "study's covariates); a chi-square study ignores it")  # fmt: skip
    _gwas_data_arguments(pr, covar_help=covar_help)
    pr.add_argument(
        "--strand-ambiguous", choices=("keep", "drop"), default="keep",
        help="A/T and C/G SNPs: keep as written (default) or drop at this site",
    )  # fmt: skip
    pr.add_argument("--out", required=True, metavar="DIR", help="upload directory to write")
    pr.add_argument("--cache-dir", default=None, help="compiled-program cache directory")
    cp = sub.add_parser("compute", help="server: the pooled computation on every site's upload")
    cp.add_argument("--study", required=True, metavar="DIR")
    cp.add_argument("--upload", action="append", default=[], metavar="DIR", help="repeat per site")
    cp.add_argument("--out", required=True, metavar="DIR", help="encrypted results directory")
    cp.add_argument("--cache-dir", default=None, help="compiled-program cache directory")
    fi = sub.add_parser(
        "finish", help="coordinator: decrypt the pooled sums, write .assoc (.assoc.logistic)"
    )
    fi.add_argument("--study", required=True, metavar="DIR")
    fi.add_argument("--results", required=True, metavar="DIR")
    fi.add_argument("--out", required=True, metavar="PREFIX", help="output prefix")
    fi.add_argument("--adjust", action="store_true", help="also write PREFIX.assoc.adjusted")
    fi.add_argument("--ci", type=float, metavar="LEVEL", help="SE and confidence limits of OR")
    fi.add_argument("--counts", action="store_true", help="C_A C_U in place of F_A F_U")
    fi.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    fi.add_argument("--geno", type=float, nargs="?", const=0.1, metavar="F", help="as PLINK's")
    fi.add_argument("--maf", type=float, nargs="?", const=0.01, metavar="F", help="as PLINK's")
    fi.add_argument("--hwe", type=float, metavar="P", help="as PLINK's (study set up with --qc)")
    fi.add_argument("--cache-dir", default=None, help="compiled-program cache directory")


def _site_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gwas import multisite, multisite_logistic

    cache = Path(args.cache_dir) if args.cache_dir else None
    if args.step in ("prepare", "fit"):
        args.no_progress, args.no_plots, args.backend = True, True, "encrypted"
        args.precision_bits, args.threads, args.seed = 40.0, 0, 0
        args.error_confidence = DEFAULT_ERROR_CONFIDENCE  # the study's program: the default
    logistic = args.step != "setup" and multisite.load_study(Path(args.study)).test == "logistic"
    if args.step == "setup" and args.test == "logistic":
        names = [n for n in (args.covar_name or "").split(",") if n]
        study = multisite_logistic.setup(Path(args.study), Path(args.snps), args.site, names,
                                         args.covar_range, cache_dir=cache)  # fmt: skip
        print(f"study {args.study}: logistic, {len(study.shared)} shared SNPs, covariates "
              f"{', '.join(study.covariates)} (K = {study.k}), sites "
              + ", ".join(f"{k} rows {a}:{b}" for k, (a, b) in study.sites.items()))  # fmt: skip
        print(f"  give {args.study}/{{keys,fit-keys,qc-keys}}/public and {args.study}/rounds to "
              "the sites, the eval keys to the server; round 0 is open")  # fmt: skip
    elif args.step == "setup":
        if args.covar_name or args.covar_range:
            raise UserError("--covar-name and --covar-range belong to --test logistic")
        study = multisite.setup(
            Path(args.study), Path(args.snps), args.site, cache_dir=cache, qc=args.qc
        )
        print(f"study {args.study}: {len(study.shared)} shared SNPs, sites "
              + ", ".join(f"{k} rows {a}:{b}" for k, (a, b) in study.sites.items()))  # fmt: skip
        print(f"  give {args.study}/keys/public to the sites, {args.study}/keys/eval to the server")
    elif args.step == "fit":
        summary = multisite_logistic.fit_round(Path(args.study), args.site, _gwas_options(args),
                                               Path(args.out), cache)  # fmt: skip
        print(f"site {args.site}: round {summary['round']}, {summary['samples_analysed']} "
              f"samples encrypted into {args.out}")  # fmt: skip
    elif args.step == "step":
        published = multisite_logistic.step(Path(args.study), Path(args.results), cache)
        if published["final"]:
            print(f"coordinator: the covariate fit converged (largest step "
                  f"{published['last_step']:.3g} <= {published['tolerance']:.3g}); round "
                  f"{published['round']} is final: the sites run `hec site prepare`")  # fmt: skip
        else:
            print(f"coordinator: round {published['round']} published (largest step "
                  f"{published['last_step']:.3g} > tolerance {published['tolerance']:.3g}); "
                  "the sites run `hec site fit`")  # fmt: skip
    elif args.step == "prepare" and logistic:
        summary = multisite_logistic.prepare(
            Path(args.study), args.site, _gwas_options(args), Path(args.out),
            args.strand_ambiguous, cache,
        )  # fmt: skip
        print(f"site {args.site}: {summary['samples_analysed']} samples encrypted into {args.out}"
              f"; alignment {summary['alignment']}")  # fmt: skip
    elif args.step == "prepare":
        summary = multisite.prepare(
            Path(args.study), args.site, _gwas_options(args), Path(args.out),
            args.strand_ambiguous, cache,
        )  # fmt: skip
        print(f"site {args.site}: {summary['samples_analysed']} samples encrypted into {args.out}"
              f"; alignment {summary['alignment']}")  # fmt: skip
    elif args.step == "compute":
        multisite.compute(Path(args.study), [Path(u) for u in args.upload], Path(args.out), cache)
        print(f"server: pooled results of {len(args.upload)} uploads in {args.out}")
    else:
        from gwas.filters import Selection

        qc = Selection(geno=args.geno, maf=args.maf, hwe=args.hwe)
        if logistic:
            if args.adjust or args.ci is not None or args.counts:
                raise UserError("--adjust, --ci and --counts belong to the chi-square test (a "
                                "logistic study writes PREFIX.assoc.logistic)")  # fmt: skip
            multisite_logistic.finish(Path(args.study), Path(args.results), Path(args.out),
                                      not args.no_plots, cache, qc)  # fmt: skip
            print(f"coordinator: wrote {args.out}.assoc.logistic and {args.out}.log")
            return 0
        multisite.finish(Path(args.study), Path(args.results), Path(args.out), args.adjust,
                         args.ci, args.counts, not args.no_plots, cache, qc)  # fmt: skip
        print(f"coordinator: wrote {args.out}.assoc and {args.out}.log")
    return 0


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "test", nargs="?", choices=("chisq", "logistic"), default="chisq",
        help="chisq (default): hec gwas chisq; logistic: hec gwas logistic with confounding "
        "covariates, compared with plink1.9 --logistic",
    )  # fmt: skip
    parser.add_argument("--dir", default="demo-output", help="where the cohort and results go")
    parser.add_argument(
        "--n", type=int, default=None, help="individuals (default 2000; logistic: 1000)"
    )
    parser.add_argument("--m", type=int, default=None, help="SNPs (default 20000; logistic: 4096)")
    parser.add_argument("--causal", type=int, default=10, help="planted associations")
    parser.add_argument(
        "--missing-rate", type=float, default=0.0, help="fraction of calls set missing"
    )
    parser.add_argument("--seed", type=int, default=2020, help="seed of the simulated cohort")
    _gwas_common_arguments(parser)


def _demo_run(args: argparse.Namespace) -> int:
    _announce(args, "hec demo")
    from pathlib import Path

    if args.test == "logistic":
        from gwas.demo_logistic import run_logistic_demo

        if args.missing_rate:
            raise UserError("hec demo logistic: --missing-rate is not supported (the "
                            "semi-parallel test needs every call)")  # fmt: skip
        logistic = run_logistic_demo(
            Path(args.dir),
            n=args.n or 1000,
            m=args.m or 4096,
            n_causal=args.causal,
            seed=args.seed,
            backend=args.backend,
            threads=args.threads,
            progress=not args.no_progress,
            cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        )
        sys.stdout.write(logistic.text)
        return 0
    from gwas.demo import run_demo

    demo = run_demo(
        Path(args.dir),
        n=args.n or 2000,
        m=args.m or 20000,
        n_causal=args.causal,
        missing_rate=args.missing_rate,
        seed=args.seed,
        backend=args.backend,
        threads=args.threads,
        progress=not args.no_progress,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None,
    )
    sys.stdout.write(demo.text)
    return 0


COMMANDS += [
    Command(
        "gwas",
        "genome-wide association tests on PLINK filesets (hec gwas chisq)",
        _gwas_arguments,
        _gwas_run,
    ),
    Command(
        "site",
        "multi-site GWAS: setup (coordinator), prepare (each site), compute (server), finish; "
        "a logistic study first fits its covariates in rounds: fit (each site), compute, step",
        _site_arguments,
        _site_run,
    ),
    Command(
        "demo",
        "simulate a case/control cohort and run the chi-square GWAS (or, `hec demo logistic`, the "
        "logistic regression with covariates) on it end to end",
        _demo_arguments,
        _demo_run,
    ),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hec",
        description="Compile statistics written in the hec array language into "
        "homomorphic-encryption programs, and run them.",
    )
    parser.add_argument("--version", action="version", version=f"hec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.help)
        command.add_arguments(p)
        p.set_defaults(_run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help(sys.stderr)
        return 2
    from driver.interrupt import Interrupted, handling_signals

    try:
        if getattr(args, "profile", None):
            from compiler.analysis import profile

            profile.use(profile.resolve(args.profile))
        with handling_signals():
            return args._run(args)
    except UserError as err:
        print(err, file=sys.stderr)
        return 1
    except OSError as err:
        # A failure of the environment no check before the work could foresee (a disk that
        # fills during the run, a file-size limit, a directory removed under us): one line
        # naming the file; the run's temporary files were removed as the exception unwound.
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return 1
    except (Interrupted, KeyboardInterrupt) as err:
        # One line, no traceback; the run's children were stopped and its temporary keys,
        # plaintexts and ciphertexts removed while the exception unwound.
        name = err.name if isinstance(err, Interrupted) else "SIGINT"
        print(
            f"hec: interrupted by {name}: stopped; temporary keys, inputs and ciphertexts removed",
            file=sys.stderr,
        )
        return err.exit_code if isinstance(err, Interrupted) else 130
