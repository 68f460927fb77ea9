"""What a stop rule answers: go on (``GO``, None), or ``Stop`` with the outcome, the reason and a bound.

Every rule that can end a trial answers this way, as Optuna's pruners answer a bool: the
trial's own limits (reached, diverged, the per-trial cap, the sample limit, the schedule's
horizon, the study's deadline; tuner/train/limits.py), the throughput pre-screen
(tuner/train/screen.py) and the study's listeners (pruning and capping at the incumbent,
tuner/study/stopping/). The trainer (tuner/train/time_to_target.py) asks them in order and
applies the first ``Stop``; no rule writes into the trainer.

Between evaluations a rule that needs a look before the next scheduled evaluation (capping
at the incumbent) answers a ``TimeBound`` question instead: the time on the objective's
clock at which the trainer must evaluate, so that the rule can give its verdict there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tuner.train.result import Outcome


@dataclass(frozen=True)
class Stop:
    """End the trial now as ``outcome``, for ``reason``.

    ``bound_s``: for a trial stopped because it could no longer win, the time on the
    objective's clock it was stopped against (the incumbent x slack); its score is floored
    there (tuner/study/scoring/censoring.py). None for every other ending.
    """

    outcome: Outcome
    reason: str
    bound_s: float | None = None


# A rule's answer: a Stop, or GO (None) to go on.
Verdict = Stop | None
GO: Verdict = None

# Asked when the trial starts and after each evaluation that goes on: the time on the
# objective's clock past which an evaluation is forced early (None: no such time).
TimeBound = Callable[[], float | None]


def first_stop(rules: Iterable[Callable[[], Verdict]]) -> Stop | None:
    """The first ``Stop`` among the rules' answers, asking each only while the ones before it said go on."""
    for rule in rules:
        verdict = rule()
        if verdict is not None:
            return verdict
    return GO
