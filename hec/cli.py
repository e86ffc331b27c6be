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
from dataclasses import dataclass

from compiler.errors import UserError
from hec import __version__
from hec.environment import cpu_features, runtime_build_dir


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
    for dist in ("lark", "xdsl", "numpy", "scipy", "bed-reader"):
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
    _file_argument(parser)
    parser.add_argument(
        "--generic", action="store_true", help="print the generic MLIR form of every op"
    )


def _ir_run(args: argparse.Namespace) -> int:
    from dsl.checker import check
    from dsl.lower import lower, print_ir
    from dsl.parser import parse_file

    module = lower(check(parse_file(args.file)))
    sys.stdout.write(print_ir(module, generic=args.generic))
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
    Command("ir", "print a program's stat IR (MLIR text)", _ir_arguments, _ir_run),
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
    try:
        return args._run(args)
    except UserError as err:
        print(err, file=sys.stderr)
        return 1
