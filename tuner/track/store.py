"""One study's experiment and runs in an MLflow tracking store: the module that talks to MLflow.

Layout (docs/reviewing.md): one experiment per study, one parent run per
study (found again by its ``tuner.study_uid`` tag when the study resumes), one child run
per trial, opened when the trial starts and closed with the status of its outcome. Every
call here is a round trip to the store: the study's own thread makes none of them during
trials (tuner/track/writer.py runs them in the background).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import optuna
import yaml
from mlflow import MlflowClient
from mlflow.entities import Experiment, Metric, Param, RunTag
from mlflow.exceptions import MlflowException

from tuner.study.record import TrialRecord
from tuner.study.study_record import stored_definition, tracking_uid
from tuner.track.run_layout import (
    DEFAULT_NAMES,
    EARLIER_OBJECTIVE,
    STATUS,
    WEIGHTS_FILE,
    MetricNames,
    Point,
    RunRecord,
    now_ms,
    run_name,
    study_uid,
)
from tuner.train.checkpoint import save_checkpoint
from tuner.train.result import Outcome

# The REST API's limits on one log_batch call.
MAX_METRICS, MAX_PARAMS, MAX_TAGS = 1000, 100, 100
# MLflow retries an unreachable server for minutes by default (7 retries, 120-s timeout); the
# writer must not hang on it (the study's end waits for the writer). Two quick retries (after 0
# and 2 s) ride out a busy server's blip (a 500 from its locked SQLite file, a slow answer under
# load), which with none took a worker's tracking offline for good; a server that is down costs
# about 2 s once. A call that still fails takes tracking offline for the rest of the run, and
# the next run (or `tuner sync`) catches up.
FAST_FAILURE = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "15",
}

# How long a worker that joins a new study waits for the study run another worker creates.
PARENT_WAIT_S = 10.0
# Looks at most, settle_s apart, for workers that started a study together to agree on its run.
SETTLE_LOOKS = 5


def _set_experiment_kind(client: MlflowClient, experiment_id: str, found: Experiment | None) -> None:
    """Tag the experiment once; workers starting together may race to the same tag.

    A SQL-backed server inserts a new experiment tag, so the second of two concurrent
    writers fails on the unique key although the tag then holds the same value.
    """
    kind, value = "mlflow.experimentKind", "custom_model_development"
    if found is not None and found.tags.get(kind) == value:
        return
    try:
        client.set_experiment_tag(experiment_id, kind, value)
    except MlflowException:
        if client.get_experiment(experiment_id).tags.get(kind) != value:
            raise


class TrackingStore:
    """One study's experiment and parent run in one MLflow tracking store."""

    def __init__(
        self, client: MlflowClient, experiment_id: str, parent_id: str | None, tags: dict[str, str], names: MetricNames = DEFAULT_NAMES
    ) -> None:
        self.client = client
        self.experiment_id = experiment_id
        self.parent_id = parent_id
        self.tags = tags  # on the parent and on every child
        self.names = names  # what the study's runs call their metrics

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
        long for each other's study id. The worker whose id was kept creates the parent run;
        the others wait for it, up to PARENT_WAIT_S (a study resumed against a tracking store
        that lacks its run waits that long once), then create one and keep the earliest.
        """
        for key, value in FAST_FAILURE.items():
            os.environ.setdefault(key, value)
        # MLflow announces creating a new store's tables at INFO on stderr, amid the progress lines.
        logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
        logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)  # each retry's warning: the failure is said once
        client = MlflowClient(tracking_uri=uri)
        uid, wrote_uid = study_uid(study, settle_s) if create else (tracking_uid(study) or "none", False)
        tags = {
            "tuner.study_name": study.study_name,
            "tuner.study_uid": uid,
            "tuner.study.scoring.censoring": json.dumps(stored_definition(study)),
            "tuner.sampler": json.dumps(experiment.get("sampler")),
            "tuner.pruner": json.dumps(experiment.get("pruning", experiment.get("pruner"))),
        }
        tags.update({f"env.{k}": str(v) for k, v in environment.items()})
        names = MetricNames.of(study)
        found = client.get_experiment_by_name(study.study_name)
        if found is None and not create:
            return cls(client, "", None, tags, names)
        if found is None:
            try:
                experiment_id = client.create_experiment(study.study_name, artifact_location=_artifact_root(uri))
            except MlflowException:  # another worker created it first
                experiment_id = client.get_experiment_by_name(study.study_name).experiment_id
        else:
            experiment_id = found.experiment_id
            if found.lifecycle_stage == "deleted" and create:
                client.restore_experiment(experiment_id)
        if create:  # the UI shows the experiment as model development (runs, metrics), not GenAI (traces)
            _set_experiment_kind(client, experiment_id, found)
        store = cls(client, experiment_id, None, tags, names)
        store.parent_id = store._join_or_create(study, settle_s, wrote_uid) if create else store._find_parent()
        return store

    def _join_or_create(self, study: optuna.Study, settle_s: float, wrote_uid: bool) -> str:
        """The study run: found, or waited for (the worker whose id was kept creates it), or created.

        Workers that raced settle on one: the earliest study run under the study's id as last
        written. On a loaded machine a write or a new run can be seen late, after a worker's own
        look (two parents of one study were found so), so every worker looks again, ``settle_s``
        apart, until a look finds what the one before it did; a run of its own that lost is deleted.
        """
        parent = self._find_parent()
        if parent is None and settle_s > 0 and not wrote_uid:
            parent = self._wait_for_parent(PARENT_WAIT_S)
        created = []
        if parent is None:
            parent = self._create_parent(study.study_name)
            created.append(parent)
        else:
            self.client.update_run(parent, status="RUNNING")
        # A lone run (no settle_s) that created one still looks once, as two resumed at once may race.
        for _ in range(SETTLE_LOOKS if settle_s > 0 else len(created)):
            time.sleep(settle_s)
            self.tags["tuner.study_uid"] = tracking_uid(study) or self.tags["tuner.study_uid"]
            found = self._find_parent() or self._wait_for_parent(PARENT_WAIT_S)
            if found == parent:
                break
            if found is None:  # the id's writer stopped before its run: this worker's, under that id
                found = self._create_parent(study.study_name)
                created.append(found)
            parent = found
        for run_id in created:
            if run_id != parent:
                self.client.delete_run(run_id)
        return parent

    def _create_parent(self, study_name: str) -> str:
        tags = {**self.tags, "tuner.role": "parent"}
        return self.client.create_run(self.experiment_id, run_name=f"study {study_name}", tags=tags).info.run_id

    def _wait_for_parent(self, limit_s: float) -> str | None:
        """The study run another worker is creating; None after ``limit_s`` (it stopped first)."""
        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if (found := self._find_parent()) is not None:
                return found
        return None

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

    def start_trial(self, number: int, config: dict[str, Any], trial: TrialRecord, start_ms: int | None = None) -> str:
        """Open a trial's child run; ``trial`` is the Optuna trial's record (its seed, what it repeats).

        The parameters go with the run's first batch of metrics (one write fewer per trial);
        the run name shows the key choices meanwhile.
        """
        tags = {
            **self.tags,
            "mlflow.parentRunId": self.parent_id,
            "tuner.role": trial.role,  # trial, race, confirmation or baseline
            "tuner.trial_number": str(number),
            "tuner.seed": str(trial.seed),
        }
        marks = {"tuner.confirm_of": trial.confirm_of, "tuner.race_of": trial.race_of, "tuner.retry_of": trial.retry_of}
        tags.update({k: str(v) for k, v in marks.items() if v is not None})
        name = run_name(number, config, trial.confirm_of, trial.retry_of, trial.is_baseline)
        return self.client.create_run(self.experiment_id, start_time=start_ms, run_name=name, tags=tags).info.run_id

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

    def log_weights(self, run_id: str, checkpoint: dict[str, Any]) -> None:
        """A trial's trained weights as ``model.pt`` on its run: a file `tuner train --save`
        would write (``init_from:`` and `tuner compress --from` read it)."""
        meta = {k: v for k, v in checkpoint.items() if k != "state_dict"}
        with tempfile.TemporaryDirectory(prefix="tuner-weights-") as folder:
            path = save_checkpoint(Path(folder) / WEIGHTS_FILE, checkpoint["state_dict"], **meta)
            self.client.log_artifact(run_id, str(path))

    def trial_runs(self) -> dict[int, list[RunRecord]]:
        """The study's child runs by trial number (every page)."""
        if self.parent_id is None:
            return {}
        out: dict[int, list[RunRecord]] = {}
        # Every child run, whatever its role (MLflow's tag filters have no IN; earlier versions tagged every one "trial").
        where = f"tags.`tuner.study_uid` = '{self.tags['tuner.study_uid']}' and tags.`tuner.role` != 'parent'"
        token = None
        while True:
            page = self.client.search_runs([self.experiment_id], where, max_results=1000, page_token=token)
            for run in page:
                number = int(run.data.tags["tuner.trial_number"])
                # A run logged before the value carried its unit has it under the earlier name.
                value = run.data.metrics.get(self.names.objective, run.data.metrics.get(EARLIER_OBJECTIVE))
                rec = RunRecord(run.info.run_id, number, run.info.status, run.data.tags.get("tuner.train.result"), value)
                out.setdefault(number, []).append(rec)
            token = page.token
            if not token:
                return out

    def open_runs(self, number: int) -> list[str]:
        """The child runs of trial ``number`` still RUNNING (a dead worker's, say)."""
        return [r.run_id for r in self.trial_runs().get(number, []) if r.status == "RUNNING"]

    def logged_steps(self, run_id: str, key: str) -> set[int]:
        """The steps at which ``key`` is logged on a run: what a fill-in must not log again."""
        return {m.step for m in self.client.get_metric_history(run_id, key)}

    def log_experiment(self, experiment: dict[str, Any]) -> None:
        """The resolved experiment, on the parent run (every run of a study writes it again)."""
        self.client.log_text(self.parent_id, yaml.safe_dump(experiment, sort_keys=False), "experiment.yaml")

    def log_report(self, files: list[Path], status: str) -> None:
        """A night's report files under report/ on the parent run, and the night's status."""
        for path in files:
            self.client.log_artifact(self.parent_id, str(path), "report")
        self.log(self.parent_id, tags={"tuner.night_status": status})

    def log_study_files(self, experiment: dict[str, Any], best: dict[str, Any] | None, plot_files: list[Path], note: str) -> None:
        """The resolved experiment, the best configuration and the plots, on the parent run."""
        self.log_experiment(experiment)
        if best is not None:
            self.client.log_text(self.parent_id, yaml.safe_dump(best, sort_keys=False), "best.yaml")
        for path in plot_files:
            self.client.log_artifact(self.parent_id, str(path), "plots")
        self.log(self.parent_id, tags={"mlflow.note.content": note})

    def close_parent(self, status: str) -> None:
        """The study run's status: FINISHED, KILLED (a signal) or FAILED."""
        self.client.set_terminated(self.parent_id, status)


def _artifact_root(uri: str) -> str | None:
    """Beside the database for a SQLite store (MLflow would use the CWD); the server's choice otherwise."""
    if not uri.startswith("sqlite:///"):
        return None
    return str(Path(uri.removeprefix("sqlite:///")).resolve().parent / "artifacts")
