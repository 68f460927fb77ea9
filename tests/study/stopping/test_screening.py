"""The study's side of the throughput pre-screen (tuner/study/stopping/screen.py): the rule it hands a
trial, the score of a screened trial, and whole studies on SQLite with MLflow tracking."""

from __future__ import annotations

import io
from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment
from mlflow import MlflowClient
from optuna.trial import TrialState, create_trial

from tuner.errors import ConfigError
from tuner.study.experiment.load import Objective, Pruning, Screen
from tuner.study.record import COMPLETE, TrialRecord, confirmation_attrs, records
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.opening import open_study
from tuner.study.run.progress import outcomes_line
from tuner.study.run.runner import run_study
from tuner.study.scoring.censoring import objective_value
from tuner.study.stopping.screen import ScreenHooks, screen_rule
from tuner.track.trial_runs import MlflowTracking
from tuner.train.result import Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

OBJECTIVE = Objective(target=0.9, eval_every_samples=2000, cap_s=6.0, clock="robust")
ON = Screen(warmup_steps=2, steps=5, min_reached=2)


def reached(study: optuna.Study, value: float, samples: int, lr: float, batch: int = 64) -> None:
    """A made-up trial that reached the target in ``value`` seconds after ``samples`` samples."""
    config = TrialConfig(lr=lr, batch_size=batch).as_dict()
    attrs = {"outcome": "reached", "reason": "", "target": 0.9, "samples_to_target": samples, "config": config}
    study.add_trial(create_trial(value=value, user_attrs=attrs))


def in_memory(*trials: tuple[float, int]) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize")
    for n, (value, samples) in enumerate(trials):
        reached(study, value, samples, lr=0.01 + n / 1000)  # each its own configuration
    return study


def test_the_rule_holds_the_incumbent_times_the_slack_and_the_fewest_samples_on_the_cadence() -> None:
    study = in_memory((2.0, 9000), (0.8, 14100), (3.0, 4100))
    rule = screen_rule(records(study, COMPLETE), ON, 1.2, OBJECTIVE.eval_every_samples)
    assert rule is not None
    assert rule.bound_s == pytest.approx(0.8 * 1.2)
    assert rule.min_samples == 4000  # 4100 was seen at the evaluation due at 4000: a smaller batch crosses there
    assert (rule.warmup_steps, rule.steps) == (2, 5)
    assert "1.2 x the best time to target so far, 0.800 s (trial 1)" == rule.against


def test_no_rule_until_enough_configurations_reached_the_target() -> None:
    study = in_memory((0.8, 4000))
    assert screen_rule(records(study, COMPLETE), ON, 1.2, 2000) is None
    assert screen_rule(records(study, COMPLETE), Screen(min_reached=1), 1.2, 2000) is not None
    reached(study, 0.9, 3000, lr=0.01)  # a second run of the same configuration (a race run) is not a second one
    assert screen_rule(records(study, COMPLETE), ON, 1.2, 2000) is None


def test_a_trial_is_judged_by_the_samples_of_batches_no_larger_than_its_own() -> None:
    # Samples to target grow with the batch: batch 256's 4000 say nothing about what batch 32 needs.
    study = in_memory()
    for n, (batch, samples) in enumerate([(256, 4000), (256, 6000), (64, 12000), (64, 14000)]):
        reached(study, 1.0 + n, samples, lr=0.02 + n / 1000, batch=batch)
    trials = records(study, COMPLETE)
    assert screen_rule(trials, ON, 1.2, 2000, batch=32) is None  # nothing reached at 32 or below
    assert screen_rule(trials, ON, 1.2, 2000, batch=64).min_samples == 12000
    assert screen_rule(trials, ON, 1.2, 2000, batch=512).min_samples == 4000


def hooks_for(
    study: optuna.Study, screen: Screen | None = ON, pruning: Pruning | None = None, objective: Objective = OBJECTIVE
) -> ScreenHooks:
    hooks = ScreenHooks(screen, pruning or Pruning(), objective)
    hooks.study_started(study, None)
    return hooks


def test_measured_runs_no_capping_and_other_objectives_are_not_screened_and_a_growing_batch_is_on_full_steps() -> None:
    study = in_memory((0.8, 4000), (1.0, 6000))
    hooks = hooks_for(study)
    hooks.trial_started(study.ask(), TrialConfig())
    assert hooks.screen_rule() is not None
    hooks.trial_started(study.ask(), TrialConfig(batch_size=256, ramp_start=0.25, ramp_frac=0.3))
    rule = hooks.screen_rule()  # its first steps run a quarter of its batch: projected on full steps
    assert rule is not None and rule.full_batch == 256
    by_batch = hooks_for(study, screen=Screen(min_reached=2, samples_from="no_larger_batch"))
    by_batch.trial_started(study.ask(), TrialConfig(batch_size=128, ramp_start=0.25, ramp_frac=0.3))
    assert by_batch.screen_rule() is None  # it starts at batch 32, below every batch that reached the target
    hooks.trial_started(study.ask(), TrialConfig(batch_size=128, ramp_start=0.25, ramp_frac=0.3))
    assert hooks.screen_rule() is not None  # any batch's samples, by default
    confirmation = study.ask()
    for key, value in confirmation_attrs(0, 7).items():
        confirmation.set_user_attr(key, value)
    hooks.trial_started(confirmation, TrialConfig())
    assert hooks.screen_rule() is None
    for off in (
        hooks_for(study, screen=None),
        hooks_for(study, pruning=Pruning(cap_slack=None)),
        hooks_for(study, objective=Objective(minimize="cost")),
    ):
        off.trial_started(study.ask(), TrialConfig())
        assert off.screen_rule() is None


def screened_result(projected_s: float, bound_s: float) -> TrialResult:
    return TrialResult(
        Outcome.SCREENED,
        "screened",
        0.9,
        train_s=0.05,
        steps=7,
        samples=224,
        screen_s=0.05,
        screen_projected_s=projected_s,
        bound_s=bound_s,
    )


def test_a_screened_trial_scores_its_projection_never_under_the_incumbent() -> None:
    assert objective_value(screened_result(4.1, 0.96), OBJECTIVE) == pytest.approx(4.1)
    assert objective_value(screened_result(0.9, 0.96), OBJECTIVE) == pytest.approx(0.96)  # the bound floors it
    # Past the cap: it would have missed, and a miss scores at least the cap.
    assert objective_value(screened_result(40.0, 0.96), OBJECTIVE) == pytest.approx(OBJECTIVE.cap_s)


def test_the_experiment_turns_it_off_and_checks_its_numbers(tmp_path: Path) -> None:
    assert load_experiment(synthetic_experiment(tmp_path / "screen_on.yaml")).screen == Screen()
    assert load_experiment(synthetic_experiment(tmp_path / "screen_off.yaml", "screen: null\n")).screen is None
    with pytest.raises(ConfigError) as err:
        load_experiment(synthetic_experiment(tmp_path / "bad.yaml", "screen:\n  steps: 0\n"))
    assert "screen.steps" in str(err.value) and "an integer >= 1" in str(err.value) and "bad.yaml" in str(err.value)
    with pytest.raises(ConfigError) as err:
        load_experiment(synthetic_experiment(tmp_path / "bad2.yaml", "screen:\n  samples_from: smaller\n"))
    assert "screen.samples_from" in str(err.value) and "any_batch, no_larger_batch" in str(err.value)


# A made-up incumbent no configuration can beat: three trials that reached the target in
# 0.05 s after 256,000 samples, which take any configuration of the space far longer. The
# screen decides after 2 timed steps, before the first evaluation (256 samples: 2 steps of
# 128) could reach the target, and long before capping at 0.06 s would stop the trial.
# Screening forecasts against the incumbent x cap_slack, so capping is on (1.2, the default).
FAST_SCREEN = "screen:\n  warmup_steps: 0\n  steps: 2\n  min_reached: 3\npruner:\n  cap_slack: 1.2\n"


def study_against_a_made_up_incumbent(tmp_path: Path, extra: str, uri: str) -> optuna.Study:
    experiment = load_experiment(synthetic_experiment(tmp_path / "screen.yaml", extra, n_trials=5)).with_overrides(tracking_uri=uri)
    study = open_study(experiment)
    for n in range(3):
        reached(study, 0.05, 256_000, lr=0.004 + n / 1000, batch=16)  # no larger than any batch the space starts at
    return run_study(experiment, hooks=[MlflowTracking(uri, source=str(tmp_path / "screen.yaml"), stream=io.StringIO())])


def test_a_study_screens_what_cannot_beat_its_incumbent_and_mlflow_shows_it_killed(tmp_path: Path, tracking_uri: str) -> None:
    study = study_against_a_made_up_incumbent(tmp_path, FAST_SCREEN, tracking_uri)
    trials = [r for r in records(study) if r.number >= 3]
    assert len(trials) == 2
    client = MlflowClient(tracking_uri)
    for r in trials:
        assert r.outcome is Outcome.SCREENED, r.reason
        assert r.state is TrialState.COMPLETE and r.value >= 0.05 * 1.2  # scored, never better than the incumbent
        assert r.result.steps == 2 and r.result.screen_s is not None
        assert r.value == pytest.approx(min(r.result.screen_projected_s, 2.0))  # past the cap (2 s): the cap
        run = client.get_run(r.mlflow_run_id) if r.mlflow_run_id else None
        if run is None:  # the run's id reaches Optuna only if the trial outlasted its opening
            [run] = client.search_runs(
                [client.get_experiment_by_name(study.study_name).experiment_id], f"tags.`tuner.trial_number` = '{r.number}'"
            )
        assert run.info.status == "KILLED"
        assert run.data.tags["tuner.train.result"] == "screened"
        assert run.data.metrics["screen_s"] == pytest.approx(r.result.screen_s)
    assert "2 screened after" in outcomes_line(study) and "3 reached" in outcomes_line(study)


def test_with_the_screen_off_no_trial_is_screened(tmp_path: Path, tracking_uri: str) -> None:
    study = study_against_a_made_up_incumbent(tmp_path, "screen: null\n", tracking_uri)
    outcomes = [TrialRecord.of(t).outcome for t in study.trials[3:]]
    assert len(outcomes) == 2 and Outcome.SCREENED not in outcomes
    assert all(TrialRecord.of(t).result.screen_s is None for t in study.trials[3:])
