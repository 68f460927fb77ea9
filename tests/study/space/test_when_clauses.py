"""The shipped search spaces condition an optimizer's values, and a schedule's, only on the
optimizers and schedules that take them, as their registries declare (tuner/train/optimizer_registry.py,
tuner/train/schedule_registry.py): a value searched for an optimizer that ignores it is noise."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from tuner.study.experiment.strict_yaml import load_yaml
from tuner.study.run.experiment_file import load_experiment
from tuner.study.space.space import SearchSpace, parse_space
from tuner.train.optimizer_registry import OPTIMIZER_KINDS, OptimizerKind
from tuner.train.schedule_registry import SCHEDULE_KINDS

TAKES: dict[str, Callable[[OptimizerKind], bool]] = {
    "beta1": lambda k: k.betas,
    "beta2": lambda k: k.betas,
    "amsgrad": lambda k: k.amsgrad,
    "weight_decay": lambda k: k.decay is not None,
    **{own: (lambda k, own=own: own in k.own) for kind in OPTIMIZER_KINDS.values() for own in kind.own},
}
SCHEDULE_READS = {name for kind in SCHEDULE_KINDS.values() for name in kind.reads}
SPACES = [REPO_ROOT / "search_spaces" / "default.yaml", *sorted((REPO_ROOT / "experiments").glob("*.yaml"))]


def space_of(path: Path) -> SearchSpace:
    if path.parent.name == "search_spaces":
        return parse_space(load_yaml(path), str(path))
    return load_experiment(path).search_space


def misplaced(space: SearchSpace) -> list[str]:
    """Each value conditioned on an optimizer or a schedule that does not take it."""
    wrong = []
    for name, spec in space.dims.items():
        wrong += [
            f"{name} when optimizer {o}" for o in spec.when.get("optimizer", ()) if name in TAKES and not TAKES[name](OPTIMIZER_KINDS[o])
        ]
        wrong += [
            f"{name} when schedule {s}"
            for s in spec.when.get("schedule", ())
            if name in SCHEDULE_READS and name not in SCHEDULE_KINDS[s].reads
        ]
    return wrong


@pytest.mark.parametrize("path", SPACES, ids=lambda p: p.name)
def test_a_shipped_space_conditions_values_only_on_what_takes_them(path: Path) -> None:
    assert misplaced(space_of(path)) == []


def test_a_value_conditioned_on_an_optimizer_that_ignores_it_is_found() -> None:
    raw = {
        "optimizer": {"choices": ["adam", "nadam", "muon"]},
        "amsgrad": {"choices": [False, True], "when": {"optimizer": ["adam", "nadam"]}},
        "muon_momentum": {"low": 0.85, "high": 0.98, "when": {"optimizer": ["muon"]}},
        "schedule": {"choices": ["constant", "warmup_cosine"]},
        "warmup_frac": {"low": 0.0, "high": 0.3, "when": {"schedule": ["constant", "warmup_cosine"]}},
    }
    assert misplaced(parse_space(raw, "space.yaml")) == ["amsgrad when optimizer nadam", "warmup_frac when schedule constant"]
