"""Simulated studies: the real study loop on a recorded table, with many workers, on a virtual clock."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path

import pytest
from conftest import cli, synthetic_experiment, write

from tuner.errors import ConfigError
from tuner.simulate.fit import auto_cap_on, check_table
from tuner.simulate.record import record_grid
from tuner.simulate.repeats import budget_of
from tuner.simulate.simulation import Replay, SimulatedStudy, simulate_study, summary
from tuner.simulate.table import load_table
from tuner.study.experiment.settings import AUTO_FALLBACK_S, CAP_MULTIPLE
from tuner.study.reruns.baseline import baseline_configuration
from tuner.study.run.experiment_file import load_experiment
from tuner.study.scoring.censoring import run_seconds
from tuner.tasks.registry import build_task

GRID = {"lr": [0.003, 0.01, 0.03], "batch_size": [64, 128]}
FIXED = {"optimizer": "adam", "width": 0.5, "precision": "fp32"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A synthetic experiment and its table: 6 configurations and the baseline, 2 seeds each, trained for real."""
    folder = tmp_path_factory.mktemp("table")
    experiment_path = synthetic_experiment(folder / "syn.yaml", n_trials=10, confirm=True, race=True)
    table_path = folder / "syn.json.gz"
    record_grid(table_path, load_experiment(experiment_path), build_task("synthetic"), GRID, FIXED, (0, 1))
    return experiment_path, table_path


def test_eight_workers_finish_exactly_the_budget_and_the_same_seed_gives_the_same_study(recorded) -> None:
    experiment_path, table_path = recorded
    experiment, table = load_experiment(experiment_path), load_table(table_path)
    task = build_task("synthetic")
    first = simulate_study(experiment, table, task, Replay(workers=8), seed=5)
    again = simulate_study(experiment, table, task, Replay(workers=8), seed=5)
    assert first.trials == 10  # searched configurations; race, confirmation and baseline runs on top
    assert first.reruns > 0
    assert first == again
    assert first.regret >= 1.0
    assert first.winner is not None and table.true_time(first.winner) == first.winner_true_s


def test_a_time_scale_stretches_the_study_not_its_choices(recorded, tmp_path: Path) -> None:
    """The same table standing for a job 512 times longer, whose experiment caps trials at 512 x 2 s.

    Capping and the screen read the incumbent at most every 2 s (tuner/study/stopping/incumbent.py),
    a time no scale stretches, so they are off here: what is left must scale exactly. The scale is a
    power of two, which multiplies every time exactly in floating point: with 600, two trials of
    equal time could differ in their last bit once stretched, and the sampler broke the tie the
    other way (a different trial 14 in one recorded table of four)."""
    experiment_path, table_path = recorded
    experiment, table = load_experiment(experiment_path), load_table(table_path)
    experiment = dataclasses.replace(experiment, pruner=dataclasses.replace(experiment.pruner, cap_slack=None), screen=None)
    longer = dataclasses.replace(experiment, objective=dataclasses.replace(experiment.objective, cap_s=1024.0))
    task = build_task("synthetic")
    plain = simulate_study(experiment, table, task, Replay(workers=2), seed=1)
    stretched = simulate_study(longer, table, task, Replay(workers=2, time_scale=512), seed=1)
    assert stretched.winner == plain.winner
    assert stretched.end_s == pytest.approx(512 * plain.end_s, rel=1e-6)
    assert stretched.regret == pytest.approx(plain.regret)


def test_tuner_simulate_reports_the_regret_and_writes_its_files(recorded, tmp_path: Path) -> None:
    experiment_path, table_path = recorded
    done = cli(
        "simulate",
        str(experiment_path),
        "--table",
        str(table_path),
        "--repeats",
        "4",
        "--workers",
        "2",
        "--json",
        "--out",
        "out/sim",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert summary["studies"] == 4 and summary["regret_median"] >= 1.0
    assert "regret median" in done.stderr
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"sim.json", "sim.md", "sim.png"}


def test_a_configuration_outside_the_table_is_refused_in_one_line(recorded, tmp_path: Path) -> None:
    """A table without a grid replays the experiment's own space: a sampled configuration it lacks is an error, not a guess."""
    experiment_path, table_path = recorded
    body = load_table(table_path)
    lacking = tmp_path / "lacking.json.gz"
    from tuner.simulate.table import write_table

    rows = [
        {"config": rec.config, "seed": rec.seed, "result": rec.result.to_attrs(), "evaluations": []}
        for by_seed in body.trials.values()
        for rec in by_seed.values()
    ]
    write_table(lacking, load_experiment(experiment_path), {}, FIXED, rows, {})
    done = cli("simulate", str(experiment_path), "--table", str(lacking), "--repeats", "1", cwd=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no recorded trial" not in lines[0] and "expected a recorded trial" in lines[0], done.stderr


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ("objective: {target: 0.8, eval_every_samples: 256, cap_s: 2.0}", "objective.target"),
        ("objective: {target: 0.9, eval_every_samples: 256, cap_s: 5.0}", "objective.cap_s"),
    ],
)
def test_an_objective_the_table_was_not_recorded_under_is_refused(recorded, tmp_path: Path, extra: str, key: str) -> None:
    _, table_path = recorded
    other = synthetic_experiment(tmp_path / "other.yaml", extra, n_trials=4)
    done = cli("simulate", str(other), "--table", str(table_path), cwd=tmp_path)
    assert done.returncode == 2 and key in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_file_that_is_not_a_table_is_refused(recorded, tmp_path: Path) -> None:
    experiment_path, _ = recorded
    bad = write(tmp_path / "bad.json.gz", "not gzip")
    done = cli("simulate", str(experiment_path), "--table", str(bad), cwd=tmp_path)
    assert done.returncode == 2 and "--table" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_auto_runs_the_budget_rules_strategy_for_the_budget_in_trial_lengths(recorded) -> None:
    """At 7 trial-lengths `pruner.name: auto` runs successive halving and keeps no time for re-runs:
    at most the deciding runs (the best on 2 seeds, the baseline on its second), in what the search
    left (tests/study/reruns/test_deciding_runs.py); a named pruner keeps its confirmation."""
    experiment_path, table_path = recorded
    experiment, table = load_experiment(experiment_path), load_table(table_path)
    timed = dataclasses.replace(
        experiment, budget=dataclasses.replace(experiment.budget, n_trials=None, timeout_s=budget_of(table, Replay(), 7))
    )
    task = build_task("synthetic")
    auto = simulate_study(dataclasses.replace(timed, pruner=dataclasses.replace(timed.pruner, name="auto")), table, task, Replay(), seed=3)
    named = simulate_study(
        dataclasses.replace(timed, pruner=dataclasses.replace(timed.pruner, name="equal_time")), table, task, Replay(), seed=3
    )
    assert auto.reruns <= 3 and auto.winner is not None
    assert named.reruns > 3


def test_an_auto_cap_is_twice_the_tables_baseline_and_the_table_must_hold_it(recorded, tmp_path: Path) -> None:
    """`cap_s: auto` on a table: CAP_MULTIPLE x the baseline's median recorded time, checked against the
    table's cap; the simulated study runs its baseline first, as `tuner run` does, and `tuner simulate` runs it."""
    _, table_path = recorded
    objective = "objective: {target: 0.9, eval_every_samples: 256, cap_s: auto, clock: robust}"
    auto = synthetic_experiment(tmp_path / "auto.yaml", objective, n_trials=4)
    experiment, table = load_experiment(auto), load_table(table_path)
    runs = table.runs(baseline_configuration(experiment))
    assert len(runs) == 2  # the baseline is recorded beside the grid, on both seeds
    expected = CAP_MULTIPLE * statistics.median(run_seconds(r.result, experiment.objective) for r in runs)
    assert auto_cap_on(table, experiment) == pytest.approx(expected) and expected < table.cap_s
    task = build_task("synthetic")
    seconds = dataclasses.replace(experiment, objective=dataclasses.replace(experiment.objective, cap_s=expected))
    # Confirmation is off: the baseline's one run is the auto study's only re-run, the cap in seconds runs none.
    assert simulate_study(experiment, table, task, Replay(), seed=2).reruns == 1
    assert simulate_study(seconds, table, task, Replay(), seed=2).reruns == 0
    done = cli("simulate", str(auto), "--table", str(table_path), "--repeats", "2", "--json", "--out", "out/sim", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)["summary"]
    assert summary["studies"] == 2 and summary["regret_median"] >= 1.0
    # A table whose trials stopped before that cap cannot show the study's trials: refused in one line.
    short = load_table(table_path)
    short.objective["cap_s"] = 0.9 * expected
    with pytest.raises(ConfigError, match=r"objective\.cap_s.*auto = "):
        check_table(experiment, short)


def test_a_table_recorded_with_an_auto_cap_keeps_the_seconds_its_trials_ran_to(tmp_path: Path) -> None:
    auto = synthetic_experiment(tmp_path / "auto.yaml", "objective: {target: 0.9, eval_every_samples: 256, cap_s: auto}")
    path = tmp_path / "auto.json.gz"
    record_grid(path, load_experiment(auto), build_task("synthetic"), {"lr": [0.01]}, FIXED, (0,))
    assert load_table(path).objective["cap_s"] == AUTO_FALLBACK_S  # what Objective.stop_rule runs a trial to without a baseline


def test_a_summary_of_studies_that_named_no_winner_is_infinite_not_nan() -> None:
    def study(seed: int, true_s: float) -> SimulatedStudy:
        return SimulatedStudy(seed, None if math.isinf(true_s) else {"lr": 0.01}, true_s, 2.0, 3, 1, 10.0, [])

    s = summary([study(0, 2.0)] + [study(i, math.inf) for i in range(1, 5)])
    assert (s["regret_q1"], s["regret_median"], s["regret_q3"], s["no_winner"]) == (math.inf, math.inf, math.inf, 4)
    finite = summary([study(i, t) for i, t in enumerate((2.0, 2.2, 3.0, 4.0, 2.4))])
    assert (finite["regret_q1"], finite["regret_median"], finite["regret_q3"]) == pytest.approx((1.1, 1.2, 1.5))
