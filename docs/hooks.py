"""MkDocs hook: writes the generated reference into pages at build time (mkdocs.yml `hooks:`).

A page holds a marker comment; the build replaces it with tables read from the code
(tuner/docs_reference.py), so the experiment-file reference cannot drift from the loader.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from tuner.docs_reference import (
    compile_modes_markdown,
    dimensions_markdown,
    keys_markdown,
    optimizers_markdown,
    precisions_markdown,
    pruners_markdown,
    schedules_markdown,
)

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def gpu_check_markdown() -> str:
    """The GPU section of docs/benchmarks.md, from benchmarks/results/gpu_check.json (benchmarks/gpu_check.py)."""
    spec = importlib.util.spec_from_file_location("gpu_check", BENCHMARKS / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the script's work is behind `if __name__ == "__main__"`
    results = BENCHMARKS / "results" / "gpu_check.json"
    return module.markdown(json.loads(results.read_text()) if results.exists() else None)


MARKERS = {
    "<!-- generated: experiment keys -->": keys_markdown,
    "<!-- generated: search dimensions -->": dimensions_markdown,
    "<!-- generated: optimizers -->": optimizers_markdown,
    "<!-- generated: schedules -->": schedules_markdown,
    "<!-- generated: precisions -->": precisions_markdown,
    "<!-- generated: compile modes -->": compile_modes_markdown,
    "<!-- generated: pruners -->": pruners_markdown,
    "<!-- generated: gpu check -->": gpu_check_markdown,
}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each marker with its generated Markdown."""
    for marker, generate in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
