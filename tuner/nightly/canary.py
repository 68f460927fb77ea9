"""The canary: last accepted winner, re-run on fixed seeds at the start of a night.

It runs on the seeds its confirmation ran on the night it won, so the same configuration
takes the same steps to the target, and its time moves only when the environment does.
Against its own history on the same environment fingerprint,
a slower canary says the machine is slower tonight; with a changed fingerprint, the report
names what changed (driver, library, code). A best time that regressed while the canary
held steady is a worse search, not a slower machine.
"""

from __future__ import annotations

import statistics
from typing import Any

from tuner import signals
from tuner.nightly.history import Night
from tuner.study.experiment.load import Experiment
from tuner.study.reruns.confirmation import confirmation_seeds
from tuner.study.run.prepare import Prepared
from tuner.study.scoring.censoring import NOT_SCORED, objective_value
from tuner.study.storage.deadline import Deadline
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

# Fingerprint fields that do not change how fast training runs: a pod's host name changes
# every night under Kubernetes, and the MLflow version only touches logging.
NOT_SPEED = ("host", "mlflow")


def canary_seeds(base_seed: int, n: int) -> list[int]:
    """The confirmation seeds: the canary repeats, seed for seed, the runs that made it the winner."""
    return confirmation_seeds(base_seed, n)


def speed_key(environment: dict[str, str]) -> dict[str, str]:
    """The fingerprint fields that can change training speed."""
    return {k: v for k, v in environment.items() if k not in NOT_SPEED}


def environment_changes(before: dict[str, str], after: dict[str, str]) -> dict[str, list[str]]:
    """Speed-relevant fields that differ: {field: [before, after]}."""
    old, new = speed_key(before), speed_key(after)
    return {k: [old.get(k, "-"), new.get(k, "-")] for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)}


def run_canary(
    experiment: Experiment, prepared: Prepared, config: dict[str, Any], seeds: list[int], deadline: Deadline | None
) -> list[dict[str, Any]]:
    """Train ``config`` once per seed, while a run still fits before the deadline."""
    objective = experiment.objective
    runs = []
    for seed in seeds:
        if deadline is not None and deadline.left() < objective.cap_s:
            break
        with signals.interruptible():
            result = train_trial(
                prepared.task,
                TrialConfig.from_stored(config),
                objective.stop_rule(),
                prepared.device,
                seed=seed,
                listeners=[signals.raise_if_pending],
                deadline=deadline.at if deadline else None,
            )
        value = None if result.outcome in NOT_SCORED else objective_value(result, objective)
        runs.append({"seed": seed, "value": value, "outcome": result.outcome.value, "reason": result.reason})
    return runs


def canary_value(canary: dict[str, Any]) -> float | None:
    """The median objective value of a night's canary runs (misses count, censored)."""
    values = [r["value"] for r in canary.get("runs", []) if r["value"] is not None]
    return statistics.median(values) if values else None


def canary_history(
    measured: list[tuple[dict[str, str], list[float]]], environment: dict[str, str]
) -> tuple[list[float], dict[str, list[str]] | None]:
    """Earlier values of the canary's configuration, and what changed in the environment.

    ``measured`` holds (environment, values) of earlier nights, newest first: the canary
    runs, and the confirmation runs of the night the configuration won (same seeds). The
    history is the values on tonight's environment; when there are none, it is the values
    on the environment of the latest measurement, with the fields that changed since
    (None when nothing did).
    """
    same = [v for env, values in measured if speed_key(env) == speed_key(environment) for v in values]
    if same or not measured:
        return same, None
    latest = speed_key(measured[0][0])
    other = [v for env, values in measured if speed_key(env) == latest for v in values]
    return other, environment_changes(measured[0][0], environment)


def tonight_canary(
    experiment: Experiment, prepared: Prepared, earlier: list[Night], seeds: int, deadline: Deadline, environment: dict[str, str]
) -> dict[str, Any]:
    """Re-run the last accepted winner (from a night whose report said ok) on fixed seeds."""
    source = next((n for n in earlier if n.status == "ok" and n.winner), None)
    if source is None:
        return {"skipped": "no accepted winner from an earlier night yet"}
    config = source.winner["config"]
    runs = run_canary(experiment, prepared, config, canary_seeds(experiment.seed, seeds), deadline)
    return {"config": config, "from_night": source.date.isoformat(), "environment": environment, "runs": runs}
