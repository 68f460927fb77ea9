"""The baseline: enqueued on the confirmation seeds, marked, and compared with the winner."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment
from optuna.trial import TrialState, create_trial

from tuner.errors import ConfigError
from tuner.study.experiment.baseline_spec import baseline_config
from tuner.study.experiment.load import Confirm
from tuner.study.record import (
    CONFIG,
    CURVE,
    OUTCOME,
    QUEUED,
    SEED,
    Curve,
    TrialRecord,
    baseline_attrs,
    confirmation_attrs,
    finished_search_trials,
    records,
)
from tuner.study.reruns.baseline import (
    Comparison,
    SeedFigures,
    baseline_configuration,
    compare,
    enqueue_baseline,
    missing_seeds,
    too_easy,
)
from tuner.study.reruns.confirmation import confirmation_seeds
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.study.study_record import write_definition, write_run_confirm
from tuner.train.trial_config import TrialConfig


def finished(study: optuna.Study, value: float, attrs: dict, reached: bool = True) -> None:
    attrs = {OUTCOME: "reached" if reached else "timeout", "reason": "", "target": 0.9, **attrs}
    study.add_trial(create_trial(state=TrialState.COMPLETE, value=value, user_attrs=attrs))


def test_a_clear_win_says_why_neither_was_re_run_rather_than_that_seeds_are_missing() -> None:
    study = optuna.create_study()
    write_run_confirm(study, Confirm(top_k=1, seeds=2, budget_share=0.0, clear_margin=1.25))  # as the budget rule sets it
    finished(study, 1.0, {CONFIG: TrialConfig(lr=0.02).as_dict(), SEED: 0})
    finished(study, 2.0, baseline_attrs(TrialConfig().as_dict(), confirmation_seeds(0, 1)[0]))
    sentence = compare(study).sentence()
    assert sentence.endswith("; 1.25x apart or more on single runs (confirm.clear_margin), so neither was re-run"), sentence
    # Asked to confirm whatever the margin: the baseline's missing seeds are said, out of the seeds the run asked for.
    write_run_confirm(study, Confirm(top_k=1, seeds=2))
    assert "fewer seeds than asked: the baseline on 1 of 2 seeds ran" in compare(study).sentence()


def test_baseline_is_the_reference_configuration_by_default() -> None:
    assert baseline_config({}) == TrialConfig()
    assert baseline_config({"lr": 0.003}).lr == 0.003


def test_enqueue_marks_runs_on_the_confirmation_seeds() -> None:
    study = optuna.create_study()
    config = TrialConfig(lr=0.003)
    assert enqueue_baseline(study, config, base_seed=7, n_seeds=3) == 3
    queued = records(study, QUEUED)
    assert all(r.is_baseline and not r.is_confirmation for r in queued)
    assert sorted(r.seed for r in queued) == confirmation_seeds(7, 3)
    assert all(r.config == config for r in queued)
    assert enqueue_baseline(study, config, base_seed=7, n_seeds=3) == 0  # queued runs are not queued twice
    assert missing_seeds(study, TrialConfig(lr=0.01), confirmation_seeds(7, 3)) == confirmation_seeds(7, 3)  # another baseline


def test_ratio_of_medians_and_budget_counting() -> None:
    study = optuna.create_study()
    winner = TrialConfig(lr=0.02, batch_size=64).as_dict()
    finished(study, 1.0, {CONFIG: winner, SEED: 0})  # the search trial
    original = study.trials[0].number
    for seed, value in zip(confirmation_seeds(0, 3), (1.0, 1.2, 1.1)):
        finished(study, value, {**confirmation_attrs(original, seed), CONFIG: winner})
    base = TrialConfig().as_dict()
    for seed, value in zip(confirmation_seeds(0, 3), (3.3, 3.0, 3.6)):
        finished(study, value, baseline_attrs(base, seed))
    assert [r.number for r in finished_search_trials(study)] == [original]  # baseline and confirmation come on top
    comparison = compare(study)
    assert comparison is not None and comparison.confirmed
    assert comparison.ratio == pytest.approx(3.3 / 1.1)
    sentence = comparison.sentence()
    assert sentence.startswith(
        "winner 3.0x faster than the baseline (medians over 3 seeds: 1.1 s, range 1-1.2 s against 3.3 s, range 3-3.6 s)"
    )
    assert TrialRecord.of(study.trials[-1]).is_baseline


def test_a_baseline_that_missed_makes_the_ratio_a_lower_bound() -> None:
    c = Comparison(SeedFigures((1.0, 1.0), 2), SeedFigures((2.0, 4.4), 1))
    assert c.ratio == pytest.approx(3.2)
    assert "reached the target on 1 of 2 seeds (a miss counts at its censored score), so the ratio is a lower bound" in c.sentence()
    slower = Comparison(SeedFigures((2.0,), 1), SeedFigures((1.0,), 1), confirmed=False)
    assert slower.sentence().startswith("the search's best 2.0x slower than the baseline (medians over a single unconfirmed run")


def test_counts_of_seeds_are_in_the_right_number() -> None:
    one = Comparison(SeedFigures((2.0,), 1), SeedFigures((1.0,), 1), confirmed=False)
    assert "(medians over a single unconfirmed run against 1 baseline seed: " in one.sentence()
    assert "(medians over 1 seed: " in Comparison(SeedFigures((1.0,), 1), SeedFigures((2.0,), 1)).sentence()
    assert "(medians over 3 seeds: " in Comparison(SeedFigures((1.0,) * 3, 3), SeedFigures((2.0,) * 3, 3)).sentence()
    missed = Comparison(SeedFigures((1.0,), 1), SeedFigures((4.0,), 0)).sentence()
    assert "reached the target on 0 of 1 seed (" in missed


def test_a_baseline_that_reaches_at_its_first_evaluation_is_warned_of_in_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A real study whose target any configuration reaches at once: the baseline (trial 0) says so."""
    path = synthetic_experiment(
        tmp_path / "easy.yaml", "objective: {target: 0.05, eval_every_samples: 256, cap_s: auto, clock: robust}\n", n_trials=1
    )
    run_study(load_experiment(path))
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("tuner: warning:")]
    [line] = lines
    assert line.startswith("tuner: warning: the baseline reached accuracy >= 0.05 at its first evaluation (")  # samples: whole batches
    assert line.endswith(
        " samples): the target is too easy to tell configurations apart; "
        "set a harder objective.target or a smaller objective.eval_every_samples"
    )


def test_a_baseline_that_needs_several_evaluations_is_not_warned_of() -> None:
    study = optuna.create_study()
    write_definition(study, {"target": 0.9}, {})
    curve = Curve(samples=(256, 512), metric=(0.5, 0.95))
    finished(study, 1.0, {**baseline_attrs(TrialConfig().as_dict(), 0), CURVE: curve.as_dict()})
    assert too_easy(study) is None
    once = Curve(samples=(256,), metric=(0.95,))
    finished(study, 1.0, {**baseline_attrs(TrialConfig().as_dict(), 1), CURVE: once.as_dict()})
    assert too_easy(study) is None  # only the first run counts: the one the search is measured against


def test_fewer_seeds_than_asked_are_said_with_how_many() -> None:
    c = Comparison(SeedFigures((1.0, 1.1), 2), SeedFigures((3.0,), 1), asked=2)
    assert c.sentence().endswith(
        "; fewer seeds than asked: the baseline on 1 of 2 seeds ran (`tuner confirm` runs the rest), so the ratio is provisional"
    )
    assert "fewer seeds" not in Comparison(SeedFigures((1.0, 1.1), 2), SeedFigures((3.0, 3.1), 2), asked=2).sentence()


def test_a_training_functions_baseline_is_its_own_defaults_and_the_spaces_fixed_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "own_loop_job.py").write_text("def train(config, session, *, n_layer: int = 4, dropout: float = 0.1):\n    pass\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text(
        "task: own_loop_job:train\nsearch_space:\n  optimizer: adamw\n  lr: {low: 0.001, high: 0.1, log: true}\n"
        "  amsgrad: {choices: [true], when: {optimizer: [adamw]}}\nbaseline: {dropout: 0.2}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))  # undone after the test, as the folder the loader appends is not
    config = baseline_configuration(load_experiment(exp))
    assert (config.optimizer, config.lr, config.amsgrad) == ("adamw", TrialConfig().lr, False)  # amsgrad is searched, not fixed
    assert dict(config.hyper) == {"n_layer": 4, "dropout": 0.2}
    builtin = tmp_path / "builtin.yaml"
    builtin.write_text("task: synthetic\nsearch_space: {optimizer: adamw}\nbaseline: {lr: 0.003}\n")
    assert baseline_configuration(load_experiment(builtin)) == TrialConfig(lr=0.003)  # a built-in task: its reference, as before


def test_baseline_takes_the_tasks_own_hyperparameters_and_refuses_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "own_loop_job2.py").write_text("def train(config, session, *, n_layer: int = 4):\n    pass\n")
    exp = tmp_path / "exp.yaml"
    exp.write_text("task: own_loop_job2:train\nbaseline: {n_layer: 2}\n")
    assert load_experiment(exp).baseline == {"n_layer": 2}
    exp.write_text("task: own_loop_job2:train\nbaseline: {n_layers: 2}\n")
    with pytest.raises(
        ConfigError,
        match=r"baseline.n_layers: expected .*hyperparameter the task takes \(n_layer\), got 'n_layers' \(did you mean 'n_layer'\?\)",
    ):
        load_experiment(exp)
    exp.write_text("task: own_loop_job2:train\nbaseline: {n_layer: 2.5}\n")
    with pytest.raises(ConfigError, match="baseline.n_layer: expected int, got 2.5"):
        load_experiment(exp)


def test_a_winner_within_five_percent_of_the_baseline_is_level_not_1_0x_faster() -> None:
    level = Comparison(SeedFigures((51.9, 52.1), 2), SeedFigures((51.9, 52.9), 2))
    assert level.sentence().startswith("winner level with the baseline (1.01x faster; medians over 2 seeds: ")
    behind = Comparison(SeedFigures((53.0,), 1), SeedFigures((51.0,), 1))
    assert behind.sentence().startswith("the search's best level with the baseline (1.04x slower; medians over 1 seed: ")
    assert Comparison(SeedFigures((1.0,), 1), SeedFigures((1.06,), 1)).sentence().startswith("winner 1.1x faster than the baseline")
