"""`tuner report`, `tuner run --json`, `tuner best --json` from a real small study (synthetic task)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import optuna
import pytest
from conftest import cli, synthetic_experiment

from tuner.cli import main
from tuner.report.render import config_changes
from tuner.study.record import FINISHED, finished_search_trials, records
from tuner.study.reruns.confirmation import confirmation_seeds
from tuner.train.trial_config import TrialConfig

# No capping: a search trial slowed by a busy machine must still reach the target, for a winner to compare with the baseline.
EXTRA = """
pruner:
  cap_slack: null
confirm:
  after_search: true
  top_k: 1
  seeds: 2
cost:
  per_device_hour: 2.5
  currency: USD
"""


@pytest.mark.e2e
def test_report_json_html_markdown_from_a_study(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = synthetic_experiment(tmp_path / "rep.yaml", EXTRA, n_trials=3)
    run = cli("run", str(exp), "--no-tracking", "--quiet", "--json", cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    ran = json.loads(run.stdout)  # one object, nothing else on stdout
    assert ran["study"] == "rep" and ran["storage"].startswith("sqlite:///")

    study = optuna.load_study(study_name="rep", storage=f"sqlite:///{tmp_path / 'study.db'}")
    baseline = [r for r in records(study, FINISHED) if r.is_baseline]
    assert sorted(r.seed for r in baseline) == confirmation_seeds(0, 2)
    assert len(finished_search_trials(study)) == 3  # the baseline is not counted in n_trials
    assert all(r.params == {} for r in baseline)  # not sampled: the sampler and importance never see it

    capsys.readouterr()
    # The rest in-process (tuner.cli.main, what `python -m tuner` runs): a process start each would dominate.
    assert main(["best", str(exp), "--json"]) == 0
    chosen = json.loads(capsys.readouterr().out)
    for data in (ran, chosen):
        assert data["baseline"]["seeds"] == 2
        assert data["baseline_ratio"] > 0
        # Which side is faster, and by how much, is the machine's call: every wording is one of these.
        ratio = r"(winner \d+\.\dx faster|the search's best \d+\.\dx slower) than the baseline \(medians over"
        level = r"(winner|the search's best) level with the baseline \(\d\.\d\dx (faster|slower); medians over"
        assert re.match(ratio, data["summary"]) or re.match(level, data["summary"]), data["summary"]
        if data["winner"]["note"].startswith("the baseline"):  # the search found nothing faster: the baseline is exported
            assert data["winner"]["trial"] in {r.number for r in baseline}
        else:
            assert data["winner"]["config"]["batch_size"] in (64, 128)
        assert data["cost"]["per_device_hour"] == 2.5 and data["cost"]["winner_cost_to_target"] > 0
        assert "saving" in data["cost"] and "per 100 training runs" in data["cost"]["saving"]["sentence"]
        assert set(data["outcomes"]["by_outcome"]) <= {"reached", "timeout", "capped", "pruned", "diverged"}
        assert data["environment"]["python"]
    assert chosen["baseline_ratio"] == ran["baseline_ratio"]

    assert main(["report", str(exp), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["baseline_ratio"] == ran["baseline_ratio"]

    assert main(["report", str(exp), "-o", "out"]) == 0
    page = (tmp_path / "out" / "report-rep.html").read_text()
    # Faster, slower or level with the baseline: which, on two short seeds, is the machine's call.
    assert re.search(r"(than|level with) the baseline", page) and page.count("data:image/png;base64,") >= 4
    assert not re.search(r"(src|href)=['\"]https?://", page)  # self-contained: nothing fetched from the network
    for section in (
        "What the winner changed against the baseline",
        "Confirmation spread",
        "Cost",
        "Energy",
        "Outcomes by kind",
        "Which dimensions mattered",
        "Environment",
        "Reproduce",
    ):
        assert section in page
    md = (tmp_path / "out" / "report-rep.md").read_text()
    assert re.search(r"(than|level with) the baseline", md) and "| ratio |" in md
    assert all((tmp_path / "out" / m).is_file() for m in re.findall(r"\]\(([^)]+\.png)\)", md))

    # Two studies side by side: a second, smaller study of the same task.
    other = synthetic_experiment(tmp_path / "other.yaml", EXTRA, n_trials=2)
    assert main(["run", str(other), "--no-tracking", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["report", str(exp), str(other), "--format", "json"]) == 0
    assert [s["study"] for s in json.loads(capsys.readouterr().out)["studies"]] == ["rep", "other"]
    assert main(["report", str(exp), str(other), "-o", "out"]) == 0
    side = (tmp_path / "out" / "report-rep-vs-other.html").read_text()
    assert "--n:2" in side and "Study rep" in side and "Study other" in side


def test_the_report_shows_what_the_winner_changed_against_the_baseline() -> None:
    baseline = TrialConfig(hyper={"n_layer": 4}).as_dict()
    winner = TrialConfig(optimizer="radam", lr=0.039, batch_size=128, hyper={"n_layer": 2}).as_dict()
    lines = config_changes(winner, baseline).splitlines()
    assert lines[0].split() == ["dimension", "baseline", "winner"]
    assert [line.split() for line in lines[1:-1]] == [
        ["optimizer", "adam", "radam"],
        ["lr", "0.01", "0.039"],
        ["batch_size", "100", "128"],
        ["n_layer", "4", "2"],
    ]
    assert lines[-1] == f"(the other {len(TrialConfig.__dataclass_fields__) - 1 - 3} dimensions as the baseline's)"
    assert config_changes(baseline, baseline) == "the winner is the baseline's configuration"
    assert "winner:" in config_changes(winner, None)  # nothing to compare with: the whole configuration
