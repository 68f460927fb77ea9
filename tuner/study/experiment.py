"""Experiment files: strict YAML into typed objects, defaults in one place, flags on top."""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tuner.errors import ConfigError
from tuner.study.search_space import SearchSpace, apply_overrides, parse_space
from tuner.tasks.registry import BUILTIN_TASKS, check_task_name, check_task_options

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SPACE = REPO_ROOT / "search_spaces" / "default.yaml"
CLOCKS = ("robust", "train", "wall")
SAMPLERS = ("tpe", "random", "gp", "qmc")
PRUNERS = ("equal_time", "median", "percentile", "successive_halving", "hyperband", "wilcoxon", "none")
STORAGE_SCHEMES = ("sqlite", "postgresql", "mysql")


def _check(fn: typing.Callable[[Any], bool], allowed: str) -> dict[str, Any]:
    return {"check": fn, "allowed": allowed}


@dataclass(frozen=True)
class Objective:
    """What counts as reaching the goal, how often to look, and how long a trial may take."""

    target: float = field(default=0.9, metadata=_check(lambda v: 0 < v <= 1, "a number in (0, 1]"))
    eval_every_samples: int = field(default=2000, metadata=_check(lambda v: v > 0, "an integer > 0"))
    cap_s: float = field(default=20.0, metadata=_check(lambda v: v > 0, "a number of seconds > 0"))
    clock: str = field(default="robust", metadata=_check(lambda v: v in CLOCKS, "one of " + ", ".join(CLOCKS)))
    max_samples: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0"))


@dataclass(frozen=True)
class Sampler:
    """Which Optuna sampler proposes configurations."""

    name: str = field(default="tpe", metadata=_check(lambda v: v in SAMPLERS, "one of " + ", ".join(SAMPLERS)))
    n_startup_trials: int = field(default=8, metadata=_check(lambda v: v >= 0, "an integer >= 0"))


@dataclass(frozen=True)
class Budget:
    """When a study stops: a total number of finished trials, or wall time for this run."""

    n_trials: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0"))
    timeout_s: float | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "a number of seconds > 0"))


@dataclass(frozen=True)
class Trainer:
    """How trials use the machine."""

    device: str = field(default="auto", metadata=_check(lambda v: v in ("auto", "cpu") or v.startswith("cuda"), "auto, cpu, cuda or cuda:N"))
    threads: int | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "an integer > 0 (default: all cores)"))


@dataclass(frozen=True)
class Pruning:
    """How trials stop early: a pruner by name (tuner/study/pruners/), and capping at the incumbent.

    Time is on the objective's clock. ``percentile`` keeps the best that many percent at
    each time (Optuna's meaning; 50 is the median). ``cap_slack: null`` turns capping off.
    """

    name: str = field(default="equal_time", metadata=_check(lambda v: v in PRUNERS, "one of " + ", ".join(PRUNERS)))
    percentile: float = field(default=50.0, metadata=_check(lambda v: 0 < v < 100, "a number between 0 and 100 exclusive"))
    warmup_s: float | None = field(default=None, metadata=_check(lambda v: v is None or v >= 0, "a number of seconds >= 0, or null (a tenth of objective.cap_s)"))
    min_trials: int = field(default=5, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    cap_slack: float | None = field(default=1.2, metadata=_check(lambda v: v is None or v >= 1, "a number >= 1, or null (no capping)"))
    bucket_s: float | None = field(default=None, metadata=_check(lambda v: v is None or v > 0, "a number of seconds > 0, or null (objective.cap_s / 20)"))

    def warmup_for(self, cap_s: float) -> float:
        """No pruning before this time: early curves say little, schedules warm up."""
        return self.warmup_s if self.warmup_s is not None else cap_s / 10

    def bucket_for(self, cap_s: float) -> float:
        """The width of one step for Optuna's pruners; each report is a storage write."""
        return self.bucket_s if self.bucket_s is not None else cap_s / 20


@dataclass(frozen=True)
class Confirm:
    """Re-running the top-k configurations on fresh seeds (tuner/study/confirmation.py).

    ``after_search`` runs it at the end of `tuner run`; with a time budget it keeps
    ``budget_share`` of it for confirmation. `tuner confirm` runs it on demand.
    """

    top_k: int = field(default=3, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    seeds: int = field(default=3, metadata=_check(lambda v: v >= 1, "an integer >= 1"))
    after_search: bool = True
    budget_share: float = field(default=0.25, metadata=_check(lambda v: 0 <= v < 1, "a number in [0, 1)"))


@dataclass(frozen=True)
class Heartbeat:
    """Crash safety: a trial whose worker is silent for ``grace_s`` is failed and re-run.

    ``interval_s: null`` turns heartbeats off. ``max_retry`` re-runs of a dead worker's
    trial with the same parameters (tuner/study/storage.py).
    """

    interval_s: int | None = field(default=10, metadata=_check(lambda v: v is None or v > 0, "a whole number of seconds > 0, or null (off)"))
    grace_s: int = field(default=60, metadata=_check(lambda v: v > 0, "a whole number of seconds > 0 (more than interval_s)"))
    max_retry: int = field(default=1, metadata=_check(lambda v: v >= 0, "an integer >= 0"))


@dataclass(frozen=True)
class Experiment:
    """A resolved experiment: every field set, every name checked."""

    source: str
    name: str
    task: str = "mnist1d-cnn"
    task_options: dict[str, Any] = field(default_factory=dict)
    search_space: SearchSpace = field(default_factory=lambda: SearchSpace({}))
    objective: Objective = field(default_factory=Objective)
    sampler: Sampler = field(default_factory=Sampler)
    budget: Budget = field(default_factory=Budget)
    trainer: Trainer = field(default_factory=Trainer)
    heartbeat: Heartbeat = field(default_factory=Heartbeat)
    pruner: Pruning = field(default_factory=Pruning)
    confirm: Confirm = field(default_factory=Confirm)
    storage: str = "sqlite:///tuner.db"
    tracking_uri: str = "sqlite:///mlruns/mlflow.db"
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The resolved experiment as plain YAML-able data; loading it again gives the same experiment."""
        return {
            "name": self.name,
            "task": self.task,
            "task_options": dict(self.task_options),
            "search_space": self.search_space.to_yaml_dict(),
            "objective": dataclasses.asdict(self.objective),
            "sampler": dataclasses.asdict(self.sampler),
            "budget": dataclasses.asdict(self.budget),
            "trainer": dataclasses.asdict(self.trainer),
            "heartbeat": dataclasses.asdict(self.heartbeat),
            "pruner": dataclasses.asdict(self.pruner),
            "confirm": dataclasses.asdict(self.confirm),
            "storage": self.storage,
            "tracking_uri": self.tracking_uri,
            "seed": self.seed,
        }

    def with_overrides(self, **flags: Any) -> Experiment:
        """Apply command-line flags: a flag the user typed (not None) beats the file."""
        budget = self.budget
        for key in ("n_trials", "timeout_s"):
            if flags.get(key) is not None:
                budget = dataclasses.replace(budget, **{key: flags[key]})
        top = {k: flags[k] for k in ("name", "storage", "seed", "tracking_uri") if flags.get(k) is not None}
        return dataclasses.replace(self, budget=budget, **top)


def load_yaml(path: str | Path) -> Any:
    """Read one YAML file safely; any failure is a one-line ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(str(path), "(file)", "an existing file", str(path))
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(str(path), "(yaml)", "valid YAML", where + str(getattr(err, "problem", err))) from None
    except UnicodeDecodeError:
        raise ConfigError(str(path), "(file)", "UTF-8 text", "undecodable bytes") from None


def load_experiment(path: str | Path) -> Experiment:
    """Load and check an experiment file; raises ConfigError naming file and key."""
    source = str(path)
    raw = load_yaml(path)
    if raw is None:
        raw = {}
    return experiment_from_dict(raw, source, base_dir=Path(path).resolve().parent)


def experiment_from_dict(raw: Any, source: str, base_dir: Path | None = None) -> Experiment:
    if not isinstance(raw, dict):
        raise ConfigError(source, "(top level)", "a mapping of experiment keys", raw)
    known = [f.name for f in dataclasses.fields(Experiment) if f.name != "source"]
    for key in raw:
        if key not in known:
            raise ConfigError(source, str(key), "one of " + ", ".join(known), key)
    base_dir = base_dir or Path.cwd()
    default_name = Path(source).stem if source else "tuner"
    name = _typed(raw.get("name", default_name), str, source, "name")
    if not name or "/" in name:
        raise ConfigError(source, "name", "a non-empty study name without '/'", name)
    task = _typed(raw.get("task", "mnist1d-cnn"), str, source, "task")
    try:
        check_task_name(task)
    except Exception as err:  # the user's import can raise anything; report its first line
        first = (str(err).splitlines() or [type(err).__name__])[0]
        # The built-ins go in "allowed": in "given" a long list would be cut at 80 characters.
        allowed = "a built-in task (" + ", ".join(BUILTIN_TASKS) + ") or an importable package.module:function"
        raise ConfigError(source, "task", allowed, f"{task} ({first})") from None
    task_options = _typed(raw.get("task_options", {}), dict, source, "task_options")
    try:
        check_task_options(task, task_options)
    except TypeError as err:
        raise ConfigError(source, "task_options", f"options the task takes ({err})", task_options) from None
    return Experiment(
        source=source,
        name=name,
        task=task,
        task_options=task_options,
        search_space=_search_space(raw.get("search_space"), source, base_dir),
        objective=_section(Objective, raw.get("objective", {}), source, "objective"),
        sampler=_section(Sampler, raw.get("sampler", {}), source, "sampler"),
        budget=_section(Budget, raw.get("budget", {}), source, "budget"),
        trainer=_section(Trainer, raw.get("trainer", {}), source, "trainer"),
        heartbeat=_heartbeat(raw.get("heartbeat", {}), source),
        pruner=_section(Pruning, raw.get("pruner", {}), source, "pruner"),
        confirm=_section(Confirm, raw.get("confirm", {}), source, "confirm"),
        storage=_storage(raw.get("storage", "sqlite:///tuner.db"), source),
        tracking_uri=_typed(raw.get("tracking_uri", "sqlite:///mlruns/mlflow.db"), str, source, "tracking_uri"),
        seed=_typed(raw.get("seed", 0), int, source, "seed"),
    )


def _search_space(raw: Any, source: str, base_dir: Path) -> SearchSpace:
    """A path, a mapping {file, override, remove}, or the dimensions inline."""
    if raw is None:
        raw = {"file": str(DEFAULT_SPACE)}
    if isinstance(raw, str):
        raw = {"file": raw}
    if isinstance(raw, dict) and "file" in raw:
        extra = [k for k in raw if k not in ("file", "override", "remove")]
        if extra:
            raise ConfigError(source, f"search_space.{extra[0]}", "one of file, override, remove", extra[0])
        file_value = _typed(raw["file"], str, source, "search_space.file")
        path = _find_file(file_value, base_dir)
        if path is None:
            raise ConfigError(source, "search_space.file", "an existing search-space file", file_value)
        space = parse_space(load_yaml(path) or {}, str(path), prefix="search_space")
        return apply_overrides(space, raw.get("override", {}), raw.get("remove", []), source)
    return parse_space(raw, source)


def _find_file(name: str, base_dir: Path) -> Path | None:
    for candidate in (base_dir / name, Path.cwd() / name, REPO_ROOT / name):
        if candidate.is_file():
            return candidate
    return None


def _heartbeat(raw: Any, source: str) -> Heartbeat:
    heartbeat = _section(Heartbeat, raw, source, "heartbeat")
    if heartbeat.interval_s is not None and heartbeat.grace_s <= heartbeat.interval_s:
        # A grace no longer than the interval would fail live trials between two heartbeats.
        raise ConfigError(source, "heartbeat.grace_s", f"more than heartbeat.interval_s ({heartbeat.interval_s})", heartbeat.grace_s)
    return heartbeat


def _storage(value: Any, source: str) -> str:
    url = _typed(value, str, source, "storage")
    scheme = url.split(":", 1)[0].split("+", 1)[0]
    if "://" not in url or scheme not in STORAGE_SCHEMES:
        raise ConfigError(source, "storage", "a database URL (" + ", ".join(f"{s}://..." for s in STORAGE_SCHEMES) + ")", url)
    return url


def _section(cls: type, raw: Any, source: str, prefix: str) -> Any:
    if not isinstance(raw, dict):
        raise ConfigError(source, prefix, "a mapping", raw)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in fields:
            raise ConfigError(source, f"{prefix}.{key}", "one of " + ", ".join(fields), key)
        meta = fields[key].metadata
        value = _typed(value, hints[key], source, f"{prefix}.{key}", meta.get("allowed"))
        if "check" in meta and not meta["check"](value):
            raise ConfigError(source, f"{prefix}.{key}", meta["allowed"], value)
        values[key] = value
    return cls(**values)


def _typed(value: Any, hint: Any, source: str, key: str, allowed: str | None = None) -> Any:
    """Check a value against a simple type hint (int, float, str, bool, dict, X | None)."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    for option in options:
        if option is type(None) and value is None:
            return None
        if option is float and isinstance(value, str):
            try:
                value = float(value)  # YAML 1.1 reads 1e-3 as a string
            except ValueError:
                continue
        if option is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        base = typing.get_origin(option) or option
        if base is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if base in (str, bool, dict) and isinstance(value, base):
            return value
    names = " or ".join("null" if o is type(None) else getattr(typing.get_origin(o) or o, "__name__", str(o)) for o in options)
    raise ConfigError(source, key, allowed or f"a value of type {names}", value)


def resolve_threads(trainer: Trainer) -> int:
    """Threads for torch: the configured number, else the cores this process may use."""
    if trainer.threads:
        return trainer.threads
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
