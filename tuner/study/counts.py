"""How many trials a study holds, by outcome and by kind: the figures a report and a night print."""

from __future__ import annotations

from collections import Counter
from typing import Any

import optuna
from optuna.trial import TrialState

from tuner.study.record import records

# A FAIL trial with no recorded outcome: its worker died mid-trial (tuner/study/storage/open.py).
LOST = "lost (worker died)"


def trial_counts(study: optuna.Study) -> dict[str, Any]:
    """Trials by outcome, and how many were race, confirmation and baseline runs, warm starts and
    re-runs after a dead worker, and how many wait in the queue for a later run.

    Race, confirmation and baseline runs re-run a configuration: they come on top of a trial budget.
    The kinds count runs that started; a queued run (``tuner confirm`` or the next ``tuner run``
    starts it) is counted apart, and in ``by_outcome`` as ``waiting``.
    """
    trials = records(study)
    by_outcome = Counter(
        r.outcome.value if r.outcome is not None else LOST if r.state is TrialState.FAIL else r.state.name.lower() for r in trials
    )
    ran = [r for r in trials if r.state is not TrialState.WAITING]
    return {
        "total": len(trials),
        "by_outcome": dict(sorted(by_outcome.items())),
        "race_runs": sum(r.race_of is not None for r in ran),
        "confirmation_runs": sum(r.is_confirmation for r in ran),
        "baseline_runs": sum(r.is_baseline for r in ran),
        "warm_started": sum(r.warm_start is not None for r in ran),
        "re_runs_after_a_dead_worker": sum(r.retry_of is not None for r in ran),
        "queued_runs": len(trials) - len(ran),
    }
