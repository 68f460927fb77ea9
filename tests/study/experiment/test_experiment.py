"""Experiment files: strict loading, one-line errors naming file, key, allowed and given."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import yaml
from conftest import DEFAULT_SPACE, REPO_ROOT, write

from tuner.errors import ConfigError
from tuner.study.experiment.load import Budget, Experiment, Objective, experiment_from_dict, resolve_threads
from tuner.study.run.experiment_file import load_experiment
from tuner.study.space.space import Choice, Fixed, Range
from tuner.train.trial_config import OPTIMIZERS, PRECISIONS, SCHEDULES


def load_error(tmp_path: Path, text: str, name: str = "exp.yaml") -> ConfigError:
    path = write(tmp_path / name, text)
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    err = info.value
    message = str(err)
    assert "\n" not in message
    assert message.startswith(f"{path}: {err.key}: expected ")
    return err


# (yaml text, key path, a part of what is allowed, what was given)
INVALID = {
    "unknown top-level key": ("task: synthetic\nbogus: 1\n", "bogus", "one of name, task, task_options", "bogus"),
    "unknown objective key": ("objective:\n  targt: 0.9\n", "objective.targt", "one of target, eval_every_samples, cap_s", "targt"),
    "unknown budget key": ("budget:\n  trials: 3\n", "budget.trials", "one of n_trials, timeout_s", "trials"),
    "unknown sampler key": ("sampler:\n  seed: 3\n", "sampler.seed", "one of name, n_startup_trials", "seed"),
    "unknown trainer key": ("trainer:\n  gpus: 2\n", "trainer.gpus", "one of device, threads", "gpus"),
    "unknown search_space key": (
        f"search_space:\n  file: {DEFAULT_SPACE}\n  overide: {{}}\n",
        "search_space.overide",
        "one of file, override, remove",
        "overide",
    ),
    "override without a file": (
        "search_space:\n  override: {width: 2.0}\n",
        "search_space.file",
        "the search-space file that search_space.override changes",
        None,
    ),
    "unknown spec key": (
        "search_space:\n  lr: {low: 0.001, high: 0.1, lgo: true}\n",
        "search_space.lr.lgo",
        "one of value, choices, low, high, log",
        "lgo",
    ),
    "unknown dimension": (
        "search_space:\n  momentum: 0.9\n",
        "search_space.momentum",
        "a dimension (one of optimizer, amsgrad, lr",
        "momentum",
    ),
    "target not a number": ("objective:\n  target: high\n", "objective.target", "a number in (0, 1]", "high"),
    "target out of range": ("objective:\n  target: 90\n", "objective.target", "a number in (0, 1]", 90.0),
    "cadence not an integer": ("objective:\n  eval_every_samples: 1.5\n", "objective.eval_every_samples", "an integer > 0", 1.5),
    "negative cap": ("objective:\n  cap_s: -1\n", "objective.cap_s", "a number of seconds > 0", -1.0),
    "unknown clock": ("objective:\n  clock: gpu\n", "objective.clock", "one of auto, robust, train, wall, cpu", "gpu"),
    "section not a mapping": ("objective: 0.9\n", "objective", "a mapping", 0.9),
    "seed is a bool": ("seed: true\n", "seed", "a value of type int", True),
    "name not a string": ("name: [a]\n", "name", "a value of type str", ["a"]),
    "task_options not a mapping": ("task: synthetic\ntask_options: 3\n", "task_options", "a value of type dict", 3),
    "unknown sampler": ("sampler:\n  name: cmaes\n", "sampler.name", "one of tpe, random, gp, qmc", "cmaes"),
    "unknown device": ("trainer:\n  device: tpu\n", "trainer.device", "auto, cpu, cuda or cuda:N", "tpu"),
    "zero threads": ("trainer:\n  threads: 0\n", "trainer.threads", "an integer > 0", 0),
    "low >= high": ("search_space:\n  lr: {low: 0.1, high: 0.01}\n", "search_space.lr", "low < high", "low=0.1 high=0.01"),
    "low == high": ("search_space:\n  batch_size: {low: 64, high: 64}\n", "search_space.batch_size", "low < high", "low=64 high=64"),
    "log with low = 0": (
        "search_space:\n  weight_decay: {low: 0.0, high: 0.1, log: true}\n",
        "search_space.weight_decay.low",
        "> 0 on a log scale",
        0.0,
    ),
    "log with step": (
        "search_space:\n  lr: {low: 0.001, high: 0.1, log: true, step: 0.01}\n",
        "search_space.lr.step",
        "no step on a log scale",
        0.01,
    ),
    "log not a bool": (
        "search_space:\n  lr: {low: 0.001, high: 0.1, log: yes please}\n",
        "search_space.lr.log",
        "true or false",
        "yes please",
    ),
    "missing high": ("search_space:\n  lr: {low: 0.001}\n", "search_space.lr.high", "a high bound (float > 0)", None),
    "empty choices": ("search_space:\n  batch_size: {choices: []}\n", "search_space.batch_size.choices", "a non-empty list", []),
    "choices not a list": ("search_space:\n  batch_size: {choices: 64}\n", "search_space.batch_size.choices", "a non-empty list", 64),
    "unknown optimizer": (
        "search_space:\n  optimizer: {choices: [adam, sgd]}\n",
        "search_space.optimizer.choices[1]",
        "one of " + ", ".join(OPTIMIZERS),
        "sgd",
    ),
    "unknown fixed optimizer": (
        "search_space:\n  optimizer: lion\n",
        "search_space.optimizer",
        "one of " + ", ".join(OPTIMIZERS),
        "lion",
    ),
    "cooldown past the horizon": ("search_space:\n  decay_frac: 1.5\n", "search_space.decay_frac", "float > 0 <= 1", 1.5),
    "no cooldown": ("search_space:\n  decay_frac: {choices: [0.0, 0.2]}\n", "search_space.decay_frac.choices[0]", "float > 0 <= 1", 0.0),
    "muon momentum of 1": ("search_space:\n  muon_momentum: {low: 0.9, high: 1.0}\n", "search_space.muon_momentum.high", "< 1", 1.0),
    "unknown precision": ("search_space:\n  precision: fp8\n", "search_space.precision", "one of " + ", ".join(PRECISIONS), "fp8"),
    "unknown schedule": (
        "search_space:\n  schedule: {choices: [constant, step]}\n",
        "search_space.schedule.choices[1]",
        "one of " + ", ".join(SCHEDULES),
        "step",
    ),
    "range on a name dimension": (
        "search_space:\n  optimizer: {low: 1, high: 2}\n",
        "search_space.optimizer",
        "a value or choices",
        {"low": 1, "high": 2},
    ),
    "batch size not an integer": (
        "search_space:\n  batch_size: {choices: [64, 1.5]}\n",
        "search_space.batch_size.choices[1]",
        "int >= 1",
        1.5,
    ),
    "zero learning rate": ("search_space:\n  lr: 0\n", "search_space.lr", "float > 0", 0),
    "amsgrad not a bool": ("search_space:\n  amsgrad: {choices: [0, 1]}\n", "search_space.amsgrad.choices[0]", "true or false", 0),
    "when on a later dimension": (
        "search_space:\n  amsgrad: {choices: [false, true], when: {optimizer: [adam]}}\n  optimizer: {choices: [adam, nadam]}\n",
        "search_space.amsgrad.when.optimizer",
        "a dimension listed earlier in the space",
        "optimizer",
    ),
    "when with an unknown value": (
        "search_space:\n  optimizer: {choices: [adam]}\n  amsgrad: {choices: [false, true], when: {optimizer: [adamz]}}\n",
        "search_space.amsgrad.when.optimizer",
        "one of " + ", ".join(OPTIMIZERS),
        "adamz",
    ),
    "remove an absent dimension": (
        f"search_space:\n  file: {DEFAULT_SPACE}\n  remove: [dropout]\n",
        "search_space.remove[0]",
        "a dimension of the space (optimizer, amsgrad",
        "dropout",
    ),
    "override an unknown dimension": (
        f"search_space:\n  file: {DEFAULT_SPACE}\n  override: {{dropout: 0.1}}\n",
        "search_space.override.dropout",
        "a dimension (one of",
        "dropout",
    ),
    "override out of range": (
        f"search_space:\n  file: {DEFAULT_SPACE}\n  override: {{lr: {{high: 0.0001}}}}\n",
        "search_space.override.lr",
        "low < high",
        "low=0.001 high=0.0001",
    ),
    "missing search-space file": (
        "search_space: nowhere/space.yaml\n",
        "search_space.file",
        "an existing search-space file",
        "nowhere/space.yaml",
    ),
    "unknown task": ("task: nosuch\n", "task", "a built-in task", None),
    "bad storage scheme": (
        "storage: redis://localhost/0\n",
        "storage",
        "a database URL (sqlite://..., postgresql://..., mysql://..., grpc://...)",
        "redis://localhost/0",
    ),
    "storage without a scheme": ("storage: tuner.db\n", "storage", "a database URL (sqlite://...", "tuner.db"),
    "top level is a list": ("- task: synthetic\n", "(top level)", "a mapping of experiment keys", [{"task": "synthetic"}]),
    "name with a slash": ("name: a/b\n", "name", "a study name of 1 to 100 characters: letters, digits, '.', '_' or '-'", "a/b"),
    "cap neither seconds nor auto": ("objective:\n  cap_s: fast\n", "objective.cap_s", "a number of seconds > 0, or auto", "fast"),
    "infinite cap": ("objective:\n  cap_s: .inf\n", "objective.cap_s", "a finite number (a number of seconds > 0, or auto)", math.inf),
    "infinite timeout written as 1e400": (
        "budget:\n  timeout_s: 1e400\n",
        "budget.timeout_s",
        "a finite number (a number of seconds > 0)",
        "1e400",
    ),
    "infinite slack": ("pruner:\n  cap_slack: .inf\n", "pruner.cap_slack", "a finite number (a number >= 1, or null", math.inf),
    "infinite bound": ("search_space:\n  lr: {low: 0.001, high: .inf}\n", "search_space.lr.high", "a finite number (float > 0)", math.inf),
    "integer past a float's range": ("objective:\n  cap_s: 1" + "0" * 400 + "\n", "objective.cap_s", "a finite number", 10**400),
    "integer bound past a float's range": (
        "search_space:\n  batch_size: {low: 1, high: 1" + "0" * 400 + "}\n",
        "search_space.batch_size.high",
        "a finite number (int >= 1)",
        10**400,
    ),
    "infinite step": (
        "search_space:\n  width: {low: 0.5, high: 2.0, step: .inf}\n",
        "search_space.width.step",
        "a finite number > 0",
        math.inf,
    ),
}


@pytest.mark.parametrize("text,key,allowed,given", INVALID.values(), ids=INVALID.keys())
def test_invalid_experiment_names_file_key_allowed_given(tmp_path: Path, text: str, key: str, allowed: str, given: object) -> None:
    err = load_error(tmp_path, text)
    assert err.key == key
    assert allowed in err.allowed
    if given is not None:
        assert err.given == given
    assert f": expected {err.allowed}, got " in str(err)


@pytest.mark.parametrize(
    "text,key",
    [
        ("objective:\n  target: .nan\n", "objective.target"),
        ("objective:\n  cap_s: .NaN\n", "objective.cap_s"),
        ("pruner:\n  percentile: .nan\n", "pruner.percentile"),
        ("search_space:\n  lr: .nan\n", "search_space.lr"),
        ("search_space:\n  beta1: {low: .nan, high: 0.9}\n", "search_space.beta1.low"),
        ("search_space:\n  beta2: {choices: [0.99, .nan]}\n", "search_space.beta2.choices[1]"),
        ("search_space:\n  lr: {low: 0.001, high: 0.1, step: .nan}\n", "search_space.lr.step"),
    ],
    ids=["target", "cap_s", "percentile", "fixed lr", "low bound", "a choice", "step"],
)
def test_nan_is_refused_where_a_number_is_meant(tmp_path: Path, text: str, key: str) -> None:
    # NaN fails no comparison check (nan > 0 and nan < 1 are both False), so each is refused by name.
    err = load_error(tmp_path, text)
    assert err.key == key
    assert err.allowed.startswith("a finite number")
    assert str(err).endswith(", got nan")


def test_unknown_task_lists_the_built_ins(tmp_path: Path) -> None:
    err = load_error(tmp_path, "task: nosuch\n")
    for name in ("mnist1d-cnn", "mnist1d-mlp", "mnist1d-gru", "digits-mlp", "synthetic", "file-mlp"):
        assert name in str(err)
    assert "nosuch" in str(err)


def test_task_module_that_does_not_exist(tmp_path: Path) -> None:
    err = load_error(tmp_path, "task: no_such_module_here:make\n")
    assert err.key == "task"
    assert "package.module:function" in err.allowed
    assert "no_such_module_here:make" in str(err.given) and "No module named 'no_such_module_here'" in str(err.given)


def test_bad_task_options_are_caught_at_load(tmp_path: Path) -> None:
    err = load_error(tmp_path, "task: synthetic\ntask_options: {nois: 1.0}\n")
    assert err.key == "task_options"
    assert "nois" in str(err)
    assert err.given == {"nois": 1.0}


def test_yaml_syntax_error_names_line_and_column(tmp_path: Path) -> None:
    err = load_error(tmp_path, "task: synthetic\nobjective: {target: 0.9\n")
    assert err.key == "(yaml)"
    assert err.allowed == "valid YAML"
    assert str(err.given).startswith("line 3, column 1: ")


def test_yaml_tab_indentation_is_a_syntax_error(tmp_path: Path) -> None:
    err = load_error(tmp_path, "objective:\n\ttarget: 0.9\n")
    assert err.key == "(yaml)"
    assert "line 2" in str(err.given)


def test_missing_experiment_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_experiment(tmp_path / "absent.yaml")
    assert str(info.value) == f"{tmp_path / 'absent.yaml'}: (file): expected an existing file, got '{tmp_path / 'absent.yaml'}'"


def test_missing_search_space_file_names_the_experiment(tmp_path: Path) -> None:
    err = load_error(tmp_path, "search_space:\n  file: gone.yaml\n")
    assert str(err) == f"{tmp_path / 'exp.yaml'}: search_space.file: expected an existing search-space file, got 'gone.yaml'"


def test_error_inside_a_search_space_file_names_that_file(tmp_path: Path) -> None:
    space = write(tmp_path / "spaces" / "mine.yaml", "lr: {low: 0.1, high: 0.01}\n")
    write(tmp_path / "exp.yaml", "search_space: spaces/mine.yaml\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(tmp_path / "exp.yaml")
    assert info.value.source == str(space)
    assert info.value.key == "search_space.lr"


def test_long_given_values_are_shortened_to_one_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, "objective:\n  clock: " + "x" * 200 + "y" + "\n")
    shown = str(err).split(", got ", 1)[1]
    assert len(shown) == 120 and " ... " in shown and shown.endswith("y'")  # the end, often the reason, is kept


def test_three_line_experiment_gets_every_default(tmp_path: Path) -> None:
    path = write(tmp_path / "three.yaml", "task: synthetic\nobjective:\n  target: 0.95\n")
    exp = load_experiment(path)
    assert exp.name == "three"
    assert exp.task == "synthetic"
    assert exp.objective == Objective(target=0.95)
    assert exp.budget == Budget()
    assert exp.storage == "sqlite:///tuner.db"
    assert exp.tracking_uri == "sqlite:///mlruns/mlflow.db"
    assert exp.seed == 0
    # No search_space key: the joint default space, every dimension of it.
    assert list(exp.search_space.dims) == list(yaml.safe_load(DEFAULT_SPACE.read_text()))
    assert not (tmp_path / "tuner.db").exists()


def test_empty_file_is_the_default_experiment(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "empty.yaml", ""))
    assert exp.task == "mnist1d-cnn"
    assert exp.name == "empty"


def test_yaml_1_1_exponent_without_dot_is_a_number(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "e.yaml", "objective:\n  cap_s: 1e1\nsearch_space:\n  lr: {low: 1e-3, high: 1e-1, log: true}\n"))
    assert exp.objective.cap_s == 10.0
    assert exp.search_space.dims["lr"] == Range(1e-3, 1e-1, log=True)


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "experiments").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_experiments_keep_loading(path: Path) -> None:
    exp = load_experiment(path)
    assert exp.name
    assert exp.search_space.dims
    # The resolved form loads back to the same experiment.
    again = experiment_from_dict(exp.to_dict(), str(path))
    assert again.to_dict() == exp.to_dict()


def test_resolved_experiment_round_trips_through_yaml(tmp_path: Path) -> None:
    exp = load_experiment(
        write(
            tmp_path / "e.yaml",
            f"""
        task: synthetic
        task_options: {{noise: 1.0}}
        search_space:
          file: {DEFAULT_SPACE}
          override:
            precision: fp32
            lr: {{choices: [0.01, 0.02]}}
          remove: [beta1]
        objective: {{target: 0.8, clock: wall, max_samples: 5000}}
        budget: {{n_trials: 4, timeout_s: 30}}
        seed: 7
        """,
        )
    )
    text = yaml.safe_dump(exp.to_dict(), sort_keys=False)  # dimension order is sampling order
    again = experiment_from_dict(yaml.safe_load(text), "again.yaml")
    assert again.to_dict() == exp.to_dict()
    assert dataclasses.replace(again, source=exp.source) == exp


def test_flags_beat_the_file_and_none_keeps_it(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "e.yaml", "task: synthetic\nbudget: {n_trials: 4, timeout_s: 30}\nseed: 3\n"))
    same = exp.with_overrides(n_trials=None, timeout_s=None, seed=None, name=None, storage=None)
    assert same == exp
    changed = exp.with_overrides(n_trials=9, seed=0, name="other", storage="sqlite:///x.db")
    assert changed.budget == Budget(n_trials=9, timeout_s=30.0)
    assert (changed.seed, changed.name, changed.storage) == (0, "other", "sqlite:///x.db")


def test_search_space_forms_inline_path_and_mapping(tmp_path: Path) -> None:
    inline = load_experiment(write(tmp_path / "a.yaml", "search_space:\n  optimizer: {choices: [adam, nadam]}\n  lr: 0.01\n"))
    assert inline.search_space.dims == {"optimizer": Choice(("adam", "nadam")), "lr": Fixed(0.01)}
    write(tmp_path / "s.yaml", "batch_size: {choices: [32, 64]}\n")
    as_path = load_experiment(write(tmp_path / "b.yaml", "search_space: s.yaml\n"))
    as_mapping = load_experiment(write(tmp_path / "c.yaml", "search_space: {file: s.yaml}\n"))
    assert as_path.search_space == as_mapping.search_space
    assert as_path.search_space.dims == {"batch_size": Choice((32, 64))}


def test_search_space_path_relative_to_the_experiment_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "proj" / "spaces" / "s.yaml", "width: {choices: [1.0, 2.0]}\n")
    path = write(tmp_path / "proj" / "experiments" / "e.yaml", "search_space: ../spaces/s.yaml\n")
    monkeypatch.chdir(tmp_path / "proj" / "spaces")  # the current folder does not matter
    assert load_experiment(path).search_space.dims == {"width": Choice((1.0, 2.0))}


def test_resolve_threads_configured_or_all_cores() -> None:
    exp = Experiment(source="x", name="x")
    assert resolve_threads(exp.trainer) >= 1
    assert resolve_threads(dataclasses.replace(exp.trainer, threads=3)) == 3
