"""Studies on a real SQLite file: run, resume, refuse another objective, record every trial."""

from __future__ import annotations

import io
import time
from pathlib import Path

import optuna
import pytest
from conftest import BROKEN_FORWARD_TASK, synthetic_experiment, write
from optuna.trial import TrialState

from tuner import api
from tuner.errors import ConfigError
from tuner.study.hooks import StudyHooks
from tuner.study.record import FINISHED, best_reached, confirmation_attrs, records
from tuner.study.reruns.racing import RACE_SHARE, RacingHooks
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.hook_order import study_hooks
from tuner.study.run.objective import StudyFailed
from tuner.study.run.opening import open_study
from tuner.study.run.plan import DEFAULT_N_TRIALS, Plan, trials_wanted
from tuner.study.run.prepare import prepare
from tuner.study.run.progress import Progress, top_trials_table
from tuner.study.run.runner import run_study
from tuner.study.run.sampler import make_sampler
from tuner.study.scoring.values import Scorer
from tuner.study.stopping.hooks import PruningHooks
from tuner.study.stopping.screen import ScreenHooks
from tuner.tasks.registry import build_task
from tuner.train.result import Outcome
from tuner.train.trial_config import TrialConfig


def finished(study: optuna.Study) -> list:
    return records(study, FINISHED)


def test_run_then_resume_to_exactly_the_total(tmp_path: Path) -> None:
    exp = load_experiment(synthetic_experiment(tmp_path / "resume.yaml", n_trials=3))
    first = run_study(exp)
    assert len(finished(first)) == 3
    before = {t.number: t.params for t in first.get_trials()}

    second = run_study(exp.with_overrides(n_trials=5))
    assert second.study_name == "resume"
    assert optuna.get_all_study_names(exp.storage) == ["resume"]  # the same study, not a new one
    trials = second.get_trials()
    assert len(finished(second)) == 5 and len(trials) == 5
    assert [t.number for t in trials] == [0, 1, 2, 3, 4]
    assert {n: trials[n].params for n in before} == before  # the first three untouched
    # The sampler was seeded past the stored trials: the resumed run does not replay draws.
    assert trials[3].params != trials[0].params

    # Already at the total: nothing more runs.
    again = run_study(exp.with_overrides(n_trials=5))
    assert len(again.get_trials()) == 5


def test_resume_with_another_objective_is_refused(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "obj.yaml", n_trials=1)
    run_study(load_experiment(path))
    changed = load_experiment(write(path, path.read_text().replace("target: 0.9", "target: 0.8")))
    with pytest.raises(ConfigError) as info:
        run_study(changed)
    err = info.value
    assert err.key == "objective.target"
    assert err.given == 0.8
    assert err.allowed == "0.9 as in the existing study 'obj' (or a new --study-name)"
    study = optuna.load_study(study_name="obj", storage=changed.storage)
    assert len(study.get_trials()) == 1  # nothing was added
    # Another study name is a fresh study in the same file.
    assert len(finished(run_study(changed.with_overrides(name="obj-80")))) == 1


def test_resume_with_another_task_option_is_refused(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "opt.yaml", n_trials=1)
    exp = load_experiment(path)
    open_study(exp)
    with pytest.raises(ConfigError) as info:
        open_study(load_experiment(write(path, path.read_text() + "task_options: {noise: 1.0}\n")))
    assert info.value.key == "task_options"


def test_every_trial_records_its_outcome_configuration_and_curve(tmp_path: Path) -> None:
    exp = load_experiment(synthetic_experiment(tmp_path / "rec.yaml", n_trials=3))
    study = run_study(exp)
    assert study.user_attrs["objective"] == {
        "task": "synthetic",
        "task_options": {},
        "target": 0.9,
        "clock": "robust",
        "cap_s": 2.0,
        "eval_every_samples": 256,
        "minimize": "time",
    }  # part of the resume check
    assert study.user_attrs["experiment"]["name"] == "rec"
    for t in study.get_trials():
        attrs = t.user_attrs
        assert attrs["outcome"] in {o.value for o in Outcome}
        assert attrs["reason"]
        assert TrialConfig(**attrs["config"]) == TrialConfig.from_params(
            t.params | {k: v for k, v in attrs["config"].items() if k not in t.params}
        )
        assert attrs["seed"] == exp.seed + t.number
        assert len(attrs["curve"]["samples"]) == len(attrs["curve"]["metric"]) >= 1
        assert attrs["setup_s"] >= 0 and attrs["wall_s"] >= attrs["train_s"]
        if attrs["outcome"] == "reached":
            assert t.state is TrialState.COMPLETE
            assert t.value == pytest.approx(attrs["robust_s_to_target"])
            assert attrs["samples_to_target"] == attrs["curve"]["samples"][-1]
    best = best_reached(study)
    assert best is not None and best.value == min(t.value for t in study.get_trials() if t.user_attrs["outcome"] == "reached")


def test_failing_trials_are_recorded_and_stop_the_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "usercode").mkdir()
    (tmp_path / "usercode" / "broken_task_mod.py").write_text(BROKEN_FORWARD_TASK)
    monkeypatch.syspath_prepend(str(tmp_path / "usercode"))
    path = synthetic_experiment(tmp_path / "broken.yaml", n_trials=5)
    exp = load_experiment(write(path, path.read_text().replace("task: synthetic", "task: broken_task_mod:make")))
    with pytest.raises(StudyFailed, match="3 trials in a row failed with: ValueError: forward is broken"):
        run_study(exp)
    study = optuna.load_study(study_name="broken", storage=exp.storage)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.FAIL] * 3
    assert all(t.user_attrs["outcome"] == "failed" and t.user_attrs["reason"] == "ValueError: forward is broken" for t in trials)


def test_study_timeout_budget(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "timed.yaml", n_trials=1)
    exp = load_experiment(write(path, path.read_text().replace("n_trials: 1", "timeout_s: 2.0").replace("cap_s: 2.0", "cap_s: 0.5")))
    assert exp.budget.n_trials is None and exp.budget.timeout_s == 2.0
    start = time.perf_counter()
    study = run_study(exp)
    assert time.perf_counter() - start < 2.0 + 6.0  # the budget bounds the run (slack for a busy machine)
    trials = study.get_trials()
    assert len(trials) >= 1
    # Every trial ends in a recorded outcome; one cut by the deadline is interrupted, unscored.
    for t in trials:
        assert t.user_attrs["outcome"] in {o.value for o in Outcome}
        assert (t.state is TrialState.FAIL) == (t.user_attrs["outcome"] in ("interrupted", "failed"))


@pytest.mark.parametrize("storage", ["sqlite:///{tmp}/missing-dir/s.db", "postgresql://u@127.0.0.1:1/db"], ids=["missing-dir", "port-1"])
def test_a_storage_that_cannot_be_opened_is_a_config_error_and_creates_nothing(tmp_path: Path, storage: str) -> None:
    # Nothing listens on port 1: without the driver installed the import fails, with it the
    # connection is refused. Either way it is one line about the storage, not a traceback.
    url = storage.format(tmp=tmp_path)
    with pytest.raises(ConfigError) as info:
        open_study(load_experiment(write(tmp_path / "e.yaml", f"task: synthetic\nstorage: {url}\n")))
    assert (info.value.key, info.value.allowed) == ("storage", "a database this machine can open")
    assert info.value.given.startswith(f"{url} (")  # the URL, then why
    assert not (tmp_path / "missing-dir").exists()


@pytest.mark.parametrize(
    "name,cls",
    [
        ("tpe", optuna.samplers.TPESampler),
        ("random", optuna.samplers.RandomSampler),
        ("qmc", optuna.samplers.QMCSampler),
        ("gp", optuna.samplers.GPSampler),
    ],
)
def test_sampler_by_name(tmp_path: Path, name: str, cls: type) -> None:
    exp = load_experiment(write(tmp_path / "e.yaml", f"task: synthetic\nsampler: {{name: {name}}}\n"))
    assert isinstance(make_sampler(exp), cls)


def test_seeded_sampler_draws_the_same_configurations(tmp_path: Path) -> None:
    exp = load_experiment(synthetic_experiment(tmp_path / "seed.yaml"))
    space = exp.search_space
    draws = []
    for _ in range(2):
        study = optuna.create_study(sampler=make_sampler(exp))
        draws.append([space.sample(study.ask()) for _ in range(3)])
    assert draws[0] == draws[1]


def test_prepare_resolves_device_task_and_space(tmp_path: Path) -> None:
    prepared = prepare(load_experiment(synthetic_experiment(tmp_path / "p.yaml")))
    assert str(prepared.device) == "cpu"
    assert prepared.task.name == "synthetic"
    assert prepared.notes == [
        "removed channels_last=True: the model of task synthetic has no 2-d convolution, so the memory layout changes nothing"
    ]  # a CPU runs every precision


def test_progress_lines_and_top_table(tmp_path: Path) -> None:
    exp = load_experiment(synthetic_experiment(tmp_path / "prog.yaml", n_trials=3))
    stream = io.StringIO()
    study = run_study(exp, progress=Progress(stream=stream))
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3  # not a terminal: one line per finished trial
    assert all(line.startswith(f"trial {i:>3} ") for i, line in enumerate(lines))
    table = top_trials_table(study).splitlines()
    assert table[0].split()[:4] == ["trial", "value_s", "outcome", "samples"]
    values = [float(row.split()[1]) for row in table[1:]]
    complete = [t for t in study.get_trials() if t.state is TrialState.COMPLETE]
    reached = [t for t in complete if t.user_attrs["outcome"] == "reached"]  # stopped ones have their own table
    assert values == sorted(values) and len(values) == min(5, len(reached)) >= 1


def test_python_api_runs_reads_the_winner_and_trains_it(tmp_path: Path) -> None:
    exp = load_experiment(synthetic_experiment(tmp_path / "api.yaml", n_trials=2))
    study = api.run(exp, tracking=False, n_trials=3)  # MLflow has its own tests; seconds saved here
    assert len(finished(study)) == 3
    found = api.best_configuration(study)
    assert found is not None
    config, seconds = found
    assert isinstance(config, TrialConfig) and seconds == best_reached(study).value
    result = api.train_once(exp, config=config, seed=best_reached(study).seed)
    assert result.outcome is Outcome.REACHED
    assert result.samples_to_target == best_reached(study).result.samples_to_target
    with pytest.raises(ValueError, match="not fully fixed"):
        api.train_once(exp)


def study_with(search: int, confirmations: int) -> optuna.Study:
    """An in-memory study holding finished search trials and confirmation runs."""
    study = optuna.create_study()
    for i in range(search):
        study.add_trial(optuna.trial.create_trial(value=1.0 + i))
    for i in range(confirmations):
        study.add_trial(optuna.trial.create_trial(value=1.0, user_attrs=confirmation_attrs(0, 100 + i)))
    return study


def test_the_plan_counts_search_trials_and_puts_measurement_runs_on_top(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "plan.yaml", n_trials=3, confirm=True)
    exp = load_experiment(path)
    assert Plan.of(study_with(2, 2), exp, search=True) == Plan(n_search=3, search=True, confirm=True)
    assert Plan.of(study_with(3, 2), exp, search=True).search is False  # the search trials are all there
    assert Plan.of(study_with(0, 0), exp, search=False) == Plan(n_search=3, search=False, confirm=True)  # `tuner confirm`
    timed = load_experiment(write(tmp_path / "timed.yaml", path.read_text().replace("n_trials: 3", "timeout_s: 30")))
    assert trials_wanted(timed) is None and Plan.of(study_with(9, 1), timed, search=True) == Plan(None, True, True)
    assert trials_wanted(load_experiment(write(tmp_path / "d.yaml", "task: synthetic\n"))) == DEFAULT_N_TRIALS


def test_the_hooks_run_in_their_declared_order_with_the_budget_given_to_racing(tmp_path: Path) -> None:
    exp = load_experiment(synthetic_experiment(tmp_path / "order.yaml", race=True))
    extra = StudyHooks()
    progress = Progress(quiet=True)
    hooks = study_hooks(exp, Scorer(exp, build_task("synthetic")), 80.0, progress, [extra])
    assert [type(h) for h in hooks] == [Progress, StudyHooks, RacingHooks, ScreenHooks, PruningHooks]
    assert hooks[0] is progress and hooks[1] is extra
    assert hooks[2].budget_s == 80.0 * RACE_SHARE and hooks[2].race is not None  # set when built, not after


def test_one_scorer_serves_the_search_and_the_confirmation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Scorer] = []
    original = Scorer.__init__

    def counting(self: Scorer, *args: object) -> None:
        built.append(self)
        original(self, *args)

    monkeypatch.setattr(Scorer, "__init__", counting)
    run_study(load_experiment(synthetic_experiment(tmp_path / "one.yaml", n_trials=2, confirm=True)))
    assert len(built) == 1


def test_progress_lines_say_which_runs_re_run_a_configuration(tmp_path: Path) -> None:
    path = synthetic_experiment(tmp_path / "marks.yaml", "confirm: {top_k: 1, seeds: 2}\n", n_trials=3, confirm=True, race=True)
    exp = load_experiment(path)
    stream = io.StringIO()
    study = run_study(exp, progress=Progress(stream=stream))
    printed = stream.getvalue().splitlines()
    lines = {int(line.split()[1]): line for line in printed if line.startswith("trial ")}
    assert set(lines) == {t.number for t in study.trials}
    # Besides the trials, the strategy pruner.name: auto chose once the baseline had run (docs/stopping.md).
    assert [line for line in printed if not line.startswith("trial ")] == [
        "pruner: auto = equal-time pruning with capping, screening, racing and confirmation (no time budget; docs/stopping.md)"
    ]
    marks = {"race": "race of {}", "confirmation": "confirm of {}", "baseline": "baseline", "trial": ""}
    for r in records(study):
        mark = marks[r.role].format(r.race_of if r.role == "race" else r.confirm_of)
        shown = [m for m in ("race of", "confirm of", "baseline") if m in lines[r.number]]
        assert (f"  {mark}  " in lines[r.number]) if mark else not shown, lines[r.number]
    assert {r.role for r in records(study)} == {"trial", "race", "confirmation", "baseline"}
