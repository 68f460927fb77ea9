"""A task's own hyperparameters as search dimensions (tuner/study/space/custom.py,
tuner/tasks/hyperparameters.py): declared, checked at load, sampled, built, stored, replayed."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
import torch
import yaml

from tests.conftest import cli, write
from tuner.errors import ConfigError
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.tasks.hyperparameters import build_model, loss_fn, task_hyperparameters
from tuner.tasks.registry import build_task
from tuner.train.time_to_target import StopRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "own_job"


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(FIXTURES))


def experiment(tmp_path: Path, task: str, space: str, extra: str = "") -> Path:
    return write(
        tmp_path / "exp.yaml",
        f"""
    name: custom
    task: {task}
    search_space:
    {space}
    objective: {{target: 0.9, eval_every_samples: 256, cap_s: 5.0}}
    budget: {{n_trials: 3}}
    storage: sqlite:///{tmp_path / "study.db"}
    trainer: {{threads: 1}}
    confirm: {{after_search: false}}
    {extra}
    """,
    )


def test_the_task_declares_its_hyperparameters_by_signature_or_by_list() -> None:
    assert task_hyperparameters(build_task("own_job_mod:signature_task")) == {"dropout": 0.1, "depth": 1, "label_smoothing": 0.0}
    assert task_hyperparameters(build_task("own_job_mod:declared_task")) == {"dropout": 0.1, "depth": 1, "activation": "relu"}
    assert task_hyperparameters(build_task("synthetic")) == {}
    assert task_hyperparameters(build_task("own_job_mod:own_loop")) == {"lr_scale": 1.0, "depth": 1, "dropout": 0.0}


def test_a_custom_dimension_reaches_the_model_and_the_loss() -> None:
    task = build_task("own_job_mod:signature_task")
    config = TrialConfig(width=0.5, hyper={"dropout": 0.3, "depth": 3, "label_smoothing": 0.2})
    model = build_model(task, config)
    assert sum(isinstance(m, torch.nn.Linear) for m in model) == 4
    assert [m.p for m in model if isinstance(m, torch.nn.Dropout)] == [0.3, 0.3, 0.3]
    assert model[0].out_features == 16  # width 0.5 of 32
    logits, labels = torch.zeros(2, 4), torch.tensor([0, 1])
    smoothed = torch.nn.functional.cross_entropy(logits + torch.eye(4)[:2] * 5, labels, label_smoothing=0.2)
    assert loss_fn(task, config)(logits + torch.eye(4)[:2] * 5, labels) == pytest.approx(smoothed.item())


def test_the_trainer_builds_the_model_with_the_trial_values() -> None:
    import own_job_mod

    own_job_mod.BUILT.clear()
    task = build_task("own_job_mod:declared_task")
    result = train_trial(task, TrialConfig(hyper={"depth": 2, "dropout": 0.4}), StopRule(0.9, 256, 5.0), torch.device("cpu"))
    assert result.outcome.value in ("reached", "timeout"), result.reason
    [model] = own_job_mod.BUILT
    assert sum(isinstance(m, torch.nn.Linear) for m in model) == 3
    assert {m.p for m in model if isinstance(m, torch.nn.Dropout)} == {0.4}


def test_a_misspelt_name_of_a_training_function_is_refused_at_load(tmp_path: Path) -> None:
    path = experiment(tmp_path, "own_job_mod:own_loop", "  dropuot: {low: 0.0, high: 0.5}")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert err.value.key == "search_space.dropuot"
    assert "or a hyperparameter the task takes (lr_scale, depth, dropout)" in err.value.allowed
    assert str(err.value).endswith("got 'dropuot' (did you mean 'dropout'?)")


def test_a_misspelt_name_of_a_task_function_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    path = experiment(tmp_path, "own_job_mod:signature_task", "  deph: {choices: [1, 2]}")
    exp = load_experiment(path)  # a task function's Task says what it takes once built
    with pytest.raises(ConfigError) as err:
        prepare(exp)
    assert err.value.key == "search_space.deph" and str(err.value).endswith("got 'deph' (did you mean 'depth'?)")
    result = cli("run", str(path), "--no-tracking", "--quiet", cwd=tmp_path, env={"PYTHONPATH": str(FIXTURES)})
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert "search_space.deph" in result.stderr and "did you mean 'depth'?" in result.stderr
    assert not (tmp_path / "study.db").exists() and not (tmp_path / "mlruns").exists()


def test_a_built_in_task_takes_no_custom_names(tmp_path: Path) -> None:
    path = experiment(tmp_path, "synthetic", "  droput: 0.1")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    assert "(none: its build_model takes only the width)" in err.value.allowed


def test_types_come_from_the_defaults_and_the_spec(tmp_path: Path) -> None:
    path = experiment(tmp_path, "own_job_mod:own_loop", "  depth: {low: 1.5, high: 3.5}")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)  # depth defaults to an int
    assert (err.value.key, err.value.allowed, err.value.given) == ("search_space.depth.low", "int", 1.5)
    # A float default widens an int spec; log scale and `when` work as for built-in dimensions.
    path = experiment(
        tmp_path,
        "own_job_mod:own_loop",
        """  dropout: {choices: [0, 1]}
      depth: {low: 1, high: 4}
      lr_scale: {low: 0.1, high: 10.0, log: true, when: {depth: [2, 3]}}""",
    )
    space = load_experiment(path).search_space
    assert space.dimension("dropout").kind is float and space.dimension("depth").kind is int
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = []
    for _ in range(20):
        params = space.sample(study.ask())
        config = TrialConfig.from_params(params)
        seen.append(config)
        assert isinstance(config.hyper["dropout"], float) and isinstance(config.hyper["depth"], int)
        assert ("lr_scale" in config.hyper) == (config.hyper["depth"] in (2, 3))
    assert any("lr_scale" in c.hyper for c in seen)


def test_configs_that_differ_only_in_a_custom_value_differ() -> None:
    a, b = TrialConfig(hyper={"dropout": 0.1}), TrialConfig(hyper={"dropout": 0.2})
    assert a != b and a.as_dict() != b.as_dict()
    assert "dropout=0.1" in a.short() and "dropout=0.2" in b.short()
    assert TrialConfig(**a.as_dict()) == a  # how the trial record reads it back
    assert TrialConfig.from_params(a.as_params()) == a
    assert TrialConfig(**{k: v for k, v in a.as_dict().items() if k != "hyper"}) == TrialConfig()  # records from before


@pytest.mark.e2e
def test_best_exports_and_train_replays_a_custom_value(tmp_path: Path) -> None:
    path = experiment(
        tmp_path,
        "own_job_mod:signature_task",
        """  lr: 1.0e-2
      batch_size: 64
      depth: {choices: [1, 2]}
      dropout: {choices: [0.05, 0.15]}""",
    )
    env = {"PYTHONPATH": str(FIXTURES)}
    result = cli("run", str(path), "--quiet", "--no-tracking", cwd=tmp_path, env=env, timeout=240)
    assert result.returncode == 0, result.stderr
    study = optuna.load_study(study_name="custom", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert all(set(t.params) >= {"depth", "dropout"} for t in study.trials)
    # (MLflow parameters: tests/test_examples.py.)
    result = cli("best", str(path), "-o", str(tmp_path / "best.yaml"), cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    best = yaml.safe_load((tmp_path / "best.yaml").read_text())
    assert best["search_space"]["depth"] in (1, 2) and best["search_space"]["dropout"] in (0.05, 0.15)
    assert "hyper" not in best["search_space"]
    result = cli("train", str(tmp_path / "best.yaml"), "--json", cwd=tmp_path, env=env)
    out = json.loads(result.stdout)
    assert out["config"]["hyper"] == {"depth": best["search_space"]["depth"], "dropout": best["search_space"]["dropout"]}
