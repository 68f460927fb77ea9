"""Experiment files: strict YAML into typed objects, defaults in one place, flags on top."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.errors import ConfigError, first_line
from tuner.study.experiment.baseline_spec import parse_baseline
from tuner.study.experiment.cost import Cost
from tuner.study.experiment.proxy import Proxy, check_proxy_target, parse_proxy
from tuner.study.experiment.settings import (  # noqa: F401 -- the sections are part of this module's interface
    CONFIRM_RULES,
    SAMPLERS,
    STORAGE_SCHEMES,
    STUDY_NAME_MAX,
    Budget,
    Confirm,
    Heartbeat,
    Objective,
    Pruning,
    Race,
    Sampler,
    Screen,
    Tracking,
    Trainer,
    check_name,
    check_target,
)
from tuner.study.experiment.strict_yaml import load_yaml
from tuner.study.experiment.task_samples import TaskSize, objective_in_samples, space_in_samples
from tuner.study.space.pretrained import resolve_init_from
from tuner.study.space.space import SearchSpace, apply_overrides, parse_space
from tuner.tasks.registry import BUILTIN_TASKS, check_task_name, check_task_options, hyperparameters_at_load

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_SPACE = REPO_ROOT / "search_spaces" / "default.yaml"


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
    race: Race | None = field(default_factory=Race)
    screen: Screen | None = field(default_factory=Screen)  # the throughput pre-screen (tuner/study/stopping/screen.py)
    storage: str = "sqlite:///tuner.db"
    tracking_uri: str = "sqlite:///mlruns/mlflow.db"
    tracking: Tracking = field(default_factory=Tracking)  # what MLflow keeps: trained weights (tuner/track/trial_runs.py)
    seed: int = 0
    baseline: dict[str, Any] = field(default_factory=dict)  # the configuration run today (tuner/study/reruns/baseline.py)
    cost: Cost = field(default_factory=Cost)
    # A pretrained start every trial loads (tuner/train/checkpoint.py): a file or package.module:function.
    init_from: str | None = None
    # Search at a cheaper fidelity, decide at the job's (tuner/study/experiment/proxy.py).
    proxy: Proxy | None = None

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
            "race": dataclasses.asdict(self.race) if self.race is not None else None,
            "screen": dataclasses.asdict(self.screen) if self.screen is not None else None,
            "storage": self.storage,
            "tracking_uri": self.tracking_uri,
            "tracking": dataclasses.asdict(self.tracking),
            "seed": self.seed,
            "baseline": dict(self.baseline),
            "cost": dataclasses.asdict(self.cost),
            "init_from": self.init_from,
            "proxy": self.proxy.to_dict() if self.proxy is not None else None,
        }

    def with_overrides(self, **flags: Any) -> Experiment:
        """Apply command-line flags: a flag the user typed (not None) beats the file."""
        budget = self.budget
        for key in ("n_trials", "timeout_s"):
            if flags.get(key) is not None:
                budget = dataclasses.replace(budget, **{key: flags[key]})
        top = {k: flags[k] for k in ("name", "storage", "seed", "tracking_uri") if flags.get(k) is not None}
        if "name" in top:  # --study-name: it names stores and files as the YAML's name does
            check_name(top["name"], self.source, "--study-name", STUDY_NAME_MAX)
        return dataclasses.replace(self, budget=budget, **top)


def read_experiment(path: str | Path) -> Experiment:
    """Read and check an experiment file but for its objective and pruner names, which
    tuner/study/run/experiment_file.py checks (``load_experiment``); raises ConfigError naming file and key."""
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
    name = check_name(_typed(raw.get("name", default_name), str, source, "name"), source, "name")
    task = _typed(raw.get("task", "mnist1d-cnn"), str, source, "task")
    try:
        check_task_name(task, base_dir)  # a module:function beside the experiment file is found there
    except Exception as err:  # noqa: BLE001  # the user's import can raise anything; report its first line
        first = first_line(err, type(err).__name__)
        # The built-ins go in "allowed": in "given" a long list would be cut at 80 characters.
        allowed = "a built-in task (" + ", ".join(BUILTIN_TASKS) + ") or an importable package.module:function"
        raise ConfigError(source, "task", allowed, f"{task} ({first})") from None
    task_options = _typed(raw.get("task_options", {}), dict, source, "task_options")
    init_from = resolve_init_from(raw.get("init_from", task_options.get("init_from")), source, base_dir)
    task_options = {k: v for k, v in task_options.items() if k != "init_from"}  # the tuner's, not the task's
    try:
        check_task_options(task, task_options)
    except TypeError as err:
        raise ConfigError(source, "task_options", f"options the task takes ({err})", task_options) from None
    size = TaskSize(task, task_options, source)  # {epochs: N} in samples: the task is built only if a file uses it
    accepted = hyperparameters_at_load(task, task_options)  # what the search space and the baseline may name
    experiment = Experiment(
        source=source,
        name=name,
        task=task,
        task_options=task_options,
        search_space=_search_space(raw.get("search_space"), source, base_dir, accepted, size),
        objective=_section(Objective, objective_in_samples(raw.get("objective", {}), size), source, "objective"),
        sampler=_section(Sampler, raw.get("sampler", {}), source, "sampler"),
        budget=_section(Budget, raw.get("budget", {}), source, "budget"),
        trainer=_section(Trainer, raw.get("trainer", {}), source, "trainer"),
        heartbeat=_heartbeat(raw.get("heartbeat", {}), source),
        pruner=_section(Pruning, raw.get("pruner", {}), source, "pruner"),
        confirm=_section(Confirm, raw.get("confirm", {}), source, "confirm"),
        race=_section(Race, raw.get("race", {}), source, "race") if raw.get("race", {}) is not None else None,
        screen=_section(Screen, raw.get("screen", {}), source, "screen") if raw.get("screen", {}) is not None else None,
        storage=_storage(raw.get("storage", "sqlite:///tuner.db"), source),
        tracking_uri=_typed(raw.get("tracking_uri", "sqlite:///mlruns/mlflow.db"), str, source, "tracking_uri"),
        tracking=_section(Tracking, raw.get("tracking", {}), source, "tracking"),
        seed=_typed(raw.get("seed", 0), int, source, "seed"),
        baseline=parse_baseline(raw.get("baseline", {}), source, accepted),
        cost=_section(Cost, raw.get("cost", {}), source, "cost"),
        init_from=init_from,
    )
    experiment = dataclasses.replace(experiment, proxy=parse_proxy(raw.get("proxy"), experiment.search_space, source))
    check_target(experiment.objective, source)
    objective = experiment.objective
    check_proxy_target(experiment.proxy, objective.target, objective.direction, source)
    return experiment


def _search_space(raw: Any, source: str, base_dir: Path, accepted: dict[str, Any] | None, size: TaskSize) -> SearchSpace:
    """A path, a mapping {file, override, remove}, or the dimensions inline; sample counts in epochs made samples."""
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
        from_file = space_in_samples(load_yaml(path) or {}, size, "search_space", str(path))
        space = parse_space(from_file, str(path), prefix="search_space", accepted=accepted)
        override = space_in_samples(raw.get("override", {}), size, "search_space.override")
        return apply_overrides(space, override, raw.get("remove", []), source, accepted)
    if isinstance(raw, dict) and ("override" in raw or "remove" in raw):  # a change of a space names the space it changes
        key = "override" if "override" in raw else "remove"
        raise ConfigError(source, "search_space.file", f"the search-space file that search_space.{key} changes", None)
    return parse_space(space_in_samples(raw, size, "search_space"), source, accepted=accepted)


def _find_file(name: str, base_dir: Path) -> Path | None:
    for candidate in (base_dir / name, Path.cwd() / name, REPO_ROOT / name):
        try:
            if candidate.is_file():
                return candidate
        except OSError:  # a name too long for the file system, say: no such file, as far as the user is concerned
            continue
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
    given = value
    for option in options:
        if option is type(None) and value is None:
            return None
        if option is float and isinstance(value, str):
            try:
                value = float(value)  # YAML 1.1 reads 1e-3 as a string
            except ValueError:
                continue
        if option is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:  # an integer past a float's range
                number = math.inf
            if not math.isfinite(number):  # .nan passes every comparison check, .inf every lower bound
                raise ConfigError(source, key, f"a finite number ({allowed})" if allowed else "a finite number", given)
            return number
        base = typing.get_origin(option) or option
        if base is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if base in (str, bool, dict, list) and isinstance(value, base):
            return value
    names = " or ".join("null" if o is type(None) else getattr(typing.get_origin(o) or o, "__name__", str(o)) for o in options)
    raise ConfigError(source, key, allowed or f"a value of type {names}", value)


# One torch thread per trial: with other processes running, two threads took 21.8 ms per
# step of the default CNN against 2.4 ms for one (waiting threads spin; benchmarks/clock_noise.py).
DEFAULT_THREADS = 1


def resolve_threads(trainer: Trainer) -> int:
    """Threads for torch: the configured number, else ``DEFAULT_THREADS``."""
    return trainer.threads or DEFAULT_THREADS
