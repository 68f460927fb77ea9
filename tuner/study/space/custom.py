"""Search-space dimensions of the task's own (dropout, depth, ...): their types, and the
check that each is a hyperparameter the task takes (tuner/tasks/hyperparameters.py).

A name the trainer does not know is parsed like any dimension, its value type read from
the spec (``choices: [1, 2]`` is an int, ``low: 0.0`` a float). The names are then checked
against what the task accepts: at load when that is known without building anything (a
built-in task, a training function of one's own), else when the run prepares its task,
before anything is written. A misspelt name is refused with the closest accepted one.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from tuner.errors import ConfigError
from tuner.tasks.hyperparameters import kind_of_default
from tuner.train.trial_config import DIMENSIONS, Dimension


class Given(str):
    """A given name that prints with a suggestion in a ConfigError ("got 'dropuot' (did you
    mean 'dropout'?)") and still equals the name itself."""

    suggestion: str | None = None

    def __repr__(self) -> str:
        return str.__repr__(self) + (f" (did you mean {self.suggestion!r}?)" if self.suggestion else "")


def unknown_name(source: str, key: str, name: Any, accepted: Mapping[str, Any] | None) -> ConfigError:
    """The error for a name that is neither a built-in dimension nor one the task takes."""
    names = list(accepted or ())
    known = "a dimension (one of " + ", ".join(DIMENSIONS) + ")"
    if accepted is not None:
        known += " or a hyperparameter the task takes (" + (", ".join(names) or "none: its build_model takes only the width") + ")"
    close = difflib.get_close_matches(str(name), [*DIMENSIONS, *names], n=1)
    given: Any = name
    if isinstance(name, str) and close:
        given = Given(name)
        given.suggestion = close[0]
    return ConfigError(source, key, known, given)


def custom_dimension(name: str, body: Any, accepted: Mapping[str, Any] | None, source: str, key: str) -> Dimension:
    """The dimension of a name the trainer does not know: typed by the task's default when
    the task gives one (a float default widens an int spec), else by the spec's values."""
    default = accepted.get(name) if accepted is not None else None
    wanted = kind_of_default(default)
    inferred = _spec_kind(body)
    if wanted is not None:
        return Dimension(name, wanted)
    if inferred is None:
        raise ConfigError(source, key, "values of one type (numbers, strings or true/false) for a hyperparameter of the task's", body)
    return Dimension(name, inferred)


def _spec_kind(body: Any) -> type | None:
    if isinstance(body, dict):
        values = list(body["choices"]) if isinstance(body.get("choices"), list) else []
        values += [body[k] for k in ("value", "low", "high") if k in body]
    else:
        values = [body]
    kinds = {type(v) for v in values}
    for kind, allowed in ((bool, {bool}), (int, {int}), (float, {int, float}), (str, {str})):
        if kinds and kinds <= allowed:
            return kind
    return None
