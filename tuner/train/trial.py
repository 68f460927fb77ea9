"""One trial: train a configuration from scratch and turn whatever happens into a result."""

from __future__ import annotations

import logging
from collections.abc import Callable

import torch

from tuner.tasks.base import Task
from tuner.train.clocks import TimerLike
from tuner.train.data_parallel import train_data_parallel
from tuner.train.energy import EnergyMeter, energy_meter
from tuner.train.loop import SingleProcess, train
from tuner.train.memory import free_memory, is_out_of_memory, peak_memory_mb
from tuner.train.result import Outcome, TrialResult
from tuner.train.schedules import decays_to_zero
from tuner.train.screen import ScreenRule
from tuner.train.session import train_own_loop
from tuner.train.syncs import HostSyncs
from tuner.train.time_to_target import Listener, StopRule, TimeToTarget
from tuner.train.timer import Timer
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import TimeBound


def train_trial(
    task: Task,
    config: TrialConfig,
    rule: StopRule,
    device: torch.device,
    seed: int = 0,
    listeners: list[Listener] | None = None,
    deadline: float | None = None,
    timer: Timer | None = None,
    stop_at: TimeBound | None = None,
    screen: ScreenRule | None = None,
    keep: Callable[[torch.nn.Module], None] | None = None,
) -> TrialResult:
    """Train from scratch until ``rule`` (or a listener) ends the trial; always returns a
    result with one outcome. ``config.devices > 1`` trains on that many processes
    (tuner/train/data_parallel.py); a task with a ``train_fn`` runs that function with a
    session (tuner/train/session.py).

    A KeyboardInterrupt (Ctrl-C, or SIGTERM through tuner.signals) is re-raised with the
    `interrupted` result attached as ``err.trial_result``. Listeners answer go on or a ``Stop``
    at each evaluation (tuner/train/verdict.py). ``stop_at`` is asked when the trial starts
    and after each evaluation that goes on: once the rule's clock passes its answer an
    evaluation is forced, for a listener that caps at the incumbent; ``screen`` times
    the first steps and ends a trial that cannot win as screened (tuner/train/screen.py). ``keep`` sees the
    trained model after the trial ends, outside the clocks: the unwrapped model (rank 0's in a
    data-parallel trial), or the one a training function named with ``session.keep``.
    """
    tt = trial_books(rule, config, timer or Timer(device), listeners, deadline, stop_at, screen, energy_meter(device.type, device.index))
    tt.start()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    rank_samples = None
    try:
        if task.train_fn is not None:  # a training function of one's own, reporting to a session
            train_own_loop(task, config, device, seed, tt, keep)
        elif config.devices > 1:
            rank_samples = train_data_parallel(task, config, device, seed, tt, keep)
        else:
            tt.clocks.count_syncs(HostSyncs(device))  # the built-in loop's steps should never wait for the GPU
            train(task, config, device, seed, tt, SingleProcess(), keep)
    except KeyboardInterrupt as err:
        # Re-raised so that the study stops; the result rides along so the trial can still be recorded.
        err.trial_result = tt.finish(Outcome.INTERRUPTED, str(err) or "interrupted by the user")  # type: ignore[attr-defined]
        raise
    except Exception as err:  # the task is user code: any failure is a trial outcome (logged below, so not a blind catch)
        if is_out_of_memory(err):
            free_memory(device)
            tt.finish(Outcome.OOM, f"out of memory: {_first_line(err)}")
        else:
            tt.finish(Outcome.FAILED, f"{type(err).__name__}: {_first_line(err)}")
            logging.getLogger(__name__).debug("%s", _first_line(err), exc_info=err)  # --verbose shows it (tuner/orchestrate/logs.py)
    result = tt.result()
    result.peak_memory_mb = peak_memory_mb(device)
    result.rank_samples = rank_samples
    return result


def trial_books(
    rule: StopRule,
    config: TrialConfig,
    timer: TimerLike,
    listeners: list[Listener] | None = None,
    deadline: float | None = None,
    stop_at: TimeBound | None = None,
    screen: ScreenRule | None = None,
    energy: EnergyMeter | None = None,
) -> TimeToTarget:
    """The bookkeeping of one trial of ``config`` under ``rule``: what a training loop, or a replay
    of a recorded trial (tuner/simulate/replay.py), reports its steps and evaluations to."""
    return TimeToTarget(
        target=rule.target,
        eval_every_samples=rule.eval_every_samples,
        cap_s=rule.cap_s,
        clock=rule.clock,
        max_samples=rule.max_samples,
        horizon_samples=config.horizon_samples if decays_to_zero(config) else None,
        deadline=deadline,
        timer=timer,
        listeners=listeners,
        energy=energy,
        stop_at=stop_at,
        screen=screen,
        charge_setup=rule.charge_setup,
    )


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
