"""The registries of tuner/train/: each optimizer, schedule, precision and compile mode is declared
once, the dimension that names it accepts exactly the declared names, and what an entry says it
takes is what building it reads from a trial's configuration."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tuner.docs_reference import compile_modes_markdown, optimizers_markdown, precisions_markdown, schedules_markdown
from tuner.train.compile_modes import COMPILE_MODE_KINDS
from tuner.train.config_reads import recording
from tuner.train.levers import CUDA_GRAPH_MODES, WARM_UP_PASSES, compile_model
from tuner.train.optimizer_registry import OPTIMIZER_KINDS
from tuner.train.optimizers import build_optimizer, decay_groups
from tuner.train.precision import PRECISION_KINDS, autocast, scales_loss
from tuner.train.schedule_registry import SCHEDULE_KINDS
from tuner.train.schedules import decays_to_zero, lr_factor
from tuner.train.trial_config import DIMENSIONS, TrialConfig

CPU = torch.device("cpu")
REGISTRIES = {"optimizer": OPTIMIZER_KINDS, "schedule": SCHEDULE_KINDS, "precision": PRECISION_KINDS, "compile": COMPILE_MODE_KINDS}


@pytest.mark.parametrize("dimension", sorted(REGISTRIES))
def test_a_dimension_accepts_exactly_its_registry_s_names(dimension: str) -> None:
    assert DIMENSIONS[dimension].allowed == tuple(REGISTRIES[dimension])
    assert all(DIMENSIONS[dimension].accepts(name) for name in REGISTRIES[dimension])
    assert not DIMENSIONS[dimension].accepts("lion")


def test_own_dimensions_are_configuration_fields_with_a_dimension() -> None:
    fields = {f.name for f in dataclasses.fields(TrialConfig)}
    for name, own in [*((n, k.own) for n, k in OPTIMIZER_KINDS.items()), *((n, k.reads) for n, k in SCHEDULE_KINDS.items())]:
        assert set(own) <= fields and set(own) <= DIMENSIONS.keys(), name


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


@pytest.mark.parametrize("name", list(OPTIMIZER_KINDS))
def test_an_optimizer_reads_what_its_entry_says_it_takes_and_trains(name: str) -> None:
    kind = OPTIMIZER_KINDS[name]
    reads: set[str] = set()
    config = recording(TrialConfig(optimizer=name, lr=0.01, weight_decay=0.01, beta1=0.8), reads)
    net = model()
    optimizer = build_optimizer(decay_groups(net), config, CPU, model=net)
    taken = {"optimizer", "lr", *kind.own}
    taken |= {"beta1", "beta2"} if kind.betas else set()
    taken |= {"amsgrad"} if kind.amsgrad else set()
    taken |= {"weight_decay"} if kind.decay is not None else set()
    assert reads == taken
    x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
    losses = []
    for _ in range(20):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    assert losses[-1] < losses[0], losses
    groups = optimizer.param_groups
    if kind.betas:
        assert any(g.get("betas") == (0.8, 0.999) for g in groups)
    decayed = [g["weight_decay"] for g in groups if any(p.ndim >= 2 for p in g["params"]) and "weight_decay" in g]
    assert decayed and all(wd == 0.01 for wd in decayed)


def test_amsgrad_reaches_the_optimizers_that_take_it() -> None:
    for name, kind in OPTIMIZER_KINDS.items():
        optimizer = build_optimizer(model().parameters(), TrialConfig(optimizer=name, amsgrad=True), CPU)
        assert any(g.get("amsgrad") for g in optimizer.param_groups) == kind.amsgrad, name


@pytest.mark.parametrize("name", list(SCHEDULE_KINDS))
def test_a_schedule_reads_only_what_it_declares_and_decays_as_declared(name: str) -> None:
    kind = SCHEDULE_KINDS[name]
    reads: set[str] = set()
    factor = lr_factor(recording(TrialConfig(schedule=name, horizon_samples=1000, warmup_frac=0.1), reads))
    assert reads == {"schedule", *kind.reads}
    assert decays_to_zero(TrialConfig(schedule=name)) == kind.decays
    assert (factor(1000) == 0.0) == kind.decays  # at the horizon: 0 where it decays, still training where it does not
    assert all(0.0 <= factor(s) <= 1.0 for s in range(0, 1200, 50))


def test_precisions_autocast_to_their_dtype_and_only_those_that_say_so_scale_the_loss() -> None:
    assert [n for n in PRECISION_KINDS if scales_loss(n)] == ["fp16"]
    x = torch.randn(2, 4)
    for name, precision in PRECISION_KINDS.items():
        with autocast(CPU, name):
            out = torch.nn.Linear(4, 4)(x)
        assert out.dtype == (precision.dtype or torch.float32), name


def test_compile_modes_give_the_levers_their_cuda_graph_modes_and_warm_up_passes() -> None:
    assert CUDA_GRAPH_MODES == tuple(n for n, m in COMPILE_MODE_KINDS.items() if m.cuda_graphs) and "reduce-overhead" in CUDA_GRAPH_MODES
    assert WARM_UP_PASSES["reduce-overhead"] == 3 and WARM_UP_PASSES["default"] == 1  # CUDA graphs: compiled, recorded, replayed
    net = torch.nn.Linear(2, 2)
    assert compile_model(net, TrialConfig(compile="none")) is net
    assert compile_model(net, TrialConfig(compile="default")) is not net  # compiled lazily: nothing runs here


def test_the_documentation_tables_list_every_registered_name() -> None:
    for markdown, names in (
        (optimizers_markdown(), OPTIMIZER_KINDS),
        (schedules_markdown(), SCHEDULE_KINDS),
        (precisions_markdown(), PRECISION_KINDS),
        (compile_modes_markdown(), COMPILE_MODE_KINDS),
    ):
        rows = [line.split("|")[1].strip() for line in markdown.splitlines()[2:]]
        assert rows == [f"`{n}`" for n in names]
