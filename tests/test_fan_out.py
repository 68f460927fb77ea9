"""No module imports more than ``MAX_IMPORTS`` of the package's modules: a module that needs more
does several things, and is split by concept (as the study's runner was: tuner/study/run/).

Counted from the source as tests/test_layers.py reads it: every project module a file imports, at
any depth, lazy imports inside functions included.
"""

from __future__ import annotations

from test_layers import GRAPH

MAX_IMPORTS = 15


def test_no_module_imports_more_than_the_limit() -> None:
    over = {name: len(targets) for name, targets in GRAPH.items() if len(targets) > MAX_IMPORTS}
    assert not over, f"modules importing more than {MAX_IMPORTS} project modules (split them by concept): {over}"
