"""The baseline first, caps that fit the machine, and no silent stall (tuner/study/run/runner.py,
tuner/study/run/auto_cap.py, tuner/study/run/budget_fit.py): real studies of the synthetic task on SQLite."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import optuna
import pytest
import yaml
from conftest import cli, slow_experiment, synthetic_experiment

from tuner.errors import ConfigError
from tuner.study.experiment.settings import CAP_MULTIPLE
from tuner.study.record import COMPLETE, FINISHED, records
from tuner.study.reruns.confirmation import confirmation_seeds
from tuner.study.reruns.winner import best_choice, write_best
from tuner.study.run.auto_cap import baseline_seconds
from tuner.study.run.budget_fit import first_baseline, idle_line
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.study.scoring.censoring import miss_value
from tuner.study.study_record import resolved_cap, study_objective
from tuner.train.result import Outcome

CONFIRM = "confirm: {after_search: true, top_k: 1, seeds: 2}\n"


def test_the_baseline_is_trial_0_on_the_first_seed_and_counts_in_the_ratio(tmp_path: Path) -> None:
    experiment = load_experiment(synthetic_experiment(tmp_path / "first.yaml", CONFIRM, n_trials=2))
    study = run_study(experiment)
    trials = records(study)
    seeds = confirmation_seeds(experiment.seed, 2)
    assert trials[0].is_baseline and trials[0].seed == seeds[0]
    assert [r.role for r in trials[1:3]] == ["trial", "trial"]  # the search's two configurations come next
    baseline_runs = [r for r in trials if r.is_baseline]
    assert sorted(r.seed for r in baseline_runs) == seeds  # its first run is one of its seeds: not run again
    assert len(baseline_runs) == 2


def test_cap_auto_is_a_multiple_of_the_baselines_time_and_a_resume_keeps_it(tmp_path: Path) -> None:
    objective = "objective: {target: 0.9, eval_every_samples: 256, cap_s: auto, clock: robust}\n"
    path = synthetic_experiment(tmp_path / "auto.yaml", objective, n_trials=2)
    experiment = load_experiment(path)
    study = run_study(experiment)
    first = records(study)[0]
    assert first.is_baseline and first.outcome is Outcome.REACHED
    seconds = baseline_seconds(study, experiment.objective)
    assert seconds == pytest.approx(first.result.time_to_target("robust"))
    assert resolved_cap(study) == pytest.approx(CAP_MULTIPLE * seconds)
    assert study.user_attrs["objective"]["cap_s"] == "auto"  # the definition keeps auto; readers get the seconds
    assert study_objective(study).cap_s == pytest.approx(CAP_MULTIPLE * seconds)
    # The export is trained once, with no baseline to measure: it carries the seconds, the study's
    # cap or twice its own configuration's slowest run that reached, whichever is longer (a slow seed
    # of the winner itself must not be cut).
    trial, exported = write_best(study, tmp_path / "best.yaml")
    own = [r.result.time_to_target("robust") for r in records(study) if r.config_key == trial.config_key and r.reached]
    assert own and exported["objective"]["cap_s"] == pytest.approx(max(CAP_MULTIPLE * seconds, CAP_MULTIPLE * max(own)))
    # Resumed with more trials: the same cap, the baseline not run first again.
    again = run_study(load_experiment(path).with_overrides(n_trials=3))
    assert resolved_cap(again) == pytest.approx(CAP_MULTIPLE * seconds)
    assert sum(r.is_baseline for r in records(again)) == 1
    # A number where the study stored auto is another objective: refused as any other.
    numeric = synthetic_experiment(tmp_path / "auto.yaml", objective.replace("cap_s: auto", "cap_s: 2.0"), n_trials=3)
    with pytest.raises(ConfigError, match=r"objective\.cap_s: expected 'auto' as in the existing study"):
        run_study(load_experiment(numeric))


def test_a_cap_longer_than_the_budget_starts_trials_and_ends_with_a_winner(tmp_path: Path) -> None:
    # cap_s 60 with 30 s: a trial no longer waits for a whole cap to fit (it stalled at 0 trials).
    text = CONFIRM + "objective: {target: 0.9, eval_every_samples: 256, cap_s: 60}\nbudget: {timeout_s: 30, n_trials: 2}\n"
    experiment = load_experiment(synthetic_experiment(tmp_path / "long_cap.yaml", text))
    since = datetime.now()
    study = run_study(experiment)
    searched = [r for r in records(study, FINISHED) if r.role == "trial"]
    assert searched, [(r.number, r.role, r.outcome) for r in records(study)]
    assert idle_line(study, experiment, since) is None
    # A winner: the search's, or the baseline where nothing beat it (on a loaded machine capping at it may end them all).
    choice = best_choice(study)
    assert choice.trial.reached and (choice.trial.role == "trial" or choice.trial.is_baseline)


def test_the_deadline_ends_a_search_trial_as_a_censored_timeout(tmp_path: Path) -> None:
    # Trials that never reach the target, a cap far past the budget: the deadline ends the one running.
    experiment = load_experiment(slow_experiment(tmp_path, n_trials=5, cap_s=300)).with_overrides(timeout_s=3)
    study = run_study(experiment)
    ended = [r for r in records(study, COMPLETE) if r.role == "trial"]
    assert ended and ended[-1].outcome is Outcome.TIMEOUT
    assert ended[-1].result.reason == "the search's time ran out during this trial"
    last = ended[-1]
    assert last.value == pytest.approx(miss_value(last.result.goal, last.result.best_metric, 300))


def test_a_run_that_starts_no_search_trial_says_why(tmp_path: Path) -> None:
    experiment = load_experiment(synthetic_experiment(tmp_path / "done.yaml", n_trials=1))
    run_study(experiment)
    since = datetime.now()
    study = run_study(experiment)  # the study holds its one trial already
    assert idle_line(study, experiment, since) == (
        "no search trial started: the study holds its 1 searched configurations already (raise budget.n_trials to search more)"
    )


def slow_baseline(tmp_path: Path) -> Path:
    # The baseline never reaches the target and runs to its 1-s cap; the search does.
    # The budget ends no run here (--n-trials ends the first): a loaded machine's imports and preparing must not take it.
    text = CONFIRM + "objective: {target: 0.9, eval_every_samples: 256, cap_s: 1.0}\nbaseline: {lr: 1.0e-5}\nbudget: {timeout_s: 300}\n"
    return synthetic_experiment(tmp_path / "slowbase.yaml", text, n_trials=2)


@pytest.mark.e2e
def test_a_budget_shorter_than_a_known_baseline_run_is_refused_in_one_line(tmp_path: Path) -> None:
    path = slow_baseline(tmp_path)
    assert cli("run", str(path), "--n-trials", "1", "--no-tracking", "--quiet", cwd=tmp_path).returncode == 0
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    before = len(optuna.load_study(study_name="slowbase", storage=storage).trials)
    assert first_baseline(optuna.load_study(study_name="slowbase", storage=storage)).result.wall_s > 0.9  # ran to its cap
    proc = cli("run", str(path), "--timeout", "0.2", "--no-tracking", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"tuner: error: {path}: budget.timeout_s: expected a budget that fits one baseline run (cap_s 1 s): more than ")
    assert line.endswith("leaves time to search, got 0.2")
    assert len(optuna.load_study(study_name="slowbase", storage=storage).trials) == before  # nothing stored


@pytest.mark.e2e
def test_a_study_that_cannot_beat_its_baseline_exports_it(tmp_path: Path) -> None:
    # The search's learning rates are too small to reach the target in the cap; the baseline's is not.
    text = (
        CONFIRM
        + "objective: {target: 0.9, eval_every_samples: 256, cap_s: 1.0}\nbaseline: {lr: 1.0e-2, batch_size: 64}\n"
        + f"search_space:\n  file: {Path(__file__).parents[3] / 'search_spaces' / 'default.yaml'}\n"
        + "  override: {precision: fp32, batch_size: {choices: [64]}, lr: {low: 1.0e-6, high: 2.0e-6}}\n"
    )
    path = synthetic_experiment(tmp_path / "unbeaten.yaml", text, n_trials=2)
    run = cli("run", str(path), "--no-tracking", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "the search found nothing faster than the baseline: tuner best exports the baseline's configuration" in run.stdout
    best = cli("best", str(path), "-o", str(tmp_path / "best.yaml"), cwd=tmp_path)
    assert best.returncode == 0, best.stderr[-2000:]
    assert re.match(r"# study 'unbeaten': best the baseline \(trial \d+\), ", best.stdout), best.stdout[:500]
    exported = yaml.safe_load((tmp_path / "best.yaml").read_text())
    assert exported["search_space"]["lr"] == pytest.approx(1.0e-2) and exported["search_space"]["batch_size"] == 64
