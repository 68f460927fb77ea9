"""What a run of a study is asked to do, typed: ``RunOptions``, which every command that runs trials
(`tuner run`, `worker`, `confirm`, `nightly`) and ``tuner.run`` map their inputs to.

What a command does besides its study (the lines it prints, what a stop says, whether its
deadline covers the closing lines) is a field of its own, set once where the command builds its
options (the constructors below); no code asks which command it is.

The options travel as JSON to the worker processes `tuner run --workers N` starts
(tuner/orchestrate/child.py), so a worker gets what its parent was given, not a command line
rebuilt from it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.run.experiment_file import load_experiment

# Who runs the study, as messages name it (`tuner worker`).
Command = Literal["run", "worker", "confirm", "nightly", "api"]
# The first and closing lines a run prints (tuner/orchestrate/lines.py): the study's and its summary
# (`tuner run`), a worker's, or a confirmation's.
Lines = Literal["study", "worker", "confirmation"]

# What a stopped run tells people to do next.
RESUME_RUN = "; the running trial is recorded as interrupted. Run the same command to resume."
RESUME_WORKER = "; the running trial is recorded as interrupted."
RESUME_CONFIRM = "; run the same command to resume the confirmation."
RESUME_NIGHT = "; the running trial is recorded as interrupted and the report written. Run the same command on the same night to resume."


# What only `tuner run` does, off for the commands that are not it (a worker, confirm, a night).
NOT_A_RUN: dict[str, bool] = {"timeout_from_start": False, "drain_tracking": False, "proxy_allowed": False, "refuse_short_budget": False}


@dataclass(frozen=True)
class Overrides:
    """Flags that beat the experiment file (``Experiment.with_overrides``); None: the file's."""

    name: str | None = None
    storage: str | None = None
    tracking_uri: str | None = None
    seed: int | None = None
    n_trials: int | None = None
    timeout_s: float | None = None

    def apply(self, experiment: Experiment) -> Experiment:
        return experiment.with_overrides(**dataclasses.asdict(self))


@dataclass(frozen=True)
class WorkerRole:
    """One worker of a study that others may run too: `tuner worker`, or a process of `tuner run --workers N`.

    ``coordinated``: started by `tuner run --workers N`, which shows the progress, writes the
    study's summary and queues the confirmation runs; ``confirm_queued``: this worker runs only
    the queued confirmation and baseline runs. ``replay``: a recorded table whose trials are
    replayed in real time (scaled by ``time_scale``) instead of training.
    """

    index: int | None = None
    threads: int | None = None
    device: str | None = None
    coordinated: bool = False
    confirm_queued: bool = False
    replay: str | None = None
    time_scale: float = 1.0


@dataclass(frozen=True)
class RunOptions:
    """One run of a study. ``workers``: the processes this run starts on the study (`tuner run
    --workers N`); ``study_workers``: how many run the study in all, which the budget rule counts
    (``pruner.name: auto``), when known (default: ``workers``). ``search=False`` only confirms
    (`tuner confirm`, with ``top_k`` and ``seeds`` over the file's).

    The fields from ``lines`` on say what the run does besides its study; their defaults are
    `tuner run`'s, and ``for_worker``, ``for_confirm``, ``for_night`` and ``for_api`` set the others'."""

    experiment: str  # the experiment file, as given
    command: Command = "run"
    overrides: Overrides = field(default_factory=Overrides)
    workers: int = 1
    study_workers: int | None = None
    search: bool = True
    top_k: int | None = None
    seeds: int | None = None
    tracking: bool = True
    quiet: bool = False
    json: bool = False
    share_devices: bool = False
    worker: WorkerRole | None = None
    source: str | None = None  # what the study's MLflow runs name as their origin for `tuner sync` (tracking.sync_source); None: the file
    # When the command started (time.monotonic()): --timeout counts from there (``timeout_from_start``); None: when it is orchestrated.
    started: float | None = None
    lines: Lines | None = "study"  # None: none (``tuner.run``, a night's own, a quiet worker)
    resume_hint: str | None = RESUME_RUN  # after a signal's line; None: the line is not printed
    # --timeout counts from ``started`` and covers the closing lines and MLflow's last writes; else the study counts it from its start.
    timeout_from_start: bool = True
    drain_tracking: bool = True  # MLflow's last writes are waited for after the closing lines, not as the study ends
    print_errors: bool = True  # a failed study's line on stderr; else it is only ``Ran.error`` (``tuner.run`` raises it)
    watch_overhead: bool = False  # the storage and sampler calls timed, for a worker's closing line
    proxy_allowed: bool = True  # ``proxy:`` (search small, decide at full size) runs in this process, with one worker
    # ``proxy:``'s full-size study re-run at the job's fidelity (`tuner confirm`), as its candidates ran; no proxy search
    proxy_at_full_size: bool = False
    refuse_short_budget: bool = True  # a budget the study's baseline is known not to fit is refused before anything is stored
    resolve_clock: bool = True  # ``clock: auto`` resolved for this machine; a night's follows the nights before it (tuner/nightly/night.py)

    @classmethod
    def for_worker(cls, experiment: str, role: WorkerRole, quiet: bool = False, **given: Any) -> RunOptions:
        """One worker of a study: `tuner worker`, or a process of `tuner run --workers N`. Its storage
        and sampler calls are timed for its closing line; a quiet one says only its errors."""
        return cls(
            experiment,
            command="worker",
            worker=role,
            quiet=quiet,
            lines=None if quiet else "worker",
            resume_hint=None if quiet else RESUME_WORKER,
            watch_overhead=True,
            **NOT_A_RUN,
            **given,
        )

    @classmethod
    def for_confirm(cls, experiment: str, **given: Any) -> RunOptions:
        """`tuner confirm`: no search; the top configurations re-run, the confirmation's lines."""
        return cls(
            experiment,
            command="confirm",
            search=False,
            lines="confirmation",
            resume_hint=RESUME_CONFIRM,
            **NOT_A_RUN,
            proxy_at_full_size=True,
            **given,
        )

    @classmethod
    def for_night(cls, experiment: str, **given: Any) -> RunOptions:
        """`tuner nightly`: the night prints its own lines (tuner/cli/nightly.py) and keeps the clock of the nights before."""
        return cls(
            experiment,
            command="nightly",
            lines=None,
            resume_hint=RESUME_NIGHT,
            resolve_clock=False,
            **NOT_A_RUN,
            **given,
        )

    @classmethod
    def for_api(cls, experiment: str, **given: Any) -> RunOptions:
        """``tuner.run``: silent; its caller gets the study, or the error raised. A proxy study and
        the short-budget check are `tuner run`'s; the study counts --timeout from its start."""
        return cls(
            experiment,
            command="api",
            lines=None,
            resume_hint=None,
            timeout_from_start=False,
            drain_tracking=False,
            print_errors=False,
            **given,
        )

    @property
    def all_workers(self) -> int:
        return self.study_workers or self.workers

    def check(self) -> None:
        """Bad options: ConfigError naming the flag, before anything is read or written."""
        who = f"tuner {self.command}"
        for flag, value, low in (("--workers", self.workers, 1), ("--workers", self.study_workers, 1), ("--top-k", self.top_k, 1)):
            if value is not None and value < low:
                raise ConfigError(who, flag, f"an integer >= {low}", value)
        if self.seeds is not None and self.seeds < 1:
            raise ConfigError(who, "--seeds", "an integer >= 1", self.seeds)
        role = self.worker
        if role is not None:
            if role.threads is not None and role.threads < 1:
                raise ConfigError(who, "--threads", "an integer >= 1", role.threads)
            if role.index is not None and role.index < 0:
                raise ConfigError(who, "--worker-index", "an integer >= 0", role.index)
            if role.replay is None and role.time_scale != 1.0:
                raise ConfigError(who, "--time-scale", "only with --replay", role.time_scale)

    def load(self) -> Experiment:
        """The experiment file with these options over it: a flag beats the file."""
        return self.applied(load_experiment(self.experiment))

    def applied(self, experiment: Experiment) -> Experiment:
        """``experiment`` with the flags, the confirmation's settings, and a worker's threads and device;
        a worker leaves confirming to `tuner confirm` or to the process that started it."""
        experiment = self.overrides.apply(experiment)
        settings = {k: v for k, v in (("top_k", self.top_k), ("seeds", self.seeds)) if v is not None}
        if settings:
            experiment = dataclasses.replace(experiment, confirm=dataclasses.replace(experiment.confirm, **settings))
        role = self.worker
        if role is None:
            return experiment
        trainer = dataclasses.replace(
            experiment.trainer, threads=role.threads or experiment.trainer.threads, device=role.device or experiment.trainer.device
        )
        return dataclasses.replace(experiment, trainer=trainer, confirm=dataclasses.replace(experiment.confirm, after_search=False))

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RunOptions:
        data = json.loads(text)
        role = data.pop("worker")
        return cls(**{**data, "overrides": Overrides(**data["overrides"]), "worker": WorkerRole(**role) if role is not None else None})
