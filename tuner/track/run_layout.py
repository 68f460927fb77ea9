"""How a study's trials appear as MLflow runs, as plain data: statuses, names, metrics.

Kept apart from tuner/track/store.py (the module that talks to MLflow) so that the rules
read on their own and tests can check them without a tracking store.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import optuna

from tuner.study.config_reads import shown_params
from tuner.study.record import Curve, TrialRecord
from tuner.study.reruns.winner import best_experiment
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
    "best_metric": "best_accuracy",
    "final_metric": "final_accuracy",
    "peak_memory_mb": "peak_memory_mb",
    "screen_s": "screen_s",  # the throughput pre-screen's own time (tuner/train/screen.py)
    "screen_projected_s": "screen_projected_s",
    "data_wait_share": "data_wait_share",  # a Dataset task: share of training time waiting on the loader
}


def now_ms() -> int:
    return int(time.time() * 1000)


def run_name(number: int, config: dict[str, Any], confirm_of: int | None = None, retry_of: int | None = None) -> str:
    """What the list of runs shows: the trial number, what it repeats, and the key choices."""
    marks = [
        f"confirms {confirm_of}" if confirm_of is not None else "",
        f"re-run of {retry_of}" if retry_of is not None else "",
    ]
    return f"trial {number}" + "".join(f" ({m})" for m in marks if m) + f" · {TrialConfig.from_stored(config).short()}"


def final_metrics(attrs: dict[str, Any], value: float | None) -> dict[str, float]:
    out = {FIGURES[k]: float(v) for k, v in attrs.items() if k in FIGURES and v is not None}
    if value is not None:
        out["objective_s"] = float(value)
    return out


# A metric point: (key, value, step, timestamp in ms).
Point = tuple[str, float, int, int]


def evaluation_points(ev: Evaluation, timestamp: int) -> list[Point]:
    """One evaluation as metrics stepped by samples seen, so trials of any batch size line up."""
    values = {
        "accuracy": ev.metric,
        "loss": ev.loss,
        "train_loss": ev.train_loss,
        "train_s": ev.train_s,
        "wall_s": ev.wall_s,
        "robust_s": ev.robust_s,
        "cpu_s": ev.cpu_s,
    }
    return [(k, float(v), ev.samples, timestamp) for k, v in values.items() if v is not None]


def curve_points(curve: Curve | None, timestamp: int, skip_steps: set[int]) -> list[Point]:
    """A finished trial's stored curve as metric points (a series an older study lacks is left out)."""
    if curve is None:
        return []
    series = {"accuracy": curve.metric, "loss": curve.loss, "train_s": curve.train_s, "wall_s": curve.wall_s}
    out: list[Point] = []
    for i, step in enumerate(curve.samples):
        if step not in skip_steps:
            out.extend((name, float(v[i]), int(step), timestamp) for name, v in series.items() if i < len(v) and v[i] is not None)
    return out


def study_uid(study: optuna.Study, settle_s: float = 0.0) -> str:
    """A stable id for this Optuna study, so a new study with an old name gets its own parent run.

    Workers that start a new study together each write one; after ``settle_s`` every one
    reads back the same (last) write.
    """
    uid = tracking_uid(study)
    if uid is None:
        write_tracking_uid(study, uuid.uuid4().hex)
        time.sleep(settle_s)
        uid = tracking_uid(study)
    return uid


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


def parent_summary(study: optuna.Study, best: TrialRecord | None) -> tuple[dict[str, Any] | None, dict[str, str], str]:
    """The best configuration as an experiment, best.* tags, and the parent's description."""
    objective = study_objective(study)
    target, clock = (objective.target, objective.clock) if objective is not None else (None, None)
    if best is None:
        return None, {}, f"Study `{study.study_name}`: no trial has reached {target} yet."
    tags = {"tuner.best_trial": str(best.number), **{f"best.{k}": str(v) for k, v in shown_params(study, best.config).items()}}
    note = (
        f"Study `{study.study_name}`: best trial {best.number}, **{best.value:.3f} s** to {target} on the "
        f"{clock} clock ({best.config.short()}). Plots and best.yaml are in the artifacts."
    )
    return best_experiment(study, best), tags, note
