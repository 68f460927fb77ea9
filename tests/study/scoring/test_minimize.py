"""objective.minimize, the baseline and cost keys: values, censoring, and bad input at load."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import write

from tuner.errors import ConfigError
from tuner.study.experiment.cost import Cost
from tuner.study.experiment.load import Experiment, Objective
from tuner.study.run.experiment_file import load_experiment
from tuner.study.scoring.objectives import ALONE
from tuner.study.scoring.values import check_minimize, study_value
from tuner.train import energy
from tuner.train.result import Outcome, TrialResult
from tuner.train.trial_config import PRECISIONS, TrialConfig


def experiment(minimize: str, price: float | None = None) -> Experiment:
    return Experiment(
        source="x.yaml",
        name="x",
        objective=Objective(target=0.9, cap_s=10.0, clock="train", minimize=minimize),
        cost=Cost(per_device_hour=price),
    )


def reached(train_s: float, energy_j: float | None) -> TrialResult:
    return TrialResult(
        Outcome.REACHED,
        "",
        0.9,
        train_s=train_s,
        train_s_to_target=train_s,
        best_metric=0.91,
        energy_j=energy_j,
        energy_j_to_target=energy_j,
    )


def test_time_cost_and_energy_values() -> None:
    r = reached(36.0, 120.0)
    assert study_value(r, experiment("time"), TrialConfig()) == 10.0  # capped at cap_s
    short = reached(3.6, 12.0)
    assert study_value(short, experiment("time"), TrialConfig()) == pytest.approx(3.6)
    assert study_value(short, experiment("cost", price=2.5), TrialConfig(devices=2)) == pytest.approx(3.6 * 2 * 2.5 / 3600)
    assert study_value(short, experiment("cost"), TrialConfig()) == pytest.approx(0.001)  # device hours without a price
    assert study_value(short, experiment("energy"), TrialConfig()) == 12.0


def test_energy_miss_is_censored_at_its_rate_to_the_cap() -> None:
    miss = TrialResult(Outcome.TIMEOUT, "", 0.9, train_s=5.0, best_metric=0.8, energy_j=50.0)
    assert study_value(miss, experiment("energy"), TrialConfig()) == pytest.approx(10.0 * 10.0 * 1.1)  # 10 W x cap 10 s x (1 + 0.1)


def test_energy_is_refused_where_no_counter_is_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # This machine as one with no readable counter: RAPL read from an empty folder.
    monkeypatch.setattr(
        "tuner.study.scoring.objectives.energy_meter", lambda *a, **k: energy.energy_meter("cpu", rapl_root=tmp_path / "none")
    )
    with pytest.raises(ConfigError, match=r"objective\.minimize.*energy \(unavailable"):
        check_minimize(experiment("energy"), "cpu")
    check_minimize(experiment("time"), "cpu")  # nothing to check


@pytest.mark.parametrize(
    "text, key, allowed",
    [
        ("objective:\n  minimize: speed\n", "objective.minimize", "one of " + ", ".join(ALONE)),
        ("baseline:\n  lrr: 0.1\n", "baseline.lrr", "one of optimizer"),
        ("baseline:\n  precision: fp8\n", "baseline.precision", "one of " + ", ".join(PRECISIONS)),
        ("baseline: [adam]\n", "baseline", "a mapping of training dimensions"),
        ("cost:\n  per_device_hour: -1\n", "cost.per_device_hour", "a price > 0"),
        ("cost:\n  price: 2\n", "cost.price", "one of per_device_hour, currency"),
    ],
)
def test_bad_keys_name_file_key_allowed(tmp_path: Path, text: str, key: str, allowed: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path / "e.yaml", "task: synthetic\n" + text))
    assert key in str(info.value) and allowed in str(info.value) and "e.yaml" in str(info.value)


def test_baseline_and_cost_load_and_round_trip(tmp_path: Path) -> None:
    e = load_experiment(
        write(
            tmp_path / "e.yaml", "task: synthetic\nbaseline: {lr: 0.003, batch_size: 256}\ncost: {per_device_hour: 2.50, currency: EUR}\n"
        )
    )
    assert e.baseline == {"lr": 0.003, "batch_size": 256} and e.cost == Cost(2.5, "EUR")
    assert e.to_dict()["cost"] == {"per_device_hour": 2.5, "currency": "EUR"} and e.objective.minimize == "time"
