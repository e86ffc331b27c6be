"""Shared pytest fixtures (paths of the repository, the examples and the runtime build) and the
hypothesis profiles: under CI=true the property tests are derandomized (the same examples on
every run, so a red build is reproducible), while local runs keep exploring new examples."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True)
if os.environ.get("CI", "").lower() == "true":
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


# Every test sees the shipped default cost profile (compiler/analysis/profile.py), never a
# profile `hec calibrate` stored for the user running them; the profile tests pass their own.
os.environ["HEC_PROFILE"] = "default"
