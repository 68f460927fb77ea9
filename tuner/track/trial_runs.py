"""The study hooks that log a study to MLflow: a child run per trial, the study run's figures.

The study's thread only queues writes (tuner/track/writer.py): a trial's start queues its
run's opening, an evaluation every ``FLUSH_EVERY_S`` queues a batch of metrics, a trial's
end queues the last points, the final figures, the outcome and the status, and the next
trial starts at once. The queue is drained when the study ends (cleanly or by a signal),
within a bound, so that every trial that ended has its run closed before the process exits;
with ``drain_later`` a clean end leaves the drain to the caller (``drain``), which prints its
result first (`tuner run`: the summary, plots and report take a second or two to write).

A run's id exists once the writer has opened it; the writer then copies it into the Optuna
trial, if the trial still runs. A trial whose run was not open yet by its end (a slow
store, a short trial) is found by its tags instead, as `tuner sync` and `tuner doctor`
always find runs.
"""

from __future__ import annotations

import contextlib
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import optuna

from tuner.environment import fingerprint
from tuner.errors import first_line
from tuner.redact import redact, redact_data
from tuner.study.config_reads import shown_params
from tuner.study.hooks import StudyHooks
from tuner.study.record import COMPLETE, ENDED, RUNNING, TrialRecord, best_of, best_reached, records, write_run_id
from tuner.study.study_record import write_environment
from tuner.track.run_layout import Point, evaluation_points, final_metrics, now_ms
from tuner.track.store import TrackingStore
from tuner.track.summary import StudyViews, warm_up_plots, write_summary
from tuner.track.sync import sync_trials
from tuner.track.weights import checkpoint_of, keeps, may_keep
from tuner.track.writer import BackgroundWriter
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

FLUSH_EVERY_S = 10.0  # a long trial's curve shows up in the UI while it runs, in few writes
# How long the end of a study waits for the writes still queued: after a clean end (the
# summary and plots are among them), and after a signal (someone is waiting for the exit).
DRAIN_S = 60.0
STOPPED_DRAIN_S = 20.0
STALE_REASON = "its worker died (its process was gone, or its heartbeats stopped); the trial was re-queued"


@dataclass
class TrialRun:
    """The open trial's child run as the study's thread sees it."""

    trial: optuna.Trial
    config: dict[str, Any]
    params: dict[str, Any] | None  # sent with the run's first batch of metrics (one write fewer per trial)
    started_ms: int
    last_flush: float
    sent: int = 0  # how many of the trial's evaluations are queued for MLflow
    evaluations: list[Evaluation] = field(default_factory=list)  # the trainer's own list
    run_id: str | None = None  # set on the writer's thread once the run exists
    trial_config: TrialConfig | None = None
    confirmation: bool = False  # a confirmation run (tuner/study/reruns/confirmation.py)
    baseline: bool = False  # a baseline run (tuner/study/reruns/baseline.py): never the study's best
    model: Any = None  # the trained model, from its end until trial_finished (tuner/track/weights.py)
    became_best: bool = False  # set on the writer's thread: the study's best when it ended

    def unsent(self, evaluations: list[Evaluation], metric: str = "accuracy") -> tuple[list[Point], dict[str, Any] | None]:
        """The evaluations not yet queued, as points (the held-out value named ``metric``), and the parameters if not yet queued."""
        points = [p for ev in evaluations[self.sent :] for p in evaluation_points(ev, self.started_ms + int(ev.wall_s * 1000), metric)]
        self.sent, params, self.params = len(evaluations), self.params, None
        return points, params

    def opened(self, run_id: str) -> None:
        """On the writer's thread: the run exists; its id goes into the Optuna trial if it still runs."""
        self.run_id = run_id
        # Optuna's storage takes writes from any thread. A trial that ended meanwhile refuses
        # them, and a storage error shows on the study's thread anyway: the run is then found by its tags.
        with contextlib.suppress(Exception):
            write_run_id(self.trial, run_id)


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
        views: StudyViews | None = None,
        stream: Any = None,
        summary: bool = True,
        settle_s: float = 0.0,
        drain_later: bool = False,
        shared: bool = False,
    ) -> None:
        """``views``: the report's plots, report and energy figures for the study run (tuner/report/study_run.py;
        None: best.yaml and the tags only); ``summary=False``: a worker whose coordinator writes the study summary and closes
        the study run (tuner/study/run/workers.py); ``settle_s``: see ``TrackingStore.connect``;
        ``drain_later``: after a clean end, wait for the writes only when ``drain`` is called;
        ``shared``: other processes run this study's trials on their own (`tuner worker`), and
        the one that ended its last trial writes the summary."""
        self.uri, self.source, self.views, self.stream = tracking_uri, source, views, stream or sys.stderr
        self.summary, self.settle_s, self.drain_later, self.shared = summary, settle_s, drain_later, shared
        self.own: set[int] = set()  # the trials this process ran
        self.store: TrackingStore | None = None
        self.writer = BackgroundWriter(self._went_offline)
        self.failed = False
        self.experiment: dict[str, Any] = {}
        self.run: TrialRun | None = None  # the open trial's run
        self.weights = "best"  # the experiment's tracking.weights: which trials log their weights
        # The study run's figures: kept and written on the writer's thread only.
        self.best: float | None = None
        self.parent_points: list[Point] = []  # best so far and each trial's value, written every FLUSH_EVERY_S
        self.parent_tags: dict[str, Any] = {}
        self.parent_flush = 0.0

    def _live(self) -> bool:
        return self.store is not None and not self.writer.offline

    def _went_offline(self, what: str, err: Exception) -> None:
        first = first_line(err)[:200]
        self._say_once(f"failed while {what} ({type(err).__name__}: {first}); the study goes on without it")

    def _say_once(self, problem: str) -> None:
        """Said once, from whichever thread met the first problem."""
        if not self.failed:
            self.failed = True
            print(
                f"tuner: MLflow tracking at {redact(self.uri)} {problem}. Fill MLflow in afterwards with: tuner sync {self.source}",
                file=self.stream,
                flush=True,
            )

    def study_started(self, study: optuna.Study, experiment: Any) -> None:
        # Connecting stays on the study's thread: once per study, and workers started next
        # (tuner/study/run/workers.py) must find the study run already there.
        self.experiment = redact_data(experiment.to_dict())  # logged as a file and tags: no passwords
        self.weights = experiment.tracking.weights
        self.writer = BackgroundWriter(self._went_offline)
        environment = fingerprint()
        write_environment(study, environment)  # for runs that sync creates later
        best = best_reached(study)
        self.best = best.value if best is not None else None
        try:
            self.store = TrackingStore.connect(self.uri, study, self.experiment, environment, settle_s=self.settle_s)
        except Exception as err:  # noqa: BLE001 - any failure of the store: report once, go on without it
            self.store = None
            self._went_offline("connecting", err)
            return
        store, ended = self.store, {t.number for t in study.get_trials(deepcopy=False, states=ENDED)}
        self.writer.submit("logging the experiment", lambda: store.log_experiment(self.experiment))
        self.writer.submit("filling in earlier trials", lambda: sync_trials(store, study, ended))
        if self.summary and (views := self.views) is not None:
            self.writer.submit("preparing the plots", lambda: warm_up_plots(views))

    def trial_started(self, trial: optuna.Trial, config: TrialConfig) -> None:
        self.run = None
        self.own.add(trial.number)
        if not self._live():
            return
        record, store = TrialRecord.of(trial), self.store
        values = config.as_dict()
        params = {**shown_params(trial.study, config), "seed": record.seed}  # own hyperparameters too; an own loop: what it reads
        run = self.run = TrialRun(
            trial,
            values,
            params,
            now_ms(),
            time.monotonic(),
            trial_config=config,
            confirmation=record.is_confirmation,
            baseline=record.is_baseline,
        )

        def open_run() -> None:
            run.opened(store.start_trial(trial.number, values, record, run.started_ms))

        self.writer.submit("opening a trial run", open_run)

    def on_evaluation(self, tt: Any, ev: Evaluation) -> None:
        # Batched: a write every FLUSH_EVERY_S at most, the rest when the trial ends (the
        # evaluation that ends a trial is not shown to listeners; trial_finished sends it).
        run, store = self.run, self.store
        if run is None or not self._live():
            return
        run.evaluations = tt.evaluations
        if time.monotonic() - run.last_flush >= FLUSH_EVERY_S:
            run.last_flush = time.monotonic()
            points, params = run.unsent(tt.evaluations, store.names.metric)
            self.writer.submit("logging metrics", lambda: store.log(run.run_id, points, params))

    def trial_model(self, trial: optuna.Trial, model: Any) -> None:
        if self.run is not None and self.weights != "none":
            self.run.model = model  # a reference: copied in trial_finished only if it may be logged

    def trial_finished(self, trial: optuna.Trial, result: TrialResult, value: float | None) -> None:
        run, store, self.run = self.run, self.store, None
        if run is None or not self._live():
            return
        model, run.model = run.model, None
        checkpoint = None
        if model is not None and may_keep(self.weights, run.confirmation, result, value, self.best):
            checkpoint = checkpoint_of(model, run.trial_config, self.experiment, result)  # off the clocks; written in the background
        (points, params), figures = run.unsent(result.evaluations, store.names.metric), final_metrics(result.to_attrs(), value, store.names)
        outcome, reason = result.outcome, result.reason
        reached, stamp = result.reached, now_ms()
        # The study run first: whether this trial became the best decides whether its weights are kept.
        self.writer.submit("updating the study run", lambda: self._note_trial(trial.study, trial.number, reached, value, run, stamp))
        if checkpoint is not None:
            policy = self.weights

            def log_weights() -> None:
                if keeps(policy, run.confirmation, run.became_best):
                    store.log_weights(run.run_id, checkpoint)

            self.writer.submit("logging a trial's weights", log_weights)
        self.writer.submit("closing a trial run", lambda: store.finish_trial(run.run_id, outcome, reason, figures, points, params))

    def _note_trial(self, study: optuna.Study, number: int, reached: bool, value: float | None, run: TrialRun, stamp: int) -> None:
        """On the writer's thread: the trial's value and the best so far, for the study run."""
        config = run.config
        # Other workers' trials count too; this one may already be complete in the storage.
        shared = best_of(r for r in records(study, COMPLETE) if r.number != number)
        if shared is not None and (self.best is None or shared.value < self.best):
            self.best = shared.value
        # A baseline run is a measurement, not a candidate (as best_of says): it never becomes the best.
        if reached and value is not None and not run.baseline and (self.best is None or value < self.best):
            self.best = value
            run.became_best = True
            self.parent_tags = {"tuner.best_trial": number, **{f"best.{k}": v for k, v in config.items()}}
        names = self.store.names
        if value is not None:
            self.parent_points.append((names.trial_objective, value, number, stamp))
        if self.best is not None:
            self.parent_points.append((names.best_objective, self.best, number, stamp))
        if time.monotonic() - self.parent_flush >= FLUSH_EVERY_S:
            self._flush_parent()

    def _flush_parent(self) -> None:
        """On the writer's thread: the study run's points and tags gathered so far."""
        points, tags = self.parent_points, self.parent_tags
        self.parent_points, self.parent_tags, self.parent_flush = [], {}, time.monotonic()
        if points or tags:
            self.store.log(self.store.parent_id, points, tags=tags)

    def trial_stale(self, study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        if not self._live():
            return
        store, number, run_id = self.store, trial.number, TrialRecord.of(trial).mlflow_run_id

        def close_runs() -> None:
            # A run opened by a worker that died before recording its id is found by its tags;
            # one it never opened (its writes were still queued) is made here, as sync makes it.
            open_ids = [run_id] if run_id is not None else store.open_runs(number)
            for open_id in open_ids:
                store.finish_trial(open_id, Outcome.FAILED, STALE_REASON, {})
            if not open_ids:
                sync_trials(store, study, {number})

        self.writer.submit("closing a stale trial's run", close_runs)

    def study_finished(self, study: optuna.Study) -> None:
        if self.store is None:
            return
        # Called from run_study's `finally`: an exception in flight means the study was stopped.
        stopped = sys.exc_info()[0]
        store, run, self.run = self.store, self.run, None
        if run is not None and self._live():  # a trial still open
            points, params = run.unsent(run.evaluations, store.names.metric)
            reason = "the study stopped during this trial"
            self.writer.submit(
                "closing a trial run", lambda: store.finish_trial(run.run_id, Outcome.INTERRUPTED, reason, {}, points, params)
            )
        self.writer.submit("updating the study run", self._flush_parent)
        # Other workers go on: the last one out (or the coordinator) writes the summary and closes the study run.
        if self.summary and self._last_out(study):
            if stopped is None:  # plots only after a clean end: after Ctrl-C the user wants the prompt back
                self.writer.submit("writing the study summary", lambda: write_summary(store, study, self.experiment, self.views))
            status = "FINISHED" if stopped is None else "KILLED" if issubclass(stopped, KeyboardInterrupt) else "FAILED"
            self.writer.submit("closing the study run", lambda: store.close_parent(status))
        if stopped is None and self.drain_later:
            return  # the caller prints its result, then calls drain()
        self.drain(stopped=stopped is not None)

    def _last_out(self, study: optuna.Study) -> bool:
        """No trial runs, and (``shared``) this process ended the study's last trial.

        Workers that end together all find no trial running: 16 `tuner worker` processes
        wrote 16 summaries with their plots at once, and the tracking server, busy with them,
        missed the last writes of some. The trial that ended last was run by one of them.
        """
        trials = study.get_trials(deepcopy=False)
        if any(t.state in RUNNING for t in trials):
            return False
        ended = [t for t in trials if t.datetime_complete is not None]
        return not self.shared or (bool(ended) and max(ended, key=lambda t: (t.datetime_complete, t.number)).number in self.own)

    def drain(self, stopped: bool = False, bound_s: float | None = None) -> None:
        """Wait for the queued writes, within ``bound_s`` (default DRAIN_S; STOPPED_DRAIN_S after a signal);
        what is left then is dropped and said once (`tuner sync` writes it from the study). A
        second signal during the wait drops them at once."""
        if self.store is None:
            return
        bound = STOPPED_DRAIN_S if stopped else (DRAIN_S if bound_s is None else bound_s)
        try:
            left = self.writer.close(bound)
        except KeyboardInterrupt:  # a second signal: the user wants the prompt back, not MLflow's writes
            self.writer.abandon()
            raise
        if left:
            self.writer.abandon()
            self._say_once(f"did not take the study's last {left} writes within {bound:.0f} s; they are left out")
