"""Every objective value with its unit: time in seconds, energy in joules, cost in the currency
(device hours without a price), read from what a study stored; the tables, the headline of
`tuner best` and the confirmation summary of a study that minimizes energy or cost say so.
Made-up trials in an in-memory study, and one real cost study through `tuner run`, `best` and `report`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import optuna
import pytest
from conftest import cli, synthetic_experiment
from optuna.distributions import FloatDistribution
from optuna.trial import create_trial

from tuner.study import study_record
from tuner.study.record import CONFIRM_OF
from tuner.study.reruns.confirmation import confirmation_seeds, confirmation_table, confirmed_winner
from tuner.study.reruns.winner import best_choice
from tuner.study.run.progress import top_trials_table
from tuner.study.scoring.units import column, metric_names, study_unit, study_units, with_unit
from tuner.train.target import Target

LR = {"lr": FloatDistribution(1e-3, 1e-1, log=True)}


def stored_study(objective: dict[str, Any], cost: dict[str, Any] | None = None, directions: int = 1) -> optuna.Study:
    """A study as `tuner run` stores one: its objective definition and its experiment."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["minimize"] * directions)
    experiment = {"name": "units", "seed": 0, "objective": objective, **({"cost": cost} if cost else {})}
    study_record.write_definition(study, {"target": 0.9, "clock": "robust", "cap_s": 6.0, **objective}, experiment)
    return study


def add(study: optuna.Study, lr: float, value: float, **marks: Any) -> int:
    attrs = {
        "config": {"optimizer": "adam", "lr": lr},
        "outcome": "reached",
        "reason": "",
        "target": 0.9,
        "seed": len(study.trials),
        **marks,
    }
    study.add_trial(create_trial(params={"lr": lr}, distributions=LR, value=value, user_attrs=attrs))
    return study.trials[-1].number


def test_a_value_is_printed_and_named_with_its_unit() -> None:
    assert with_unit(1.23456, "s") == "1.235 s"  # seconds to the millisecond, as every view printed them
    assert with_unit(5123.4, "J") == "5123 J" and with_unit(0.0123456, "EUR") == "0.01235 EUR"
    assert column("value", "s") == "value_s" and column("objective", "device h") == "objective_device_h"
    assert column("objective", "€") == "objective"  # a currency symbol MLflow would refuse in a key


def test_the_unit_comes_from_the_objective_and_the_cost_the_study_stored() -> None:
    assert study_unit(optuna.create_study()) == "s"  # a study stored before either existed minimized time
    assert study_unit(stored_study({"minimize": "energy"})) == "J"
    assert study_unit(stored_study({"minimize": "cost"}, {"per_device_hour": 2.5, "currency": "EUR"})) == "EUR"
    assert study_unit(stored_study({"minimize": "cost"})) == "device h"  # no price: device hours
    assert study_units(stored_study({"minimize": ["time", "model_size"]}, directions=2)) == ("s", "B")


def test_optuna_names_each_objective_with_its_target_and_unit() -> None:
    loss = Target(1.6, "loss", "minimize")
    assert metric_names(("time",), ("s",), loss) == ["time to loss <= 1.6 (s)"]
    assert metric_names(("energy", "model_size"), ("J", "B"), Target()) == ["energy to accuracy >= 0.9 (J)", "model_size (B)"]


def test_an_energy_study_says_joules_in_its_tables_headline_and_confirmation() -> None:
    study = stored_study({"minimize": "energy"})
    best = add(study, 0.02, 410.0)
    add(study, 0.05, 530.0)
    for seed, joules in zip(confirmation_seeds(0, 3), (400.0, 420.0, 450.0)):
        add(study, 0.02, joules, **{CONFIRM_OF: best, "seed": seed})
    table = top_trials_table(study).splitlines()
    assert table[0].split()[:2] == ["trial", "value_J"] and table[1].split()[:2] == ["2", "400"]  # no "400.000 s"
    assert confirmed_winner(study).summary() == "median 420 J over 3 seeds (range 400-450 J, reached on 3 of 3)"
    assert confirmation_table(study).splitlines()[0].split()[:3] == ["trial", "median_J", "range_J"]
    headline = best_choice(study).headline(study)
    assert headline.endswith("median 420 J over 3 seeds (range 400-450 J, reached on 3 of 3) to accuracy >= 0.9 on the robust clock")
    assert " s " not in headline


def test_a_cost_study_says_its_currency_in_the_headline_of_a_single_run() -> None:
    study = stored_study({"minimize": "cost", "metric": "loss", "direction": "minimize", "target": 1.6}, {"per_device_hour": 3.0})
    add(study, 0.02, 0.0123456)
    assert best_choice(study).headline(study) == "trial 0, 0.01235 USD to loss <= 1.6 on the robust clock"


@pytest.mark.e2e
def test_tuner_run_and_tuner_best_print_a_cost_study_in_its_currency(tmp_path: Path) -> None:
    costly = "objective: {minimize: cost, target: 0.9, eval_every_samples: 256, cap_s: 2.0, clock: robust}\n"
    costly += "cost: {per_device_hour: 3.0, currency: EUR}\n"
    path = synthetic_experiment(tmp_path / "costly.yaml", costly)
    done = cli("run", str(path), "--no-tracking", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Top trials (EUR to accuracy >= 0.9 on the robust clock):" in done.stdout
    assert re.search(r"^trial +value_EUR +outcome", done.stdout, re.MULTILINE)
    assert re.search(r"^best: trial \d+, [0-9.e-]+ EUR\. Export it with", done.stdout, re.MULTILINE), done.stdout
    assert " s. Export" not in done.stdout and "seconds to" not in done.stdout
    best = cli("best", str(path), "-o", "best.yaml", cwd=tmp_path)
    assert best.returncode == 0, best.stderr[-2000:]
    assert re.match(r"# study 'costly': best trial \d+, [0-9.e-]+ EUR to accuracy >= 0\.9 on the robust clock", best.stdout), best.stdout
    assert "# trials that reached the target (EUR):" in best.stdout
    report = cli("report", str(path), "--format", "json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr[-2000:]
    data = json.loads(report.stdout)
    assert (data["unit"], data["minimize"]) == ("EUR", "cost")
    assert data["cost"]["winner_cost_to_target"] == pytest.approx(data["winner"]["median_s"])  # a cost, not seconds priced again
