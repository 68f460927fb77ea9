"""Pruners and capping on made-up curves in in-memory studies (nothing trains), then two real workers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from conftest import DEFAULT_SPACE, write
from optuna.trial import TrialState, create_trial

from tuner.study.experiment.load import Objective, Pruning
from tuner.study.record import CONFIRM_OF
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.opening import open_study
from tuner.study.run.runner import run_study
from tuner.study.stopping import EqualTimePruner, bucket_errors, make_pruner
from tuner.study.stopping.hooks import PruningHooks
from tuner.study.stopping.incumbent import Incumbent
from tuner.study.stopping.pruner_registry import PRUNER_KINDS
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

TARGET = 0.9
CAP = 4.0
OBJECTIVE = Objective(target=TARGET, eval_every_samples=100, cap_s=CAP, clock="robust")
# Buckets of 0.1 s, no pruning before 0.3 s, five finished trials before any judgement.
PRUNING = Pruning(warmup_s=0.3, bucket_s=0.1, min_trials=5, cap_slack=None)


def linear(rate: float, every: float, n: int = 40, start: float = 0.1) -> tuple[list[float], list[float]]:
    """Evaluation times ``every`` seconds apart, accuracy rising by ``rate`` per second."""
    times = [round(every * (i + 1), 6) for i in range(n)]
    return times, [min(0.99, start + rate * t) for t in times]


def study_with(pruner: optuna.pruners.BasePruner | None = None) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # A fixed name: Hyperband assigns trials to brackets by a hash of name and number.
    return optuna.create_study(study_name="made-up", direction="minimize", pruner=pruner)


def add_finished(
    study: optuna.Study, times: list[float], metrics: list[float], outcome: str = "reached", steps: str = "time", bucket_s: float = 0.1
) -> None:
    """A finished trial as the study stores it: its curve, outcome and intermediate values.

    ``steps="time"`` reports time buckets padded to the cap (what PruningHooks writes);
    ``steps="evaluation"`` reports one value per evaluation (what a user writes by hand).
    """
    end = next((i + 1 for i, m in enumerate(metrics) if m >= TARGET), len(metrics)) if outcome == "reached" else len(metrics)
    times, metrics = times[:end], metrics[:end]
    if steps == "time":
        last = round(CAP / bucket_s)
        values = dict(enumerate(bucket_errors(times, metrics, bucket_s, 0, last)))
    else:
        values = {i: 1 - m for i, m in enumerate(metrics)}
    state = TrialState.PRUNED if outcome in ("pruned", "capped") else TrialState.COMPLETE
    value = None if state is TrialState.PRUNED else (times[-1] if outcome == "reached" else CAP * (1 + TARGET - max(metrics)))
    attrs = {"outcome": outcome, "curve": {"robust_s": times, "train_s": times, "wall_s": times, "metric": metrics}}
    study.add_trial(create_trial(state=state, value=value, user_attrs=attrs, intermediate_values=values))


def add_references(study: optuna.Study, n: int = 5, steps: str = "time") -> None:
    """``n`` ordinary trials: an evaluation every 0.1 s, reaching 0.9 near 1 s."""
    for i in range(n):
        add_finished(study, *linear(0.8 + 0.02 * i, 0.1), steps=steps)


def drive(study: optuna.Study, hooks: PruningHooks, times: list[float], metrics: list[float], user_attrs: dict | None = None) -> str:
    """Run one made-up trial through the hooks as TrialObjective does; returns its outcome."""
    trial = study.ask()
    for key, value in (user_attrs or {}).items():
        trial.set_user_attr(key, value)
    hooks.trial_started(trial, TrialConfig())
    outcome, used = Outcome.TIMEOUT, len(times)
    for i, (t, m) in enumerate(zip(times, metrics), start=1):
        if m >= TARGET:  # TimeToTarget decides a crossing before any listener runs
            outcome, used = Outcome.REACHED, i
            break
        stop = hooks.on_evaluation(None, Evaluation(100 * i, i, m, None, None, t, t, t))
        if stop is not None:
            outcome, used = stop.outcome, i
            trial.set_user_attr("reason", stop.reason)
            break
    times, metrics = times[:used], metrics[:used]
    trial.set_user_attr("outcome", outcome.value)
    trial.set_user_attr("curve", {"robust_s": times, "train_s": times, "wall_s": times, "metric": metrics})
    stopped = outcome is Outcome.PRUNED  # a capped trial completes with its time so far (tuner/study/scoring/censoring.py)
    value = times[-1] if outcome in (Outcome.REACHED, Outcome.CAPPED) else CAP * (1 + TARGET - max(metrics))
    hooks.trial_finished(trial, TrialResult(outcome, "", TARGET, best_metric=max(metrics)), value)
    study.tell(trial, None if stopped else value, state=TrialState.PRUNED if stopped else TrialState.COMPLETE)
    return outcome.value


def hooks_for(study: optuna.Study, pruning: Pruning = PRUNING, refresh_s: float = 0.0) -> PruningHooks:
    hooks = PruningHooks(pruning, OBJECTIVE, refresh_s=refresh_s)
    hooks.study_started(study, None)
    return hooks


# -- equal-time pruning ---------------------------------------------------------------------
def test_equal_time_prunes_what_trails_the_median_at_the_same_time() -> None:
    study = study_with()
    add_references(study)
    pruner = EqualTimePruner(bucket_s=0.1, warmup_s=0.3, min_trials=5)
    # By 0.5 s the others had reached 0.5 to 0.6.
    behind = pruner.judge(study, 0.5, 0.3)
    assert behind.prune and behind.n_reference == 5 and behind.reference == pytest.approx(0.52, abs=0.01)
    assert "below" in behind.reason(50, "robust")
    assert not pruner.judge(study, 0.5, 0.7).prune
    # Before the warm-up nothing is judged, however bad.
    assert pruner.judge(study, 0.2, 0.0) is None


def test_equal_time_waits_for_enough_finished_trials() -> None:
    study = study_with()
    add_references(study, n=4)
    pruner = EqualTimePruner(bucket_s=0.1, warmup_s=0.3, min_trials=5)
    assert pruner.judge(study, 0.5, 0.1) is None
    add_references(study, n=1)
    assert pruner.judge(study, 0.5, 0.1).prune


def test_percentile_sets_how_many_survive() -> None:
    study = study_with()
    for rate in (0.5, 0.6, 0.7, 0.8, 0.9):
        add_finished(study, *linear(rate, 0.1))
    # At 1 s the others had 0.6, 0.7, 0.8, 0.9 (reached) and 0.9: 0.75 is just under the median.
    median = EqualTimePruner(bucket_s=0.1, warmup_s=0.3, min_trials=5)
    keep_most = EqualTimePruner(bucket_s=0.1, percentile=90, warmup_s=0.3, min_trials=5)
    keep_few = EqualTimePruner(bucket_s=0.1, percentile=25, warmup_s=0.3, min_trials=5)
    assert median.judge(study, 1.0, 0.75).prune
    assert not keep_most.judge(study, 1.0, 0.75).prune
    assert keep_few.judge(study, 1.0, 0.85).prune


def test_reached_trials_hold_past_their_end_but_stopped_ones_do_not() -> None:
    study = study_with()
    for _ in range(5):
        add_finished(study, *linear(0.8, 0.1))  # reached 0.9 at 1.0 s, then stopped
    pruner = EqualTimePruner(bucket_s=0.1, warmup_s=0.3, min_trials=5)
    # At 3 s a trial at 0.6 is far behind trials that reached 0.9 long before.
    assert pruner.judge(study, 3.0, 0.6).prune

    stopped = study_with()
    for _ in range(5):
        times, metrics = linear(0.8, 0.1, n=5)
        add_finished(stopped, times, metrics, outcome="pruned")  # what they would have reached after 0.5 s is unknown
    assert pruner.judge(stopped, 0.4, 0.1).prune
    assert pruner.judge(stopped, 3.0, 0.1) is None


def test_a_trial_fast_per_step_but_slow_per_second() -> None:
    """Its accuracy per evaluation beats the others', but each evaluation interval takes 5x as long.

    By step it looks better than the median; by time it is far behind trials that reached
    the target long ago. Only equal-time comparison stops it.
    """
    slow_times, slow_metrics = [0.5 * i for i in (1, 2, 3)], [0.25, 0.4, 0.55]  # 5x slower per step, better per step
    median = optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)

    by_step = study_with(median)
    add_references(by_step, steps="evaluation")  # at evaluation 3 they have about 0.35
    trial = by_step.ask()
    for i, m in enumerate(slow_metrics):
        trial.report(1 - m, i)
    assert not median.prune(by_step, by_step._storage.get_trial(trial._trial_id))  # misjudged: kept

    by_time = study_with(median)
    add_references(by_time, steps="time")  # by 1.5 s they had all reached 0.9
    trial = by_time.ask()
    step = int(slow_times[-1] / 0.1)
    for k, v in enumerate(bucket_errors(slow_times, slow_metrics, 0.1, 0, step)):
        trial.report(v, k)
    frozen = by_time._storage.get_trial(trial._trial_id)
    assert median.prune(by_time, frozen)  # Optuna's median, fed time buckets, gets it right
    equal_time = EqualTimePruner(bucket_s=0.1, warmup_s=0.3, min_trials=5)
    assert equal_time.prune(by_time, frozen)  # through Optuna's interface
    assert equal_time.judge(by_time, slow_times[-1], max(slow_metrics)).prune  # the live call


def test_a_trial_slow_per_step_but_fast_per_second_is_kept() -> None:
    """The converse: worse per evaluation, but its evaluations come 4x as often (small, cheap steps)."""
    quick_times, quick_metrics = [0.025 * i for i in range(1, 21)], [0.1 + 0.03 * i for i in range(1, 21)]
    median = optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)
    by_step = study_with(median)
    add_references(by_step, steps="evaluation")
    trial = by_step.ask()
    for i, m in enumerate(quick_metrics[:8]):
        trial.report(1 - m, i)
    assert median.prune(by_step, by_step._storage.get_trial(trial._trial_id))  # misjudged: stopped

    by_time = study_with()
    add_references(by_time)
    equal_time = EqualTimePruner(bucket_s=0.1, warmup_s=0.3, min_trials=5)
    assert not equal_time.judge(by_time, quick_times[-1], max(quick_metrics)).prune


# -- every pruner by name, through the hooks ---------------------------------------------------
# Every declared pruner but auto (it builds equal_time's) and none (below: it lets a flat trial run).
@pytest.mark.parametrize("name", [n for n in PRUNER_KINDS if n not in ("auto", "none")])
def test_each_pruner_stops_a_flat_trial_and_keeps_a_fast_one(name: str) -> None:
    pruning = Pruning(name=name, percentile=50, warmup_s=0.2, bucket_s=0.1, min_trials=3, cap_slack=None)
    study = study_with(make_pruner(pruning, OBJECTIVE))
    hooks = hooks_for(study, pruning)
    for i in range(9):  # ordinary trials reaching 0.9 near 1 s, all run through the pruner
        assert drive(study, hooks, *linear(0.78 + 0.01 * i, 0.1)) in ("reached", "pruned")
    assert drive(study, hooks, *linear(0.9, 0.1, start=0.2)) == "reached"  # better than all of them
    assert drive(study, hooks, *linear(0.0, 0.1, start=0.2)) == "pruned"  # flat at 0.2


def test_no_pruner_lets_a_flat_trial_run_to_its_end() -> None:
    pruning = Pruning(name="none", bucket_s=0.1, cap_slack=None)
    study = study_with(make_pruner(pruning, OBJECTIVE))
    hooks = hooks_for(study, pruning)
    for _ in range(6):
        drive(study, hooks, *linear(0.8, 0.1))
    assert drive(study, hooks, *linear(0.0, 0.1, start=0.2)) == "timeout"


def test_optuna_pruners_get_every_time_step_and_early_finishers_are_padded() -> None:
    pruning = Pruning(name="median", bucket_s=0.1, cap_slack=None)
    study = study_with(make_pruner(pruning, OBJECTIVE))
    hooks = hooks_for(study, pruning)
    drive(study, hooks, [0.05, 0.23, 0.31], [0.3, 0.5, 0.95])
    values = study.trials[0].intermediate_values
    # Steps are buckets of 0.1 s: 0.23 s counts from step 3 (0.3 s); the final best holds to the cap.
    assert sorted(values) == list(range(round(CAP / 0.1) + 1))
    assert [round(values[k], 3) for k in (0, 1, 2, 3, 4, 40)] == [1.0, 0.7, 0.7, 0.5, 0.5, 0.5]


def test_equal_time_writes_one_value_only_for_a_trial_it_stops() -> None:
    pruning = Pruning(bucket_s=0.1, warmup_s=0.3, min_trials=5, cap_slack=None)
    study = study_with(make_pruner(pruning, OBJECTIVE))
    hooks = hooks_for(study, pruning)
    for _ in range(5):
        drive(study, hooks, *linear(0.8, 0.1))
    assert all(not t.intermediate_values for t in study.trials)  # nothing written per evaluation
    assert drive(study, hooks, *linear(0.0, 0.1, start=0.2)) == "pruned"
    pruned = study.trials[-1]
    assert len(pruned.intermediate_values) == 1 and pruned.value == pytest.approx(0.8)  # TPE ranks pruned trials by these
    assert pruned.user_attrs["reason"].endswith("which the best 50% of 5 other trials had reached by then")


# -- capping at the incumbent -------------------------------------------------------------------
def test_a_trial_past_the_incumbent_times_the_slack_is_capped() -> None:
    pruning = Pruning(name="none", cap_slack=1.5, bucket_s=0.1)
    study = study_with()
    hooks = hooks_for(study, pruning)
    assert drive(study, hooks, *linear(0.8, 0.1)) == "reached"  # 1.0 s: the incumbent
    assert drive(study, hooks, *linear(0.4, 0.1)) == "capped"  # would reach at 2 s
    assert max(study.trials[-1].user_attrs["curve"]["robust_s"]) == pytest.approx(1.5)
    assert drive(study, hooks, *linear(0.6, 0.1)) == "reached"  # 1.4 s: within the slack
    # A confirmation run measures: never capped, never pruned.
    assert drive(study, hooks, *linear(0.4, 0.1), user_attrs={CONFIRM_OF: 0, "seed": 7}) == "reached"


def test_capping_reason_names_the_incumbent() -> None:
    study = study_with()
    hooks = hooks_for(study, Pruning(name="none", cap_slack=1.2))
    drive(study, hooks, *linear(0.8, 0.1))
    trial = study.ask()
    hooks.trial_started(trial, TrialConfig())
    stop = hooks.on_evaluation(None, Evaluation(100, 1, 0.2, None, None, 1.3, 1.3, 1.3))
    assert stop.outcome is Outcome.CAPPED and stop.bound_s == pytest.approx(1.2)
    assert stop.reason == "robust clock at 1.300 s passed 1.2 x the best time to target so far, 1.000 s (trial 0): it can no longer win"


def test_incumbent_is_read_at_most_every_refresh() -> None:
    now = [0.0]
    study = study_with()
    incumbent = Incumbent(refresh_s=2.0, clock=lambda: now[0])
    assert incumbent.get(study) is None
    add_finished(study, *linear(0.8, 0.1))
    now[0] = 1.9
    assert incumbent.get(study) is None  # cached
    now[0] = 2.0
    assert incumbent.get(study).value == pytest.approx(1.0)
    add_finished(study, *linear(1.6, 0.1))  # reaches at 0.5 s; timed-out trials never count
    add_finished(study, *linear(0.1, 0.1, n=5), outcome="timeout")
    now[0] = 4.1
    assert (incumbent.get(study).value, incumbent.get(study).number) == (pytest.approx(0.5), 1)


def test_pruner_settings_are_checked_with_the_allowed_values(tmp_path: Path) -> None:
    from tuner.errors import ConfigError

    for text, key, allowed in (
        (
            "pruner: {name: asha}\n",
            "pruner.name",
            "one of " + ", ".join(PRUNER_KINDS),
        ),
        ("pruner: {percentile: 100}\n", "pruner.percentile", "a number between 0 and 100 exclusive"),
        ("pruner: {cap_slack: 0.9}\n", "pruner.cap_slack", "a number >= 1, or null (no capping)"),
        ("pruner: {bucket: 1}\n", "pruner.bucket", "one of name, percentile, warmup_s, min_trials, cap_slack, bucket_s"),
        ("confirm: {seeds: 0}\n", "confirm.seeds", "an integer >= 1"),
    ):
        with pytest.raises(ConfigError) as info:
            load_experiment(write(tmp_path / "e.yaml", "task: synthetic\n" + text))
        assert (info.value.key, info.value.allowed) == (key, allowed)
    exp = load_experiment(write(tmp_path / "e.yaml", "task: synthetic\npruner: {name: hyperband, cap_slack: null}\n"))
    assert isinstance(make_pruner(exp.pruner, exp.objective), optuna.pruners.HyperbandPruner)
    assert exp.pruner.bucket_for(20.0) == 1.0 and exp.pruner.warmup_for(20.0) == 2.0


# -- two workers on one SQLite study ------------------------------------------------------------
WORKER = """
name: shared
task: synthetic
search_space:
  file: {space}
  override: {{optimizer: adam, lr: {lr}, schedule: constant, batch_size: 64, precision: fp32, width: 1.0, beta1: 0.9, beta2: 0.999}}
  remove: [amsgrad]
objective: {{target: 0.9, eval_every_samples: 256, cap_s: 30.0}}
pruner: {{name: none, cap_slack: 1.2}}
confirm: {{after_search: false}}
budget: {{n_trials: 2}}
trainer: {{threads: 1}}
storage: sqlite:///{db}
"""


@pytest.mark.e2e
def test_capping_reads_the_incumbent_another_worker_found(tmp_path: Path) -> None:
    """A slow trial in one process is capped by a time found in another, through the SQLite file."""
    db = tmp_path / "shared.db"
    slow = write(tmp_path / "slow.yaml", WORKER.format(space=DEFAULT_SPACE, lr=1.0e-7, db=db))  # never reaches 0.9
    fast = write(tmp_path / "fast.yaml", WORKER.format(space=DEFAULT_SPACE, lr=3.0e-2, db=db))
    open_study(load_experiment(slow))  # created once, before the workers (see API notes on sqlite races)
    env = {**os.environ, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "tuner", "run", str(slow), "--quiet", "--no-tracking"]
    worker = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        study = optuna.load_study(study_name="shared", storage=f"sqlite:///{db}")
        deadline = time.monotonic() + 60
        while not study.get_trials(states=(TrialState.RUNNING,)):  # the slow trial is under way
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        run_study(load_experiment(fast))  # this process is the second worker
        out, _ = worker.communicate(timeout=60)
    finally:
        worker.kill()
    assert worker.returncode == 0, out

    trials = optuna.load_study(study_name="shared", storage=f"sqlite:///{db}").get_trials()
    slow_trial = trials[0]
    fast_trials = [t for t in trials if t.user_attrs.get("outcome") == "reached"]
    assert slow_trial.user_attrs["outcome"] == "capped" and slow_trial.state is TrialState.COMPLETE, out
    assert slow_trial.value >= 1.2 * min(t.value for t in fast_trials)  # scored at its clock when capped
    named = int(re.search(r"\(trial (\d+)\)", slow_trial.user_attrs["reason"]).group(1))
    assert named in {t.number for t in fast_trials}
    # It started before any fast trial ended, and was capped before its own 30 s cap (the wall clock,
    # which a loaded machine stretches: 22 s was seen, about 10 s idle).
    assert slow_trial.datetime_start < min(t.datetime_complete for t in fast_trials)
    assert (slow_trial.datetime_complete - slow_trial.datetime_start).total_seconds() < 30
