"""The Python import graph follows DESIGN.md §2: compiler at the bottom; dsl, passes and
targets above it (not importing each other); the driver (driver/: pipeline, role sequence)
above them; the applications (gwas/) above the driver; the command line (hec/) on top. Nothing
below the command line imports it, and nothing below the applications imports gwas/. Outside
the packages, only the tests and the benchmarks may import gwas/: the command line (hec/) is
its one importer among the shipped code (scripts, examples, runtime helpers included)."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["compiler", "dsl", "passes", "targets", "driver", "gwas", "hec"]
ALLOWED: dict[str, set[str]] = {
    "compiler": set(),
    "dsl": {"compiler"},
    "passes": {"compiler"},
    "targets": {"compiler"},
    "driver": {"compiler", "dsl", "passes", "targets"},
    "gwas": {"compiler", "dsl", "passes", "targets", "driver"},
    "hec": {"compiler", "dsl", "passes", "targets", "driver", "gwas"},
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


def imported_packages(path: Path) -> set[str]:
    return {m.split(".")[0] for m in imported_modules(path)} & set(PACKAGES)


def test_every_package_imports_only_downward() -> None:
    violations = []
    for package in PACKAGES:
        for source in sorted((ROOT / package).rglob("*.py")):
            rel = source.relative_to(ROOT).as_posix()
            for imported in imported_packages(source) - {package}:
                if imported not in ALLOWED[package]:
                    violations.append(f"{rel} imports {imported}")
    assert not violations, "upward or sideways imports:\n" + "\n".join(violations)


# Where gwas/ may be imported from besides the command line: its own modules, the tests and the
# benchmarks (which drive it as a user would).
GWAS_IMPORTERS = ("gwas/", "hec/", "tests/", "bench/")


def tracked_python_files() -> list[Path]:
    """Every Python file of the repository (tracked by git, or the working tree's when the
    checkout is not a git repository)."""
    done = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.py"], capture_output=True, text=True, check=False
    )
    if done.returncode == 0 and done.stdout.strip():
        return [ROOT / line for line in done.stdout.splitlines() if (ROOT / line).is_file()]
    return [p for p in ROOT.rglob("*.py") if ".venv" not in p.parts and "build" not in p.parts]


def test_only_the_command_line_imports_gwas() -> None:
    importers = []
    for source in tracked_python_files():
        rel = source.relative_to(ROOT).as_posix()
        if "gwas" in imported_packages(source) and not rel.startswith(GWAS_IMPORTERS):
            importers.append(rel)
    assert not importers, "gwas/ imported outside the command line:\n" + "\n".join(importers)


def test_detects_an_upward_import(tmp_path: Path) -> None:
    # The checker itself must be able to fail.
    bad = tmp_path / "bad.py"
    bad.write_text("from hec.cli import main\nimport passes.x\n")
    assert imported_packages(bad) == {"hec", "passes"}
    assert "hec" not in ALLOWED["gwas"] and "gwas" not in ALLOWED["driver"]


# The compiler's layers (issue 18): stat -> the HE layer -> {ckks, bfv}; the bool dialect of
# integer programs' circuits (issue 23) beside them. A module of a layer imports nothing of a
# layer beside or above it.
DIALECTS = {
    "stat": "compiler.dialects.stat",
    "he": "compiler.dialects.he",
    "ckks": "compiler.dialects.ckks",
    "bfv": "compiler.dialects.bfv",
    "bool": "compiler.dialects.boolean",
}
LAYER_OF = {
    # the dialects themselves
    "compiler/dialects/stat.py": "stat",
    "compiler/dialects/he.py": "he",
    "compiler/dialects/ckks.py": "ckks",
    "compiler/dialects/bfv.py": "bfv",
    "compiler/dialects/boolean.py": "bool",
    "compiler/circuits/bool_conversion.py": "bool",
    # passes on stat and on the HE layer: no scheme
    "passes/range_analysis.py": "stat",
    "passes/owner_side.py": "stat",
    "passes/packed_counts.py": "stat",
    "passes/depth_minimization.py": "stat",
    "passes/lower_stat_to_he.py": "he",
    "passes/lazy_relinearization.py": "he",
    # the scheme lowerings and passes: their own scheme only
    "passes/lower_he_to_ckks.py": "ckks",
    "passes/rescale_placement.py": "ckks",
    "passes/scale_management.py": "ckks",
    "passes/parameter_selection.py": "ckks",
    "passes/complex_packing.py": "ckks",
    "passes/lower_he_to_bfv.py": "bfv",
    "passes/bfv_parameters.py": "bfv",
    "compiler/analysis/bfv_noise.py": "he",
    "targets/sim/bfv_sim.py": "bfv",
}
MAY_IMPORT = {
    "stat": {"stat"},
    "he": {"stat", "he"},
    "ckks": {"stat", "he", "ckks"},
    "bfv": {"stat", "he", "bfv"},
    "bool": {"bool"},
}
SCHEME_MODULES = {"compiler.analysis.ckks_util": "ckks"}


def _dialect_imports(path: Path) -> set[str]:
    found: set[str] = set()
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "compiler.dialects":
            by_module = {module.rsplit(".", 1)[1]: layer for layer, module in DIALECTS.items()}
            found.update(by_module[a.name] for a in node.names if a.name in by_module)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for layer, module in DIALECTS.items():
                if node.module == module:
                    found.add(layer)
            if node.module in SCHEME_MODULES:
                found.add(SCHEME_MODULES[node.module])
    return found


def test_the_compiler_layers_stat_he_then_one_scheme() -> None:
    violations = []
    for rel, layer in sorted(LAYER_OF.items()):
        for imported in sorted(_dialect_imports(ROOT / rel) - MAY_IMPORT[layer]):
            violations.append(f"{rel} ({layer} layer) imports the {imported} dialect")
    assert not violations, "\n".join(violations)


def test_the_layer_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from compiler.dialects import ckks, he\nfrom compiler.dialects.bfv import X\n")
    assert _dialect_imports(bad) == {"ckks", "he", "bfv"}
    bad.write_text("from compiler.dialects import boolean, stat\n")
    assert _dialect_imports(bad) == {"bool", "stat"}
