"""Confirmation: top-k configurations re-run on fresh seeds; the winner is the best median."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment, write
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.cli import main as cli_main
from tuner.errors import ConfigError
from tuner.study.experiment.load import Confirm
from tuner.study.record import BASELINE, CONFIRM_OF, best_reached
from tuner.study.reruns.baseline import compare
from tuner.study.reruns.confirmation import candidates, confirmation_seeds, confirmed, confirmed_winner, enqueue_confirmation, missing_runs
from tuner.study.reruns.winner import best_choice, write_best
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.train.trial_config import TrialConfig

CAP = 6.0
LR = {"lr": FloatDistribution(1e-3, 1e-1, log=True)}


def experiment(path: Path, n_trials: int, **confirm: object) -> Path:
    """A synthetic experiment with these ``confirm:`` settings (conftest's turns confirmation off)."""
    p = synthetic_experiment(path, n_trials=n_trials)
    block = "confirm:\n" + "".join(f"  {k}: {str(v).lower()}\n" for k, v in {"after_search": True, **confirm}.items())
    return write(p, p.read_text().replace("confirm:\n  after_search: false\n", block))


def sqlite_study(tmp_path: Path) -> optuna.Study:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="crafted", storage=f"sqlite:///{tmp_path / 'crafted.db'}", direction="minimize")
    study.set_user_attr("objective", {"target": 0.9, "clock": "robust", "cap_s": CAP})
    study.set_user_attr("experiment", {"name": "crafted", "seed": 0, "budget": {}})
    return study


def search_trial(study: optuna.Study, lr: float, value: float, outcome: str = "reached") -> int:
    """A search trial of the configuration ``lr``; returns its number."""
    attrs = {"config": {"optimizer": "adam", "lr": lr}, "outcome": outcome, "seed": len(study.trials)}
    study.add_trial(create_trial(params={"lr": lr}, distributions=LR, value=value, user_attrs=attrs))
    return study.trials[-1].number


def confirmation_runs(study: optuna.Study, of: int, values: list[float]) -> None:
    """Finished confirmation runs of trial ``of``: a value at or above the cap is a miss."""
    lr = study.trials[of].params["lr"]
    for seed, value in zip(confirmation_seeds(0, len(values)), values):
        outcome = "reached" if value < CAP else "timeout"
        attrs = {CONFIRM_OF: of, "seed": seed, "outcome": outcome, "config": {"optimizer": "adam", "lr": lr}}
        study.add_trial(create_trial(params={"lr": lr}, distributions=LR, value=value, user_attrs=attrs))


def test_the_winner_is_the_best_median_not_the_luckiest_run(tmp_path: Path) -> None:
    study = sqlite_study(tmp_path)
    lucky = search_trial(study, 0.05, 1.0)  # the fastest single run...
    steady = search_trial(study, 0.02, 1.5)
    third = search_trial(study, 0.01, 1.8)
    confirmation_runs(study, lucky, [1.0, 3.1, 2.9])  # ...was a lucky draw
    confirmation_runs(study, steady, [1.6, 1.5, 1.7])
    confirmation_runs(study, third, [1.9, 1.7, 2.2])

    assert best_reached(study).number == lucky
    winner = confirmed_winner(study)
    assert winner.trial.number == steady
    assert (winner.median, winner.spread, winner.n, winner.reached) == (1.6, (1.5, 1.7), 3, 3)
    assert [c.trial.number for c in confirmed(study)] == [steady, third, lucky]

    trial, exported = write_best(study, tmp_path / "best.yaml")
    assert trial.number == steady and TrialConfig(**exported["search_space"]) == TrialConfig(optimizer="adam", lr=0.02)
    header = (tmp_path / "best.yaml").read_text().splitlines()[:2]
    assert header == [
        (
            "# Best configuration of study 'crafted': trial 1's configuration, median 1.600 s over 3 seeds "
            "(range 1.500-1.700 s, reached on 3 of 3) to accuracy >= 0.9 on the robust clock."
        ),
        "# Confirmed: the best median over fresh seeds among the top configurations.",
    ]


def test_a_configuration_that_never_reaches_the_target_again_cannot_win(tmp_path: Path) -> None:
    study = sqlite_study(tmp_path)
    once = search_trial(study, 0.05, 1.0)
    never = search_trial(study, 0.02, 1.2)
    confirmation_runs(study, once, [1.1, 1.3, 6.9])  # reached on two seeds of three: median 1.3
    confirmation_runs(study, never, [6.6, 6.6, 6.6])  # never reached
    study.set_user_attr("experiment", {"name": "crafted", "seed": 0, "budget": {}, "confirm": {"require": "majority"}})
    assert [c.eligible for c in confirmed(study)] == [True, False]
    assert confirmed_winner(study).trial.number == once

    (tmp_path / "other").mkdir()
    lost = sqlite_study(tmp_path / "other")
    only_misses = search_trial(lost, 0.05, 1.0)
    confirmation_runs(lost, only_misses, [6.5, 6.7, 6.8])
    assert confirmed_winner(lost) is None
    choice = best_choice(lost)  # tuner best falls back to the best single run, and says so
    assert choice.trial.number == only_misses and choice.confirmation is None
    assert choice.note.startswith("not confirmed: no confirmed configuration reached the target again")


def test_without_a_winner_the_configuration_that_reached_most_often_is_exported_and_says_so(tmp_path: Path) -> None:
    study = sqlite_study(tmp_path)
    fast = search_trial(study, 0.05, 1.0)  # the fastest single run, which reached again on one seed of three
    steady = search_trial(study, 0.02, 1.4)  # slower, and reached on two of three
    confirmation_runs(study, fast, [1.0, 6.6, 6.6])
    confirmation_runs(study, steady, [1.5, 1.6, 6.6])
    assert confirmed_winner(study) is None  # confirm.require: all

    choice = best_choice(study)
    assert choice.trial.number == steady and not choice.confirmed and choice.confirmation.reached == 2
    trial, _ = write_best(study, tmp_path / "best.yaml")
    assert trial.number == steady
    header = (tmp_path / "best.yaml").read_text().splitlines()[:2]
    assert header[0].endswith("reached on 2 of 3) to accuracy >= 0.9 on the robust clock."), header
    assert header[1] == (
        "# Not confirmed: no configuration reached the target on every confirmation seed; this one reached it on 2 of 3, the most often."
    )


def test_only_the_missing_runs_are_queued_seed_by_seed(tmp_path: Path) -> None:
    study = sqlite_study(tmp_path)
    a = search_trial(study, 0.05, 1.0)
    search_trial(study, 0.05, 1.1)  # the same configuration again: confirmed once, as trial a
    b = search_trial(study, 0.02, 1.4)
    search_trial(study, 0.01, 2.0)
    search_trial(study, 0.03, CAP * 1.05, outcome="timeout")  # never reached: not a candidate
    settings = Confirm(top_k=2, seeds=2)
    assert [t.number for t in candidates(study, 2)] == [a, b]
    seeds = confirmation_seeds(0, 2)
    assert [(t.number, s) for t, s in missing_runs(study, settings, 0)] == [(a, seeds[0]), (b, seeds[0]), (a, seeds[1]), (b, seeds[1])]

    assert enqueue_confirmation(study, settings, 0) == 4
    assert enqueue_confirmation(study, settings, 0) == 4  # queued runs count as present
    waiting = study.get_trials(states=(TrialState.WAITING,))
    assert [(t.user_attrs[CONFIRM_OF], t.user_attrs["seed"]) for t in waiting] == [
        (a, seeds[0]),
        (b, seeds[0]),
        (a, seeds[1]),
        (b, seeds[1]),
    ]
    assert waiting[0].system_attrs["fixed_params"] == {"lr": 0.05}

    # A run that failed (its worker died, say) is queued again; one that finished is not.
    first = study.ask()  # pops the first queued run
    study.tell(first, state=TrialState.FAIL)
    second = study.ask()
    study.tell(second, 1.3)
    assert [(t.number, s) for t, s in missing_runs(study, settings, 0)] == [(a, seeds[0])]


def test_confirmation_after_the_search_on_the_synthetic_task(tmp_path: Path) -> None:
    path = experiment(tmp_path / "conf.yaml", 4, top_k=2, seeds=2)
    exp = load_experiment(path)
    study = run_study(exp)
    runs = [t for t in study.get_trials() if CONFIRM_OF in t.user_attrs]
    search = [
        t for t in study.get_trials() if CONFIRM_OF not in t.user_attrs and BASELINE not in t.user_attrs
    ]  # baseline runs come on top (tuner/study/reruns/baseline.py)
    tops = candidates(study, 2)
    assert len(search) == 4 and tops
    assert len(runs) == 2 * len(tops)
    for run in runs:
        original = study.trials[run.user_attrs[CONFIRM_OF]]
        assert run.state is TrialState.COMPLETE and run.user_attrs["outcome"] not in ("pruned", "capped")
        assert run.user_attrs["seed"] in confirmation_seeds(exp.seed, 2)
        assert run.user_attrs["config"] == original.user_attrs["config"]
    assert {(r.user_attrs[CONFIRM_OF], r.user_attrs["seed"]) for r in runs} == {
        (t.number, s) for t in tops for s in confirmation_seeds(exp.seed, 2)
    }

    winner = confirmed_winner(study)
    if winner is not None:  # on this task every top configuration reaches 0.9 again
        trial, _ = write_best(study, tmp_path / "best.yaml")
        comparison = compare(study)
        if comparison is not None and comparison.ratio <= 1:  # the baseline was as fast: it is exported (a winner is never worse)
            assert trial.is_baseline, comparison.sentence()
            assert "the baseline" in (tmp_path / "best.yaml").read_text().splitlines()[0]
        else:
            assert trial.number == winner.trial.number
            assert "over 2 seeds" in (tmp_path / "best.yaml").read_text().splitlines()[0]
    # Resuming a finished study queues nothing more.
    again = run_study(exp)
    assert len(again.get_trials()) == len(study.get_trials())


def test_tuner_confirm_runs_queued_and_missing_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = experiment(tmp_path / "later.yaml", 3, after_search=False, top_k=1, seeds=1)
    exp = load_experiment(path)
    study = run_study(exp)
    assert not any(CONFIRM_OF in t.user_attrs for t in study.get_trials())
    enqueue_confirmation(study, exp.confirm, exp.seed)  # queued, then the worker stopped

    assert cli_main(["confirm", str(path), "--no-tracking", "--quiet", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    trials = optuna.load_study(study_name="later", storage=exp.storage).get_trials()
    runs = [t for t in trials if CONFIRM_OF in t.user_attrs]
    assert not [t for t in trials if t.state is TrialState.WAITING]
    assert sorted(r.user_attrs["seed"] for r in runs) == confirmation_seeds(exp.seed, 2)
    # The winner, or the best confirmed beside a baseline as fast (then the baseline is what tuner best exports).
    baseline_won = best_choice(optuna.load_study(study_name="later", storage=exp.storage)).trial.is_baseline
    assert ("best confirmed: trial" if baseline_won else "winner: trial") in out and "median" in out


def test_tuner_confirm_names_the_baseline_when_faster_than_the_best_confirmed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The summary names what tuner best exports: the baseline, where no confirmed configuration beats it."""
    path = experiment(tmp_path / "slow.yaml", 2, after_search=False, top_k=1, seeds=1)
    # A search held to a tenth of the baseline's rate: it reaches the target, many times slower.
    write(path, path.read_text().replace("lr: {low: 3.0e-3, high: 3.0e-2}", "lr: {low: 3.0e-3, high: 3.1e-3}") + "baseline: {lr: 0.03}\n")
    run_study(load_experiment(path))
    assert cli_main(["confirm", str(path), "--no-tracking", "--quiet"]) == 0
    out = capsys.readouterr().out
    study = optuna.load_study(study_name="slow", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert best_choice(study).trial.is_baseline
    assert "best confirmed: trial" in out and "winner:" not in out
    assert "the baseline is faster: tuner best exports the baseline's configuration. Export it with: tuner best" in out
    assert "slower than the baseline" in out


def test_tuner_confirm_creates_no_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = synthetic_experiment(tmp_path / "none.yaml")
    assert cli_main(["confirm", str(path), "--no-tracking"]) == 2
    assert "none.yaml: storage: expected an existing study database" in capsys.readouterr().err
    assert not (tmp_path / "study.db").exists()


def test_n_trials_counts_search_trials_not_confirmation_runs(tmp_path: Path) -> None:
    path = experiment(tmp_path / "e.yaml", n_trials=3, top_k=1, seeds=2)
    study = run_study(load_experiment(path))
    runs = [t for t in study.trials if CONFIRM_OF in t.user_attrs]
    search = [
        t
        for t in study.trials
        if CONFIRM_OF not in t.user_attrs and BASELINE not in t.user_attrs and t.state in (TrialState.COMPLETE, TrialState.PRUNED)
    ]
    assert (len(search), len(runs)) == (3, 2)
    # Resumed with a larger budget: two more search trials, whatever the confirmation runs.
    study = run_study(load_experiment(path).with_overrides(n_trials=5))
    search = [
        t
        for t in study.trials
        if CONFIRM_OF not in t.user_attrs and BASELINE not in t.user_attrs and t.state in (TrialState.COMPLETE, TrialState.PRUNED)
    ]
    assert len(search) == 5


def test_a_configuration_that_misses_on_a_seed_cannot_win_under_require_all(tmp_path: Path) -> None:
    study = sqlite_study(tmp_path)
    flaky = search_trial(study, 0.05, 0.7)
    steady = search_trial(study, 0.02, 1.0)
    confirmation_runs(study, flaky, [0.8, 0.85, 6.9])  # the best median, but it missed on one seed
    confirmation_runs(study, steady, [1.0, 1.1, 1.2])
    winner = confirmed_winner(study)  # the study's experiment says nothing: require: all
    assert winner.trial.number == steady
    assert (winner.median, winner.spread, winner.reached, winner.n) == (1.1, (1.0, 1.2), 3, 3)
    assert winner.summary() == "median 1.100 s over 3 seeds (range 1.000-1.200 s, reached on 3 of 3)"
    assert [c.eligible for c in confirmed(study)] == [True, False]
    # Under require: majority, two hits of three are enough and the better median wins.
    assert confirmed_winner(study, require="majority").trial.number == flaky
    study.set_user_attr("experiment", {"name": "crafted", "seed": 0, "budget": {}, "confirm": {"require": "majority"}})
    assert confirmed_winner(study).trial.number == flaky


def test_confirm_require_is_checked_when_the_experiment_loads(tmp_path: Path) -> None:
    p = write(tmp_path / "e.yaml", "confirm:\n  require: most\n")
    with pytest.raises(ConfigError) as err:
        load_experiment(p)
    assert str(err.value) == f"{p}: confirm.require: expected one of all, majority, got 'most'"
    assert load_experiment(write(tmp_path / "ok.yaml", "confirm:\n  require: majority\n")).confirm.require == "majority"
    assert load_experiment(write(tmp_path / "default.yaml", "seed: 1\n")).confirm.require == "all"
