"""The simulated study's storage: Optuna's in-memory storage with the trial budget's admission.

The same rule as the database's (tuner/study/storage/budget.py): a search trial starts only
while the study's finished plus running search trials are fewer than the budget; race,
confirmation and baseline runs come on top; with ``fresh`` off only queued trials start.
Here it is checked under the storage's own lock, where the trial is created or taken from
the queue, so that 8 or 64 simulated workers finish exactly the budget.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from optuna.storages import InMemoryStorage
from optuna.trial import FrozenTrial, TrialState

from tuner.study.record import FINISHED, FINISHED_OR_RUNNING, TrialRecord
from tuner.study.storage.budget import BudgetSpent, Limit, TrialAdmission


class BudgetedMemoryStorage(InMemoryStorage, TrialAdmission):
    """InMemoryStorage that admits trials by a per-study ``Limit`` (see the module's docstring)."""

    def __init__(self) -> None:
        InMemoryStorage.__init__(self)
        TrialAdmission.__init__(self)
        self._workers = threading.local()
        # Records by trial id, read back by tuner/study/record.py's ``records``: this storage
        # replaces a trial's object on every write, so a record of the object read is current.
        # The incumbent, racing, the screen and the deadline read every trial at every trial
        # start, which parsing afresh made most of a simulated study's time.
        self.held_records: dict[int, TrialRecord] = {}

    # Each simulated worker is a thread on this one storage, where a real worker has a storage
    # of its own: the limits a worker sets are its own, or one ending would lift another's.
    def _worker_limits(self) -> dict[int, Limit]:
        if not hasattr(self._workers, "limits"):
            self._workers.limits = {}
        return self._workers.limits

    def set_limit(self, study_id: int, limit: Limit | None) -> None:
        if limit is None:
            self._worker_limits().pop(study_id, None)
        else:
            self._worker_limits()[study_id] = limit

    def limit_for(self, study_id: int) -> Limit | None:
        return self._worker_limits().get(study_id)

    def _is_rerun(self, trial: FrozenTrial) -> bool:
        held = self.held_records.get(trial._trial_id)
        return (held if held is not None and held.trial is trial else TrialRecord.of(trial)).is_rerun

    def _taken(self, study_id: int) -> int:
        return sum(1 for t in self._studies[study_id].trials if t.state in FINISHED_OR_RUNNING and not self._is_rerun(t))

    def finished_searched(self, study_id: int) -> int:
        with self._lock:
            return sum(1 for t in self._studies[study_id].trials if t.state in FINISHED and not self._is_rerun(t))

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        with self._lock:
            limit = self.limit_for(study_id)
            # A template is an enqueued (WAITING) trial: that starts nothing.
            spent = limit is not None and (not limit.fresh or (limit.counted is not None and self._taken(study_id) >= limit.counted))
            if template_trial is None and spent:
                raise BudgetSpent(f"study {study_id}: no new trial may start")
            return super().create_new_trial(study_id, template_trial)

    def set_trial_state_values(self, trial_id: int, state: TrialState, values: Sequence[float] | None = None) -> bool:
        with self._lock:
            if state == TrialState.RUNNING:  # taking a queued trial
                study_id, _ = self._trial_id_to_study_id_and_number[trial_id]
                limit = self.limit_for(study_id)
                queued = self._get_trial(trial_id)
                counted = limit.counted if limit is not None else None
                if counted is not None and not self._is_rerun(queued) and self._taken(study_id) >= counted:
                    return False  # Optuna then tries the next queued trial, then a new one (refused)
            return super().set_trial_state_values(trial_id, state, values)
