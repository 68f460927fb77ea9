"""The package's layers, read from its source: no import cycles, train/ below the study,
tracking and nightly layers, and mlflow imported only inside track/ (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tuner"
UPPER_LAYERS = ("tuner.study", "tuner.track", "tuner.nightly", "tuner.cli", "tuner.api")
MAX_LINES = 330  # "about 300": a module past this should be split by concept


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> set[str]:
    """Every module this file imports, at any depth (lazy imports inside functions count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                # `from tuner.train import devices` imports the module tuner.train.devices
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
    return found


GRAPH = {name: {m for m in imports(path) if m in MODULES and m != name} for name, path in MODULES.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state and (cycle := visit(name)):
            return cycle
    return None


def test_the_source_is_read() -> None:
    assert "tuner.train.loop" in MODULES and "tuner.study.run.runner" in MODULES
    assert "tuner.train.time_to_target" in GRAPH["tuner.train.loop"]


def test_no_import_cycles() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_train_imports_no_upper_layer() -> None:
    bad = {
        f"{name} imports {target}"
        for name, targets in GRAPH.items() if name.startswith("tuner.train")
        for target in targets if target.startswith(UPPER_LAYERS)
    }
    assert not bad, sorted(bad)


def test_only_track_imports_mlflow() -> None:
    bad = [name for name, path in MODULES.items() if not name.startswith("tuner.track")
           and any(m == "mlflow" or m.startswith("mlflow.") for m in imports(path))]
    assert not bad, f"mlflow imported outside tuner/track/: {bad}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name]} has {lines} lines"


def test_a_planted_cycle_is_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
