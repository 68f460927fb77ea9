"""Removing the dimensions a task cannot use (tuner/study/space/inapplicable.py)."""

from __future__ import annotations

from tuner.study.space.inapplicable import without_dimensions
from tuner.study.space.space import Choice, Fixed, Range, SearchSpace
from tuner.train.trial_config import Dimension


def test_removed_dimensions_get_a_note_unless_fixed_at_their_default() -> None:
    space = SearchSpace(
        {
            "lr": Range(1e-3, 1e-1, log=True),
            "cache": Choice((True, False)),
            "num_workers": Fixed(0),  # the default: removed without a word
            "pin_memory": Fixed(True),  # not the default: the user asked for it, so say it goes
        }
    )
    defaults = {"cache": False, "num_workers": 0, "pin_memory": False}
    narrowed, notes = without_dimensions(space, ["cache", "num_workers", "pin_memory"], defaults, "no loader")
    assert list(narrowed.dims) == ["lr"] and narrowed.dims["lr"] == space.dims["lr"]
    assert notes == ["removed cache: no loader", "removed pin_memory: no loader"]


def test_the_task_dimensions_travel_with_the_narrowed_space() -> None:
    space = SearchSpace({"width": Choice((16, 32)), "compile": Fixed(True)}, custom={"width": Dimension("width", int, minimum=1)})
    narrowed, notes = without_dimensions(space, ["compile"], {"compile": False}, "own loop")
    assert narrowed.custom == space.custom and list(narrowed.dims) == ["width"] and notes == ["removed compile: own loop"]
