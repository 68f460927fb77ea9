"""objective.metric and objective.direction: defaults, what a name implies, one-line refusals,
a study made for one metric refusing another, and a built-in study run to a loss target."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import cli, synthetic_experiment, write

from tuner.errors import ConfigError
from tuner.study.run.experiment_file import load_experiment
from tuner.train.target import Target


def load(tmp_path: Path, objective: str) -> object:
    return load_experiment(write(tmp_path / "exp.yaml", f"task: synthetic\nobjective: {objective}\n")).objective


def refused(tmp_path: Path, objective: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, objective)
    assert "\n" not in str(info.value)
    return info.value


def test_the_defaults_mean_what_they_always_meant(tmp_path: Path) -> None:
    assert load(tmp_path, "{}").goal == Target(0.9, "accuracy", "maximize")
    assert load(tmp_path, "{metric: loss, target: 1.6}").goal == Target(1.6, "loss", "minimize")  # implied by the name
    assert load(tmp_path, "{metric: val_perplexity, target: 30}").direction == "minimize"
    assert load(tmp_path, "{metric: bleu_score, direction: maximize, target: 27.5}").goal.reached(28.0)
    assert load(tmp_path, "{metric: elbo_loss, target: -120.0}").goal.reached(-130.0)  # any finite number


def test_a_direction_the_name_does_not_imply_is_asked_for(tmp_path: Path) -> None:
    err = refused(tmp_path, "{metric: energy_used, target: 3.0}")
    assert err.key == "objective.direction" and "cannot be told from its name" in err.allowed and "energy_used" in err.allowed
    assert refused(tmp_path, "{metric: loss, direction: down, target: 1.0}").allowed == "maximize or minimize"


@pytest.mark.parametrize(
    ("metric", "given", "implied"),
    [
        ("loss", "maximize", "minimize"),
        ("val_perplexity", "maximize", "minimize"),
        ("top1_error", "maximize", "minimize"),
        ("accuracy", "minimize", "maximize"),
        ("val_f1", "minimize", "maximize"),
        ("auc", "minimize", "maximize"),
    ],
)
def test_a_direction_the_name_contradicts_is_refused(tmp_path: Path, metric: str, given: str, implied: str) -> None:
    """A loss maximized: every trial would "reach" the target at its first evaluation, silently."""
    err = refused(tmp_path, f"{{metric: {metric}, direction: {given}, target: 0.5}}")
    assert err.key == "objective.direction" and err.given == given
    assert err.allowed == f"{implied} for metric {metric} (or objective.check_direction: false to keep {given})"


def test_a_contradicted_direction_is_refused_in_one_line_with_exit_2_and_allowed_when_asked(tmp_path: Path) -> None:
    """A training function of one's own reports any name: the name alone decides, unless check_direction is off."""
    own = "task: synthetic\nobjective: {metric: val_loss, direction: maximize, target: 0.1}\n"
    write(tmp_path / "bad.yaml", own)
    done = cli("validate", "bad.yaml", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0
    assert done.stderr.strip() == (
        "tuner: error: bad.yaml: objective.direction: expected minimize for metric val_loss "
        "(or objective.check_direction: false to keep maximize), got 'maximize'"
    )
    kept = load(tmp_path, "{metric: val_loss, direction: maximize, target: 0.1, check_direction: false}")
    assert kept.goal == Target(0.1, "val_loss", "maximize")
    assert refused(tmp_path, "{metric: loss, check_direction: maybe}").key == "objective.check_direction"


def test_an_accuracy_above_one_is_still_refused_and_says_why(tmp_path: Path) -> None:
    err = refused(tmp_path, "{target: 1.5}")
    assert err.key == "objective.target" and "(0, 1]" in err.allowed and "fraction" in err.allowed
    assert refused(tmp_path, "{target: .inf}").key == "objective.target"


@pytest.mark.e2e
def test_a_built_in_task_refuses_a_metric_it_does_not_measure(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "bleu.yaml", "objective: {metric: bleu, target: 30, cap_s: 2.0}\n")
    done = cli("run", str(path), "--no-tracking", cwd=tmp_path)
    assert done.returncode == 2 and "objective.metric: expected a held-out metric task synthetic measures: accuracy, loss" in done.stderr
    path = synthetic_experiment(tmp_path / "up.yaml", "objective: {metric: loss, direction: maximize, target: 3, cap_s: 2.0}\n")
    done = cli("run", str(path), "--no-tracking", cwd=tmp_path)
    assert done.returncode == 2 and "objective.direction: expected minimize for metric loss" in done.stderr


@pytest.mark.e2e
def test_a_built_in_study_reaches_a_held_out_loss_and_refuses_to_resume_on_accuracy(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "lossy.yaml", "objective: {metric: loss, target: 0.5, eval_every_samples: 256, cap_s: 4.0}\n")
    done = cli("run", str(path), "--no-tracking", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "seconds to loss <= 0.5" in done.stdout and "best loss" in done.stdout + done.stderr
    trials = optuna.load_study(study_name="lossy", storage=f"sqlite:///{tmp_path / 'study.db'}").trials
    reached = [t for t in trials if t.user_attrs["outcome"] == "reached"]
    assert reached and all(t.user_attrs["best_metric"] <= 0.5 and t.user_attrs["direction"] == "minimize" for t in reached)
    write(path, path.read_text().replace("objective: {metric: loss, target: 0.5,", "objective: {target: 0.5,"))
    done = cli("run", str(path), "--no-tracking", cwd=tmp_path)
    assert done.returncode == 2 and "objective.metric: expected 'loss' as in the existing study" in done.stderr
