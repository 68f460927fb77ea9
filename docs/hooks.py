"""MkDocs hook: writes the GPU section of docs/benchmarks.md at build time (mkdocs.yml `hooks:`).

The lists of optimizers, schedules, precisions, compile modes, pruners, dimensions and
experiment keys are not made here: they are written into the pages themselves
(tuner/docs_tables.py), so the site shows what the repository's files hold, and a test fails
when one of them is stale. The GPU section is a benchmark's latest result, read from its
JSON file, and is filled in only on the site.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def gpu_check_markdown() -> str:
    """The GPU section of docs/benchmarks.md, from benchmarks/results/gpu_check.json (benchmarks/gpu_check.py)."""
    spec = importlib.util.spec_from_file_location("gpu_check", BENCHMARKS / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the script's work is behind `if __name__ == "__main__"`
    results = BENCHMARKS / "results" / "gpu_check.json"
    return module.markdown(json.loads(results.read_text()) if results.exists() else None)


MARKERS = {"<!-- generated: gpu check -->": gpu_check_markdown}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each marker with its generated Markdown."""
    for marker, generate in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
