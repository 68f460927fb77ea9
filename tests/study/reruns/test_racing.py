"""Racing on seeds during the search, on made-up trials in an in-memory study (nothing trains)."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from tuner.study import record
from tuner.study.experiment.load import Race
from tuner.study.record import TrialRecord
from tuner.study.reruns.racing import RacingHooks, best_in_study, race_seeds
from tuner.study.stopping.incumbent import Incumbent
from tuner.train.result import Outcome, TrialResult

CAP = 6.0
TARGET = 0.9
LR = {"lr": FloatDistribution(1e-3, 1e-1, log=True)}
RACE = Race(margin=1.25, seeds=2)


def in_memory() -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(direction="minimize")


def attrs(lr: float, outcome: str = "reached", **extra: object) -> dict:
    return {"config": {"optimizer": "adam", "lr": lr}, "outcome": outcome, "reason": "", "target": TARGET, **extra}


def finished(study: optuna.Study, lr: float, value: float, outcome: str = "reached", **extra: object) -> int:
    study.add_trial(create_trial(params={"lr": lr}, distributions=LR, value=value, user_attrs=attrs(lr, outcome, **extra)))
    return study.trials[-1].number


def hooks_on(study: optuna.Study, race: Race | None = RACE) -> RacingHooks:
    hooks = RacingHooks(race, base_seed=0)
    hooks.study_started(study, None)
    return hooks


def queued(study: optuna.Study) -> list[TrialRecord]:
    return record.records(study, record.QUEUED)


def live_trial(study: optuna.Study, lr: float, outcome: str = "reached") -> optuna.Trial:
    study.enqueue_trial({"lr": lr})
    trial = study.ask(LR)
    for key, v in attrs(lr, outcome).items():
        trial.set_user_attr(key, v)
    return trial


def finish_live(study: optuna.Study, hooks: RacingHooks, trial: optuna.Trial, value: float, outcome: str = "reached") -> None:
    hooks.trial_finished(trial, TrialResult(Outcome(outcome), "", TARGET), value)
    study.tell(trial, value)


def test_a_configuration_near_the_incumbent_is_raced_on_more_seeds() -> None:
    study = in_memory()
    finished(study, 0.01, 1.0)  # the incumbent
    hooks = hooks_on(study)
    near = live_trial(study, 0.02)
    finish_live(study, hooks, near, 1.2)  # within 1.25 x 1.0
    runs = queued(study)
    assert [(r.race_of, r.seed) for r in runs] == [(near.number, s) for s in race_seeds(0, 2)]
    # A race run trains the same configuration: the sampler hands back the queued parameters.
    taken = study.ask()
    assert taken.suggest_float("lr", 1e-3, 1e-1, log=True) == 0.02


def test_a_configuration_far_from_the_incumbent_is_not_raced() -> None:
    study = in_memory()
    finished(study, 0.01, 1.0)
    hooks = hooks_on(study)
    finish_live(study, hooks, live_trial(study, 0.03), 1.3)  # past 1.25 x 1.0
    finish_live(study, hooks, live_trial(study, 0.04, "timeout"), CAP * 1.5)
    assert queued(study) == []


def test_a_configuration_is_raced_once_and_race_runs_do_not_race() -> None:
    study = in_memory()
    hooks = hooks_on(study)
    first = live_trial(study, 0.02)
    finish_live(study, hooks, first, 1.0)  # the first hit: it is the incumbent, raced
    assert len(queued(study)) == 2
    # The race runs themselves come close too; they queue nothing more.
    for run in queued(study):
        trial = study.ask()
        assert TrialRecord.of(trial).race_of == first.number
        for key, v in attrs(0.02).items():
            trial.set_user_attr(key, v)
        finish_live(study, hooks, trial, 0.95)
    assert queued(study) == []
    # The same configuration drawn again by the sampler is not raced twice.
    finish_live(study, hooks, live_trial(study, 0.02), 0.9)
    assert queued(study) == []


def test_race_off_queues_nothing() -> None:
    study = in_memory()
    hooks = hooks_on(study, None)
    finish_live(study, hooks, live_trial(study, 0.02), 1.0)
    assert queued(study) == []


def test_the_incumbent_is_the_best_median_once_raced() -> None:
    study = in_memory()
    lucky = finished(study, 0.05, 0.6)  # a lucky draw...
    finished(study, 0.05, 1.4, race_of=lucky, seed=race_seeds(0, 2)[0])
    finished(study, 0.05, 1.5, race_of=lucky, seed=race_seeds(0, 2)[1])
    steady = finished(study, 0.02, 0.9)
    finished(study, 0.02, 0.95, race_of=steady, seed=race_seeds(0, 2)[0])
    finished(study, 0.02, 1.0, race_of=steady, seed=race_seeds(0, 2)[1])
    best = best_in_study(study)
    assert (best.trial.number, best.median, best.spread) == (steady, pytest.approx(0.95), (0.9, 1.0))
    # Capping reads the same incumbent: the steady configuration's median, not the lucky draw.
    inc = Incumbent(refresh_s=0.0).get(study)
    assert (inc.number, inc.value) == (steady, pytest.approx(0.95))


def test_a_miss_among_the_race_runs_counts_at_its_censored_value() -> None:
    study = in_memory()
    flaky = finished(study, 0.05, 0.6)
    finished(study, 0.05, CAP * 1.1, "timeout", race_of=flaky, seed=1)
    finished(study, 0.05, CAP * 1.2, "timeout", race_of=flaky, seed=2)
    steady = finished(study, 0.02, 1.1)
    assert best_in_study(study).trial.number == steady


def test_race_settings_load_checked_and_null_turns_racing_off(tmp_path) -> None:
    from conftest import write

    from tuner.errors import ConfigError
    from tuner.study.run.experiment_file import load_experiment

    assert load_experiment(write(tmp_path / "default.yaml", "seed: 0\n")).race == Race(margin=1.25, seeds=2)
    assert load_experiment(write(tmp_path / "off.yaml", "race: null\n")).race is None
    assert load_experiment(write(tmp_path / "on.yaml", "race: {margin: 1.1, seeds: 3}\n")).race == Race(1.1, 3)
    bad = write(tmp_path / "bad.yaml", "race: {margin: 0.9}\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(bad)
    assert str(err.value) == f"{bad}: race.margin: expected a number >= 1, got 0.9"


def test_a_study_searches_its_trial_budget_and_races_on_top(tmp_path) -> None:
    from conftest import synthetic_experiment

    from tuner.study.run.experiment_file import load_experiment
    from tuner.study.run.runner import run_study

    exp = load_experiment(synthetic_experiment(tmp_path / "race.yaml", n_trials=4, race=True))
    for wanted in (4, 6):  # run, then resume to a larger budget
        study = run_study(exp.with_overrides(n_trials=wanted))
        trials = record.records(study)
        searched = [r for r in trials if r.race_of is None]
        raced = [r for r in trials if r.race_of is not None]
        assert len(searched) == wanted and all(r.state in record.FINISHED for r in searched)  # n_trials configurations searched
        assert [r.number for r in record.finished_search_trials(study)] == [r.number for r in searched]
        assert raced  # the first hit at least is the incumbent, hence raced: on top of the budget
        assert all(r.state is not optuna.trial.TrialState.WAITING for r in trials)  # every race run queued has run
        for run in raced:
            original = trials[run.race_of]
            assert run.config == original.config and run.seed in race_seeds(exp.seed, 2)
            assert run.outcome not in (Outcome.CAPPED, Outcome.PRUNED)  # measured, never stopped early


def test_race_runs_take_at_most_their_share_of_a_time_budget() -> None:
    from tuner.study.reruns.racing import race_room

    study = in_memory()
    first = finished(study, 0.01, 1.0)
    assert race_room(record.records(study), 2.0, None) is None  # a trial budget: races on top, unbounded
    assert race_room(record.records(study), 2.0, 5.0) == 2
    finished(study, 0.01, 1.1, race_of=first, seed=1, wall_s=3.0)  # a finished race run counts at its wall time
    study.enqueue_trial({"lr": 0.01}, user_attrs=record.race_attrs(first, 2))  # a queued one at the run's length
    assert race_room(record.records(study), 2.0, 5.0) == 0
    assert race_room(record.records(study), 2.0, 9.0) == 2
