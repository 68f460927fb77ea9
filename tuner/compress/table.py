"""Every compression of one trained model, measured as rows, and the table they make."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from tuner.compress.distill import distill
from tuner.compress.measure import Row, measure
from tuner.compress.prune import prune_and_finetune
from tuner.compress.quantize import quantize_linear_int8
from tuner.tasks.base import Task
from tuner.train.target import Target, as_target
from tuner.train.trial_config import TrialConfig

SPARSITIES = (0.5, 0.8, 0.9)
WIDTH_SHARES = (0.5, 0.25)


@dataclass(frozen=True)
class Plan:
    """What to measure and how long fine-tunes and students may train."""

    target: float | Target  # the experiment's (a bare number: an accuracy)
    eval_every: int
    cap_s: float
    sparsities: tuple[float, ...] = SPARSITIES
    width_shares: tuple[float, ...] = WIDTH_SHARES
    finetune_samples: int | None = None  # default: one pass over the training split
    repeats: int = 30  # latency repeats after warm-up (the median is reported)
    seed: int = 0


def compress_all(model: nn.Module, task: Task, config: TrialConfig, device: torch.device, plan: Plan, train_s: float = 0.0) -> list[Row]:
    """The original and each compression of ``model`` (trained with ``config`` in ``train_s``), as rows."""
    model = model.cpu().eval()
    rows = [measure("original", model, task, plan.target, train_s, note=f"width {config.width:g}", repeats=plan.repeats)]
    rows.append(
        measure(
            "int8 dynamic (Linear)",
            quantize_linear_int8(model),
            task,
            plan.target,
            0.0,
            note="weights int8, activations quantized per batch",
            repeats=plan.repeats,
        )
    )
    samples = plan.finetune_samples if plan.finetune_samples is not None else task.n_train
    for sparsity in plan.sparsities:
        pruned, s = prune_and_finetune(model, sparsity, task, config, device, plan.target, samples, plan.eval_every, plan.cap_s)
        rows.append(
            measure(
                f"pruned {sparsity:.0%}",
                pruned,
                task,
                plan.target,
                s,
                sparse=True,
                note=f"global magnitude, fine-tune <= {samples} samples; stored as bit mask + non-zeros",
                repeats=plan.repeats,
            )
        )
    for share in plan.width_shares:
        student, result = distill(model, share, task, config, device, plan.target, plan.eval_every, plan.cap_s, plan.seed)
        reached = f"target at {result.train_s_to_target:.3f} s" if result.reached else f"not reached in {result.train_s:.3f} s"
        rows.append(
            measure(
                f"distilled w={config.width * share:g}",
                student,
                task,
                plan.target,
                result.train_s,
                note=f"teacher KL+CE, {reached}",
                repeats=plan.repeats,
            )
        )
    return rows


def markdown(rows: list[Row], target: float | Target) -> str:
    """The table as Markdown; a row short of the target (in its direction) is marked with a star."""
    goal = as_target(target)
    lines = [
        f"| method | held-out {goal.metric} | size (KiB) | parameters | latency b1 (ms) | latency b256 (ms) | train s added | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mark = " *" if r.below_target else ""
        lines.append(
            f"| {r.method} | {r.accuracy:.4f}{mark} | {r.size_bytes / 1024:.1f} | {r.parameters} | "
            f"{r.latency_ms_b1:.3f} | {r.latency_ms_b256:.3f} | {r.train_s_added:.3f} | {r.note} |"
        )
    lines.append(f"\n\\* short of the target, {goal.describe()}")
    return "\n".join(lines)


def write_results(rows: list[Row], target: float | Target, path: Path, meta: dict) -> list[Path]:
    """``path`` as JSON (rows and ``meta``) and the same stem as Markdown; returns both paths."""
    path.parent.mkdir(parents=True, exist_ok=True)
    json_path = path.with_suffix(".json")
    md_path = path.with_suffix(".md")
    goal = as_target(target)
    aim = {"target": goal.value, "metric": goal.metric, "direction": goal.direction}
    json_path.write_text(json.dumps({**meta, **aim, "rows": [r.as_dict() for r in rows]}, indent=2) + "\n")
    md_path.write_text(markdown(rows, target) + "\n")
    return [json_path, md_path]
