"""The confirmation and baseline runs (tuner/study/run/reserve.py): queued seed by seed, and the
time a budget keeps for them sized from the study's own trials."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment
from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from tuner.cli import main
from tuner.simulate.repeats import budget_of
from tuner.simulate.simulation import Replay, simulate_study
from tuner.simulate.table import load_table
from tuner.study.experiment.load import Experiment
from tuner.study.record import COMPLETE, QUEUED, records
from tuner.study.reruns.confirmation import confirmation_seeds
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.phases import holds_every_run
from tuner.study.run.reserve import MAX_SHARE, SLACK, UNKNOWN_RUN, Reserve, enqueue_measurements, needed_s
from tuner.study.run.stage import reserve_of
from tuner.tasks.registry import build_task

LR = {"lr": FloatDistribution(1e-3, 1e-1, log=True)}
CONFIRM = "confirm: {after_search: true, top_k: 2, seeds: 2}\n"


def searched(study: optuna.Study, lr: float, value: float, wall_s: float) -> int:
    attrs = {"config": {"optimizer": "adam", "lr": lr}, "outcome": "reached", "reason": "", "target": 0.9, "wall_s": wall_s}
    study.add_trial(create_trial(params={"lr": lr}, distributions=LR, value=value, user_attrs=attrs))
    return study.trials[-1].number


def study_of_two(tmp_path: Path, extra: str = "") -> tuple[optuna.Study, Experiment, list[int]]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    experiment = load_experiment(synthetic_experiment(tmp_path / "r.yaml", CONFIRM + extra))
    study = optuna.create_study()
    return study, experiment, [searched(study, 0.015, 1.0, 2.0), searched(study, 0.02, 1.5, 3.0)]  # neither is the baseline (lr 0.01)


def test_the_baseline_and_the_confirmation_runs_are_queued_seed_by_seed(tmp_path: Path) -> None:
    study, experiment, (fast, slow) = study_of_two(tmp_path)
    assert enqueue_measurements(study, experiment) == 6
    queued = [(r.role, r.confirm_of, r.seed) for r in records(study, QUEUED)]
    first, second = confirmation_seeds(experiment.seed, 2)
    # The baseline first on each seed: a budget that ends early leaves both sides with the same seeds.
    assert queued == [
        ("baseline", None, first),
        ("confirmation", fast, first),
        ("confirmation", slow, first),
        ("baseline", None, second),
        ("confirmation", fast, second),
        ("confirmation", slow, second),
    ]
    assert enqueue_measurements(study, experiment) == 6  # nothing queued twice


def test_the_reserve_is_what_the_runs_need_within_its_bounds(tmp_path: Path) -> None:
    study, experiment, _ = study_of_two(tmp_path)
    cap_s = experiment.objective.cap_s
    # Each configuration on its own longest run, the baseline (never run) past the longest a trial took.
    expected = (2 * 2.0 + 2 * 3.0) * SLACK + 2 * max(cap_s, 3.0) * UNKNOWN_RUN * SLACK
    assert needed_s(study, experiment) == pytest.approx(expected)
    assert Reserve(experiment, 100.0).seconds(study) == pytest.approx(max(expected, 100.0 * experiment.confirm.budget_share))
    assert Reserve(experiment, 20.0).seconds(study) == pytest.approx(20.0 * MAX_SHARE)  # the search keeps the rest
    enqueue_measurements(study, experiment)
    assert needed_s(study, experiment) == pytest.approx(expected)  # queued runs still need their time


def test_a_budget_that_keeps_no_time_re_runs_only_when_what_the_search_left_holds_every_run(tmp_path: Path) -> None:
    study, experiment, _ = study_of_two(tmp_path, "budget: {timeout_s: 100}\n")
    kept_none = dataclasses.replace(experiment, confirm=dataclasses.replace(experiment.confirm, keep_time=False))
    assert reserve_of(kept_none, True, 1) is None and reserve_of(experiment, True, 1) is not None  # the search may take it all
    need = needed_s(study, kept_none)
    # Half a comparison decides nothing: all of the runs fit, or none is queued.
    assert not holds_every_run(study, kept_none, 0.9 * need) and holds_every_run(study, kept_none, need)
    assert holds_every_run(study, kept_none, 0.55 * need, workers=2)  # two workers share them
    assert holds_every_run(study, kept_none, None)  # no time budget
    assert holds_every_run(study, experiment, 0.0)  # time was kept for them: the runs' own deadline decides, as before


@pytest.mark.e2e
def test_a_short_time_budget_runs_the_baseline_on_every_seed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A baseline that never reaches the target runs to its cap: the slowest runs of the study.
    slow_baseline = "objective: {target: 0.9, eval_every_samples: 256, cap_s: 1.0}\nbaseline: {lr: 1.0e-5}\nbudget: {timeout_s: 60}\n"
    # Equal-time pruning named: at 40 s, a few of the baseline's lengths, pruner.name: auto would run no confirmation (docs/stopping.md).
    confirm = "confirm: {after_search: true, top_k: 1, seeds: 2}\npruner: {name: equal_time}\n"
    path = synthetic_experiment(tmp_path / "short.yaml", confirm + slow_baseline)
    monkeypatch.chdir(tmp_path)
    # In this process, so that --timeout counts from the call and not from a new interpreter's
    # imports (5-15 s on a busy 2-core machine); one configuration to confirm: the measurements
    # fit in the reserve even when other tests share the cores.
    assert main(["run", str(path), "--timeout", "40", "--no-tracking", "--quiet"]) == 0
    stdout = capsys.readouterr().out
    study = optuna.load_study(study_name="short", storage=f"sqlite:///{tmp_path / 'study.db'}")
    done = records(study, COMPLETE)
    seeds = confirmation_seeds(load_experiment(path).seed, 2)
    ran = [(r.number, r.role, r.seed, r.outcome) for r in records(study)]
    assert sorted(r.seed for r in done if r.is_baseline) == seeds, (ran, stdout[-2000:])
    confirmed = [r for r in done if r.is_confirmation]
    assert confirmed and {r.seed for r in confirmed} == set(seeds), (ran, stdout[-2000:])
    assert "fewer seeds than asked" not in stdout, stdout


def test_time_the_measurement_runs_did_not_take_goes_back_to_the_search() -> None:
    """The default experiment on its committed table at 33 of its trial-lengths (the README's first
    command on a fast CPU): the search stops to keep time for configurations it has yet to confirm, at
    the longest a run may take; what the runs did not take is searched in, not left unspent."""
    repo = Path(__file__).resolve().parents[3]
    experiment = load_experiment(repo / "experiments/mnist1d_cnn.yaml")
    table = load_table(repo / "benchmarks/tables/mnist1d_cnn.json.gz")
    budget_s = budget_of(table, Replay(), 33.0)
    experiment = dataclasses.replace(experiment, budget=dataclasses.replace(experiment.budget, n_trials=None, timeout_s=budget_s))
    study = simulate_study(experiment, table, build_task(experiment.task, experiment.task_options), Replay(), seed=0)
    assert study.reruns > 0  # the baseline and the winner measured on fresh seeds
    assert budget_s * 0.95 < study.end_s <= budget_s + 1.0, (study.end_s, budget_s)  # was 88% of it
