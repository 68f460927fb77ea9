"""Dimensions a task cannot use, removed from a search space with a note for each.

A whole family of dimensions (the built-in loop's levers, the DataLoader's settings) can be
meaningless for a task; tuner/study/space/levers.py and tuner/study/space/pipeline.py each
decide when, and this removes them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tuner.study.space.space import Fixed, SearchSpace


def without_dimensions(space: SearchSpace, names: Sequence[str], defaults: Mapping[str, Any], reason: str) -> tuple[SearchSpace, list[str]]:
    """The space without ``names``; one note per removed dimension that was not fixed at its default."""
    dims = {name: spec for name, spec in space.dims.items() if name not in names}
    # A value fixed at its default (as `tuner best` exports every dimension) goes without a word.
    noted = [name for name in names if not (isinstance(space.dims[name], Fixed) and space.dims[name].value == defaults[name])]
    return SearchSpace(dims, space.custom), [f"removed {name}: {reason}" for name in noted]
