"""docs/screenshot_site.py end to end: a fresh Chromium profile shoots the built site's front page
and the experiment-file reference."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.e2e
@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (apt-get install chromium)")
@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="needs the docs extra: pip install -e '.[docs]'")
def test_the_site_screenshot_script_shoots_both_pages(tmp_path: Path) -> None:
    front, reference = tmp_path / "front.png", tmp_path / "reference.png"
    result = subprocess.run(
        [sys.executable, str(REPO_ROOT / "docs" / "screenshot_site.py"), "--output", str(front), "--reference-output", str(reference)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for png in (front, reference):
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 50_000  # a drawn page, not a blank one
