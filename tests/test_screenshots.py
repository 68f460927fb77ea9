"""docs/screenshot_mlflow_ui.py end to end: a fresh Chromium profile shoots the UI and the report."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT, synthetic_experiment

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.e2e
@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)")
def test_screenshot_script_shoots_the_ui_and_the_report(tmp_path: Path) -> None:
    exp = synthetic_experiment(tmp_path / "shot.yaml", "confirm:\n  after_search: true\n  top_k: 1\n  seeds: 2\n", n_trials=3)
    ui_png, report_png = tmp_path / "ui.png", tmp_path / "report.png"
    result = subprocess.run(
        [
            sys.executable,
            str(REPO_ROOT / "docs" / "screenshot_mlflow_ui.py"),
            "--experiment",
            str(exp),
            "--n-trials",
            "3",
            "--output",
            str(ui_png),
            "--report-output",
            str(report_png),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "workflowType=machine_learning" in result.stdout  # the address `tuner ui` printed was the one shot
    for png in (ui_png, report_png):
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000  # a drawn page, not a blank one
