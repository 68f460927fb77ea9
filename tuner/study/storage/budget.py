"""The study's trial budget, kept across workers: no searched configuration starts past it.

A trial budget counts searched configurations; race, confirmation and baseline runs (the
trials marked with ``record.RERUN_MARKS``) come on top of it. ``study.optimize(n_trials=...)``
counts per call, and Optuna's ``MaxTrialsCallback`` only stops a worker after a trial ends,
so N workers on M trials finish up to M + N - 1. Here a trial is admitted where it starts,
in the storage, in the same transaction that creates it (or takes it from the queue), under
Optuna's own lock on the study row: a search trial starts only while the study's finished
plus running search trials are fewer than the budget; a queued re-run starts at any time.
A worker turned away waits while other trials run, since one of them may still fail and
free its place, and stops once the budget is finished (tuner/study/storage/budget_loop.py).
Exactly M searched configurations finish, however many workers.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy
from optuna.storages import RDBStorage
from optuna.storages._rdb import models
from optuna.storages._rdb.storage import _create_scoped_session
from optuna.trial import TrialState

from tuner.study.record import FINISHED, FINISHED_OR_RUNNING, RERUN_MARKS
from tuner.study.storage.outage import Outage, waits_out_outages
from tuner.study.storage.owner import OWNER_KEY, is_gone, this_process

# SQLite makes a writer wait for the lock this long before "database is locked"; with a
# few workers a write waits milliseconds, but a slow disk or a large study read can stall.
SQLITE_LOCK_TIMEOUT_S = 60
# A worker's database connections: one held, and a second only while two are needed at once.
# Its threads (the trial loop, Optuna's heartbeat) take turns on the one for the milliseconds a
# write lasts; Optuna's schema check, when a storage opens, holds one connection while it opens
# another (with no second, opening waited 30 s for the pool and failed). N workers hold N
# connections to the server, 2N at the very most (PostgreSQL's default limit is 100).
WORKER_CONNECTIONS = 1
MOMENTARY_CONNECTIONS = 1  # closed as soon as it is returned
CONNECT_TIMEOUT_S = 10
LIBPQ_SCHEMES = ("postgresql", "postgresql+psycopg", "postgresql+psycopg2")  # drivers that take libpq's connect_timeout


class BudgetSpent(Exception):
    """No trial may start now: the budget is taken (or only queued trials may run)."""


@dataclass(frozen=True)
class Limit:
    """Admission rule for one study: at most ``counted`` finished + running search trials
    (re-runs are not counted), and new (sampled) trials only when ``fresh`` (else only queued ones are taken)."""

    counted: int | None = None
    fresh: bool = True


_UNSET = object()


class TrialAdmission:
    """A storage that admits trials by a per-study ``Limit``: a BudgetedStorage, or the client of
    a `tuner storage-proxy` (tuner/study/storage/proxy.py), which sends the limit with each call.

    ``limited`` overrides the per-study limits for the calls of one thread: the proxy serves
    each worker's call on a thread of its own, with that worker's limit.
    """

    def __init__(self) -> None:
        self._limits: dict[int, Limit] = {}
        self._this_thread = threading.local()

    def set_limit(self, study_id: int, limit: Limit | None) -> None:
        if limit is None:
            self._limits.pop(study_id, None)
        else:
            self._limits[study_id] = limit

    def limit_for(self, study_id: int) -> Limit | None:
        limit = getattr(self._this_thread, "limit", _UNSET)
        return self._limits.get(study_id) if limit is _UNSET else limit

    def finished_searched(self, study_id: int) -> int:
        """Finished searched configurations, counted by the storage itself, not through a worker's cached view."""
        raise NotImplementedError

    @contextlib.contextmanager
    def limited(self, limit: Limit | None) -> Iterator[None]:
        """This thread's calls are admitted by ``limit`` (None: no limit), whatever ``set_limit`` holds."""
        self._this_thread.limit = limit
        try:
            yield
        finally:
            del self._this_thread.limit


# The trials that are re-runs (race, confirmation, baseline): on top of a budget.
_RERUNS = sqlalchemy.select(models.TrialUserAttributeModel.trial_id).where(models.TrialUserAttributeModel.key.in_(RERUN_MARKS))


def _lock_study(session: Any, study_id: int) -> None:
    """A write first: on PostgreSQL or MySQL it locks the study row; on SQLite it takes the
    database's write lock (pysqlite runs a lone SELECT outside any transaction, so SELECT ...
    FOR UPDATE would lock nothing there). Then what the transaction reads cannot go stale."""
    session.execute(
        sqlalchemy.update(models.StudyModel).where(models.StudyModel.study_id == study_id).values(study_name=models.StudyModel.study_name)
    )


def _searched(session: Any, study_id: int, states: tuple[TrialState, ...]) -> int:
    """The study's searched trials (re-runs left out) in ``states``."""
    return (
        session.query(sqlalchemy.func.count(models.TrialModel.trial_id))
        .filter(models.TrialModel.study_id == study_id, models.TrialModel.state.in_(states), models.TrialModel.trial_id.not_in(_RERUNS))
        .scalar()
    )


@waits_out_outages
class BudgetedStorage(RDBStorage, TrialAdmission):
    """Optuna's RDBStorage that admits trials by a per-study ``Limit``; otherwise unchanged.

    The check runs inside Optuna's transactions: for a new trial, the one that locks the
    study row to number it; for a queued trial, one that locks the same row before taking
    the trial. Without a limit set, it behaves exactly as RDBStorage. A server database gets
    a pool of ``connections`` (one for a worker, see ``WORKER_CONNECTIONS``). With
    ``retry_s``, a database that cannot be reached is waited out that long (tuner/study/storage/outage.py).
    With heartbeats, a trial started here records this process as its owner, and one whose
    owner is gone from this machine is stale at once (tuner/study/storage/owner.py);
    ``records_owner=False`` for a storage proxy's backend, which starts trials for workers elsewhere.
    """

    def __init__(
        self,
        url: str,
        engine_kwargs: dict[str, Any] | None = None,
        connections: int = WORKER_CONNECTIONS,
        retry_s: float | None = None,
        records_owner: bool = True,
        **kwargs: Any,
    ) -> None:
        if url.startswith("sqlite") and engine_kwargs is None:
            engine_kwargs = {"connect_args": {"timeout": SQLITE_LOCK_TIMEOUT_S}}
        elif engine_kwargs is None:
            engine_kwargs = {"pool_size": connections, "max_overflow": MOMENTARY_CONNECTIONS}
            if url.split("://", 1)[0] in LIBPQ_SCHEMES:  # a server that does not answer is an outage, not a hang
                engine_kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}
        super().__init__(url, engine_kwargs=engine_kwargs, **kwargs)
        TrialAdmission.__init__(self)
        self._outage = Outage(url, retry_s) if retry_s is not None else None
        self._owner = this_process() if records_owner else None

    def set_trial_user_attrs(self, trial_id: int, attrs: dict[str, Any]) -> None:
        """Several user attributes in one transaction: a trial's result is about 40 of them, one
        commit each through Optuna's ``set_trial_user_attr`` (on SQLite, most of a worker's storage time)."""
        with _create_scoped_session(self.scoped_session, True) as session:
            for key, value in attrs.items():
                self._set_trial_attr_without_commit(session, models.TrialUserAttributeModel, trial_id, key, value)

    def _admit(self, session: Any, study_id: int, limit: Limit | None, queued_id: int | None = None) -> bool:
        _lock_study(session, study_id)
        if limit is None or limit.counted is None:
            return True
        if (
            queued_id is not None
            and session.execute(_RERUNS.where(models.TrialUserAttributeModel.trial_id == queued_id)).first() is not None
        ):
            return True  # a queued race, confirmation or baseline run: on top of the budget
        return _searched(session, study_id, FINISHED_OR_RUNNING) < limit.counted

    def study_of_trial(self, trial_id: int) -> int:
        """The study a trial belongs to (KeyError for an unknown trial)."""
        with _create_scoped_session(self.scoped_session) as session:
            study_id = session.execute(sqlalchemy.select(models.TrialModel.study_id).where(models.TrialModel.trial_id == trial_id)).scalar()
        if study_id is None:
            raise KeyError(trial_id)
        return study_id

    def finished_searched(self, study_id: int) -> int:
        """Finished searched configurations, counted in the database itself.

        A worker's own view of the study goes through Optuna's cache, which can miss a trial
        other workers ended (seen with 32 workers on SQLite: a worker waited for ever for a
        place the budget no longer had); whether the budget is finished is asked here.
        """
        with _create_scoped_session(self.scoped_session) as session:
            return _searched(session, study_id, FINISHED)

    def _get_prepared_new_trial(self, study_id: int, template_trial: Any, session: Any) -> Any:
        # A template is an enqueued (WAITING) or copied trial: that starts nothing.
        limit = self.limit_for(study_id)
        if template_trial is None and limit is not None and (not limit.fresh or not self._admit(session, study_id, limit)):
            raise BudgetSpent(f"study {study_id}: no new trial may start")
        trial = super()._get_prepared_new_trial(study_id, template_trial, session)
        if template_trial is None:
            self._first_heartbeat(session, trial.trial_id)
        return trial

    def _first_heartbeat(self, session: Any, trial_id: int) -> None:
        """A trial starts RUNNING with a heartbeat, in the transaction that starts it.

        Optuna's heartbeat thread sends the first beat only once the trial's function runs. A
        worker killed in between (1 of 4 workers killed among 16 busy ones, here) left a trial
        with no heartbeat, which Optuna never finds stale: it stayed RUNNING for ever, holding
        its place in the budget, and every other worker waited for it.
        """
        if self.heartbeat_interval is not None and models.TrialHeartbeatModel.where_trial_id(trial_id, session) is None:
            session.add(models.TrialHeartbeatModel(trial_id=trial_id))  # the database's clock, as Optuna's beats
        if self.heartbeat_interval is not None and self._owner is not None:
            self._set_trial_attr_without_commit(session, models.TrialSystemAttributeModel, trial_id, OWNER_KEY, self._owner)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        """Optuna's stale trials (heartbeat older than the grace period), and those whose owner is gone from this machine.

        A killed worker's trial would otherwise stay RUNNING until the grace period has passed,
        and for good if no run of the study comes after that (a run resumed at once and ended).
        """
        stale = super()._get_stale_trial_ids(study_id)
        with _create_scoped_session(self.scoped_session) as session:
            owners = session.execute(
                sqlalchemy.select(models.TrialModel.trial_id, models.TrialSystemAttributeModel.value_json)
                .join(models.TrialSystemAttributeModel, models.TrialSystemAttributeModel.trial_id == models.TrialModel.trial_id)
                .where(
                    models.TrialModel.study_id == study_id,
                    models.TrialModel.state == TrialState.RUNNING,
                    models.TrialSystemAttributeModel.key == OWNER_KEY,
                )
            ).all()
        gone = [trial_id for trial_id, value in owners if trial_id not in stale and is_gone(json.loads(value))]
        return [*stale, *gone]

    def set_trial_state_values(self, trial_id: int, state: TrialState, values: Sequence[float] | None = None) -> bool:
        if state.is_finished() and self.engine.dialect.name == "sqlite":
            return self._finish_locked(trial_id, state, values)
        if state != TrialState.RUNNING:
            return super().set_trial_state_values(trial_id, state, values)
        # Taking a queued trial (WAITING -> RUNNING), as Optuna does, but under the study's
        # lock: Optuna's own check-then-set lets two SQLite workers take the same queued
        # trial (measured: 31 of 300 taken twice by 4 processes), so warm starts ran twice.
        with _create_scoped_session(self.scoped_session) as session:
            # A column, not the ORM row: the row must be read (below) only once locked.
            study_id = session.execute(
                sqlalchemy.select(models.TrialModel.study_id).where(models.TrialModel.trial_id == trial_id)
            ).scalar_one()
            if not self._admit(session, study_id, self.limit_for(study_id), trial_id):
                return False  # Optuna then tries the next queued trial, then a new one (refused)
            trial = models.TrialModel.find_or_raise_by_id(trial_id, session, for_update=True)
            if trial.state != TrialState.WAITING:
                return False
            trial.state = TrialState.RUNNING
            trial.datetime_start = datetime.now()
            self._first_heartbeat(session, trial_id)
        return True

    def _finish_locked(self, trial_id: int, state: TrialState, values: Sequence[float] | None) -> bool:
        """Optuna's finishing of a trial, with the database's write lock taken before the trial is read.

        SQLite has no SELECT ... FOR UPDATE, so two workers that both found a trial stale both
        failed it, and both queued its re-run: the configuration ran twice and counted twice
        (32 workers, benchmarks/storage_scale.py). Locked, the second finds the trial finished
        (UpdateFinishedTrialError, which Optuna's stale check expects), as on PostgreSQL.
        """
        with _create_scoped_session(self.scoped_session) as session:
            study_id = session.execute(
                sqlalchemy.select(models.TrialModel.study_id).where(models.TrialModel.trial_id == trial_id)
            ).scalar_one()
            _lock_study(session, study_id)
            trial = models.TrialModel.find_or_raise_by_id(trial_id, session)
            self.check_trial_is_updatable(trial_id, trial.state)
            for objective, value in enumerate(values or []):
                self._set_trial_value_without_commit(session, trial, objective, value)
            trial.state = state
            trial.datetime_complete = datetime.now()
        return True
