"""The searched dimensions as calls on an own loop's session (tuner/train/session_levers.py):
the optimizer and its parameter groups, Muon's split, Schedule-Free's averaged weights, the
schedule by samples, precision and accumulation, compilation, the horizon, and the reads."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch
from torch import nn

from tuner.tasks.base import Task
from tuner.train.checkpoint import parameter_groups
from tuner.train.optimizers import MuonWithAdamW, build_optimizer, hidden_weights
from tuner.train.result import Outcome
from tuner.train.session import Session, SessionError
from tuner.train.time_to_target import StopRule, TimeToTarget
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

CPU = torch.device("cpu")


def session(**values: object) -> Session:
    tt = TimeToTarget(target=0.99, eval_every_samples=128, cap_s=30.0)
    tt.start()
    return Session(tt, TrialConfig(**values), CPU, 0)


class Tiny(nn.Module):
    """Embedding, two hidden Linear layers with a norm between them, and a head."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.hidden1 = nn.Linear(8, 16)
        self.norm = nn.LayerNorm(16)
        self.hidden2 = nn.Linear(16, 16)
        self.head = nn.Linear(16, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens).mean(1)
        return self.head(torch.relu(self.hidden2(self.norm(torch.relu(self.hidden1(h))))))


def data(n: int = 256, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 10, (n, 4), generator=g)
    return tokens, (tokens[:, 0] >= 5).long()


def ids(params) -> set[int]:
    return {id(p) for p in params}


def test_the_optimizer_decays_only_weights_of_two_or_more_dimensions() -> None:
    model = Tiny()
    opt = session(optimizer="adamw", lr=3e-3, beta1=0.8, beta2=0.95, amsgrad=True, weight_decay=0.1).optimizer(model)
    assert isinstance(opt, torch.optim.AdamW) and opt.defaults["fused"] and opt.defaults["amsgrad"]
    decayed, plain = opt.param_groups
    assert ids(decayed["params"]) == ids([model.embed.weight, model.hidden1.weight, model.hidden2.weight, model.head.weight])
    assert decayed["weight_decay"] == 0.1 and plain["weight_decay"] == 0.0  # norms and biases undecayed
    assert ids(plain["params"]) == ids([model.hidden1.bias, model.norm.weight, model.norm.bias, model.hidden2.bias, model.head.bias])
    assert (decayed["lr"], decayed["betas"]) == (3e-3, (0.8, 0.95))
    assert isinstance(session(optimizer="nadam").optimizer(model.parameters()), torch.optim.NAdam)  # plain parameters work too


def test_muon_steps_only_the_hidden_2d_weights_and_adamw_the_rest() -> None:
    model = Tiny()
    opt = session(optimizer="muon", lr=1e-2, muon_momentum=0.9).optimizer(model)
    assert isinstance(opt, MuonWithAdamW)
    muon, adamw = opt.optimizers
    assert isinstance(muon, torch.optim.Muon) and isinstance(adamw, torch.optim.AdamW)
    hidden = ids([model.hidden1.weight, model.hidden2.weight])
    assert ids(p for g in muon.param_groups for p in g["params"]) == hidden  # not the embedding, head, biases or norm
    assert ids(p for g in adamw.param_groups for p in g["params"]) == ids(model.parameters()) - hidden
    assert muon.defaults["momentum"] == 0.9
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    x, y = data()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    assert ids(muon.state) == hidden  # Muon's momentum exists for the hidden weights alone
    assert all(not torch.equal(before[name], p) for name, p in model.named_parameters())  # AdamW stepped the rest
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_muon_in_the_built_in_loop_keeps_its_groups_and_leaves_a_tied_head_to_adamw() -> None:
    model = Tiny()
    model.head = nn.Linear(8, 10, bias=False)
    model.hidden2 = nn.Linear(16, 8)
    model.norm = nn.LayerNorm(16)
    model.head.weight = model.embed.weight  # a head tied to the embedding
    extra = nn.Linear(8, 8)
    model.extra = extra  # the last Linear: the head by position, with AdamW
    opt = build_optimizer(parameter_groups(model, 2.0), TrialConfig(optimizer="muon"), CPU, model=model)
    muon_ids = ids(p for g in opt.optimizers[0].param_groups for p in g["params"])
    assert muon_ids == ids([model.hidden1.weight, model.hidden2.weight])
    assert all("lr_mult" in g for g in opt.param_groups)  # the loop's per-group rate reaches both optimizers


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="the huggingface extra is not installed")
def test_muon_finds_the_hidden_weights_of_a_hugging_face_gpt2() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=16, n_embd=32, n_layer=2, n_head=2))
    hidden = hidden_weights(model)  # its Conv1D layers (attention and MLP), not the tied head nor the embeddings
    assert hidden == {id(p) for n, p in model.named_parameters() if n.endswith((".c_attn.weight", ".c_proj.weight", ".c_fc.weight"))}
    assert len(hidden) == 8


def test_schedule_free_evaluates_with_its_averaged_weights_and_trains_with_the_others() -> None:
    torch.manual_seed(0)
    s = session(optimizer="adamw_schedulefree", lr=5e-2, batch_size=32)
    model = Tiny()
    opt = s.optimizer(model)
    step = s.train_step(model, nn.functional.cross_entropy, opt)
    x, y = data()
    x_test, y_test = data(seed=1)
    s.start_training()
    samples = 0
    while not s.due(samples + 32):
        step(x[samples % 256 : samples % 256 + 32], y[samples % 256 : samples % 256 + 32])
        samples += 32
    samples += 32
    with torch.no_grad():
        averaged = nn.functional.cross_entropy(model(x_test), y_test).item()  # due() switched to the averaged weights
        opt.train()
        raw = nn.functional.cross_entropy(model(x_test), y_test).item()
        opt.eval()
    assert not math.isclose(averaged, raw, rel_tol=1e-4)  # the two sets of weights give another held-out loss
    weights = model.head.weight.detach().clone()
    assert not s.report(0.5, samples).stop
    assert not torch.equal(weights, model.head.weight)  # the report went on: back to the training weights
    s.pause()
    assert torch.equal(weights, model.head.weight)  # an evaluation again: the averaged ones


def test_schedule_free_reaches_the_target_in_the_built_in_loop() -> None:
    from tuner.tasks.registry import build_task

    config = TrialConfig(optimizer="adamw_schedulefree", lr=1e-2, batch_size=64)
    result = train_trial(build_task("synthetic"), config, StopRule(target=0.9, eval_every_samples=500, cap_s=20.0), CPU)
    assert result.outcome is Outcome.REACHED, result.reason


@pytest.mark.parametrize("scaling, factor", [("none", 1.0), ("sqrt", 0.5)])
def test_the_schedule_sets_each_groups_rate_by_samples(scaling: str, factor: float) -> None:
    s = session(
        lr=0.1, lr_scaling=scaling, batch_size=64, schedule="warmup_stable_decay", warmup_frac=0.1, decay_frac=0.2, horizon_samples=1000
    )
    opt = s.optimizer(Tiny())
    schedule = s.schedule(opt)
    assert s.schedule(opt) is schedule  # one per optimizer
    rates = {samples: schedule.step(samples) for samples in (50, 500, 900, 1000)}
    base = 0.1 * factor  # sqrt(64 / 256) = 0.5
    assert rates == pytest.approx({50: base * 0.5, 500: base, 900: base * (1 - math.sqrt(0.5)), 1000: 0.0})
    assert {g["lr"] for g in opt.param_groups} == {0.0}


def test_accumulation_gives_the_step_of_the_whole_batch() -> None:
    x, y = data(64)
    weights = []
    for accumulate in (1, 4):
        torch.manual_seed(0)
        model = Tiny()
        s = session(optimizer="adam", lr=1e-2, accumulate=accumulate)
        step = s.train_step(model, nn.functional.cross_entropy, s.optimizer(model))
        loss = step(x, y)
        weights.append((loss.item(), model.hidden1.weight.detach().clone()))
        assert step.samples == 64 and all(p.grad is None for p in model.parameters())
    assert weights[0][0] == pytest.approx(weights[1][0], rel=1e-5)
    assert torch.allclose(weights[0][1], weights[1][1], atol=1e-6)


def test_session_step_accumulates_passes_into_one_optimizer_step() -> None:
    x, y = data(64)
    torch.manual_seed(0)
    whole = Tiny()
    s = session(optimizer="adam", lr=1e-2)
    s.train_step(whole, nn.functional.cross_entropy, s.optimizer(whole))(x, y)
    torch.manual_seed(0)
    parts = Tiny()
    s = session(optimizer="adam", lr=1e-2, accumulate=2)
    opt = s.optimizer(parts)
    stepped = [s.step(nn.functional.cross_entropy(parts(xs), ys), opt) for xs, ys in zip(x.chunk(2), y.chunk(2))]
    assert stepped == [False, True] and all(p.grad is None for p in parts.parameters())
    assert torch.allclose(whole.hidden1.weight, parts.hidden1.weight, atol=1e-6)  # the step of the whole batch


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_the_step_and_autocast_run_in_the_trial_precision(precision: str) -> None:
    s = session(optimizer="adamw", lr=1e-2, precision=precision)
    model = Tiny()
    opt = s.optimizer(model)
    x, y = data(32)
    with s.autocast():
        out = model(x)
    assert out.dtype == {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    before = model.head.weight.detach().clone()
    s.step(nn.functional.cross_entropy(out.float(), y), opt)
    assert not torch.equal(before, model.head.weight) and all(p.grad is None for p in model.parameters())
    assert (s._scaler.is_enabled(), s._scaler.get_scale() if precision == "fp16" else None) == (
        precision == "fp16",
        65536.0 if precision == "fp16" else None,
    )


def test_compile_none_is_the_model_itself_and_compiling_after_training_began_fails() -> None:
    model = Tiny()
    assert session().compile(model, data(8)[0]) is model
    s = session(compile="default")
    s.start_training()
    s.due(64)
    with pytest.raises(SessionError, match=r"session.compile\(\) came after training samples were counted"):
        s.compile(model, data(8)[0])


@pytest.mark.slow
def test_compile_warms_up_off_the_clock_and_leaves_the_weights_as_they_were() -> None:
    s = session(compile="default")
    model = Tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    net = s.compile(model, data(32)[0])
    assert net is not model and s._tt.compile_s > 0
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items()) and all(p.grad is None for p in model.parameters())


def own_loop(config, device, seed, session) -> None:
    """A loop that applies the searched dimensions through the session's calls only."""
    torch.manual_seed(seed)
    x, y = data(512)
    model = Tiny()
    step = session.train_step(model, nn.functional.cross_entropy, session.optimizer(model))
    session.start_training()
    samples = 0
    while True:
        for i in range(0, 384, config.batch_size):
            step(x[i : i + config.batch_size], y[i : i + config.batch_size])
            samples += config.batch_size
            if session.due(samples):
                with torch.no_grad(), session.autocast():
                    accuracy = (model(x[384:]).argmax(1) == y[384:]).float().mean().item()
                if session.report(accuracy, samples).stop:
                    return


def test_the_session_records_what_its_calls_read_and_stops_at_the_horizon() -> None:
    task = Task(name="levers", train_fn=own_loop)
    config = TrialConfig(optimizer="adam", lr=1e-9, batch_size=64, schedule="warmup_linear", horizon_samples=1024, precision="bf16")
    result = train_trial(task, config, StopRule(target=0.99, eval_every_samples=128, cap_s=30.0), CPU)
    assert result.outcome is Outcome.TIMEOUT  # a rate of 1e-9 never learns: the schedule ends at its horizon
    assert result.reason.startswith("learning rate reached zero at the horizon of 1024 samples")
    assert result.evaluations[-1].samples == 1024
    read = task.config_reads
    assert {"optimizer", "lr", "beta1", "beta2", "amsgrad", "weight_decay", "schedule", "warmup_frac", "horizon_samples"} <= read
    assert {"precision", "accumulate", "lr_scaling", "batch_size"} <= read
    assert not read & {"compile", "width", "muon_momentum", "sf_weight_lr_power", "decay_frac", "channels_last"}
