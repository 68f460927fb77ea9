"""Registries declared in the experiment layer and given their behaviour above it (the layering
test forbids the other way round): each declared name has its behaviour, each behaviour a
declaration, in the declarations' order. One case per name, so a new entry missing its other
half fails by name."""

from __future__ import annotations

import pytest

from tuner.study.experiment.objective_kinds import OBJECTIVE_KINDS
from tuner.study.experiment.pruner_kinds import PRUNER_KINDS
from tuner.study.scoring.objectives import OBJECTIVE_VALUES
from tuner.study.stopping import PRUNER_BUILDERS

# (what, declarations and their file, behaviours and their name)
PAIRS = [
    ("objective", OBJECTIVE_KINDS, "tuner/study/experiment/objective_kinds.py", OBJECTIVE_VALUES, "OBJECTIVE_VALUES"),
    ("pruner", PRUNER_KINDS, "tuner/study/experiment/pruner_kinds.py", PRUNER_BUILDERS, "PRUNER_BUILDERS"),
]
DECLARED = [(pair, name) for pair in PAIRS for name in pair[1]]
BEHAVING = [(pair, name) for pair in PAIRS for name in pair[3]]


@pytest.mark.parametrize(("pair", "name"), DECLARED, ids=[f"{p[0]}-{n}" for p, n in DECLARED])
def test_every_declared_name_has_its_behaviour(pair: tuple, name: str) -> None:
    what, _, declared_in, behaviours, behaviours_name = pair
    assert name in behaviours, f"{what} {name!r} is declared ({declared_in}) but has no entry in {behaviours_name}"


@pytest.mark.parametrize(("pair", "name"), BEHAVING, ids=[f"{p[0]}-{n}" for p, n in BEHAVING])
def test_every_behaviour_has_a_declaration_in_its_order(pair: tuple, name: str) -> None:
    what, declarations, declared_in, behaviours, behaviours_name = pair
    assert name in declarations, f"{what} {name!r} has an entry in {behaviours_name} but no declaration in {declared_in}"
    assert list(behaviours) == list(declarations)  # in the declarations' order
