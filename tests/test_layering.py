"""The Python import graph follows DESIGN.md §2: compiler at the bottom; dsl, passes and
targets above it (not importing each other); the driver (driver/: pipeline, role sequence)
above them; the applications (gwas/) above the driver; the command line (hec/) on top. Nothing
below the command line imports it, and nothing below the applications imports gwas/."""

from __future__ import annotations

import ast
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


def test_detects_an_upward_import(tmp_path: Path) -> None:
    # The checker itself must be able to fail.
    bad = tmp_path / "bad.py"
    bad.write_text("from hec.cli import main\nimport passes.x\n")
    assert imported_packages(bad) == {"hec", "passes"}
    assert "hec" not in ALLOWED["gwas"] and "gwas" not in ALLOWED["driver"]
