"""Sample counts in epochs of the task (tuner/study/experiment/task_samples.py): resolved when the file loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DEFAULT_SPACE, cli, synthetic_experiment, write

from tuner.errors import ConfigError
from tuner.study.record import records
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.study.space.space import Fixed, Range
from tuner.study.study_record import stored_definition
from tuner.tasks.registry import build_task

EPOCHS = """
search_space:
  file: {space}
  override:
    precision: fp32
    batch_size: {{choices: [64, 128]}}
    lr: {{low: 3.0e-3, high: 3.0e-2}}
    schedule: warmup_cosine
    horizon_samples: {{low: {{epochs: 1}}, high: {{epochs: 4.5}}, log: true}}
objective:
  target: 0.9
  eval_every_samples: {{epochs: 0.125}}
  max_samples: {{epochs: 20}}
  cap_s: 2.0
"""


def test_epochs_become_the_tasks_samples_when_the_file_loads(tmp_path: Path) -> None:
    n_train = build_task("synthetic").n_train
    experiment = load_experiment(synthetic_experiment(tmp_path / "epochs.yaml", EPOCHS.format(space=DEFAULT_SPACE)))
    assert experiment.objective.eval_every_samples == round(0.125 * n_train)
    assert experiment.objective.max_samples == 20 * n_train
    horizon = experiment.search_space.dims["horizon_samples"]
    assert isinstance(horizon, Range) and (horizon.low, horizon.high) == (n_train, round(4.5 * n_train)) and horizon.log
    # What a run writes back and stores is the numbers: the study compares them on resume.
    assert experiment.to_dict()["objective"]["eval_every_samples"] == round(0.125 * n_train)


def test_a_study_evaluates_at_the_cadence_the_epochs_come_to(tmp_path: Path) -> None:
    n_train = build_task("synthetic").n_train
    experiment = load_experiment(synthetic_experiment(tmp_path / "epochs.yaml", EPOCHS.format(space=DEFAULT_SPACE), n_trials=2))
    study = run_study(experiment)
    assert stored_definition(study)["eval_every_samples"] == round(0.125 * n_train)
    every = round(0.125 * n_train)
    trials = [r for r in records(study) if r.curve is not None]
    assert trials
    for r in trials:  # the first evaluation falls at the first step past the cadence (more may come between, forced by a stop rule)
        first = r.curve.samples[0]
        assert every <= first < every + r.config.batch_size, r.curve.samples


def test_a_fixed_value_in_a_space_file_and_a_choice_in_epochs(tmp_path: Path) -> None:
    n_train = build_task("synthetic").n_train
    space = write(tmp_path / "space.yaml", "schedule: warmup_cosine\nhorizon_samples: {epochs: 3}\nlr: 0.01\n")
    experiment = load_experiment(synthetic_experiment(tmp_path / "fixed.yaml", f"search_space: {space}"))
    assert experiment.search_space.dims["horizon_samples"] == Fixed(3 * n_train)
    chosen = f"search_space:\n  file: {space}\n  override:\n    horizon_samples: {{choices: [{{epochs: 2}}, 5000]}}\n"
    experiment = load_experiment(synthetic_experiment(tmp_path / "choice.yaml", chosen))
    assert experiment.search_space.dims["horizon_samples"].choices == (2 * n_train, 5000)


@pytest.mark.parametrize(
    "given", ["{epochs: 0}", "{epochs: -1}", "{epoch: 2}", "{epochs: 1, samples: 3}", "{epochs: two}", "{epochs: .inf}"]
)
def test_a_bad_form_is_refused_in_one_line(tmp_path: Path, given: str) -> None:
    path = synthetic_experiment(tmp_path / "bad.yaml", f"objective: {{target: 0.9, eval_every_samples: {given}, cap_s: 2.0}}")
    with pytest.raises(ConfigError) as err:
        load_experiment(path)
    line = str(err.value)
    assert line.startswith(f"{path}: objective.eval_every_samples: expected an integer > 0, or {{epochs: N}}") and "got {" in line


def test_a_bad_form_in_the_space_names_its_key_and_tuner_validate_exits_2(tmp_path: Path) -> None:
    path = synthetic_experiment(
        tmp_path / "bad.yaml",
        f"search_space:\n  file: {DEFAULT_SPACE}\n  override:\n    horizon_samples: {{low: {{epochs: 0}}, high: 50000}}\n",
    )
    done = cli("validate", str(path), cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "search_space.override.horizon_samples.low: expected an integer > 0, or {epochs: N}" in lines[0], done.stderr


def test_a_training_function_has_no_training_set_to_count_epochs_of(tmp_path: Path) -> None:
    write(tmp_path / "own_loop.py", "def train(config, device, seed, session):\n    session.report(1.0, samples=1)\n")
    path = write(
        tmp_path / "own.yaml",
        """
        task: own_loop:train
        search_space: {lr: 0.01}
        objective: {target: 0.9, eval_every_samples: {epochs: 1}, cap_s: 2.0}
        """,
    )
    with pytest.raises(ConfigError, match=r"objective\.eval_every_samples: expected a number of samples: a training function"):
        load_experiment(path)
