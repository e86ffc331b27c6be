"""The Python import graph follows DESIGN.md §2: compiler at the bottom; dsl, passes and
targets above it (not importing each other); the pipeline driver (hec/pipeline.py) above them;
the applications (gwas/) above the driver; the command line (hec/cli.py) on top. No cycles:
`hec` is split into its driver modules and its command line, and only the command line may
import an application."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["compiler", "dsl", "passes", "targets", "hec", "gwas"]
ALLOWED: dict[str, set[str]] = {
    "compiler": set(),
    "dsl": {"compiler"},
    "passes": {"compiler"},
    "targets": {"compiler"},
    "hec": {"compiler", "dsl", "passes", "targets"},
    "gwas": {"compiler", "dsl", "passes", "targets", "hec"},
}
# The command line sits above the applications.
COMMAND_LINE = {"hec/cli.py", "hec/__main__.py"}
COMMAND_LINE_ALLOWED = ALLOWED["hec"] | {"gwas"}
# Modules of hec an application may import (the driver), never the command line.
HEC_DRIVER = {"hec", "hec.pipeline", "hec.environment", "hec.run", "hec.interrupt"}


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
            allowed = COMMAND_LINE_ALLOWED if rel in COMMAND_LINE else ALLOWED[package]
            for imported in imported_packages(source) - {package}:
                if imported not in allowed:
                    violations.append(f"{rel} imports {imported}")
            if package != "hec":
                for module in imported_modules(source):
                    if module.split(".")[0] == "hec" and module not in HEC_DRIVER:
                        violations.append(f"{rel} imports {module} (above the driver)")
    assert not violations, "upward or sideways imports:\n" + "\n".join(violations)


def test_detects_an_upward_import(tmp_path: Path) -> None:
    # The checker itself must be able to fail.
    bad = tmp_path / "bad.py"
    bad.write_text("from hec.cli import main\nimport passes.x\n")
    assert imported_packages(bad) == {"hec", "passes"}
    assert "hec.cli" in imported_modules(bad) and "hec.cli" not in HEC_DRIVER
