"""MLflow tracking of studies: the only module that imports mlflow.

Layout (DESIGN.md, "Tracking in MLflow"): one experiment per study, one parent run per
study (found again by its ``tuner.study_uid`` tag when the study resumes), one child run
per trial, opened when the trial starts and closed with the status of its outcome.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import yaml
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException

from tuner.environment import fingerprint
from tuner.study.hooks import StudyHooks
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.track.plots import write_study_plots
from tuner.redact import redact, redact_data
from tuner.track.run_layout import STATUS, Point, RunRecord, evaluation_points, final_metrics, now_ms, parent_summary, run_name, study_uid
from tuner.study.runner import best_trial
from tuner.train.trial_config import TrialConfig

FLUSH_EVERY_S = 10.0  # a long trial's curve shows up in the UI while it runs, in few writes
# The REST API's limits on one log_batch call.
MAX_METRICS, MAX_PARAMS, MAX_TAGS = 1000, 100, 100
# MLflow retries an unreachable server for minutes by default (7 retries, 120-s timeout); a
# study must not wait on it, nor print urllib3's retry warnings. A call that fails takes
# tracking offline for the rest of the run, and the next run (or `tuner sync`) catches up.
FAST_FAILURE = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"}


class TrackingStore:
    """One study's experiment and parent run in one MLflow tracking store."""

    def __init__(self, client: MlflowClient, experiment_id: str, parent_id: str | None, tags: dict[str, str]) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self.parent_id = parent_id
        self.tags = tags  # on the parent and on every child

    @classmethod
    def connect(
        cls,
        uri: str,
        study: optuna.Study,
        experiment: dict[str, Any],
        environment: dict[str, str],
        create: bool = True,
        settle_s: float = 0.0,
    ) -> TrackingStore:
        """Find (or create) the study's experiment and parent run; raises if the store is unreachable.

        ``settle_s``: workers that may start a new study together (tuner worker) wait this
        long after creating a parent run, so that each sees the others' and all keep one.
        """
        for key, value in FAST_FAILURE.items():
            os.environ.setdefault(key, value)
        # MLflow announces creating a new store's tables at INFO on stderr, amid the progress lines.
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        client = MlflowClient(tracking_uri=uri)
        uid = study_uid(study, settle_s) if create else study.user_attrs.get("tuner_uid", "none")
        tags = {
            "tuner.study_name": study.study_name,
            "tuner.study_uid": uid,
            "tuner.study.objective": json.dumps(study.user_attrs.get("objective")),
            "tuner.sampler": json.dumps(experiment.get("sampler")),
            "tuner.pruner": json.dumps(experiment.get("pruning", experiment.get("pruner"))),
        }
        tags.update({f"env.{k}": str(v) for k, v in environment.items()})
        found = client.get_experiment_by_name(study.study_name)
        if found is None and not create:
            return cls(client, "", None, tags)
        if found is None:
            try:
                experiment_id = client.create_experiment(study.study_name, artifact_location=_artifact_root(uri))
            except MlflowException:  # another worker created it first
                experiment_id = client.get_experiment_by_name(study.study_name).experiment_id
        else:
            experiment_id = found.experiment_id
            if found.lifecycle_stage == "deleted" and create:
                client.restore_experiment(experiment_id)
        store = cls(client, experiment_id, None, tags)
        store.parent_id = store._find_parent()
        if store.parent_id is None and create:
            own = client.create_run(experiment_id, run_name=f"study {study.study_name}", tags={**tags, "tuner.role": "parent"}).info.run_id
            time.sleep(settle_s)
            store.parent_id = store._find_parent()
            if store.parent_id != own:  # two workers raced: keep the earliest parent
                client.delete_run(own)
        elif store.parent_id is not None and create:
            client.update_run(store.parent_id, status="RUNNING")
        return store

    def _find_parent(self) -> str | None:
        where = f"tags.`tuner.study_uid` = '{self.tags['tuner.study_uid']}' and tags.`tuner.role` = 'parent'"
        runs = self.client.search_runs([self.experiment_id], where, order_by=["attributes.start_time ASC"], max_results=10)
        # The run id breaks ties of start time (ms), so that racing workers all keep the same one.
        return min(runs, key=lambda r: (r.info.start_time, r.info.run_id)).info.run_id if runs else None

    def log(self, run_id: str, points: list[Point] = (), params: dict[str, Any] | None = None, tags: dict[str, Any] | None = None) -> None:
        """One log_batch call, split only where the REST API's limits require it."""
        metrics = [Metric(k, v, ts, step) for k, v, step, ts in points]
        p = [Param(k, str(v)) for k, v in (params or {}).items()]
        t = [RunTag(k, str(v)) for k, v in (tags or {}).items()]
        while metrics or p or t:
            self.client.log_batch(run_id, metrics=metrics[:MAX_METRICS], params=p[:MAX_PARAMS], tags=t[:MAX_TAGS])
            metrics, p, t = metrics[MAX_METRICS:], p[MAX_PARAMS:], t[MAX_TAGS:]

    def start_trial(self, number: int, config: dict[str, Any], attrs: dict[str, Any], start_ms: int | None = None) -> str:
        """Open a trial's child run; ``attrs`` are the Optuna trial's user attributes.

        The parameters go with the run's first batch of metrics (one write fewer per trial);
        the run name shows the key choices meanwhile.
        """
        tags = {
            **self.tags,
            "mlflow.parentRunId": self.parent_id,
            "tuner.role": "trial",
            "tuner.trial_number": str(number),
            "tuner.seed": str(attrs.get("seed")),
        }
        tags.update({f"tuner.{k}": str(attrs[k]) for k in ("confirm_of", "retry_of") if k in attrs})
        return self.client.create_run(
            self.experiment_id, start_time=start_ms, run_name=run_name(number, config, attrs), tags=tags
        ).info.run_id

    def finish_trial(
        self,
        run_id: str,
        outcome: Outcome,
        reason: str,
        figures: dict[str, float],
        points: list[Point] = (),
        params: dict[str, Any] | None = None,
        end_ms: int | None = None,
    ) -> None:
        """The last points, the final figures and the outcome, then the status that matches it."""
        stamp = end_ms or now_ms()
        final = [(k, v, 0, stamp) for k, v in figures.items()]
        self.log(run_id, [*points, *final], params, tags={"tuner.train.result": outcome.value, "tuner.reason": reason[:5000]})
        self.client.set_terminated(run_id, STATUS[outcome], end_time=stamp)

    def trial_runs(self) -> dict[int, list[RunRecord]]:
        """The study's child runs by trial number (every page)."""
        if self.parent_id is None:
            return {}
        out: dict[int, list[RunRecord]] = {}
        where = f"tags.`tuner.study_uid` = '{self.tags['tuner.study_uid']}' and tags.`tuner.role` = 'trial'"
        token = None
        while True:
            page = self.client.search_runs([self.experiment_id], where, max_results=1000, page_token=token)
            for run in page:
                number = int(run.data.tags["tuner.trial_number"])
                rec = RunRecord(
                    run.info.run_id, number, run.info.status, run.data.tags.get("tuner.train.result"), run.data.metrics.get("objective_s")
                )
                out.setdefault(number, []).append(rec)
            token = page.token
            if not token:
                return out

    def logged_steps(self, run_id: str, key: str) -> set[int]:
        return {m.step for m in self.client.get_metric_history(run_id, key)}

    def log_study_files(self, experiment: dict[str, Any], best: dict[str, Any] | None, plot_files: list[Path], note: str) -> None:
        """The resolved experiment, the best configuration and the plots, on the parent run."""
        self.client.log_text(self.parent_id, yaml.safe_dump(experiment, sort_keys=False), "experiment.yaml")
        if best is not None:
            self.client.log_text(self.parent_id, yaml.safe_dump(best, sort_keys=False), "best.yaml")
        for path in plot_files:
            self.client.log_artifact(self.parent_id, str(path), "plots")
        self.log(self.parent_id, tags={"mlflow.note.content": note})

    def close_parent(self, status: str) -> None:
        self.client.set_terminated(self.parent_id, status)


def _artifact_root(uri: str) -> str | None:
    """Beside the database for a SQLite store (MLflow would use the CWD); the server's choice otherwise."""
    if not uri.startswith("sqlite:///"):
        return None
    return str(Path(uri.removeprefix("sqlite:///")).resolve().parent / "artifacts")


def write_summary(store: TrackingStore, study: optuna.Study, experiment: dict[str, Any], with_plots: bool = True) -> None:
    """best.yaml, the plots and the description on the parent run (at the end of a study, or by sync)."""
    best = best_trial(study)
    best_dict, tags, note = parent_summary(study, best)
    with tempfile.TemporaryDirectory() as folder:
        files = write_study_plots(study, Path(folder)) if with_plots else []
        store.log_study_files(experiment, best_dict, files, note)
    if tags:
        store.log(store.parent_id, tags=tags)


class MlflowTracking(StudyHooks):
    """Logs a study to MLflow as it runs; a failing tracking store never stops the study.

    The first failure is reported once on stderr and tracking stops for the rest of this
    run; ``tuner sync`` (or the next ``tuner run``) fills in what MLflow missed from the
    Optuna storage. Setting up sets MLflow's HTTP retry variables low unless already set.
    """

    def __init__(
        self,
        tracking_uri: str,
        source: str = "EXPERIMENT",
        plots: bool = True,
        stream: Any = None,
        summary: bool = True,
        settle_s: float = 0.0,
    ) -> None:
        """``summary=False``: a worker whose coordinator writes the study summary and closes
        the study run (tuner/study/workers.py); ``settle_s``: see ``TrackingStore.connect``."""
        self.uri = tracking_uri
        self.summary = summary
        self.settle_s = settle_s
        self.source = source
        self.plots = plots
        self.stream = stream or sys.stderr
        self.store: TrackingStore | None = None
        self.failed = False
        self.experiment: dict[str, Any] = {}
        self.run_id: str | None = None  # the open child run
        self.started_ms = 0
        self.config: dict[str, Any] = {}
        self.evaluations: list[Evaluation] = []  # the trainer's own list of the open trial's evaluations
        self.sent = 0  # how many of them are in MLflow
        self.params: dict[str, Any] | None = None  # the open run's parameters, until its first write
        self.last_flush = 0.0
        self.best: float | None = None
        self.parent_points: list[Point] = []  # best so far and each trial's value, written every FLUSH_EVERY_S
        self.parent_tags: dict[str, Any] = {}
        self.parent_flush = 0.0

    def _safely(self, what: str, fn: Callable[[], Any]) -> Any:
        if self.store is None:
            return None
        try:
            return fn()
        except Exception as err:  # any failure of the store: report once, go on without it
            self._went_offline(what, err)
            return None

    def _went_offline(self, what: str, err: Exception) -> None:
        self.store, self.run_id = None, None
        if not self.failed:
            first = (str(err).strip().splitlines() or [""])[0][:200]
            print(
                f"tuner: MLflow tracking at {redact(self.uri)} failed while {what} ({type(err).__name__}: {first}); "
                f"the study goes on without it. Fill MLflow in afterwards with: tuner sync {self.source}",
                file=self.stream,
            )
        self.failed = True

    def study_started(self, study: optuna.Study, experiment: Any) -> None:
        from tuner.track.sync import sync_trials  # imported here: reconcile builds on this module

        self.experiment = redact_data(experiment.to_dict())  # logged as a file and tags: no passwords
        environment = fingerprint()
        study.set_user_attr("environment", environment)  # for runs that sync creates later
        best = best_trial(study)
        self.best = best.value if best is not None else None
        try:
            self.store = TrackingStore.connect(self.uri, study, self.experiment, environment, settle_s=self.settle_s)
        except Exception as err:
            self._went_offline("connecting", err)
            return
        self._safely(
            "logging the experiment",
            lambda: self.store.client.log_text(self.store.parent_id, yaml.safe_dump(self.experiment, sort_keys=False), "experiment.yaml"),
        )
        self._safely("filling in earlier trials", lambda: sync_trials(self.store, study))

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        self.config, self.evaluations, self.sent, self.last_flush, self.started_ms = config.as_dict(), [], 0, time.monotonic(), now_ms()
        self.params = {**self.config, "seed": trial.user_attrs.get("seed")}
        self.run_id = self._safely(
            "opening a trial run", lambda: self.store.start_trial(trial.number, self.config, trial.user_attrs, self.started_ms)
        )
        if self.run_id is not None:
            trial.set_user_attr("mlflow_run_id", self.run_id)

    def _unsent(self, evaluations: list[Evaluation]) -> tuple[list[Point], dict[str, Any] | None]:
        """The evaluations not yet in MLflow as points, and the parameters if not yet sent."""
        points = [p for ev in evaluations[self.sent :] for p in evaluation_points(ev, self.started_ms + int(ev.wall_s * 1000))]
        self.sent, params, self.params = len(evaluations), self.params, None
        return points, params

    def on_evaluation(self, tt: Any, ev: Evaluation) -> None:
        # Batched: a write every FLUSH_EVERY_S at most, the rest when the trial ends (the
        # evaluation that ends a trial is not shown to listeners; trial_finished sends it).
        self.evaluations = tt.evaluations
        if self.run_id is not None and time.monotonic() - self.last_flush >= FLUSH_EVERY_S:
            self.last_flush = time.monotonic()
            points, params = self._unsent(tt.evaluations)
            self._safely("logging metrics", lambda: self.store.log(self.run_id, points, params))

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        if self.run_id is None:
            return
        run_id, (points, params), self.run_id = self.run_id, self._unsent(result.evaluations), None
        figures = final_metrics(result.to_attrs(), value)
        self._safely("closing a trial run", lambda: self.store.finish_trial(run_id, result.outcome, result.reason, figures, points, params))
        shared = best_trial(trial.study)  # other workers' trials count too
        if shared is not None and (self.best is None or shared.value < self.best):
            self.best = shared.value
        if result.reached and value is not None and (self.best is None or value < self.best):
            self.best = value
            self.parent_tags = {"tuner.best_trial": trial.number, **{f"best.{k}": v for k, v in self.config.items()}}
        stamp = now_ms()
        if value is not None:
            self.parent_points.append(("trial_objective_s", value, trial.number, stamp))
        if self.best is not None:
            self.parent_points.append(("best_objective_s", self.best, trial.number, stamp))
        if time.monotonic() - self.parent_flush >= FLUSH_EVERY_S:
            self._flush_parent()

    def _flush_parent(self) -> None:
        points, tags = self.parent_points, self.parent_tags
        self.parent_points, self.parent_tags, self.parent_flush = [], {}, time.monotonic()
        self._safely("updating the study run", lambda: self.store.log(self.store.parent_id, points, tags=tags))

    def trial_stale(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        run_id = trial.user_attrs.get("mlflow_run_id")
        if run_id is not None:
            reason = "its worker stopped sending heartbeats; the trial was re-queued"
            self._safely("closing a stale trial's run", lambda: self.store.finish_trial(run_id, Outcome.FAILED, reason, {}))

    def study_finished(self, study: optuna.Study) -> None:
        if self.store is None:
            return
        # Called from run_study's `finally`: an exception in flight means the study was stopped.
        stopped = sys.exc_info()[0]
        if self.run_id is not None:  # a trial still open
            run_id, (points, params), self.run_id = self.run_id, self._unsent(self.evaluations), None
            self._safely(
                "closing a trial run",
                lambda: self.store.finish_trial(run_id, Outcome.INTERRUPTED, "the study stopped during this trial", {}, points, params),
            )
        self._flush_parent()
        if not self.summary or study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
            return  # other workers go on: the last one out (or the coordinator) writes the summary and closes the study run
        if stopped is None:  # plots only after a clean end: after Ctrl-C the user wants the prompt back
            self._safely("writing the study summary", lambda: write_summary(self.store, study, self.experiment, self.plots))
        status = "FINISHED" if stopped is None else "KILLED" if issubclass(stopped, KeyboardInterrupt) else "FAILED"
        self._safely("closing the study run", lambda: self.store.close_parent(status))


def publish_report(tracking_uri: str, study: optuna.Study, files: list[Path], stream: Any = None) -> None:
    """A night's morning report (tuner/nightly/report.py) on its study's parent run, under report/.

    A store that fails here costs the copy in MLflow only: the report is already on disk.
    """
    try:
        experiment, environment = study.user_attrs.get("experiment", {}), study.user_attrs.get("environment", {})
        store = TrackingStore.connect(tracking_uri, study, experiment, environment, create=False)
        if store.parent_id is None:
            return
        for path in files:
            store.client.log_artifact(store.parent_id, str(path), "report")
        store.log(store.parent_id, tags={"tuner.night_status": study.user_attrs.get("status", "unknown")})
    except Exception as err:  # any failure of the store: say so, the report stays on disk
        first = (str(err).strip().splitlines() or [""])[0][:200]
        print(
            f"tuner: the report could not be logged to MLflow at {redact(tracking_uri)} ({type(err).__name__}: {first})",
            file=stream or sys.stderr,
        )


def ui_command(tracking_uri: str, host: str, port: int) -> list[str]:
    """The `mlflow ui` command line for a tracking store (SQLite artifacts are served from their folder)."""
    return [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", tracking_uri, "--host", host, "--port", str(port)]
