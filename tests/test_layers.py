"""The package's layers, read from its source: no import cycles between modules or between packages,
the top-level packages in their declared layers (PACKAGE_LAYERS), tuner/study's sub-packages in their
declared order (STUDY_LAYERS), train/ below the study, the training step only in train/, and mlflow
imported only inside track/ (docs/architecture.md).

Each check is a function of a source tree, so the tests at the end plant what it must catch in a
temporary tree and read that with the same functions.
"""

from __future__ import annotations

import ast
import itertools
import textwrap
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tuner"
UPPER_LAYERS = ("tuner.study", "tuner.track", "tuner.nightly", "tuner.cli", "tuner.api")
MAX_LINES = 330  # "about 300": a module past this should be split by concept
# tuner/study's packages, bottom to top: each may import only those before it. "tuner.study" is
# its top-level modules (record, hooks, counts, ...) taken together.
STUDY_LAYERS = (
    "tuner.study.space",
    "tuner.study.experiment",
    "tuner.study",
    "tuner.study.scoring",
    "tuner.study.storage",
    "tuner.study.reruns",
    "tuner.study.stopping",
    "tuner.study.run",
)
TRAINING_PACKAGE = "tuner.train"  # the one place a backward pass and an optimizer step run
# The package's top-level packages and root modules, in layers from the bottom (docs/architecture.md
# draws them): each may import its own layer's and those below, never one above. Peers in a layer
# may import each other one way (package cycles are refused apart). "tuner" is the root
# ``__init__``, which re-exports the public API.
PACKAGE_LAYERS: tuple[tuple[str, ...], ...] = (
    ("tuner.redact", "tuner.errors", "tuner.signals", "tuner.environment", "tuner.process_group"),  # used by all
    ("tuner.tasks",),
    ("tuner.train",),
    ("tuner.study",),  # with its sub-packages, ordered by STUDY_LAYERS
    ("tuner.track",),  # the report's plots and figures for the study run are handed in (tuner/track/summary.py: StudyViews)
    ("tuner.report", "tuner.simulate", "tuner.compress", "tuner.docs_reference", "tuner.docs_tables"),
    ("tuner.nightly",),
    ("tuner.orchestrate", "tuner.api"),
    ("tuner.cli",),
    ("tuner.__main__", "tuner"),
)


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``, by its dotted name (a package by its ``__init__``)."""
    return {module_name(p, root): p for p in sorted(root.rglob("*.py"))}


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Every module this file imports, at any depth (lazy imports inside functions count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                # `from tuner.train import devices` imports the module tuner.train.devices
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in known else node.module)
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports."""
    return {name: {m for m in imports(path, modules) if m in modules and m != name} for name, path in modules.items()}


def package_of(module: str, modules: dict[str, Path]) -> str:
    """The package a module belongs to. The root's own modules (errors, api, ...) stand alone: the
    root ``__init__`` re-exports the public API, so as one node it would sit in every cycle."""
    if modules[module].name == "__init__.py":
        return module
    parent = module.rpartition(".")[0]
    return module if "." not in parent else parent


def package_graph(modules: dict[str, Path], graph: dict[str, set[str]]) -> dict[str, dict[str, str]]:
    """Package -> {imported package: one module import that makes the edge}."""
    packages: dict[str, dict[str, str]] = {package_of(name, modules): {} for name in modules}
    for name, targets in sorted(graph.items()):
        source = package_of(name, modules)
        for target in sorted(targets):
            if (dest := package_of(target, modules)) != source:
                packages[source].setdefault(dest, f"{name} imports {target}")
    return packages


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state and (cycle := visit(name)):
            return cycle
    return None


def package_cycle(packages: dict[str, dict[str, str]]) -> str | None:
    """A cycle between packages, with the module import behind each of its edges; None if none."""
    cycle = find_cycle({name: set(targets) for name, targets in packages.items()})
    if cycle is None:
        return None
    edges = [packages[a][b] for a, b in itertools.pairwise(cycle)]
    return " -> ".join(cycle) + " (" + "; ".join(edges) + ")"


def study_layer_errors(packages: dict[str, dict[str, str]], order: tuple[str, ...] = STUDY_LAYERS, top: str = "tuner.study") -> list[str]:
    """Packages of ``top`` missing from ``order``, and imports of a package at or above the importer in it."""
    study = sorted(p for p in packages if p == top or p.startswith(top + "."))
    unlisted = [f"{p} is a package of {top} that the declared layer order does not list" for p in study if p not in order]
    upward = [
        f"{source} imports {dest}, not below it in the layer order ({why})"
        for source in study
        if source in order
        for dest, why in sorted(packages[source].items())
        if dest in order and order.index(dest) >= order.index(source)
    ]
    return unlisted + upward


def top_level(package: str) -> str:
    """The top-level package or root module a package belongs to: ``tuner.study.run`` is in ``tuner.study``."""
    return ".".join(package.split(".")[:2])


def package_layer_errors(packages: dict[str, dict[str, str]], layers: tuple[tuple[str, ...], ...] = PACKAGE_LAYERS) -> list[str]:
    """Top-level packages missing from ``layers``, and imports of a package in a layer above the importer's."""
    layer_of = {name: i for i, layer in enumerate(layers) for name in layer}
    tops = sorted({top_level(p) for p in packages})
    unlisted = [f"{t} is a top-level package or module that the declared layer order does not list" for t in tops if t not in layer_of]
    upward = sorted(
        {
            f"{top_level(source)} imports {top_level(dest)}, in a layer above it ({why})"
            for source, targets in packages.items()
            for dest, why in targets.items()
            if top_level(source) in layer_of and top_level(dest) in layer_of and layer_of[top_level(dest)] > layer_of[top_level(source)]
        }
    )
    return unlisted + upward


def training_steps(modules: dict[str, Path], allowed: str = TRAINING_PACKAGE) -> list[str]:
    """Modules outside ``allowed`` that call both ``.backward(`` and ``.step(`` on something: a training step."""
    found = []
    for name, path in sorted(modules.items()):
        if name == allowed or name.startswith(allowed + "."):
            continue
        called = {
            node.func.attr
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        }
        if {"backward", "step"} <= called:
            found.append(name)
    return found


MODULES = read_modules(PACKAGE)
GRAPH = import_graph(MODULES)
PACKAGES = package_graph(MODULES, GRAPH)


def test_the_source_is_read() -> None:
    assert "tuner.train.loop" in MODULES and "tuner.study.run.runner" in MODULES
    assert "tuner.train.time_to_target" in GRAPH["tuner.train.loop"]
    assert "tuner.study.experiment" in PACKAGES["tuner.study.run"] and "tuner.errors" in PACKAGES["tuner.study.experiment"]
    assert package_of("tuner.study.record", MODULES) == "tuner.study" and package_of("tuner.errors", MODULES) == "tuner.errors"


def test_no_import_cycles() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_package_cycles() -> None:
    cycle = package_cycle(PACKAGES)
    assert cycle is None, "package cycle: " + str(cycle)


def test_study_packages_import_only_those_below() -> None:
    errors = study_layer_errors(PACKAGES)
    assert not errors, errors


def test_top_level_packages_import_only_their_layer_and_below() -> None:
    errors = package_layer_errors(PACKAGES)
    assert not errors, errors


def test_only_train_runs_a_training_step() -> None:
    found = training_steps(MODULES)
    assert not found, f"a backward pass and an optimizer step outside tuner/train/ (use its shared training step): {found}"


def test_train_imports_no_upper_layer() -> None:
    bad = {
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if name.startswith("tuner.train")
        for target in targets
        if target.startswith(UPPER_LAYERS)
    }
    assert not bad, sorted(bad)


def test_only_track_imports_mlflow() -> None:
    bad = [
        name
        for name, path in MODULES.items()
        if not name.startswith("tuner.track") and any(m == "mlflow" or m.startswith("mlflow.") for m in imports(path, MODULES))
    ]
    assert not bad, f"mlflow imported outside tuner/track/: {bad}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name: str) -> None:
    lines = len(MODULES[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{MODULES[name]} has {lines} lines"


def test_a_planted_cycle_is_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def plant(root: Path, files: dict[str, str]) -> dict[str, Path]:
    """A source tree ``tuner/`` under ``root`` with these files (and every ``__init__.py`` on their way), read back."""
    for relative, text in files.items():
        path = root / "tuner" / relative
        for folder in [path.parent, *path.parent.parents][: len(Path(relative).parts)]:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "__init__.py").touch()
        path.write_text(textwrap.dedent(text))
    return read_modules(root / "tuner")


def test_a_planted_package_cycle_is_found_where_modules_have_none(tmp_path: Path) -> None:
    modules = plant(
        tmp_path,
        {
            "errors.py": "",
            "track/runs.py": "from tuner.report import render\nfrom tuner.errors import ConfigError\n",
            "report/render.py": "from tuner.errors import ConfigError\n",
            "report/data.py": "def later():\n    from tuner.track.writer import queue\n",
            "track/writer.py": "",
        },
    )
    graph = import_graph(modules)
    assert find_cycle(graph) is None  # no module cycle: only the packages go round
    cycle = package_cycle(package_graph(modules, graph))
    assert cycle == (
        "tuner.report -> tuner.track -> tuner.report "
        "(tuner.report.data imports tuner.track.writer; tuner.track.runs imports tuner.report.render)"
    ), cycle
    (tmp_path / "tuner" / "report" / "data.py").write_text("")
    assert package_cycle(package_graph(modules, import_graph(modules))) is None
    # The root re-exports from track, and track uses the root's errors module: not a cycle.
    (tmp_path / "tuner" / "__init__.py").write_text("from tuner.track.runs import x\n")
    assert package_cycle(package_graph(modules, import_graph(modules))) is None


def test_a_planted_upward_import_in_the_study_is_found(tmp_path: Path) -> None:
    modules = plant(
        tmp_path,
        {
            "study/record.py": "from tuner.study.space import space\n",
            "study/space/space.py": "from tuner.errors import ConfigError\n",
            "study/run/runner.py": "from tuner.study.record import write\nfrom tuner.study.space.space import SearchSpace\n",
            "errors.py": "",
        },
    )
    assert study_layer_errors(package_graph(modules, import_graph(modules))) == []
    (tmp_path / "tuner" / "study" / "space" / "space.py").write_text("def lazy():\n    from tuner.study import record\n")
    errors = study_layer_errors(package_graph(modules, import_graph(modules)))
    assert errors == [
        ("tuner.study.space imports tuner.study, not below it in the layer order (tuner.study.space.space imports tuner.study.record)")
    ], errors


def test_a_study_package_the_order_does_not_list_is_reported(tmp_path: Path) -> None:
    modules = plant(tmp_path, {"study/space/space.py": "", "study/extras/more.py": "from tuner.study.space import space\n"})
    errors = study_layer_errors(package_graph(modules, import_graph(modules)))
    assert errors == ["tuner.study.extras is a package of tuner.study that the declared layer order does not list"], errors


def test_a_planted_training_step_outside_train_is_found(tmp_path: Path) -> None:
    step = """
        def tune(model, optimizer, loss_fn, x, y):
            loss_fn(model(x), y).backward()
            optimizer.step()
        """
    modules = plant(
        tmp_path,
        {
            "train/loop.py": step,
            "compress/finetune.py": step,
            "report/plots.py": "def draw(ax, x, y):\n    ax.step(x, y)\n",  # a step, no backward pass
            "study/grads.py": "def grads(loss):\n    loss.backward()\n",  # a backward pass, no step
        },
    )
    assert training_steps(modules) == ["tuner.compress.finetune"]


def test_a_planted_import_of_a_higher_layer_is_found(tmp_path: Path) -> None:
    modules = plant(
        tmp_path,
        {
            "errors.py": "",
            "train/loop.py": "from tuner.errors import ConfigError\n",
            "track/runs.py": "from tuner.report import render\n",  # a layer's own peer below it: allowed
            "report/render.py": "from tuner.train import loop\n",
        },
    )
    layers = (("tuner.errors",), ("tuner.train",), ("tuner.report",), ("tuner.track",), ("tuner",))
    assert package_layer_errors(package_graph(modules, import_graph(modules)), layers) == []
    (tmp_path / "tuner" / "train" / "loop.py").write_text("def later():\n    from tuner.track import runs\n")
    errors = package_layer_errors(package_graph(modules, import_graph(modules)), layers)
    assert errors == ["tuner.train imports tuner.track, in a layer above it (tuner.train.loop imports tuner.track.runs)"], errors
    errors = package_layer_errors(
        package_graph(modules, import_graph(modules)), (("tuner.errors",), ("tuner.train", "tuner.track"), ("tuner",))
    )
    assert errors == ["tuner.report is a top-level package or module that the declared layer order does not list"], errors
