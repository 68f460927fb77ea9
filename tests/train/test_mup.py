"""muP (tuner/train/mup.py) on the built-in models: nothing changes at width 1; at other widths the
hidden weights' rates scale by the fan-in's ratio and the output layer's input by the width's."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from tests.conftest import CPU, FAST
from tuner.tasks.charlm import CharTransformer
from tuner.tasks.mnist1d import ConvNet, GRUNet
from tuner.tasks.registry import build_task
from tuner.train.mup import base_model, parametrize, width_scaling
from tuner.train.optimizers import build_optimizer
from tuner.train.session import Session, SessionError
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig


def charlm(width: float) -> nn.Module:
    return CharTransformer(vocab=96, block=16, dim=round(64 * width) // 4 * 4, depth=2, heads=4)


def mlp(width: float) -> nn.Module:
    hidden = round(32 * width)
    return nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 4))


BUILDERS = {"charlm": charlm, "cnn": ConvNet, "gru": GRUNet, "mlp": mlp}
INPUTS = {
    "charlm": lambda: torch.randint(0, 96, (3, 16)),
    "cnn": lambda: torch.randn(3, 40),
    "gru": lambda: torch.randn(3, 40),
    "mlp": lambda: torch.randn(3, 16),
}


@pytest.mark.parametrize("name", BUILDERS)
def test_the_parametrization_leaves_a_width_1_model_unchanged(name: str) -> None:
    torch.manual_seed(0)
    model = BUILDERS[name](1.0)
    x = INPUTS[name]()
    before = model(x)
    scaling = parametrize(model, BUILDERS[name], 1.0)
    assert torch.equal(model(x), before)
    groups = scaling.groups([{"params": list(model.parameters())}])
    assert [g["lr_mult"] for g in groups] == [1.0]
    # Read off the shapes as well, against a base of the same width: still nothing to scale.
    same = width_scaling(model, base_model(BUILDERS[name]))
    assert same.lr_mult == {} and all(mult == 1.0 for _, mult in same.readouts)


@pytest.mark.parametrize("name", BUILDERS)
def test_a_model_at_its_base_width_is_unchanged_and_wider_ones_scale_from_it(name: str) -> None:
    torch.manual_seed(0)
    narrow = BUILDERS[name](0.5)
    x = INPUTS[name]()
    before = narrow(x)
    assert parametrize(narrow, BUILDERS[name], 0.5, base=0.5).lr_mult == {}
    assert torch.equal(narrow(x), before)
    # Width 2 against a base of 0.5 scales as width 4 against a base of 1 would: by the fan-in's ratio.
    wide = BUILDERS[name](2.0)
    scaling = width_scaling(wide, base_model(BUILDERS[name], 0.5))
    assert scaling.lr_mult and scaling.readouts  # hidden weights and an output layer, scaled
    base_shapes = {n: p.shape for n, p in BUILDERS[name](0.5).named_parameters()}
    for n, p in wide.named_parameters():
        if id(p) in scaling.lr_mult:
            assert scaling.lr_mult[id(p)] == pytest.approx(base_shapes[n][1:].numel() / p.shape[1:].numel()), n


def test_at_width_2_hidden_rates_halve_and_the_readout_input_halves() -> None:
    torch.manual_seed(0)
    model = mlp(2.0)
    x = torch.randn(5, 16)
    plain = model(x)
    scaling = parametrize(model, mlp, 2.0)
    first, hidden, readout = model[0], model[2], model[4]
    assert scaling.lr_mult == {id(hidden.weight): 0.5}  # input weights, biases and the readout keep the rate
    assert [(m, mult) for m, mult in scaling.readouts] == [(readout, 0.5)]
    h = model[3](hidden(model[1](first(x))))
    assert torch.allclose(model(x), nn.functional.linear(h * 0.5, readout.weight, readout.bias))
    assert not torch.allclose(model(x), plain)


def test_a_tied_head_is_an_output_layer_and_the_embedding_keeps_its_rate() -> None:
    model = charlm(2.0)
    scaling = parametrize(model, charlm, 2.0)
    assert [m for m, _ in scaling.readouts] == [model.head]
    assert id(model.tokens.weight) not in scaling.lr_mult and id(model.positions.weight) not in scaling.lr_mult
    qkv = model.blocks[0].attn.qkv.weight
    assert scaling.lr_mult[id(qkv)] == pytest.approx(64 / 128)
    assert all(id(p) not in scaling.lr_mult for p in model.parameters() if p.ndim == 1)  # norms and biases


def test_the_optimizer_groups_carry_the_multipliers_for_every_optimizer() -> None:
    model = mlp(4.0)
    scaling = parametrize(model, mlp, 4.0)
    for optimizer in ("adam", "adamw", "muon", "adamw_schedulefree"):
        config = TrialConfig(optimizer=optimizer, lr=0.01, width=4.0, parametrization="mup")
        built = build_optimizer(scaling.groups([{"params": list(model.parameters()), "lr_mult": 1.0}]), config, CPU, model=model)
        mults = {id(p): g["lr_mult"] for g in built.param_groups for p in g["params"]}
        assert mults[id(model[2].weight)] == pytest.approx(0.25), optimizer
        assert mults[id(model[0].weight)] == 1.0 and mults[id(model[4].weight)] == 1.0, optimizer


def test_a_mup_trial_of_a_built_in_task_trains_to_its_target() -> None:
    task = build_task("synthetic", {})
    config = TrialConfig(optimizer="adam", lr=0.01, batch_size=64, width=2.0, parametrization="mup")
    result = train_trial(task, config, FAST.stop_rule(), CPU)
    assert result.reached, result.reason


def session(config: TrialConfig) -> Session:
    tt = TimeToTarget(target=0.99, eval_every_samples=128, cap_s=30.0)
    tt.start()
    return Session(tt, config, CPU, 0)


def test_an_own_loop_gets_it_from_session_optimizer_with_its_builder() -> None:
    config = TrialConfig(optimizer="adamw", lr=0.02, width=2.0, parametrization="mup")
    model = mlp(2.0)
    optimizer = session(config).optimizer(model, build=mlp)
    rates = {id(p): g["lr"] for g in optimizer.param_groups for p in g["params"]}
    assert rates[id(model[2].weight)] == pytest.approx(0.01) and rates[id(model[0].weight)] == pytest.approx(0.02)
    with pytest.raises(SessionError, match="session.optimizer\\(model, build="):
        session(config).optimizer(mlp(2.0))
    standard = session(dataclasses.replace(config, parametrization="standard")).optimizer(mlp(2.0))
    assert {g["lr"] for g in standard.param_groups} == {0.02}
    at_base = session(dataclasses.replace(config, mup_base=2.0)).optimizer(mlp(2.0), build=mlp)
    assert {g["lr"] for g in at_base.param_groups} == {0.02}
    with pytest.raises(SessionError, match="session.optimizer\\(model, build="):  # a proxy's search trains at the base
        session(dataclasses.replace(config, mup_base=2.0)).optimizer(mlp(2.0))
