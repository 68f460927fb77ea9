"""No code in the package starts a process of its own through the command line: a `tuner` command
line (``python -m tuner worker ...``, ``["tuner", "run", ...]``) built to start a process would be a
loop from the library back into the CLI, invisible to the import graph (tests/test_layers.py). The
worker processes of `tuner run --workers N` run a module of the orchestrator and get their options
serialized (tuner/orchestrate/processes.py).

Read from the source: every list or tuple literal of strings, and every call that starts a process.
Strings shown to people ("Run: python -m tuner run ...") are neither.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tuner"
STARTERS = {"Popen", "run", "call", "check_call", "check_output", "system", "spawnv", "execv", "execvp", "which"}


def _strings(node: ast.AST) -> list[str | None]:
    return [e.value if isinstance(e, ast.Constant) and isinstance(e.value, str) else None for e in getattr(node, "elts", [])]


def _names_tuner(words: list[str | None]) -> bool:
    """``-m tuner`` or a ``tuner`` word first, as a command line spells the command."""
    return any(a == "-m" and b == "tuner" for a, b in itertools.pairwise(words)) or (bool(words) and words[0] == "tuner")


def command_lines(root: Path) -> list[str]:
    """``path:line`` of each place under ``root`` that builds a `tuner` command line or starts `tuner` by name."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            spelled = False
            if isinstance(node, (ast.List, ast.Tuple)):
                spelled = _names_tuner(_strings(node))
            elif isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                first = node.args[0] if node.args else None
                text = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
                spelled = name in STARTERS and text is not None and (text == "tuner" or text.split()[:1] == ["tuner"] or "-m tuner" in text)
            if spelled:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno}")
    return found


def test_no_code_builds_a_tuner_command_line_to_start_a_process() -> None:
    found = command_lines(PACKAGE)
    assert not found, f"a `tuner` command line built to start a process (pass options to tuner/orchestrate/ instead): {found}"


def test_a_planted_command_line_is_found(tmp_path: Path) -> None:
    root = tmp_path / "tuner"
    root.mkdir()
    (root / "workers.py").write_text(
        textwrap.dedent(
            """
            import subprocess, shutil, sys
            cmd = [sys.executable, "-m", "tuner", "worker", "e.yaml"]
            subprocess.Popen(["tuner", "run", "e.yaml"])
            shutil.which("tuner")
            subprocess.run("python -m tuner run e.yaml", shell=True)
            """
        )
    )
    (root / "fine.py").write_text(
        textwrap.dedent(
            """
            import subprocess, sys
            print("run the same command: python -m tuner run e.yaml")
            subprocess.Popen([sys.executable, "-m", "tuner.orchestrate.child"])
            NAMES = ("run", "tuner")
            """
        )
    )
    assert sorted(command_lines(root)) == ["tuner/workers.py:3", "tuner/workers.py:4", "tuner/workers.py:5", "tuner/workers.py:6"]
