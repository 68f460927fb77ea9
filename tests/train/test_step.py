"""One training step (tuner/train/step.py), shared by the trial loop, the batch probe and the
compression fine-tune: it trains, leaves no gradients behind and never reads the loss back."""

from __future__ import annotations

import pytest
import torch
from conftest import CPU
from torch import nn

from tuner.train.step import TrainStep, labels_only


def model_and_batch(seed: int = 0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, torch.randn(32, 8), torch.randint(0, 3, (32,))


def test_a_step_moves_the_weights_and_drops_the_gradients() -> None:
    model, x, y = model_and_batch()
    before = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        expected = nn.functional.cross_entropy(model(x), y).item()
    step = TrainStep(model, labels_only(nn.functional.cross_entropy), torch.optim.SGD(model.parameters(), lr=0.1), CPU)
    loss = step(x, y)
    assert loss.requires_grad is False and loss.dtype == torch.float32 and loss.dim() == 0  # detached, still a tensor
    assert loss.item() == pytest.approx(expected, rel=1e-5)  # the loss before the step
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())  # zero_grad(set_to_none=True) after the step


def test_accumulated_passes_take_the_same_step_as_one_pass() -> None:
    weights = []
    for passes in (1, 4):
        model, x, y = model_and_batch()
        step = TrainStep(
            model, labels_only(nn.functional.cross_entropy), torch.optim.SGD(model.parameters(), lr=0.1), CPU, accumulate=passes
        )
        loss = step(x, y)
        weights.append(([p.detach().clone() for p in model.parameters()], loss))
    (one, loss_one), (four, loss_four) = weights
    assert loss_four.item() == pytest.approx(loss_one.item(), rel=1e-5)  # the step's mean over its passes
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(one, four))


def test_a_loss_that_needs_the_inputs_gets_them() -> None:
    model, x, y = model_and_batch()
    seen = []

    def distill(out: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        seen.append(inputs)
        return nn.functional.cross_entropy(out, labels) + 0.0 * inputs.sum()

    TrainStep(model, distill, torch.optim.SGD(model.parameters(), lr=0.1), CPU)(x, y)
    assert len(seen) == 1 and seen[0] is x


def test_bf16_autocast_trains_on_a_cpu() -> None:
    model, x, y = model_and_batch()
    step = TrainStep(model, labels_only(nn.functional.cross_entropy), torch.optim.SGD(model.parameters(), lr=0.1), CPU, precision="bf16")
    first = step(x, y).item()
    for _ in range(20):
        last = step(x, y).item()
    assert last < first
