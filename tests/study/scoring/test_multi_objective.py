"""Studies of two objectives on a real SQLite file: the front, pruning and capping on it, refusals."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
from conftest import synthetic_experiment, two_objective_experiment, write

from tuner.errors import ConfigError
from tuner.study.record import COMPLETE, FINISHED, records
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.opening import open_study
from tuner.study.run.runner import run_study
from tuner.study.scoring.model_size import model_bytes
from tuner.study.scoring.objectives import ALONE, OBJECTIVE_KINDS
from tuner.study.scoring.pareto import dominates, objective_names, search_front, search_points, several
from tuner.study.scoring.values import check_minimize
from tuner.study.stopping.pruner_registry import PRUNER_KINDS, PRUNERS_FOR_SEVERAL
from tuner.tasks.registry import build_task
from tuner.train import energy
from tuner.train.trial_config import TrialConfig


def test_time_and_model_size_give_a_front_of_non_dominated_trials(tmp_path: Path) -> None:
    study = run_study(load_experiment(two_objective_experiment(tmp_path / "two.yaml")))
    assert several(study) and len(study.directions) == 2 and objective_names(study) == ("time", "model_size")
    done = records(study, COMPLETE)
    assert done and all(r.value is None and len(r.values) == 2 for r in done)
    task = build_task("synthetic")
    for r in done:  # the second value is the bytes of the model's weights at the trial's width
        assert r.values[1] == model_bytes(task, r.config) == r.result.model_bytes
        # Only a trial that reached the target is feasible (Optuna's constraint).
        assert (r.trial.constraints["target"] <= 0) == r.reached
    front, reached = search_front(study), search_points(study)
    assert front, "some trial reaches 0.9 on the synthetic task"
    for p in front:  # nothing reached dominates a front point, and every other reached one is dominated
        assert not any(dominates(q.values, p.values) for q in reached)
    on_front = {p.trial.number for p in front}
    for q in reached:
        assert q.trial.number in on_front or any(dominates(p.values, q.values) for p in front)
    assert {p.trial.number for p in front} <= {t.number for t in study.best_trials}  # Optuna agrees


def test_equal_time_pruning_still_prunes_a_study_of_two_objectives(tmp_path: Path) -> None:
    # Capping off, so that trailing trials are left to the pruner; a target the noisy task
    # reaches only with a good rate.
    extra = "pruner: {min_trials: 1, warmup_s: 0, cap_slack: null}\ntask_options: {noise: 3.0}\n"
    path = two_objective_experiment(tmp_path / "prune.yaml", extra, n_trials=10)
    write(path, path.read_text().replace("target: 0.9", "target: 0.62").replace("cap_s: 2.0", "cap_s: 1.0"))
    study = run_study(load_experiment(path))
    pruned = [r for r in records(study, FINISHED) if r.outcome is not None and r.outcome.value == "pruned"]
    assert pruned, [(r.number, r.outcome) for r in records(study)]
    assert all("other trials had reached by then" in r.reason for r in pruned)
    assert all(not r.trial.intermediate_values for r in pruned)  # Optuna takes no reports here


@pytest.mark.e2e
def test_a_front_caps_a_trial_only_against_a_point_no_larger(tmp_path: Path) -> None:
    path = two_objective_experiment(tmp_path / "cap.yaml", "pruner: {name: none}\ntask_options: {noise: 3.0}\n", n_trials=10)
    write(path, path.read_text().replace("target: 0.9", "target: 0.62").replace("cap_s: 2.0", "cap_s: 1.0"))
    study = run_study(load_experiment(path))
    capped = [r for r in records(study, FINISHED) if r.outcome is not None and r.outcome.value == "capped"]
    assert capped, [(r.number, r.outcome) for r in records(study)]
    for r in capped:
        assert "the fastest point on the Pareto front with no larger model_size" in r.reason
        against = int(r.reason.rsplit("(trial ", 1)[1].split(")")[0])
        assert study.trials[against].values[1] <= r.values[1]  # never capped by a point with a larger model
        assert not r.reached


@pytest.mark.parametrize(
    "minimize, allowed",
    [
        ("[time]", "a list of two or more of " + ", ".join(OBJECTIVE_KINDS)),
        ("[time, time]", "a list of two or more"),
        ("[time, speed]", "a list of two or more"),
        ("model_size", "one of " + ", ".join(ALONE) + ", or a list"),
    ],
)
def test_bad_objective_lists_are_refused_at_load(tmp_path: Path, minimize: str, allowed: str) -> None:
    path = synthetic_experiment(tmp_path / "bad.yaml", f"objective: {{minimize: {minimize}}}\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    assert info.value.key == "objective.minimize" and allowed in info.value.allowed and str(path) in str(info.value)


@pytest.mark.parametrize("pruner", [n for n, kind in PRUNER_KINDS.items() if not kind.several])
def test_optuna_pruners_are_refused_with_two_objective_experiment(tmp_path: Path, pruner: str) -> None:
    path = synthetic_experiment(tmp_path / "p.yaml", f"objective: {{minimize: [time, model_size]}}\npruner: {{name: {pruner}}}\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(path)
    err = info.value
    assert (err.key, err.given) == ("pruner.name", pruner)
    assert err.allowed.startswith(" or ".join(PRUNERS_FOR_SEVERAL) + " with several objectives")
    assert len(str(err).splitlines()) == 1 and not (tmp_path / "study.db").exists()
    load_experiment(synthetic_experiment(tmp_path / "one.yaml", f"pruner: {{name: {pruner}}}\n"))  # one objective: fine


def test_resume_with_another_number_of_objectives_is_refused(tmp_path: Path) -> None:
    single = synthetic_experiment(tmp_path / "s.yaml", n_trials=1)
    open_study(load_experiment(single))
    text = single.read_text().replace("  cap_s: 2.0\n", "  cap_s: 2.0\n  minimize: [time, model_size]\n")
    both = write(tmp_path / "s2.yaml", text)
    with pytest.raises(ConfigError) as info:
        open_study(load_experiment(both))
    err = info.value
    assert err.key == "objective.minimize" and err.given == ["time", "model_size"]
    assert err.allowed.startswith("'time' as in the existing study 's'")
    study = optuna.load_study(study_name="s", storage=load_experiment(single).storage)
    assert len(study.directions) == 1  # untouched
    # The reverse: a study made for two objectives, resumed for one.
    open_study(load_experiment(both).with_overrides(name="s-two"))
    with pytest.raises(ConfigError, match=r"objective\.minimize.*\['time', 'model_size'\] as in the existing study 's-two'"):
        open_study(load_experiment(single).with_overrides(name="s-two"))


def test_unmeasurable_objectives_are_refused_before_any_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        "tuner.study.scoring.objectives.energy_meter", lambda *a, **k: energy.energy_meter("cpu", rapl_root=tmp_path / "none")
    )
    exp = load_experiment(synthetic_experiment(tmp_path / "e.yaml", "objective: {minimize: [time, energy]}\n"))
    with pytest.raises(ConfigError, match=r"objective\.minimize.*energy \(unavailable"):
        check_minimize(exp, "cpu")
    exp = load_experiment(synthetic_experiment(tmp_path / "m.yaml", "objective: {minimize: [time, peak_memory]}\n"))
    with pytest.raises(ConfigError, match=r"peak_memory on a GPU only.*got .peak_memory on cpu"):
        check_minimize(exp, "cpu")
    assert model_bytes(build_task("synthetic"), TrialConfig(width=2.0)) > model_bytes(build_task("synthetic"), TrialConfig(width=0.5))
