"""Train one configuration until it first reaches the target, or is stopped."""

from __future__ import annotations

import torch

from tuner.train.time_to_target import Listener, TimeToTarget
from tuner.study.experiment import Objective
from tuner.train.hardware import autocast, free_memory, is_out_of_memory, peak_memory_mb
from tuner.train.optimizers import build_optimizer
from tuner.train.result import Outcome, TrialResult
from tuner.train.schedules import decays_to_zero, lr_factor
from tuner.tasks.base import Task
from tuner.train.timer import Timer
from tuner.train.trial_config import TrialConfig

EVAL_CHUNK = 8192


def train_trial(
    task: Task,
    config: TrialConfig,
    objective: Objective,
    device: torch.device,
    seed: int = 0,
    listeners: list[Listener] | None = None,
    deadline: float | None = None,
    timer: Timer | None = None,
) -> TrialResult:
    """Train from scratch; always returns a result with one outcome.

    A KeyboardInterrupt (Ctrl-C, or SIGTERM through tuner.signals) is re-raised with the
    `interrupted` result attached as ``err.trial_result``.
    """
    tt = TimeToTarget(
        target=objective.target,
        eval_every_samples=objective.eval_every_samples,
        cap_s=objective.cap_s,
        clock=objective.clock,
        max_samples=objective.max_samples,
        horizon_samples=config.horizon_samples if decays_to_zero(config) else None,
        deadline=deadline,
        timer=timer or Timer(device),
        listeners=listeners,
    )
    tt.start()
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    rank_samples = None
    try:
        if config.devices > 1:  # data-parallel on several processes; imported here: it starts no process otherwise
            from tuner.train.data_parallel import train_data_parallel

            rank_samples = train_data_parallel(task, config, device, seed, tt)
        else:
            _train(task, config, device, seed, tt)
    except KeyboardInterrupt as err:
        # Re-raised so that the study stops; the result rides along so the trial can still be recorded.
        err.trial_result = tt.finish(Outcome.INTERRUPTED, str(err) or "interrupted by the user")  # type: ignore[attr-defined]
        raise
    except Exception as err:
        if is_out_of_memory(err):
            free_memory(device)
            tt.finish(Outcome.OOM, f"out of memory: {_first_line(err)}")
        else:
            tt.finish(Outcome.FAILED, f"{type(err).__name__}: {_first_line(err)}")
    result = tt.result()
    result.peak_memory_mb = peak_memory_mb(device)
    result.rank_samples = rank_samples
    return result


def _train(task: Task, config: TrialConfig, device: torch.device, seed: int, tt: TimeToTarget) -> None:
    torch.manual_seed(seed)
    x, y = task.train_x.to(device), task.train_y.to(device)
    x_test, y_test = task.test_x.to(device), task.test_y.to(device)
    model = task.build_model(config.width).to(device)
    optimizer = build_optimizer(model.parameters(), config, device)
    scaler = torch.amp.GradScaler(device.type, enabled=config.precision == "fp16")
    factor = lr_factor(config)
    generator = torch.Generator(device).manual_seed(seed)
    n = len(x)
    batch = min(config.batch_size, n)
    loss_sum = torch.zeros((), device=device)
    steps_in_interval = 0
    _, initial_loss = evaluate(model, task, x_test, y_test, device, config.precision)  # setup: untimed
    tt.set_reference_loss(initial_loss)
    model.train()
    tt.training_started()
    while True:
        order = torch.randperm(n, device=device, generator=generator)
        for start in range(0, n - batch + 1, batch):
            idx = order[start : start + batch]
            lr = config.lr * factor(tt.samples)
            for group in optimizer.param_groups:
                group["lr"] = lr
            with autocast(device, config.precision):
                loss = task.loss(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            loss_sum += loss.detach().float()
            steps_in_interval += 1
            if tt.step(batch):
                train_loss = (loss_sum / steps_in_interval).item()  # deliberate sync: evaluation boundary
                loss_sum.zero_()
                steps_in_interval = 0
                metric, test_loss = evaluate(model, task, x_test, y_test, device, config.precision)
                model.train()
                if tt.evaluate(metric, loss=test_loss, train_loss=train_loss):
                    return


@torch.no_grad()
def evaluate(model: torch.nn.Module, task: Task, x: torch.Tensor, y: torch.Tensor, device: torch.device, precision: str) -> tuple[float, float]:
    """Metric and loss on the held-out split, in the trial's precision."""
    model.eval()
    with autocast(device, precision):
        logits = torch.cat([model(x[i : i + EVAL_CHUNK]) for i in range(0, len(x), EVAL_CHUNK)]).float()
    return float(task.metric(logits, y)), float(task.loss(logits, y))


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
