"""MLflow tracking, asserted through MlflowClient: against the embedded SQLite store and a real server."""

from __future__ import annotations

import io
import json
from pathlib import Path
from types import SimpleNamespace

import optuna
import pytest
from conftest import free_port, synthetic_experiment
from mlflow import MlflowClient
from optuna.trial import TrialState

from tuner.report.study_run import ReportViews
from tuner.study.objective_identity import ObjectiveIdentity
from tuner.study.record import TrialRecord, write_result
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.study.scoring.censoring import NOT_SCORED, objective_value
from tuner.study.study_record import study_objective
from tuner.track.run_layout import STATUS, run_name
from tuner.track.store import TrackingStore
from tuner.track.sync import doctor, sync, trial_value
from tuner.track.trial_runs import MlflowTracking
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

NO_CONFIRM = "confirm:\n  after_search: false\n"  # fewer trials, where confirmation runs add nothing to check


def run(path: Path, uri: str, n_trials: int, stream: io.StringIO | None = None, plots: bool = False) -> optuna.Study:
    experiment = load_experiment(path).with_overrides(tracking_uri=uri, n_trials=n_trials)
    tracking = MlflowTracking(uri, source=str(path), views=ReportViews() if plots else None, stream=stream or io.StringIO())
    return run_study(experiment, hooks=[tracking])


def study_runs(uri: str, name: str) -> tuple[list, dict[int, list]]:
    """(parent runs, child runs by trial number) of the study's experiment."""
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id])
    parents = [r for r in runs if r.data.tags.get("tuner.role") == "parent"]
    children: dict[int, list] = {}
    for r in runs:
        if r.data.tags.get("tuner.role") != "parent":  # trial, race, confirmation or baseline
            children.setdefault(int(r.data.tags["tuner.trial_number"]), []).append(r)
    return parents, children


def check_layout(study: optuna.Study, uri: str, live: bool = True) -> None:
    """Nesting, statuses, names, params, tags and each trial's metric history."""
    client = MlflowClient(uri)
    parents, children = study_runs(uri, study.study_name)
    assert len(parents) == 1
    parent = parents[0]
    trials = study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL))
    assert sorted(children) == [t.number for t in trials]
    for t in trials:
        [child] = children[t.number]
        tags, attrs = child.data.tags, t.user_attrs
        assert tags["mlflow.parentRunId"] == parent.info.run_id
        assert tags["tuner.role"] == TrialRecord.of(t).role  # trial, race, confirmation or baseline
        # The id is copied into Optuna once the background writer has opened the run, if the
        # trial still runs then; a trial that ended first, or a run made by sync, is found by its tags.
        assert attrs.get("mlflow_run_id") in (child.info.run_id, None) or not live
        assert child.info.status == STATUS[Outcome(attrs["outcome"])]
        assert (tags["tuner.train.result"], tags["tuner.reason"]) == (attrs["outcome"], attrs["reason"])
        assert child.info.run_name.startswith(f"trial {t.number}") and f" · {attrs['config']['optimizer']}" in child.info.run_name
        assert child.data.params["lr"] == str(attrs["config"]["lr"]) and child.data.params["seed"] == str(attrs["seed"])
        assert (
            tags["tuner.study_name"] == study.study_name
            and json.loads(tags["tuner.study.scoring.censoring"]) == study.user_attrs["objective"]
        )
        assert json.loads(tags["tuner.sampler"])["name"] == "tpe" and "tuner.pruner" in tags
        assert {"env.host", "env.cpu", "env.gpu", "env.torch", "env.cuda", "env.python", "env.git_commit"} <= set(tags)
        history = client.get_metric_history(child.info.run_id, "accuracy")
        assert [m.step for m in history] == attrs["curve"]["samples"]  # every evaluation, the last one included
        assert [m.value for m in history] == pytest.approx(attrs["curve"]["metric"], abs=1e-4)
        assert {"loss", "train_s", "wall_s"} <= set(child.data.metrics)
        if t.state is TrialState.COMPLETE:
            assert child.data.metrics["objective_s"] == pytest.approx(t.value)
    trial_values = client.get_metric_history(parent.info.run_id, "trial_objective_s")
    assert [m.step for m in trial_values] == [
        t.number for t in trials if trial_value(TrialRecord.of(t), study_objective(study)) is not None
    ]
    assert doctor(study, uri) == []


@pytest.mark.e2e
def test_a_study_is_an_experiment_with_a_parent_run_and_one_child_run_per_trial(tmp_path: Path, tracking_uri: str) -> None:
    study = run(synthetic_experiment(tmp_path / "layout.yaml"), tracking_uri, n_trials=3, plots=True)
    check_layout(study, tracking_uri)
    client = MlflowClient(tracking_uri)
    experiment = client.get_experiment_by_name("layout")
    assert experiment.artifact_location == str(tmp_path / "mlruns" / "artifacts")  # beside the database, not in the CWD
    [parent], _ = study_runs(tracking_uri, "layout")
    assert parent.info.status == "FINISHED"
    best = min(t.value for t in study.trials if t.user_attrs.get("outcome") == "reached")
    assert parent.data.metrics["best_objective_s"] == pytest.approx(best)
    assert parent.data.tags["tuner.best_trial"] == str(next(t.number for t in study.trials if t.value == best))
    assert {"experiment.yaml", "best.yaml", "plots"} <= {a.path for a in client.list_artifacts(parent.info.run_id)}
    plots = {Path(a.path).name for a in client.list_artifacts(parent.info.run_id, "plots")}
    assert {"best_time.png", "accuracy_vs_time.png", "time_vs_params.png", "plots.html"} <= plots


@pytest.mark.e2e
def test_race_confirmation_and_baseline_runs_carry_their_role_live_and_after_sync(tmp_path: Path, tracking_uri: str) -> None:
    # No capping: a search trial slowed by a busy machine must still reach the target, to be raced and confirmed.
    path = synthetic_experiment(
        tmp_path / "roles.yaml", "confirm: {top_k: 1, seeds: 2}\npruner: {cap_slack: null}\n", confirm=True, race=True
    )
    study = run(path, tracking_uri, n_trials=3)
    roles = {TrialRecord.of(t).role for t in study.trials}
    assert roles == {"trial", "race", "confirmation", "baseline"}, roles
    check_layout(study, tracking_uri)  # each run's tuner.role is its trial's, and doctor finds no gap
    # `tuner sync` into an empty store makes the same runs with the same roles.
    empty = f"sqlite:///{tmp_path / 'synced' / 'mlflow.db'}"
    assert sync(study, empty, plots=False).created == len(study.trials)
    check_layout(study, empty, live=False)


def test_resuming_a_study_reuses_its_parent_run(tmp_path: Path, tracking_uri: str) -> None:
    path = synthetic_experiment(tmp_path / "resumed.yaml", NO_CONFIRM)
    run(path, tracking_uri, n_trials=2)
    [first], _ = study_runs(tracking_uri, "resumed")
    study = run(path, tracking_uri, n_trials=4)
    parents, children = study_runs(tracking_uri, "resumed")
    assert [p.info.run_id for p in parents] == [first.info.run_id]
    assert {0, 1, 2, 3} <= set(children)  # (and any confirmation runs the study added)
    check_layout(study, tracking_uri)


def made_up_result(outcome: Outcome, evaluations: list[Evaluation]) -> TrialResult:
    result = TrialResult(
        outcome,
        f"made up: {outcome.value}",
        goal=0.9,
        train_s=0.3,
        wall_s=0.6,
        samples=768,
        steps=12,
        best_metric=max(e.metric for e in evaluations),
        evaluations=evaluations,
        median_step_s=0.025,
    )
    if outcome is Outcome.REACHED:
        result.samples_to_target, result.steps_to_target = 768, 12
        result.train_s_to_target = result.wall_s_to_target = result.robust_s_to_target = 0.3
    return result


def test_each_outcome_closes_its_run_with_the_matching_status(tmp_path: Path, tracking_uri: str) -> None:
    experiment = load_experiment(synthetic_experiment(tmp_path / "outcomes.yaml", NO_CONFIRM))
    study = optuna.create_study(study_name="outcomes", direction="minimize")
    study.set_user_attr("objective", ObjectiveIdentity.of(experiment).as_stored())
    study.set_user_attr("experiment", experiment.to_dict())
    hook = MlflowTracking(tracking_uri, stream=io.StringIO())
    hook.study_started(study, experiment)
    for outcome in Outcome:
        trial, config = study.ask(), TrialConfig(optimizer="adamw", lr=0.012, batch_size=128, precision="bf16")
        trial.set_user_attr("config", config.as_dict())
        trial.set_user_attr("seed", trial.number)
        hook.trial_started(trial, config)
        assert hook.writer.drain(30) == 0  # a trial that outlasts its run's opening records the run's id
        evaluations = [Evaluation(256 * i, 4 * i, 0.3 * i, 1.0 / i, 1.1 / i, 0.1 * i, 0.2 * i, 0.1 * i) for i in (1, 2, 3)]
        live = SimpleNamespace(evaluations=evaluations[:2])  # the trainer's list; the ending evaluation is never shown to listeners
        for ev in live.evaluations:
            hook.on_evaluation(live, ev)
        result = made_up_result(outcome, evaluations)
        write_result(trial, result)
        value = None if outcome in NOT_SCORED else objective_value(result, experiment.objective)
        hook.trial_finished(trial, result, value)
        state = TrialState.PRUNED if outcome is Outcome.PRUNED else TrialState.FAIL if value is None else TrialState.COMPLETE
        study.tell(trial, value if state is TrialState.COMPLETE else None, state=state)
    hook.study_finished(study)

    _, children = study_runs(tracking_uri, "outcomes")
    statuses = {outcome.value: children[n][0].info.status for n, outcome in enumerate(Outcome)}
    assert statuses == {
        "reached": "FINISHED",
        "capped": "KILLED",
        "screened": "KILLED",
        "pruned": "KILLED",
        "timeout": "KILLED",
        "interrupted": "KILLED",
        "diverged": "FAILED",
        "oom": "FAILED",
        "failed": "FAILED",
    }
    assert children[0][0].info.run_name == "trial 0 · adamw lr=0.012 bs=128 bf16 w=1 constant"
    history = MlflowClient(tracking_uri).get_metric_history(children[0][0].info.run_id, "accuracy")
    assert [(m.step, round(m.value, 2)) for m in history] == [(256, 0.3), (512, 0.6), (768, 0.9)]
    assert doctor(study, tracking_uri) == []
    assert {t.number: t.user_attrs["mlflow_run_id"] for t in study.trials} == {n: runs[0].info.run_id for n, runs in children.items()}


def test_run_names_say_what_a_trial_repeats() -> None:
    config = TrialConfig(optimizer="adamw", lr=0.012, batch_size=128, precision="bf16").as_dict()
    assert run_name(7, config) == "trial 7 · adamw lr=0.012 bs=128 bf16 w=1 constant"
    assert run_name(12, config, confirm_of=7).startswith("trial 12 (confirms 7) · adamw")
    assert run_name(13, config, retry_of=5).startswith("trial 13 (re-run of 5) · adamw")
    assert run_name(0, config, baseline=True).startswith("trial 0 (baseline) · adamw")  # as the terminal marks it


def test_an_unreachable_server_does_not_stop_the_study_and_sync_fills_it_in(tmp_path: Path, tracking_uri: str) -> None:
    stream = io.StringIO()
    study = run(synthetic_experiment(tmp_path / "offline.yaml", NO_CONFIRM), f"http://127.0.0.1:{free_port()}", n_trials=3, stream=stream)
    ended = len(study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)))
    assert ended >= 3
    [line] = stream.getvalue().splitlines()  # told once
    assert "failed while connecting" in line and "tuner sync" in line
    assert not any("mlflow_run_id" in t.user_attrs for t in study.trials)

    assert doctor(study, tracking_uri) != []
    report = sync(study, tracking_uri, plots=False)  # the store is back (here: the embedded one)
    assert (report.created, report.completed) == (ended, 0)
    assert doctor(study, tracking_uri) == []
    assert sync(study, tracking_uri, plots=False).unchanged == ended  # idempotent


def test_a_store_failing_mid_study_is_reported_once_and_the_next_run_fills_it_in(
    tmp_path: Path, tracking_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = synthetic_experiment(tmp_path / "flaky.yaml", NO_CONFIRM)
    real, calls = TrackingStore.finish_trial, []

    def flaky(self: TrackingStore, *args, **kwargs) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise ConnectionError("the server went away")
        real(self, *args, **kwargs)

    monkeypatch.setattr(TrackingStore, "finish_trial", flaky)
    stream = io.StringIO()
    study = run(path, tracking_uri, n_trials=3, stream=stream)
    [line] = stream.getvalue().splitlines()
    assert "while closing a trial run (ConnectionError: the server went away)" in line
    gaps = doctor(study, tracking_uri)
    assert len(gaps) == 2 and gaps[0].startswith("trial 1: outcome (none) in MLflow") and gaps[1].startswith("trial 2 (")

    monkeypatch.setattr(TrackingStore, "finish_trial", real)
    study = run(path, tracking_uri, n_trials=4)
    check_layout(study, tracking_uri, live=False)  # trial 1's open run was completed, trial 2's created


@pytest.mark.e2e
def test_against_a_real_tracking_server(tmp_path: Path, mlflow_server: str) -> None:
    path = synthetic_experiment(tmp_path / "served.yaml", NO_CONFIRM)
    run(path, mlflow_server, n_trials=2, plots=True)
    [parent], _ = study_runs(mlflow_server, "served")
    study = run(path, mlflow_server, n_trials=3)
    check_layout(study, mlflow_server)
    assert [p.info.run_id for p in study_runs(mlflow_server, "served")[0]] == [parent.info.run_id]
    names = {a.path for a in MlflowClient(mlflow_server).list_artifacts(parent.info.run_id)}
    assert {"experiment.yaml", "best.yaml", "plots"} <= names

    # Down during a study, back for `tuner sync`.
    offline = run(synthetic_experiment(tmp_path / "later.yaml", NO_CONFIRM), f"http://127.0.0.1:{free_port()}", n_trials=2)
    assert sync(offline, mlflow_server, plots=False).created >= 2
    check_layout(offline, mlflow_server, live=False)


CONNECT_AT = """
import json, sys, time, optuna
from tuner.track.store import TrackingStore
uri, storage, starts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
for name, at in starts.items():
    study = optuna.load_study(study_name=name, storage=storage)
    time.sleep(max(0.0, at - time.time()))
    print(TrackingStore.connect(uri, study, {}, {}, settle_s=1.0).parent_id)
"""


@pytest.mark.e2e
def test_workers_that_start_one_study_together_on_a_server_all_connect_to_one_parent(tmp_path: Path, mlflow_server: str) -> None:
    """Three worker processes open the same new study's tracking together, four studies over.

    A SQL-backed server refuses the second insert of an experiment tag (a worker lost MLflow
    to it in CI), and a parent run created late could carry the earlier start time: before
    only the worker whose study id was kept created it, 2 of 4 runs here kept two parents.
    """
    import json
    import subprocess
    import sys
    import time

    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    names = [f"together-{i}" for i in range(4)]
    for name in names:
        optuna.create_study(study_name=name, storage=storage)
    first = time.time() + 15  # after every process has imported torch, Optuna and MLflow

    def starts(k: int) -> str:  # worker k: at the same moment as the others, or after the previous one's study id
        return json.dumps({name: first + 5 * i + k * 0.6 * (i % 2) for i, name in enumerate(names)})

    cmds = [[sys.executable, "-c", CONNECT_AT, mlflow_server, storage, starts(k)] for k in range(3)]
    workers = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for cmd in cmds]
    outputs = [w.communicate(timeout=180) for w in workers]
    assert [w.returncode for w in workers] == [0, 0, 0], [err[-1000:] for _, err in outputs]
    kept = [out.split() for out, _ in outputs]
    for i, name in enumerate(names):
        [parent] = study_runs(mlflow_server, name)[0]
        assert {k[i] for k in kept} == {parent.info.run_id}, name
