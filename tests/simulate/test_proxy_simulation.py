"""A proxy study replayed on recorded trials: the search at the proxy's width, the decision at
the job's, by the code `tuner run` runs (tuner/simulate/proxy_simulation.py)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import optuna
import pytest
from conftest import DEFAULT_SPACE, cli, synthetic_experiment

from tuner.errors import ConfigError
from tuner.simulate.proxy_simulation import simulate_proxy_study
from tuner.simulate.proxy_tables import check_proxy_tables
from tuner.simulate.record import record_grid
from tuner.simulate.repeats import budget_of
from tuner.simulate.simulation import Replay, simulate_study
from tuner.simulate.table import load_table
from tuner.study.record import records
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.progress import Progress
from tuner.tasks.registry import build_task

GRID = {"lr": [0.003, 0.01, 0.03], "width": [0.5, 1.0]}
FIXED = {"optimizer": "adam", "batch_size": 64, "precision": "fp32"}
PROXY = f"""
search_space:
  file: {DEFAULT_SPACE}
  override:
    precision: fp32
    batch_size: 64
    lr: {{low: 3.0e-3, high: 3.0e-2}}
    width: 1.0
    parametrization: standard
proxy: {{width: 0.5, target: 0.8, candidates: 2}}
baseline: {{optimizer: adam, lr: 0.003, batch_size: 64}}
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A synthetic job at width 1 with a proxy at width 0.5, and a table of both widths (3 rates, 2 seeds), trained for real."""
    folder = tmp_path_factory.mktemp("proxy_table")
    path = synthetic_experiment(folder / "job.yaml", PROXY, n_trials=4)
    table = folder / "job.json.gz"
    record_grid(table, load_experiment(path), build_task("synthetic"), GRID, FIXED, (0, 1))
    return path, table


def test_the_search_runs_at_the_proxys_width_and_the_winner_at_the_jobs(recorded) -> None:
    path, table_path = recorded
    experiment, table = load_experiment(path), load_table(table_path)
    task = build_task("synthetic")
    study = simulate_proxy_study(experiment, table, task, Replay(), seed=3)
    assert study == simulate_proxy_study(experiment, table, task, Replay(), seed=3)  # a replay depends on its seed alone
    assert study.winner is not None and study.winner["width"] == 1.0
    at_job = [c for c in table.configs() if c["width"] == 1.0]
    assert study.best_true_s == min(table.true_time(c) for c in at_job)  # judged against the job's width only
    assert study.winner_true_s == table.true_time(study.winner) and study.regret >= 1.0
    assert study.trials >= 2 and study.decisions  # searched at both fidelities; the full-size study's decisions


def test_each_phase_trains_at_its_own_fidelity(recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    """The studies a simulated proxy study leaves (read as it loads them): the proxy's at width 0.5, the job's at width 1."""
    path, table_path = recorded
    experiment, table = load_experiment(path), load_table(table_path)
    widths: dict[str, set] = {}
    load = optuna.load_study

    def load_and_read(**kwargs):
        study = load(**kwargs)
        widths[kwargs["study_name"]] = {r.config.width for r in records(study) if r.config is not None}
        return study

    monkeypatch.setattr(optuna, "load_study", load_and_read)
    simulate_proxy_study(experiment, table, build_task("synthetic"), Replay(), seed=0)
    assert widths == {"job": {1.0}, "job-proxy": {0.5}}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"proxy": {"width": 0.25}}, "proxy.width"),  # a width the table did not record
        ({"proxy": {"target": 0.95}}, "proxy.target"),  # past the table's 0.9: its runs stopped before
        ({"parametrization": None}, "search_space.parametrization"),  # muP at width 1 against standard runs
    ],
)
def test_a_proxy_the_table_cannot_stand_for_is_refused_in_one_line(recorded, change: dict, key: str) -> None:
    path, table_path = recorded
    experiment, table = load_experiment(path), load_table(table_path)
    if "proxy" in change:
        proxy = experiment.proxy
        assert proxy is not None
        dims = {**proxy.dims, **{k: v for k, v in change["proxy"].items() if k != "target"}}
        target = change["proxy"].get("target", proxy.target)
        experiment = dataclasses.replace(experiment, proxy=dataclasses.replace(proxy, dims=dims, target=target))
    else:
        dims = {k: v for k, v in experiment.search_space.dims.items() if k != "parametrization"}
        experiment = dataclasses.replace(experiment, search_space=dataclasses.replace(experiment.search_space, dims=dims))
    with pytest.raises(ConfigError) as err:
        check_proxy_tables(experiment, table, table, workers=1)
    assert f": {key}:" in str(err.value) and "\n" not in str(err.value)


def test_tuner_simulate_replays_a_proxy_study_and_counts_its_budget_at_full_size(recorded, tmp_path: Path) -> None:
    path, table_path = recorded
    table = load_table(table_path)
    args = ("simulate", str(path), "--table", str(table_path), "--budget", "6", "--repeats", "3", "--processes", "1")
    done = cli(*args, "--json", "--out", str(tmp_path / "sim"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    settings = json.loads(done.stdout)["settings"]
    assert settings["trial_length_s"] == pytest.approx(table.trial_length_s({"width": 1.0}))
    assert settings["budget"]["timeout_s"] == pytest.approx(6 * table.trial_length_s({"width": 1.0}))
    refused = cli(*args, "--workers", "2", cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--workers 1" in refused.stderr
    # A budget too small to decide at full size says so, and what to change, under its summary.
    short = ("simulate", str(path), "--table", str(table_path), "--budget", "0.01", "--repeats", "3", "--processes", "1")
    starved = cli(*short, "--out", str(tmp_path / "short"), cwd=tmp_path)
    assert starved.returncode == 0, starved.stderr
    assert "3 of 3 studies named no winner: the budget ended before the full-size decision" in starved.stdout
    assert "named no winner" not in done.stderr  # the budget of 6 named winners


def test_a_job_fixed_at_one_width_of_the_table_is_searched_and_judged_there(recorded) -> None:
    """Without a proxy: the study the proxy strategy is compared with, on the same table."""
    path, table_path = recorded
    experiment, table = load_experiment(path), load_table(table_path)
    job = dataclasses.replace(experiment, proxy=None)
    study = simulate_study(job, table, build_task("synthetic"), Replay(), seed=1)
    assert study.winner is not None and study.winner["width"] == 1.0
    assert study.best_true_s == min(table.true_time(c) for c in table.configs({"width": 1.0}))
    assert budget_of(table, Replay(), 2.0, job) == pytest.approx(2.0 * table.trial_length_s({"width": 1.0}))


def test_with_time_left_after_a_transfer_that_held_the_rest_searches_at_full_size() -> None:
    """The shipped proxy experiment on the committed tables of the reduced language model, at 8 of
    the job's trial-lengths: the decision ends with half the budget left, which searches at width 1."""
    repo = Path(__file__).resolve().parents[2]
    experiment = load_experiment(repo / "experiments/charlm_small_proxy.yaml")
    table = load_table(repo / "benchmarks/tables/charlm_small_mup.json.gz")
    proxy_table = load_table(repo / "benchmarks/tables/charlm_small.json.gz")
    budget_s = budget_of(proxy_table, Replay(), 8.0, experiment)
    experiment = dataclasses.replace(experiment, budget=dataclasses.replace(experiment.budget, n_trials=None, timeout_s=budget_s))
    shown = io.StringIO()
    task = build_task(experiment.task, experiment.task_options)
    study = simulate_proxy_study(experiment, table, task, Replay(), seed=0, proxy_table=proxy_table, progress=Progress(shown))
    held = [line for line in shown.getvalue().splitlines() if line.startswith("proxy: transfer held")]
    assert len(held) == 1 and "; searching at full size for the " in held[0], shown.getvalue()
    assert len(study.decisions) > 4  # beyond the candidates and the baseline's runs
    assert budget_s * 0.9 < study.end_s <= budget_s + 1.0  # the budget spent, not half of it


def test_a_proxy_that_found_nothing_still_says_what_it_cost(recorded) -> None:
    """A budget too short for any proxy trial to reach its target: the full size searches the time
    left, and the run still ends on its cost line, as every proxy run does."""
    path, table_path = recorded
    experiment, table = load_experiment(path), load_table(table_path)
    budget_s = budget_of(table, Replay(), 0.3, experiment)
    experiment = dataclasses.replace(experiment, budget=dataclasses.replace(experiment.budget, n_trials=None, timeout_s=budget_s))
    shown = io.StringIO()
    simulate_proxy_study(experiment, table, build_task("synthetic"), Replay(), seed=0, progress=Progress(shown))
    lines = shown.getvalue().splitlines()
    assert "proxy: no proxy trial reached its target; searching at full size for the time left" in lines, lines
    assert lines[-1].startswith("proxy: cost "), lines
