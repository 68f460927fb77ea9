"""The clocks a trial is measured on, written once: their names, where each is stored, and
how the robust clock is computed.

- ``train``: seconds of training, evaluations excluded (the device is synchronised at
  evaluation boundaries only, tuner/train/timer.py).
- ``wall``: seconds since the trial started, setup and evaluations included.
- ``robust``: steps times the median step time over evaluation intervals, so that a stall
  on a shared machine (one slow interval) does not count against a configuration.
- ``cpu``: steps times the median CPU time per step of the training thread over evaluation
  intervals. Time the thread spends descheduled, while other processes run, is not in it,
  so it holds under sustained load where the others do not. It means the time to target
  only on a CPU with one torch thread (where the thread does all the work) and no loader
  processes; the study refuses it elsewhere (tuner/study/run/runner.py).

``Evaluation`` and ``TrialResult`` (tuner/train/result.py) hold each clock in the field
named here; ``TrialResult`` adds ``<field>_to_target`` for the first crossing.
"""

from __future__ import annotations

CLOCK_FIELDS = {"robust": "robust_s", "train": "train_s", "wall": "wall_s", "cpu": "cpu_s"}
CLOCKS = tuple(CLOCK_FIELDS)


def check_clock(clock: str) -> str:
    """The clock's name, or ValueError listing the clocks there are."""
    if clock not in CLOCK_FIELDS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    return clock


def robust_seconds(steps: int, median_step_s: float | None, train_s: float) -> float:
    """The robust clock: ``steps`` times the median step time (the cpu clock: CPU time per step).

    Before any interval has been measured (or with a clock too coarse to see a step) there
    is no median, and the clock's running total (train, or CPU seconds), the closest
    measured one, stands in.
    """
    return steps * median_step_s if median_step_s else train_s
