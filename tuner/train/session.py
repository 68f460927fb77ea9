"""A training loop of one's own, tuned like a built-in trial: the session it reports to.

The experiment's ``task`` names a training function, ``package.module:function``, that
takes a ``session`` (tuner/tasks/registry.py tells it from a task function by that
parameter). It is called once per trial with the keywords it names among ``config`` (the
trial's TrialConfig, its own hyperparameters in ``config.hyper``), ``device``, ``seed`` and
``session``, plus each hyperparameter of the trial that is one of its keyword parameters::

    def train(config, device, seed, session, *, dropout=0.1, depth=2):
        model = build(config.width, dropout, depth).to(device)  # setup: not timed as training
        optimizer = session.optimizer(model)          # the searched optimizer (tuner/train/session_levers.py)
        step = session.train_step(model, loss_fn, optimizer)  # precision, accumulation, the schedule
        session.start_training()                      # the train clock starts here
        samples = 0
        while True:
            for xb, yb in batches(config.batch_size):
                step(xb, yb)
                samples += len(xb)
                if session.due(samples):              # an evaluation is due: the clock pauses
                    answer = session.report(accuracy(model), samples)
                    if answer.stop:                   # reached, pruned, capped, screened, out of time
                        return

What the loop reports is the held-out metric the experiment names (``objective.metric``,
accuracy by default; a loss, an MSE, a BLEU score...), compared with the target in the
experiment's ``objective.direction`` (``session.goal``, tuner/train/target.py): a loop that
reports a loss sets ``objective: {metric: loss, direction: minimize, target: 1.6}``.

The loop never times itself: the session's clocks do (TimeToTarget), so the censoring
rule, equal-time pruning, capping at the incumbent, confirmation, tracking, nightly runs
and workers treat it like any other trial. Time before ``start_training()`` is setup
(without that call the train clock runs from the call of the function). The train clock
stops at ``due()`` when it answers True, or at ``pause()``, and runs again when
``report()`` answers; a report with neither counts the evaluation as training time.

``due()`` never synchronises the device on its own: it counts and reads the host clock, and
only when it answers True (the clock pauses for an evaluation) does it wait for the queued
device work, as the built-in loop does at its evaluations (and during the few steps the
pre-screen times). A decaying schedule ends at its horizon: ``due()`` then answers True and
the next ``report()`` stops the trial (``timeout``: the rate has reached zero).

The robust clock multiplies steps by the median step time: a loop that calls ``due()``
after every optimizer step has true steps; one that only reports counts each interval
between reports as one step. The throughput pre-screen (tuner/train/screen.py) times the
first such steps; a trial it screens gets True from ``due()`` and ``stop`` from its next
``report()``.

Weights: ``session.keep(model)`` names the model whose weights the trial keeps (for
``tuner train --save``, and the MLflow run's ``model.pt``); they are read after the function
returns, with the clocks stopped, so calling it once right after building the model is
enough. ``session.start_from(model)`` loads the experiment's ``init_from`` into the model
(True), or does nothing without one (False); a model it does not fit fails the trial, naming
the first mismatching key and both shapes.

Contract breaches end the trial as ``failed`` with one line (never a traceback): returning
without a report, a metric that is not a number, fewer samples than reported before, a
return value other than None, and any exception the function raises. A NaN or infinite
metric (or loss) is no breach: the trial ends as ``diverged``, scored as a miss.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import TRAIN_FN_ARGS, keyword_parameters, takes_any_keyword
from tuner.train.checkpoint import first_mismatch
from tuner.train.config_reads import recording
from tuner.train.hf_trainer import quiet_trainer, training_arguments
from tuner.train.result import Outcome
from tuner.train.session_levers import SessionLevers
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig


class SessionError(Exception):
    """A training function broke the session's contract; the trial ends as failed."""


@dataclass(frozen=True)
class Answer:
    """What ``Session.report`` says: ``stop`` and, when stopping, the outcome and its reason."""

    stop: bool
    outcome: str | None = None  # reached, pruned, capped, screened, timeout, diverged, interrupted
    reason: str = ""


class Session(SessionLevers):
    """What a training function of one's own reports to; see the module's docstring. Its calls
    ``optimizer``, ``schedule``, ``autocast``, ``step``, ``train_step`` and ``compile`` apply the
    trial's searched dimensions (tuner/train/session_levers.py); ``training_arguments`` and
    ``quiet_trainer`` hand them to Hugging Face's Trainer (tuner/train/hf_trainer.py)."""

    def __init__(
        self, tt: TimeToTarget, config: TrialConfig, device: torch.device, seed: int, init_state: dict[str, Any] | None = None
    ) -> None:
        self._tt = tt
        self.config = config
        self.hyper = dict(config.hyper)
        self.device = device
        self.seed = seed
        self.target = tt.target
        self.goal = tt.goal  # the metric, its direction and the value to reach
        self.eval_every_samples = tt.eval_every
        self.reports = 0
        self.error: SessionError | None = None
        self._samples = 0  # training samples counted into the clocks so far
        self.init_state = init_state  # the experiment's init_from, as a state dict (or None)
        self.kept: torch.nn.Module | None = None  # session.keep's model, read when the function returns
        self._init_levers()

    @property
    def stopped(self) -> bool:
        return self._tt.done

    def start_training(self) -> None:
        """Setup is over: the train clock starts now (before the first ``due`` or ``report``)."""
        if self._samples or self.reports:
            self._fail("session.start_training() came after training samples were reported; call it once, before the first step")
        self._tt.training_started()  # restarts the clock the call of the function started

    def due(self, samples: int) -> bool:
        """Count the training samples seen so far (a running total); True when the
        experiment's cadence wants an evaluation now, and then the train clock is paused."""
        delta = self._advance(samples, "session.due")
        due = self._tt.done or (self._tt.step(delta) if delta else False)
        if due:
            self._evaluation_weights(True)
        return due

    def pause(self) -> None:
        """Stop the train clock now: an evaluation begins (``report`` starts it again)."""
        self._tt.pause()
        self._evaluation_weights(True)

    def report(self, metric: float, samples: int, *, loss: float | None = None, train_loss: float | None = None) -> Answer:
        """Record the held-out metric (the experiment's ``objective.metric``) after ``samples`` training samples (a running total);
        the answer says whether to stop. ``loss`` is the held-out loss, ``train_loss`` the
        mean training loss since the last report (a non-finite one ends the trial as diverged)."""
        if self._tt.done:
            return self._answer()
        if isinstance(metric, torch.Tensor):
            metric = metric.item()  # deliberate sync: an evaluation boundary
        if not isinstance(metric, numbers.Real) or isinstance(metric, bool):
            self._fail(f"session.report got the metric {metric!r} at {samples} samples; expected a number")
        # A NaN or infinite metric is not a breach: the training diverged (a high learning rate
        # does that), and the trial ends as diverged, a result scored as a miss (tuner/train/limits.py).
        delta = self._advance(samples, "session.report")
        if delta:
            self._tt.step(delta)
        self.reports += 1
        self._tt.evaluate(float(metric), loss=_number(loss), train_loss=_number(train_loss))
        answer = self._answer()
        if not answer.stop:
            self._evaluation_weights(False)  # training goes on: back to the training weights
        return answer

    def keep(self, model: torch.nn.Module) -> None:
        """Keep this model's weights as the trial's (read after the function returns, off the clocks)."""
        if not isinstance(model, torch.nn.Module):
            self._fail(f"session.keep got a {type(model).__name__}; expected the torch.nn.Module whose weights to keep")
        self.kept = model

    def start_from(self, model: torch.nn.Module) -> bool:
        """Load the experiment's ``init_from`` weights into ``model``; False when there are none."""
        if self.init_state is None:
            return False
        mismatch = first_mismatch(model, self.init_state)
        if mismatch is not None:
            key, mine, theirs = mismatch
            self._fail(f"session.start_from: init_from does not fit the model; key {key}: model {mine}, checkpoint {theirs}")
        model.load_state_dict(self.init_state)
        return True

    def training_arguments(self, output_dir: str, **rest: Any) -> Any:
        """A Hugging Face ``TrainingArguments`` with the trial's batch, accumulation, precision and
        seed, and the Trainer's own logging off the terminal; ``rest`` goes on to it
        (tuner/train/hf_trainer.py)."""
        return training_arguments(self.config, self.device, self.seed, output_dir, **rest)

    def quiet_trainer(self, trainer: Any) -> Any:
        """The Hugging Face ``trainer`` without its printed log dicts and progress bar; returns it
        (tuner/train/hf_trainer.py)."""
        return quiet_trainer(trainer)

    def _advance(self, samples: Any, where: str) -> int:
        if not isinstance(samples, numbers.Integral) or isinstance(samples, bool) or samples < 0:
            self._fail(f"{where} got samples={samples!r}; expected the training samples seen so far, an integer >= 0")
        if samples < self._samples:
            self._fail(f"{where} got {samples} samples, fewer than the {self._samples} reported before; pass the running total")
        delta = int(samples) - self._samples
        self._samples = int(samples)
        return delta

    def _answer(self) -> Answer:
        if not self._tt.done:
            return Answer(False)
        result = self._tt.result()
        return Answer(True, result.outcome.value, result.reason)

    def _fail(self, message: str) -> None:
        # Kept as well as raised: a function that catches it still ends as failed.
        self.error = SessionError(message)
        raise self.error


def _number(value: Any) -> float | None:
    if value is None:
        return None
    return float(value.item() if isinstance(value, torch.Tensor) else value)


def train_own_loop(
    task: Task,
    config: TrialConfig,
    device: torch.device,
    seed: int,
    tt: TimeToTarget,
    keep: Callable[[torch.nn.Module], None] | None = None,
) -> None:
    """Run the task's training function for one trial; every way it ends becomes an outcome in
    ``tt``. ``keep`` then sees the model the function named with ``session.keep``, if any."""
    fn = task.train_fn
    assert fn is not None
    view = recording(config, task.config_reads)  # what the function and the session's calls read is kept
    session = Session(tt, view, device, seed, task.init_state)
    named = keyword_parameters(fn)
    given = {"config": view, "device": device, "seed": seed, "session": session}
    kwargs = {k: v for k, v in given.items() if k in named}
    kwargs.update(task.spec[1] if task.spec else {})
    any_keyword = takes_any_keyword(fn)
    kwargs.update({k: v for k, v in config.hyper.items() if (k in named or any_keyword) and k not in TRAIN_FN_ARGS})
    tt.training_started()  # until the function says setup is over (session.start_training)
    returned = fn(**kwargs)
    if session.error is not None:
        tt.finish(Outcome.FAILED, f"SessionError: {session.error}", force=True)
    elif returned is not None:
        tt.finish(
            Outcome.FAILED,
            f"SessionError: the training function returned a {type(returned).__name__}; expected None (results go through session.report)",
            force=True,
        )
    elif not session.reports:
        tt.finish(
            Outcome.FAILED,
            "SessionError: the training function returned without reporting; call session.report(metric, samples) every so many samples",
        )
    elif not tt.done:
        tt.finish(
            Outcome.TIMEOUT,
            f"the training function returned after {session._samples} samples without reaching the target, at best {tt.best_metric():.4f}",
        )
    if keep is not None and session.kept is not None and session.error is None and returned is None and session.reports:
        keep(session.kept)  # the function has returned: the clocks no longer run
