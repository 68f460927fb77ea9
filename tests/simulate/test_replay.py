"""The replay trainer: a recorded trial played back stops where a real trial on the same curve would."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from conftest import synthetic_experiment

from tuner.simulate.record import record_trial
from tuner.simulate.replay import ReplayTrainer
from tuner.simulate.table import Table, load_table, trial_row, write_table
from tuner.simulate.virtual_time import VirtualTime
from tuner.study.run.experiment_file import load_experiment
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.screen import ScreenRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig
from tuner.train.verdict import GO, Stop

SETUP_S, EVAL_S = 0.2, 0.01
FIXED = {"optimizer": "adam", "batch_size": 100, "width": 1.0}


def made_up(step_s: float, metrics: list[float], reached: bool) -> TrialResult:
    """A recorded trial of batch 100 evaluated every 500 samples (5 steps), every step ``step_s``."""
    evs = []
    for k, metric in enumerate(metrics, 1):
        train_s = 5 * k * step_s
        evs.append(Evaluation(500 * k, 5 * k, metric, 1.0 - metric, 1.0, train_s, SETUP_S + train_s + k * EVAL_S, train_s, train_s))
    last = evs[-1]
    return TrialResult(
        Outcome.REACHED if reached else Outcome.TIMEOUT,
        "recorded",
        0.9,
        setup_s=SETUP_S,
        train_s=last.train_s,
        wall_s=last.wall_s,
        samples=last.samples,
        steps=last.steps,
        median_step_s=step_s,
        median_step_cpu_s=step_s,
        cpu_train_s=last.train_s,
        screen_step_s=step_s,
        evaluations=evs,
    )


@pytest.fixture
def handmade(tmp_path: Path) -> tuple[Table, object]:
    """Two configurations: lr 0.03 reaches 0.9 at its 5th evaluation (10 ms a step); lr 0.01 at its 8th (20 ms a step)."""
    experiment = load_experiment(
        synthetic_experiment(tmp_path / "syn.yaml", "objective: {target: 0.9, eval_every_samples: 500, cap_s: 2.0, clock: robust}")
    )
    fast = made_up(0.01, [0.5, 0.6, 0.7, 0.8, 0.92], reached=True)
    slow = made_up(0.02, [0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.91], reached=True)
    rows = [trial_row({"lr": 0.03}, seed, fast) for seed in (0, 1)] + [trial_row({"lr": 0.01}, seed, slow) for seed in (0, 1)]
    path = tmp_path / "handmade.json.gz"
    write_table(path, experiment, {"lr": [0.01, 0.03]}, FIXED, rows, {})
    return load_table(path), experiment


def replay(table: Table, lr: float, **kwargs) -> TrialResult:
    """One trial replayed alone on a virtual clock (a worker of its own)."""
    time = VirtualTime()
    trainer = ReplayTrainer(table, time)
    config = TrialConfig.from_params({**FIXED, "lr": lr})
    out: list[TrialResult] = []
    time.run([lambda: out.append(trainer(None, config, kwargs.pop("rule"), None, seed=0, **kwargs))])
    return out[0]


def test_replayed_alone_it_is_the_recording(handmade) -> None:
    table, experiment = handmade
    result = replay(table, 0.03, rule=experiment.objective.stop_rule())
    recorded = table.lookup(table.config({"lr": 0.03}), 0).result
    assert result.outcome is Outcome.REACHED
    assert (result.samples, result.steps) == (2500, 25)
    assert result.robust_s_to_target == pytest.approx(0.25)
    assert result.wall_s == pytest.approx(recorded.wall_s)
    assert [e.metric for e in result.evaluations] == [e.metric for e in recorded.evaluations]
    assert [e.samples for e in result.evaluations] == [e.samples for e in recorded.evaluations]


def test_capped_where_the_clock_passes_the_bound(handmade) -> None:
    """An incumbent's bound of 0.33 s: 20 ms steps pass it at step 17, between the recorded evaluations at 15 and 20."""
    table, experiment = handmade

    def cap(tt, ev) -> Stop | None:
        return Stop(Outcome.CAPPED, "capped", bound_s=0.33) if tt.clock_s(ev) >= 0.33 else GO

    result = replay(table, 0.01, rule=experiment.objective.stop_rule(), listeners=[cap], stop_at=lambda: 0.33)
    assert result.outcome is Outcome.CAPPED
    assert (result.steps, result.samples) == (17, 1700)
    assert result.evaluations[-1].robust_s == pytest.approx(0.34)
    assert result.final_metric == 0.6  # a forced look reads the last recorded evaluation (step 15)


def test_pruned_at_the_evaluation_the_pruner_names(handmade) -> None:
    table, experiment = handmade
    result = replay(
        table,
        0.01,
        rule=experiment.objective.stop_rule(),
        listeners=[lambda tt, ev: Stop(Outcome.PRUNED, "behind") if ev.metric < 0.55 and ev.samples >= 1000 else GO],
    )
    assert result.outcome is Outcome.PRUNED
    assert (result.steps, result.samples, len(result.evaluations)) == (10, 1000, 2)


@pytest.mark.parametrize(("bound_s", "screened"), [(0.45, True), (0.55, False)])
def test_screened_exactly_when_its_timed_steps_project_past_the_bound(handmade, bound_s: float, screened: bool) -> None:
    """25 steps of 100 samples at the recorded 20 ms: a projection of 0.5 s."""
    table, experiment = handmade
    rule = ScreenRule(bound_s=bound_s, min_samples=2500)
    result = replay(table, 0.01, rule=experiment.objective.stop_rule(), screen=rule)
    assert (result.outcome is Outcome.SCREENED) == screened
    assert result.screen_projected_s == pytest.approx(0.5)
    if screened:
        assert result.steps == rule.warmup_steps + rule.steps


def test_a_real_trial_and_its_replay_stop_at_the_same_step(tmp_path: Path, synthetic) -> None:
    """The synthetic task recorded into a table, then trained again and replayed under the same pruner."""
    experiment = load_experiment(synthetic_experiment(tmp_path / "syn.yaml"))
    config = TrialConfig.from_params({"optimizer": "adam", "lr": 0.01, "batch_size": 64, "width": 0.5, "precision": "fp32"})
    recorded = record_trial(experiment, synthetic, config, seed=3)
    assert len(recorded.evaluations) >= 3
    threshold = recorded.evaluations[2].metric  # prune at the first evaluation past the second with a metric at or under it

    def prune(tt, ev) -> Stop | None:
        return Stop(Outcome.PRUNED, "pruned") if len(tt.evaluations) >= 3 and ev.metric <= threshold else GO

    real = train_trial(synthetic, config, experiment.objective.stop_rule(), torch.device("cpu"), seed=3, listeners=[prune])
    path = tmp_path / "one.json.gz"
    write_table(
        path,
        experiment,
        {"lr": [0.01]},
        {k: v for k, v in config.as_params().items() if k != "lr"},
        [trial_row({"lr": 0.01}, 3, recorded)],
        {},
    )
    time = VirtualTime()
    replayed: list[TrialResult] = []
    trainer = ReplayTrainer(load_table(path), time)
    time.run([lambda: replayed.append(trainer(None, config, experiment.objective.stop_rule(), None, seed=3, listeners=[prune]))])
    assert replayed[0].outcome is real.outcome
    assert (replayed[0].steps, replayed[0].samples) == (real.steps, real.samples)
    assert [e.metric for e in replayed[0].evaluations] == pytest.approx([e.metric for e in real.evaluations])
    assert not math.isnan(replayed[0].final_metric)
