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
