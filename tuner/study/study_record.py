"""What a study stores about itself in Optuna, and how it is read back: the one owner of study attributes.

A study's own user attributes say what it was made for (objective, experiment), where it
ran (environment), which MLflow runs are its own (``tuner_uid``), what a training function
read (``config_reads``) and, for a nightly study, how the night went (night, spent_s,
canary, warm_start, winner, status). Everything else
reads and writes them through the functions below, never by string key (trial attributes
are tuner/study/record.py's). The keys and formats are those earlier versions stored, so
their studies read the same; an attribute a study never stored reads as None or empty.

The readers take a study or anything else that carries a study's ``user_attrs``: a
``StudySummary`` from ``optuna.get_all_study_summaries``, or a ``FrozenStudy``.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any, Protocol

import optuna

from tuner.study.experiment.load import Confirm, Objective
from tuner.study.experiment.settings import AUTO_FALLBACK_S
from tuner.train.clocks import CLOCK_BEFORE_AUTO

OBJECTIVE = "objective"
EXPERIMENT = "experiment"
ENVIRONMENT = "environment"
TUNER_UID = "tuner_uid"  # tags the study's MLflow runs (tuner/track/run_layout.py)
CONFIG_READS = "config_reads"  # a training function's config fields read, and the named dimensions
NIGHT = "night"  # a nightly study (tuner/nightly/night.py): its date, budget and machine
SPENT_S = "spent_s"
CANARY = "canary"
WARM_START = "warm_start"  # the study-level list of labels; each warm-started trial carries its own label too
WINNER = "winner"
STATUS = "status"
RESOLVED_CAP = "cap_s_resolved"  # ``cap_s: auto`` in seconds, once the baseline has run (tuner/study/run/auto_cap.py)
FIDELITY = "fidelity"  # a proxy study's two studies: "proxy" or "full" (tuner/study/run/proxy_study.py)
PROXY_COST = "proxy_cost"  # a proxy study's full-size study: [seconds, runs] of every run of it
PROXY_STUDY = "proxy_study"  # the full-size study's proxy study, by name
RUN_CONFIRM = "confirm_resolved"  # ``confirm:`` as the budget rule set it for the run (tuner/study/stopping/budget_rule.py)


class StudyAttrs(Protocol):
    """What the readers need: a study's user attributes (a Study, StudySummary or FrozenStudy)."""

    @property
    def user_attrs(self) -> dict[str, Any]: ...


# -- what the study was made for, and where it ran -----------------------------------------


def write_definition(study: optuna.Study, objective: dict[str, Any], experiment: dict[str, Any]) -> None:
    """The objective a study was made for (a resume must match it) and its resolved experiment."""
    study.set_user_attr(OBJECTIVE, objective)
    study.set_user_attr(EXPERIMENT, experiment)


def write_experiment(study: optuna.Study, experiment: dict[str, Any]) -> None:
    """The experiment the study stands for, in place of the one it was created with: a proxy
    study's full-size study runs a decision of its own and stores the job's (tuner/study/run/proxy_study.py)."""
    study.set_user_attr(EXPERIMENT, experiment)


def stored_definition(study: StudyAttrs) -> dict[str, Any] | None:
    """The objective definition as stored (task, target, clock, cap, cadence); None for a new study."""
    return study.user_attrs.get(OBJECTIVE)


def study_objective(study: StudyAttrs) -> Objective | None:
    """The study's objective (target, cadence, cap, clock), or None if it has none stored."""
    stored = stored_definition(study)
    if not stored:
        return None
    names = {f.name for f in dataclasses.fields(Objective)}
    # A study stored without a clock was minimised on the default of the day, not on auto.
    objective = Objective(**{"clock": CLOCK_BEFORE_AUTO, **{k: v for k, v in stored.items() if k in names}})
    if objective.cap_auto:  # readers compute with seconds: the cap the baseline set, or the one used before it ran
        return dataclasses.replace(objective, cap_s=resolved_cap(study) or AUTO_FALLBACK_S)
    return objective


def write_fidelity(study: optuna.Study, fidelity: str, proxy_study: str | None = None) -> None:
    """A proxy study's two studies: ``proxy`` or ``full``, and the full-size study's proxy by name."""
    study.set_user_attr(FIDELITY, fidelity)
    if proxy_study is not None:
        study.set_user_attr(PROXY_STUDY, proxy_study)


def add_proxy_cost(study: optuna.Study, seconds: float) -> tuple[float, int]:
    """Count one run's ``seconds`` into a proxy study's cost of all its runs (the full-size study
    keeps it); returns (seconds, runs) in all."""
    total, runs = study.user_attrs.get(PROXY_COST) or (0.0, 0)
    study.set_user_attr(PROXY_COST, [total + seconds, runs + 1])
    return total + seconds, runs + 1


def study_fidelity(study: StudyAttrs) -> str | None:
    return study.user_attrs.get(FIDELITY)


def proxy_study_name(study: StudyAttrs) -> str | None:
    """The study a full-size study's proxy search ran in; None for any other study."""
    return study.user_attrs.get(PROXY_STUDY)


def write_resolved_cap(study: optuna.Study, seconds: float) -> None:
    study.set_user_attr(RESOLVED_CAP, seconds)


def resolved_cap(study: StudyAttrs) -> float | None:
    """``cap_s: auto`` as the study resolved it from its baseline, in seconds; None before."""
    return study.user_attrs.get(RESOLVED_CAP)


def write_run_confirm(study: optuna.Study, confirm: Confirm) -> None:
    study.set_user_attr(RUN_CONFIRM, dataclasses.asdict(confirm))


def study_confirm(study: StudyAttrs) -> Confirm:
    """The confirmation the study's runs were asked for: as the budget rule set it (``pruner.name:
    auto`` at a small budget), else the experiment's ``confirm:``."""
    stored = study.user_attrs.get(RUN_CONFIRM) or study_experiment(study).get("confirm") or {}
    names = {f.name for f in dataclasses.fields(Confirm)}
    return Confirm(**{k: v for k, v in stored.items() if k in names})


def write_metric_names(study: optuna.Study, names: list[str]) -> None:
    """Optuna's own name for each objective, as Optuna Dashboard and ``trials_dataframe`` show it
    (a system attribute, not one of ours; kept as first written when the study resumes)."""
    if study.metric_names is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # set_metric_names is experimental
            study.set_metric_names(names)


def study_experiment(study: StudyAttrs) -> dict[str, Any]:
    """The resolved experiment the study was created with (passwords masked); empty if none."""
    return study.user_attrs.get(EXPERIMENT, {})


def write_environment(study: optuna.Study, environment: dict[str, str]) -> None:
    study.set_user_attr(ENVIRONMENT, environment)


def study_environment(study: StudyAttrs) -> dict[str, str]:
    """The environment fingerprint of the last run that tracked the study; empty if none."""
    return study.user_attrs.get(ENVIRONMENT, {})


def tracking_uid(study: StudyAttrs) -> str | None:
    """The id that tags the study's MLflow runs; None for a study never tracked."""
    return study.user_attrs.get(TUNER_UID)


def write_tracking_uid(study: optuna.Study, uid: str) -> None:
    study.set_user_attr(TUNER_UID, uid)


def config_reads(study: StudyAttrs) -> dict[str, list[str]] | None:
    """A training function's study: the ``config`` fields it read and the dimensions the experiment
    names (tuner/study/config_reads.py); None for any other study, or before its first trial."""
    return study.user_attrs.get(CONFIG_READS)


def write_config_reads(study: optuna.Study, reads: dict[str, list[str]]) -> None:
    study.set_user_attr(CONFIG_READS, reads)


# -- a nightly study -----------------------------------------------------------------------


@dataclass(frozen=True)
class NightAttr:
    """A nightly study's night: its date, time budget, base experiment and environment fingerprint.

    Nights stored before the fingerprint was kept read with ``environment`` None.
    """

    date: str  # ISO date
    budget_s: float
    experiment: str
    environment: dict[str, str] | None = None

    @classmethod
    def of(cls, stored: dict[str, Any]) -> NightAttr:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in stored.items() if k in names})

    def as_attr(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def study_night(study: StudyAttrs) -> NightAttr | None:
    """The night of a nightly study; None for any other study."""
    stored = study.user_attrs.get(NIGHT)
    return NightAttr.of(stored) if stored else None


def write_night(study: optuna.Study, night: NightAttr) -> None:
    study.set_user_attr(NIGHT, night.as_attr())


def night_spent_s(study: StudyAttrs) -> float | None:
    """Seconds of the night's budget spent so far; None before the first save."""
    return study.user_attrs.get(SPENT_S)


def write_night_spent_s(study: optuna.Study, seconds: float) -> None:
    study.set_user_attr(SPENT_S, round(seconds, 2))


def night_canary(study: StudyAttrs) -> dict[str, Any] | None:
    """The night's canary as tuner/nightly/night.py stored it (its runs, or why it was skipped); None before it ran."""
    return study.user_attrs.get(CANARY)


def write_night_canary(study: optuna.Study, canary: dict[str, Any]) -> None:
    study.set_user_attr(CANARY, canary)


def night_warm_starts(study: StudyAttrs) -> list[str] | None:
    """Labels of the earlier nights' configurations the night enqueued; None before it enqueued any."""
    return study.user_attrs.get(WARM_START)


def write_night_warm_starts(study: optuna.Study, labels: list[str]) -> None:
    study.set_user_attr(WARM_START, labels)


def night_winner(study: StudyAttrs) -> dict[str, Any] | None:
    """The night's winner as tuner/nightly/night.py stored it; None when there was none or it is not judged yet."""
    return study.user_attrs.get(WINNER)


def night_status(study: StudyAttrs) -> str | None:
    """How the night ended (ok, regressed, failed, interrupted); None before it was judged."""
    return study.user_attrs.get(STATUS)


def write_night_verdict(study: optuna.Study, winner: dict[str, Any] | None, status: str) -> None:
    """The night's winner and status, stored together once the night is judged."""
    study.set_user_attr(WINNER, winner)
    study.set_user_attr(STATUS, status)


# -- the batch-ceilings study --------------------------------------------------------------


def ceiling_entry(study: optuna.Study, name: str) -> dict[str, Any] | None:
    """One entry of the batch-ceilings study (tuner/study/run/batch_ceiling.py names them); None if not measured yet."""
    return study.user_attrs.get(name)


def write_ceiling_entry(study: optuna.Study, name: str, entry: dict[str, Any]) -> None:
    study.set_user_attr(name, entry)
