"""How a study's trials appear as MLflow runs, as plain data: statuses, names, metrics.

Kept apart from tuner/track/store.py (the module that talks to MLflow) so that the rules
read on their own and tests can check them without a tracking store.
"""

from __future__ import annotations

import re
import time
import uuid
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.study.config_reads import shown_params
from tuner.study.record import Curve
from tuner.study.reruns.winner import BestChoice, best_experiment
from tuner.study.scoring.units import column, study_unit
from tuner.study.study_record import study_objective, tracking_uid, write_tracking_uid
from tuner.train.result import Evaluation, Outcome
from tuner.train.trial_config import TrialConfig

# A trial that reached the target finished; one stopped by us (pruned, capped, screened, at its
# cap or horizon, interrupted) was killed; one that broke (error, divergence, out of memory) failed.
STATUS = {
    Outcome.REACHED: "FINISHED",
    Outcome.PRUNED: "KILLED",
    Outcome.CAPPED: "KILLED",
    Outcome.SCREENED: "KILLED",
    Outcome.TIMEOUT: "KILLED",
    Outcome.INTERRUPTED: "KILLED",
    Outcome.FAILED: "FAILED",
    Outcome.DIVERGED: "FAILED",
    Outcome.OOM: "FAILED",
}
# A trial's trained weights on its run: the file `tuner train --save` writes (tuner/train/checkpoint.py).
WEIGHTS_FILE = "model.pt"
# Final figures of a trial: Optuna user attribute -> MLflow metric.
FIGURES = {
    "setup_s": "setup_s",
    "compile_s": "compile_s",  # torch.compile's warm-up, part of setup_s (tuner/train/levers.py)
    "train_s": "total_train_s",
    "wall_s": "total_wall_s",
    "samples": "total_samples",
    "steps": "total_steps",
    "samples_to_target": "samples_to_target",
    "steps_to_target": "steps_to_target",
    "train_s_to_target": "train_s_to_target",
    "wall_s_to_target": "wall_s_to_target",
    "robust_s_to_target": "robust_s_to_target",
    "cpu_s_to_target": "cpu_s_to_target",
    "median_step_cpu_s": "median_step_cpu_s",
    "median_step_s": "median_step_s",
    "throughput": "throughput",
    "peak_memory_mb": "peak_memory_mb",
    "screen_s": "screen_s",  # the throughput pre-screen's own time (tuner/train/screen.py)
    "screen_projected_s": "screen_projected_s",
    "data_wait_share": "data_wait_share",  # a Dataset task: share of training time waiting on the loader
    # Measured where a counter was read (tuner/train/energy.py), in joules: the unit is in the name.
    "energy_j": "energy_J",
    "energy_j_to_target": "energy_J_to_target",
    "host_syncs_per_step": "host_syncs_per_step",  # the GPU's waits per step between evaluations (tuner/train/syncs.py)
}
# The study run's energy figures (tuner/report/energy.py): the winner's and the baseline's medians over seeds.
PARENT_ENERGY = {"winner_median_j": "winner_median_energy_J", "baseline_median_j": "baseline_median_energy_J"}


def now_ms() -> int:
    return int(time.time() * 1000)


def run_name(
    number: int, config: dict[str, Any], confirm_of: int | None = None, retry_of: int | None = None, baseline: bool = False
) -> str:
    """What the list of runs shows: the trial number, what it repeats or whether it is the baseline, and the key choices."""
    marks = [
        "baseline" if baseline else "",
        f"confirms {confirm_of}" if confirm_of is not None else "",
        f"re-run of {retry_of}" if retry_of is not None else "",
    ]
    return f"trial {number}" + "".join(f" ({m})" for m in marks if m) + f" · {TrialConfig.from_stored(config).short()}"


# What every study named its objective value before the value carried its unit (a study that
# minimized energy or cost too): readers fall back to it.
EARLIER_OBJECTIVE = "objective_s"


@dataclass(frozen=True)
class MetricNames:
    """What one study's runs call their metrics: the target's held-out metric by its own name
    (``loss``, ``best_loss``), the objective value with its unit (``objective_s``, ``objective_J``,
    ``objective_USD``). The defaults, accuracy in seconds, are every earlier study's names."""

    metric: str = "accuracy"
    unit: str = "s"

    @classmethod
    def of(cls, study: optuna.Study) -> MetricNames:
        objective = study_objective(study)
        metric = objective.metric if objective is not None else "accuracy"
        # A metric an own loop names freely: characters an MLflow key refuses become "_" ("top-1 %" -> "top-1 _").
        return cls(re.sub(r"[^\w./ -]", "_", metric), study_unit(study))

    @property
    def objective(self) -> str:
        return column("objective", self.unit)

    @property
    def trial_objective(self) -> str:
        """The study run's value of each trial, stepped by trial number."""
        return "trial_" + self.objective

    @property
    def best_objective(self) -> str:
        """The study run's best value so far, stepped by trial number."""
        return "best_" + self.objective


DEFAULT_NAMES = MetricNames()  # a study of accuracy in seconds: every study's names before a target could be on any metric


def final_metrics(attrs: dict[str, Any], value: float | None, names: MetricNames = DEFAULT_NAMES) -> dict[str, float]:
    out = {FIGURES[k]: float(v) for k, v in attrs.items() if k in FIGURES and v is not None}
    for figure in ("best", "final"):  # the held-out metric's best and last value, by the metric's name
        if attrs.get(f"{figure}_metric") is not None:
            out[f"{figure}_{names.metric}"] = float(attrs[f"{figure}_metric"])
    if value is not None:
        out[names.objective] = float(value)
    return out


# A metric point: (key, value, step, timestamp in ms).
Point = tuple[str, float, int, int]


def _held_out(metric: str, value: float | None, others: dict[str, Any]) -> dict[str, Any]:
    """The target's metric first, under its name; a series of the same name (a loss target's ``loss``) is that one."""
    return {metric: value, **{k: v for k, v in others.items() if k != metric}}


def evaluation_points(ev: Evaluation, timestamp: int, metric: str = "accuracy") -> list[Point]:
    """One evaluation as metrics stepped by samples seen, so trials of any batch size line up."""
    others = {
        "loss": ev.loss,
        "train_loss": ev.train_loss,
        "train_s": ev.train_s,
        "wall_s": ev.wall_s,
        "robust_s": ev.robust_s,
        "cpu_s": ev.cpu_s,
    }
    return [(k, float(v), ev.samples, timestamp) for k, v in _held_out(metric, ev.metric, others).items() if v is not None]


def curve_points(curve: Curve | None, timestamp: int, skip_steps: set[int], metric: str = "accuracy") -> list[Point]:
    """A finished trial's stored curve as metric points (a series an older study lacks is left out)."""
    if curve is None:
        return []
    series = _held_out(metric, curve.metric, {"loss": curve.loss, "train_s": curve.train_s, "wall_s": curve.wall_s})
    out: list[Point] = []
    for i, step in enumerate(curve.samples):
        if step not in skip_steps:
            out.extend((name, float(v[i]), int(step), timestamp) for name, v in series.items() if i < len(v) and v[i] is not None)
    return out


def study_uid(study: optuna.Study, settle_s: float = 0.0) -> tuple[str, bool]:
    """A stable id for this Optuna study, so a new study with an old name gets its own parent run;
    and whether it is the id this worker wrote.

    Workers that start a new study together each write one; after ``settle_s`` every one
    reads back the same (last) write. The worker whose write was kept creates the study run.
    """
    uid = tracking_uid(study)
    if uid is not None:
        return uid, False
    own = uuid.uuid4().hex
    write_tracking_uid(study, own)
    time.sleep(settle_s)
    uid = tracking_uid(study)
    return uid, uid == own


@dataclass(frozen=True)
class RunRecord:
    """A child run as sync and doctor see it."""

    run_id: str
    trial_number: int
    status: str
    outcome: str | None
    value: float | None

    @property
    def complete(self) -> bool:
        return self.status != "RUNNING" and self.outcome is not None


def parent_summary(study: optuna.Study, choice: BestChoice | None) -> tuple[dict[str, Any] | None, dict[str, str], str]:
    """The study's winner (tuner/study/reruns/winner.py) as an experiment, best.* tags, and the parent's description."""
    if choice is None:
        objective = study_objective(study)
        target = objective.goal.describe() if objective is not None else "the target"
        return None, {}, f"Study `{study.study_name}`: no trial has reached {target} yet."
    best = choice.trial
    tags = {"tuner.best_trial": str(best.number), **{f"best.{k}": str(v) for k, v in shown_params(study, best.config).items()}}
    note = (
        f"Study `{study.study_name}`: best **{choice.headline(study)}** ({best.config.short()}); {choice.note}. "
        "Plots and best.yaml are in the artifacts."
    )
    return best_experiment(study, best), tags, note
