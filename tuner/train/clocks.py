"""The clocks a trial is measured on, written once: their names, where each is stored, and
how the robust clock is computed.

- ``train``: seconds of training, evaluations excluded (the device is synchronised at
  evaluation boundaries only, tuner/train/timer.py).
- ``wall``: seconds since the trial started, setup and evaluations included.
- ``robust``: steps times the median step time over evaluation intervals, so that a stall
  on a shared machine (one slow interval) does not count against a configuration.
- ``cpu``: steps times the median CPU time per step over evaluation intervals, the training
  thread's and its DataLoader workers' (tuner/train/worker_cpu.py). Time spent descheduled,
  while other processes run, is not in it, so it holds under sustained load where the
  others do not. The thread's share of an interval is its mean over the steps the scheduler
  did not interrupt (``interval_cpu_step_s``): a step that lost its core to another process
  resumes on cold caches and takes more CPU time. It means the time to target only where
  that work is all on the CPU and the thread is the trial's only one: a CPU device, one
  torch thread, one process; the study refuses it elsewhere (tuner/study/run/prepare.py).
- ``auto`` (the default) names one of these for a study, once (``auto_clock``): ``cpu``
  where it means the time to target, ``robust`` elsewhere.

``Evaluation`` and ``TrialResult`` (tuner/train/result.py) hold each clock in the field
named here; ``TrialResult`` adds ``<field>_to_target`` for the first crossing.

``TrialClocks`` runs them for one trial; ``TrialClocks.objective_s`` is the one place that
says what the objective's clock reads, at an evaluation or between evaluations.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from tuner.train.energy import EnergyMeter
    from tuner.train.syncs import HostSyncs

CLOCK_FIELDS = {"robust": "robust_s", "train": "train_s", "wall": "wall_s", "cpu": "cpu_s"}
CLOCKS = tuple(CLOCK_FIELDS)
AUTO = "auto"
CLOCK_CHOICES = (AUTO, *CLOCKS)  # what an experiment may name: a clock, or auto
CLOCK_BEFORE_AUTO = "robust"  # the default before auto: what a study stored without a clock was minimised on


def auto_clock(device_type: str, threads: int, processes: int = 1, own_loop: bool = False) -> str:
    """The clock ``auto`` names for a study on this machine.

    ``cpu`` where the trial's work is all CPU time of its training thread and its loader
    workers: a CPU device, one torch thread, one process per trial. It holds on a busy
    machine (loaded/idle 0.9-1.1 where the robust clock moved 1.3-1.7, docs/objective.md).
    ``robust`` elsewhere: with several threads OpenMP's waiting threads spin, so CPU time
    grows with the load (API-NOTES.md); with several processes it sums their times; on a GPU
    the work is not CPU time at all (CUDA event time there is not built, nor measured); a
    training function of one's own may run threads, processes or waits of its own.
    """
    return "cpu" if device_type == "cpu" and threads == 1 and processes == 1 and not own_loop else "robust"


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


def interval_cpu_step_s(cpu_s: float, steps: int, thread_steps: list[tuple[float, bool]]) -> float:
    """CPU seconds per step of an interval that took ``cpu_s`` CPU seconds in ``steps`` steps,
    the training thread's share read over the steps the scheduler did not interrupt.

    ``thread_steps`` holds the training thread's CPU time of each step and whether the
    scheduler took its core away during it (an involuntary context switch). Such a step
    resumes on cold caches and costs more CPU time, so the thread's mean is taken over the
    others when at least 3 are left. On a quiet machine about 1% of the steps are
    interrupted, so the reading is the plain mean's; beside busy processes half of them or
    more (docs/objective.md). The loader workers' share (the rest of ``cpu_s``) stays their
    mean: their work lands in bursts, not per step.
    """
    mean_s = cpu_s / steps
    whole = [cpu for cpu, _ in thread_steps]
    kept = [cpu for cpu, interrupted in thread_steps if not interrupted]
    if len(kept) < 3 or len(kept) == len(whole):
        return mean_s  # too few left to stand for the interval, or nothing to leave out
    return mean_s - statistics.mean(whole) + statistics.mean(kept)


def charged_setup_s(compile_s: float, clock: str, charge_setup: bool) -> float:
    """Setup the objective adds to a trial's clock: torch.compile's warm-up when it charges
    setup (``objective.charge_setup``); the wall clock holds it already."""
    return compile_s if charge_setup and clock != "wall" else 0.0


class TimerLike(Protocol):
    """The host clock, the thread's CPU clock and a device sync (tuner/train/timer.py; tests pass a fake)."""

    def now(self) -> float: ...

    def cpu_now(self) -> float: ...

    def thread_now(self) -> tuple[float, int]: ...

    def sync(self) -> None: ...


class TrialClocks:
    """One trial's clocks: setup, train, wall, robust and cpu, read from a timer.

    The train clock runs from ``training_started`` (or ``resume``) to ``pause``, the only
    places the device is synchronised. Step times are measured per evaluation interval
    (``end_interval``) and their medians change only there, so that between evaluations
    reading the objective's clock costs a host-clock read. An energy meter, when given, is
    read where the train clock starts and stops, never per step.
    """

    def __init__(self, timer: TimerLike, clock: str = "robust", charge_setup: bool = False, energy: EnergyMeter | None = None) -> None:
        self.timer = timer
        self.clock = check_clock(clock)
        self.field = CLOCK_FIELDS[clock]
        self.charge_setup = charge_setup
        self.energy = energy
        self.syncs: HostSyncs | None = None  # host syncs counted while the train clock runs (``count_syncs``)
        self.setup_s = 0.0
        self.compile_s = 0.0  # torch.compile's warm-up, recorded by the loop (tuner/train/levers.py)
        self.running = False
        self.median_step_s: float | None = None  # over evaluation intervals
        self.median_step_cpu_s: float | None = None  # the training thread's CPU seconds per step
        self._start = self._resumed = self._cpu_resumed = 0.0
        self._train_s = self._cpu_train_s = 0.0
        self._interval_start = (0, 0.0, 0.0)  # steps, train and CPU seconds where the interval began
        self._step_times: list[float] = []
        self._cpu_step_times: list[float] = []
        self._thread_last: tuple[float, int] | None = None  # the training thread's CPU clock and switches at its last step (or resume)
        self._thread_steps: list[tuple[float, bool]] = []  # its CPU seconds per step in this interval, and whether it was interrupted

    def start(self) -> None:
        """The wall clock starts; setup begins."""
        self._start = self.timer.now()

    def training_started(self) -> None:
        """Setup ends; the train clock runs."""
        self.timer.sync()
        self.setup_s = self.timer.now() - self._start
        self.resume()

    def record_compile(self, seconds: float) -> None:
        """torch.compile's warm-up took ``seconds`` of setup (charged where the objective says)."""
        self.compile_s = seconds

    def count_syncs(self, syncs: HostSyncs) -> None:
        """Count the host's waits for the device while the train clock runs (tuner/train/syncs.py)."""
        self.syncs = syncs

    def pause(self) -> None:
        """Stop the train clock (an evaluation or the end begins)."""
        if self.running:
            if self.syncs is not None:
                self.syncs.pause()  # before the boundary's own sync, which is not a step's
            self.timer.sync()  # deliberate: evaluation boundary, the only sync in training
            self._train_s += self.timer.now() - self._resumed
            self._cpu_train_s += self.timer.cpu_now() - self._cpu_resumed
            self.running = False
            self._thread_last = None
            if self.energy is not None:
                self.energy.pause()

    def resume(self) -> None:
        """Start the train clock again."""
        self._resumed = self.timer.now()
        self._cpu_resumed = self.timer.cpu_now()
        self._thread_last = self.timer.thread_now()
        self.running = True
        if self.energy is not None:
            self.energy.resume()
        if self.syncs is not None:
            self.syncs.resume()

    def step_ended(self) -> None:
        """One optimizer step ended: the training thread's CPU time for it, and whether it was
        interrupted (one read of the thread's clock and one of its switches, about 2 us)."""
        if self._thread_last is not None:
            cpu, switches = now = self.timer.thread_now()
            self._thread_steps.append((cpu - self._thread_last[0], switches > self._thread_last[1]))
            self._thread_last = now

    def end_interval(self, steps: int) -> None:
        """An evaluation after ``steps`` steps in all: the interval since the last one gives one step time per clock."""
        start_steps, start_train_s, start_cpu_s = self._interval_start
        if steps > start_steps:
            self._step_times.append((self._train_s - start_train_s) / (steps - start_steps))
            self._cpu_step_times.append(interval_cpu_step_s(self._cpu_train_s - start_cpu_s, steps - start_steps, self._thread_steps))
            self.median_step_s = statistics.median(self._step_times)
            self.median_step_cpu_s = statistics.median(self._cpu_step_times)
        self._interval_start = (steps, self._train_s, self._cpu_train_s)
        self._thread_steps = []

    @property
    def train_s(self) -> float:
        """Seconds of training so far, evaluations excluded."""
        return self._train_s + (self.timer.now() - self._resumed if self.running else 0.0)

    @property
    def wall_s(self) -> float:
        """Seconds since ``start``, setup and evaluations included."""
        return self.timer.now() - self._start

    @property
    def cpu_train_s(self) -> float:
        """The training thread's CPU seconds while the train clock ran."""
        return self._cpu_train_s + (self.timer.cpu_now() - self._cpu_resumed if self.running else 0.0)

    def robust_s(self, steps: int) -> float:
        """The robust clock after ``steps`` steps."""
        return robust_seconds(steps, self.median_step_s, self.train_s)

    def cpu_s(self, steps: int) -> float:
        """The cpu clock after ``steps`` steps. Between evaluations it is asked every step: the CPU
        seconds (a read of the loader workers' clocks too) only until a median step time exists."""
        if self.median_step_cpu_s:
            return robust_seconds(steps, self.median_step_cpu_s, 0.0)
        return robust_seconds(steps, None, self.cpu_train_s)

    @property
    def charged_s(self) -> float:
        """Setup the objective charges on top of this trial's clock (``charged_setup_s``)."""
        return charged_setup_s(self.compile_s, self.clock, self.charge_setup)

    def objective_s(self, steps: int, ev: object | None = None) -> float:
        """The objective's clock, charged setup included: at evaluation ``ev`` (what it
        recorded: an ``Evaluation``, tuner/train/result.py, which imports this module), or now
        after ``steps`` steps (between evaluations, from the host clock)."""
        if ev is not None:
            value = getattr(ev, self.field)
        elif self.clock == "robust":
            value = self.robust_s(steps)
        elif self.clock == "cpu":
            value = self.cpu_s(steps)
        else:
            value = self.wall_s if self.clock == "wall" else self.train_s
        return value + self.charged_s

    def running_s(self) -> float:
        """What the objective's clock counts steps on: the thread's CPU seconds on the cpu clock, training seconds otherwise."""
        return self.cpu_train_s if self.clock == "cpu" else self.train_s

    @property
    def beside_steps_s(self) -> float:
        """What the objective's clock holds besides the steps before the first evaluation: the setup
        on the wall clock, the charged setup elsewhere."""
        return self.setup_s if self.clock == "wall" else self.charged_s
