"""The source passes ruff: its default rules and the 140-column line length (pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("tuner", "tests", "benchmarks", "examples", "docs")


def test_ruff_finds_nothing() -> None:
    try:
        import ruff  # noqa: F401  # installed by the dev extra
    except ImportError:
        pytest.skip("ruff is not installed (pip install -e .[dev])")
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", *CHECKED], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
