"""The search space: dimensions parsed strictly from YAML, narrowed, and sampled by Optuna."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import optuna

from tuner.errors import ConfigError
from tuner.study.space.custom import custom_dimension, unknown_name
from tuner.train.trial_config import DIMENSIONS, Dimension

SPEC_KEYS = ("choices", "low", "high", "log", "step", "when")


@dataclass(frozen=True)
class Fixed:
    value: Any
    when: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Choice:
    choices: tuple[Any, ...]
    when: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    log: bool = False
    step: float | None = None
    when: dict[str, tuple[Any, ...]] = field(default_factory=dict)


Spec = Fixed | Choice | Range


@dataclass(frozen=True)
class SearchSpace:
    """Dimensions in sampling order; a dimension absent here keeps its default value.

    ``custom`` holds the dimensions of the task's own (tuner/study/space/custom.py), by name.
    """

    dims: dict[str, Spec]
    custom: dict[str, Dimension] = field(default_factory=dict)

    def dimension(self, name: str) -> Dimension:
        return DIMENSIONS[name] if name in DIMENSIONS else self.custom[name]

    def for_task(self, accepted: Mapping[str, Any], source: str) -> SearchSpace:
        """This space with its custom dimensions checked against the hyperparameters the task
        takes (name -> default) and typed by their defaults; ConfigError otherwise."""
        return parse_space(self.to_yaml_dict(), source, accepted=accepted) if self.custom else self

    def sample(self, trial: optuna.Trial) -> dict[str, Any]:
        """Suggest every active dimension; fixed ones are returned but not suggested."""
        params: dict[str, Any] = {}
        for name, spec in self.dims.items():
            if not _active(spec.when, params):
                continue
            if isinstance(spec, Fixed):
                params[name] = spec.value
            elif isinstance(spec, Choice):
                params[name] = trial.suggest_categorical(name, list(spec.choices))
            elif self.dimension(name).kind is int:
                step = int(spec.step) if spec.step else 1
                params[name] = trial.suggest_int(name, int(spec.low), int(spec.high), step=step, log=spec.log)
            else:
                params[name] = trial.suggest_float(name, spec.low, spec.high, step=spec.step, log=spec.log)
        return params

    def fixed_params(self) -> dict[str, Any] | None:
        """The parameters when every active dimension is fixed, else None."""
        params: dict[str, Any] = {}
        for name, spec in self.dims.items():
            if not _active(spec.when, params):
                continue
            if not isinstance(spec, Fixed):
                return None
            params[name] = spec.value
        return params

    def without_values(self, dim: str, values: dict[Any, str], source: str) -> tuple[SearchSpace, list[str]]:
        """Drop choices the hardware cannot run; returns the narrowed space and one note per drop."""
        spec = self.dims.get(dim)
        notes: list[str] = []
        if spec is None:
            return self, notes
        if isinstance(spec, Fixed):
            if spec.value in values:
                raise ConfigError(source, f"search_space.{dim}", "a value this machine can run", f"{spec.value} ({values[spec.value]})")
            return self, notes
        if isinstance(spec, Range):
            return self, notes
        kept = tuple(c for c in spec.choices if c not in values)
        for c in spec.choices:
            if c in values:
                notes.append(f"removed {dim}={c}: {values[c]}")
        if not kept:
            raise ConfigError(source, f"search_space.{dim}", "at least one choice this machine can run", list(spec.choices))
        dims = dict(self.dims)
        dims[dim] = Fixed(kept[0], spec.when) if len(kept) == 1 else Choice(kept, spec.when)
        return SearchSpace(dims, self.custom), notes

    def to_yaml_dict(self) -> dict[str, Any]:
        return {name: spec.value if isinstance(spec, Fixed) and not spec.when else spec_to_dict(spec) for name, spec in self.dims.items()}


def spec_to_dict(spec: Spec) -> dict[str, Any]:
    if isinstance(spec, Fixed):
        out: dict[str, Any] = {"value": spec.value}
    elif isinstance(spec, Choice):
        out = {"choices": list(spec.choices)}
    else:
        out = {"low": spec.low, "high": spec.high}
        if spec.log:
            out["log"] = True
        if spec.step is not None:
            out["step"] = spec.step
    if spec.when:
        out["when"] = {k: list(v) for k, v in spec.when.items()}
    return out


def _active(when: dict[str, tuple[Any, ...]], params: dict[str, Any]) -> bool:
    return all(params.get(dim, _MISSING) in values for dim, values in when.items())


_MISSING = object()


def parse_space(raw: Any, source: str, prefix: str = "search_space", accepted: Mapping[str, Any] | None = None) -> SearchSpace:
    """Parse a mapping of dimension name -> spec (a scalar fixes the dimension).

    A name the trainer does not know is a hyperparameter of the task's: ``accepted`` holds
    the names (and defaults) the task takes, or is None while that is not yet known (a
    task function not yet built; tuner/study/space/custom.py checks it later).
    """
    if not isinstance(raw, dict):
        raise ConfigError(source, prefix, "a mapping of dimension name to spec", raw)
    dims: dict[str, Spec] = {}
    custom: dict[str, Dimension] = {}
    for name, body in raw.items():
        key = f"{prefix}.{name}"
        if name in DIMENSIONS:
            dim = DIMENSIONS[name]
        elif not isinstance(name, str) or not name.isidentifier() or (accepted is not None and name not in accepted):
            raise unknown_name(source, key, name, accepted)
        else:
            dim = custom[name] = custom_dimension(name, body, accepted, source, key)
        spec = parse_spec(dim, body, source, key, custom)
        _check_when(spec.when, dims, source, key)
        dims[name] = spec
    return SearchSpace(dims, custom)


def parse_spec(dim: Dimension, body: Any, source: str, key: str, custom: Mapping[str, Dimension] | None = None) -> Spec:
    if not isinstance(body, dict):
        return Fixed(_value(dim, body, source, key))
    unknown = [k for k in body if k not in SPEC_KEYS and k != "value"]
    if unknown:
        raise ConfigError(source, f"{key}.{unknown[0]}", "one of value, " + ", ".join(SPEC_KEYS), unknown[0])
    when = _parse_when(body.get("when", {}), source, f"{key}.when", custom or {})
    if "value" in body:
        return Fixed(_value(dim, body["value"], source, f"{key}.value"), when)
    if "choices" in body:
        choices = body["choices"]
        if not isinstance(choices, list) or not choices:
            raise ConfigError(source, f"{key}.choices", "a non-empty list", choices)
        values = tuple(_value(dim, c, source, f"{key}.choices[{i}]") for i, c in enumerate(choices))
        return Choice(values, when)
    if dim.kind in (str, bool):
        raise ConfigError(source, key, "a value or choices: [...] (" + dim.describe() + ")", body)
    for bound in ("low", "high"):
        if bound not in body:
            raise ConfigError(source, f"{key}.{bound}", f"a {bound} bound ({dim.describe()})", None)
    low = _value(dim, body["low"], source, f"{key}.low")
    high = _value(dim, body["high"], source, f"{key}.high")
    log = body.get("log", False)
    if not isinstance(log, bool):
        raise ConfigError(source, f"{key}.log", "true or false", log)
    step = body.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, (int, float)) or step <= 0 or not _finite(step)):
        raise ConfigError(source, f"{key}.step", "a finite number > 0", step)
    if low >= high:
        raise ConfigError(source, key, "low < high", f"low={low} high={high}")
    if log and low <= 0:
        raise ConfigError(source, f"{key}.low", "> 0 on a log scale", low)
    if log and step is not None:
        raise ConfigError(source, f"{key}.step", "no step on a log scale", step)
    return Range(low, high, log, step, when)


def _value(dim: Dimension, value: Any, source: str, key: str) -> Any:
    if dim.kind is float and isinstance(value, str):
        # YAML 1.1 reads 1e-3 (no dot) as a string; accept it as the number it plainly is.
        try:
            value = float(value)
        except ValueError:
            pass
    if dim.kind in (int, float) and isinstance(value, (int, float)) and not isinstance(value, bool) and not _finite(value):
        # .nan passes every comparison in Dimension.accepts, and .inf every lower bound.
        raise ConfigError(source, key, f"a finite number ({dim.describe()})", value)
    if not dim.accepts(value):
        raise ConfigError(source, key, dim.describe(), value)
    return dim.cast(value)


def _finite(number: float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer past a float's range, which printing or sampling it would meet
        return False


def _parse_when(raw: Any, source: str, key: str, custom: Mapping[str, Dimension]) -> dict[str, tuple[Any, ...]]:
    if not isinstance(raw, dict):
        raise ConfigError(source, key, "a mapping of dimension to allowed values", raw)
    when: dict[str, tuple[Any, ...]] = {}
    for dim_name, values in raw.items():
        if dim_name not in DIMENSIONS and dim_name not in custom:
            raise ConfigError(source, f"{key}.{dim_name}", "a dimension (one of " + ", ".join(DIMENSIONS) + ")", dim_name)
        values = values if isinstance(values, list) else [values]
        dim = DIMENSIONS.get(dim_name) or custom[dim_name]
        when[dim_name] = tuple(_value(dim, v, source, f"{key}.{dim_name}") for v in values)
    return when


def _check_when(when: dict[str, tuple[Any, ...]], earlier: dict[str, Spec], source: str, key: str) -> None:
    for dim_name in when:
        if dim_name not in earlier:
            raise ConfigError(source, f"{key}.when.{dim_name}", "a dimension listed earlier in the space", dim_name)


def apply_overrides(space: SearchSpace, override: Any, remove: Any, source: str, accepted: Mapping[str, Any] | None = None) -> SearchSpace:
    """Fix, narrow, add or remove dimensions from an experiment file (``accepted`` as in parse_space)."""
    dims = dict(space.dims)
    custom = dict(space.custom)
    if not isinstance(remove, list):
        raise ConfigError(source, "search_space.remove", "a list of dimension names", remove)
    for i, name in enumerate(remove):
        if name not in dims:
            raise ConfigError(source, f"search_space.remove[{i}]", "a dimension of the space (" + ", ".join(dims) + ")", name)
        del dims[name]
    if not isinstance(override, dict):
        raise ConfigError(source, "search_space.override", "a mapping of dimension name to spec", override)
    for name, body in override.items():
        key = f"search_space.override.{name}"
        if name not in DIMENSIONS and name not in custom:
            if not isinstance(name, str) or not name.isidentifier() or (accepted is not None and name not in accepted):
                raise unknown_name(source, key, name, accepted)
            custom[name] = custom_dimension(name, body, accepted, source, key)
        base = dims.get(name)
        if isinstance(body, dict) and base is not None:
            kept = spec_to_dict(base) if not _switches_kind(base, body) else {"when": spec_to_dict(base).get("when", {})}
            body = {**kept, **body}
        spec = parse_spec(DIMENSIONS.get(name) or custom[name], body, source, key, custom)
        if not isinstance(body, dict) and base is not None:
            spec = replace(spec, when=base.when)
        dims[name] = spec
    # Re-parse to check conditions still point at earlier, present dimensions.
    return parse_space(SearchSpace(dims).to_yaml_dict(), source, accepted=accepted)


def _switches_kind(base: Spec, body: dict[str, Any]) -> bool:
    new_kind = "value" if "value" in body else "choices" if "choices" in body else "range" if ("low" in body or "high" in body) else None
    old_kind = "value" if isinstance(base, Fixed) else "choices" if isinstance(base, Choice) else "range"
    return new_kind is not None and new_kind != old_kind
