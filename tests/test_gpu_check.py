"""benchmarks/gpu_check.py, the GPU acceptance check, without a GPU: its CPU rehearsal plans every
part, a misspelt part is refused, and the docs section it feeds says when no GPU results exist.
(The rehearsal itself, `--smoke`, trains for about 2 minutes: run by hand, not here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"
PARTS = ["machine", "tests", "default", "charlm", "levers", "workers"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False)


def test_the_rehearsal_plans_every_part_within_its_budget() -> None:
    smoke, gpu = run("--smoke", "--plan"), run("--plan")
    assert smoke.returncode == gpu.returncode == 0, smoke.stderr + gpu.stderr
    rehearsal, real = json.loads(smoke.stdout), json.loads(gpu.stdout)
    assert rehearsal["smoke"] is True and list(rehearsal["parts"]) == list(real["parts"]) == PARTS
    assert sum(p["budget_s"] for p in rehearsal["parts"].values()) <= 180  # a few minutes of CPU
    assert sum(p["budget_s"] for p in real["parts"].values()) <= 360  # six minutes on a GPU


def test_a_misspelt_part_is_refused_by_name() -> None:
    bad = run("--smoke", "--plan", "--parts", "tests,levrs")
    assert bad.returncode == 2 and "--parts: expected some of machine, tests" in bad.stderr and "got levrs" in bad.stderr


def test_the_docs_section_says_when_no_gpu_results_exist(monkeypatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check_docs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert module.markdown(None).startswith("No results file from a GPU is committed yet")
    assert module.markdown({"smoke": True, "parts": {}}).startswith("No results file from a GPU")  # a rehearsal is no result
