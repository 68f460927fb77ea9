"""What a study's report says, as plain data: the one source of its HTML, Markdown and JSON.

Built from the study's storage alone (its records, its stored experiment and environment),
so a report can be written on any machine that reaches the storage.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import optuna

from tuner.redact import redact
from tuner.report.energy import energy_figures
from tuner.study.counts import trial_counts
from tuner.study.experiment.cost import saving
from tuner.study.reruns.baseline import baseline_figures, baseline_trial_config, compare, study_minimize
from tuner.study.reruns.confirmation import confirmed
from tuner.study.reruns.winner import winner
from tuner.study.scoring.objectives import seconds_behind
from tuner.study.scoring.pareto import baseline_line, front_json, several
from tuner.study.scoring.units import study_cost, study_unit
from tuner.study.study_record import proxy_study_name, study_environment, study_experiment, study_objective
from tuner.train.target import Target


@dataclass
class StudyReport:
    """Everything one study's report states; ``as_json`` is what `--json` and `--format json` print."""

    study: str
    storage: str
    task: str
    goal: Target  # the target: the value of a held-out metric to reach, and its direction
    clock: str
    minimize: str
    winner: dict[str, Any] | None
    baseline: dict[str, Any] | None
    comparison: dict[str, Any] | None
    summary: str
    confirmation: list[dict[str, Any]]
    cost: dict[str, Any]
    energy: dict[str, Any]
    outcomes: dict[str, Any]
    importance: dict[str, float]
    environment: dict[str, str]
    reproduce: list[str]
    experiment: dict[str, Any] = field(repr=False, default_factory=dict)
    front: dict[str, Any] | None = None  # a study of several objectives: its Pareto front (tuner/study/scoring/pareto.py)
    unit: str = "s"  # of the (first) objective's values: the winner's, the baseline's, the confirmation's

    def as_json(self) -> dict[str, Any]:
        """The pipeline-readable object (passwords already masked)."""
        return {
            "study": self.study,
            "storage": self.storage,
            "task": self.task,
            "target": self.goal.value,
            "metric": self.goal.metric,
            "direction": self.goal.direction,
            "clock": self.clock,
            "minimize": self.minimize,
            "unit": self.unit,
            "summary": self.summary,
            "winner": self.winner,
            "baseline": self.baseline,
            "baseline_ratio": self.comparison["ratio"] if self.comparison else None,
            "comparison": self.comparison,
            "confirmation": self.confirmation,
            "cost": self.cost,
            "energy": self.energy,
            "outcomes": self.outcomes,
            "importance": self.importance,
            "environment": self.environment,
            "reproduce": self.reproduce,
            "front": self.front,
        }


def _importance(study: optuna.Study) -> dict[str, float]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return {k: float(v) for k, v in optuna.importance.get_param_importances(study).items()}
    except (RuntimeError, ValueError, ZeroDivisionError):  # too few trials, or nothing varies
        return {}


def _winner(study: optuna.Study) -> dict[str, Any] | None:
    choice = winner(study)  # the trial `tuner best`, the MLflow study run and the nightly report name
    if choice is None:
        return None
    c, t = choice.confirmation, choice.trial
    out: dict[str, Any] = {
        "trial": t.number,
        "confirmed": choice.confirmed,
        "note": choice.note,
        "config": t.config.as_dict() if t.config else dict(t.params),
    }
    if c is not None:
        out.update(median_s=c.median, range_s=list(c.spread), seeds=c.n, reached=c.reached, values_s=list(c.values))
    else:
        out.update(median_s=t.value, range_s=[t.value, t.value], seeds=1, reached=1, values_s=[t.value])
    return out


def _cost(study: optuna.Study, winner: dict[str, Any] | None, comparison: Any) -> dict[str, Any]:
    cost, minimize = study_cost(study), study_minimize(study)
    out: dict[str, Any] = {"per_device_hour": cost.per_device_hour, "currency": cost.currency}
    if winner is not None:
        devices = int(winner["config"].get("devices", 1))
        seconds = seconds_behind(minimize, winner["median_s"], cost, devices)
        if seconds is not None:
            out["winner_device_hours_to_target"] = cost.device_hours(seconds, devices)
            out["winner_cost_to_target"] = cost.price(seconds, devices)
    if comparison is not None:
        w, b = comparison.winner, comparison.baseline
        winner_s, baseline_s = seconds_behind(minimize, w.median, cost, w.devices), seconds_behind(minimize, b.median, cost, b.devices)
        if winner_s is not None and baseline_s is not None:
            out["baseline_cost_to_target"] = cost.price(baseline_s, b.devices)
            s = saving(cost, winner_s, w.devices, baseline_s, b.devices)
            out["saving"] = {**s.as_dict(), "sentence": s.sentence()}
    return out


def reproduce_commands(study_name: str, storage: str, experiment: dict[str, Any], proxy_study: str | None = None) -> list[str]:
    """How to repeat the study and train its winner: the resolved experiment is in the report
    (``proxy_study``: the study a proxy study searched in, when this is its full-size study)."""
    flags = f"--study-name {study_name} --storage {storage}"
    lines = [
        (
            f"# the resolved experiment below, saved as {study_name}.yaml "
            f"(task {experiment.get('task', '?')}, seed {experiment.get('seed', 0)})"
        ),
        f"tuner run {study_name}.yaml --study-name {study_name}-again",
        f"tuner best {flags} -o best.yaml && tuner train best.yaml",
        f"tuner report {study_name} --storage {storage}",
    ]
    if proxy_study is not None:
        lines.append(f"tuner report {proxy_study} --storage {storage}  # its search, at the proxy")
    return lines


def build_report(study: optuna.Study, storage: str) -> StudyReport:
    """The report of one study, read from its storage."""
    objective = study_objective(study)
    experiment = study_experiment(study)
    comparison = compare(study)
    winner = _winner(study)
    baseline = baseline_figures(study)
    baseline_dict = None
    if baseline is not None:
        config = baseline_trial_config(study)
        baseline_dict = {**baseline.as_dict(), "config": config.as_dict() if config else None}
    front = front_json(study) if several(study) else None
    if front is not None:  # no single winner: the front and the baseline's medians
        n = len(front["points"])
        summary = f"{n} point{'s' if n != 1 else ''} on the Pareto front of {' and '.join(front['objectives'])}; {baseline_line(study)}"
    elif comparison is not None:
        summary = comparison.sentence()
    elif winner is None:
        summary = "no trial reached the target"
    else:
        summary = "winner found; no baseline runs finished yet, so no ratio to the baseline"
    confirmation = [
        {
            "trial": c.trial.number,
            "median_s": c.median,
            "range_s": list(c.spread),
            "reached": c.reached,
            "seeds": c.n,
            "values_s": list(c.values),
            "config": c.trial.config.short() if c.trial.config else "",
        }
        for c in confirmed(study)
    ]
    safe_storage = redact(storage)
    return StudyReport(
        study=study.study_name,
        storage=safe_storage,
        task=experiment.get("task", "?"),
        goal=objective.goal if objective else Target(float("nan")),
        clock=objective.clock if objective else "?",
        minimize=study_minimize(study),
        unit=study_unit(study),
        winner=winner,
        baseline=baseline_dict,
        comparison=comparison.as_dict() if comparison else None,
        summary=summary,
        confirmation=confirmation,
        cost=_cost(study, winner, comparison),
        energy=energy_figures(study, comparison),
        outcomes=trial_counts(study),
        importance=_importance(study),
        environment=study_environment(study),
        reproduce=reproduce_commands(study.study_name, safe_storage, experiment, proxy_study_name(study)),
        experiment=experiment,
        front=front,
    )
