"""One row of the compression table: the held-out metric, size on disk, parameters, latency, time added."""

from __future__ import annotations

import io
import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from tuner.tasks.base import Task
from tuner.train.target import Target, as_target


@dataclass
class Row:
    """A model measured on this machine (sizes in bytes, latencies in milliseconds)."""

    method: str
    accuracy: float
    size_bytes: int
    parameters: int  # non-zero parameters (a pruned model's zeros are not counted)
    latency_ms_b1: float
    latency_ms_b256: float
    train_s_added: float  # training time the method cost (fine-tune, distillation), on the train clock
    below_target: bool
    note: str = ""
    metric: str = "accuracy"  # the name of the held-out metric ``accuracy`` holds: the target's

    def as_dict(self) -> dict[str, Any]:
        """The row for the results file and MLflow, its held-out value under the metric's own name."""
        out = asdict(self)
        value, name = out.pop("accuracy"), out.pop("metric")
        return {"method": out.pop("method"), name: value, **out}


@torch.no_grad()
def held_out_metric(model: nn.Module, task: Task, device: torch.device, batch: int = 1024, metric: str = "accuracy") -> float:
    """The task's held-out metric ``metric`` (accuracy, loss, or one it declares) on its held-out split (tensor tasks), in eval mode."""
    model.eval()
    logits = [model(task.test_x[i : i + batch].to(device)) for i in range(0, len(task.test_x), batch)]
    return float(task.metric_fn(metric)(torch.cat(logits).float().cpu(), task.test_y))


def state_bytes(state: dict[str, Any]) -> int:
    """Bytes of ``torch.save(state)``: the size of the weights on disk."""
    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getbuffer().nbytes


def sparse_state(model: nn.Module) -> dict[str, Any]:
    """The state dict with each tensor holding zeros stored as a bit mask of the non-zeros
    (packed, 1 bit per weight) and the non-zero values, where that is smaller: pruning then
    shrinks the file (a dense float32 weight costs 4 bytes each, this 1/8 + 4 per kept one)."""
    out: dict[str, Any] = {}
    for key, t in model.state_dict().items():
        if t.is_floating_point() and t.dim() > 0:
            keep = t != 0
            kept = int(keep.sum())
            if t.numel() / 8 + kept * t.element_size() < t.numel() * t.element_size():
                bits = torch.from_numpy(np.packbits(keep.flatten().cpu().numpy()))
                out[key] = {"shape": list(t.shape), "mask": bits, "values": t[keep]}
                continue
        out[key] = t
    return out


def dense_state(sparse: dict[str, Any]) -> dict[str, torch.Tensor]:
    """The state dict ``sparse_state`` stored, dense again (what loading a pruned file does)."""
    out: dict[str, torch.Tensor] = {}
    for key, v in sparse.items():
        if isinstance(v, dict):
            n = int(np.prod(v["shape"]))
            keep = torch.from_numpy(np.unpackbits(v["mask"].numpy())[:n].astype(bool))
            dense = torch.zeros(n, dtype=v["values"].dtype)
            dense[keep] = v["values"]
            out[key] = dense.view(v["shape"])
        else:
            out[key] = v
    return out


def nonzero_parameters(model: nn.Module) -> int:
    """Parameters that are not zero (every parameter of an unpruned model, in practice)."""
    total = 0
    for key, t in model.state_dict().items():
        if not isinstance(t, torch.Tensor) or key.endswith(("scale", "zero_point")):
            continue  # a quantized layer's packing and its quantization constants: counted below
        if t.is_quantized:
            total += int((t.int_repr() != 0).sum())
        elif t.is_floating_point():
            total += int((t != 0).sum())
    for m in model.modules():  # a dynamically quantized Linear keeps its packed weight outside state_dict tensors
        if hasattr(m, "weight") and callable(m.weight) and hasattr(m, "in_features"):
            w = m.weight()
            total += int((w.int_repr() != 0).sum()) if w.is_quantized else int((w != 0).sum())
            bias = m.bias() if callable(getattr(m, "bias", None)) else None
            total += int((bias != 0).sum()) if bias is not None else 0
    return total


@torch.no_grad()
def latency_ms(model: nn.Module, example: torch.Tensor, batch: int, repeats: int = 30, warmup: int = 5) -> float:
    """Median milliseconds of one forward pass at ``batch`` (inputs repeated from ``example``), after warm-up."""
    model.eval()
    x = example[:1].repeat(batch, *([1] * (example.dim() - 1)))
    for _ in range(warmup):
        model(x)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model(x)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def measure(
    method: str,
    model: nn.Module,
    task: Task,
    target: float | Target,
    train_s_added: float = 0.0,
    sparse: bool = False,
    note: str = "",
    repeats: int = 30,
) -> Row:
    """Measure ``model`` on the CPU (where a compressed model is served; int8 kernels are CPU-only).

    ``accuracy`` holds the target's metric, named in ``metric`` (the results file and MLflow use that
    name); a row is ``below_target`` when that metric falls short of the target in its direction."""
    device = torch.device("cpu")
    model = model.to(device).eval()
    goal = as_target(target)
    accuracy = held_out_metric(model, task, device, metric=goal.metric)
    size = state_bytes(sparse_state(model) if sparse else model.state_dict())
    example = task.test_x[:1]
    return Row(
        method=method,
        accuracy=accuracy,
        size_bytes=size,
        parameters=nonzero_parameters(model),
        latency_ms_b1=latency_ms(model, example, 1, repeats),
        latency_ms_b256=latency_ms(model, example, 256, repeats),
        train_s_added=train_s_added,
        below_target=not goal.reached(accuracy),
        note=note,
        metric=goal.metric,
    )
