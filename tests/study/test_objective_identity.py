"""One identity of an objective (tuner/study/objective_identity.py): what must match to resume a
study, to replay a recorded table and to compare nights, and the one-line refusal of a mismatch."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import synthetic_experiment

from tuner.errors import ConfigError
from tuner.study.objective_identity import EVERY, REPLAYED, ObjectiveIdentity
from tuner.study.run.experiment_file import load_experiment
from tuner.train.target import Target


def identity(tmp_path: Path, objective: str = "objective: {target: 0.9, eval_every_samples: 256, cap_s: 2.0}\n") -> ObjectiveIdentity:
    return ObjectiveIdentity.of(load_experiment(synthetic_experiment(tmp_path / "exp.yaml", objective)))


def test_the_stored_form_is_what_earlier_versions_stored_and_reads_back(tmp_path: Path) -> None:
    mine = identity(tmp_path)
    stored = mine.as_stored()
    # An accuracy, maximized, is stored without its metric and direction, as before metrics had names.
    assert stored == {
        "task": "synthetic",
        "task_options": {},
        "target": 0.9,
        "clock": mine.clock,
        "cap_s": 2.0,
        "eval_every_samples": 256,
        "minimize": "time",
    }
    assert ObjectiveIdentity.stored(stored) == mine and mine.goal == Target(0.9)
    loss = identity(tmp_path, "objective: {metric: loss, target: 1.6, eval_every_samples: 256, cap_s: 2.0}\n")
    assert loss.as_stored()["metric"] == "loss" and loss.as_stored()["direction"] == "minimize"
    assert ObjectiveIdentity.stored(loss.as_stored()).goal == Target(1.6, "loss", "minimize")


def test_a_study_stored_before_a_key_existed_means_its_old_default(tmp_path: Path) -> None:
    older = {k: v for k, v in identity(tmp_path).as_stored().items() if k != "minimize"}
    assert ObjectiveIdentity.stored(older).same_as(identity(tmp_path))  # one objective, time
    two = identity(tmp_path, "objective: {target: 0.9, eval_every_samples: 256, cap_s: 2.0, minimize: [time, model_size]}\n")
    assert ObjectiveIdentity.stored(older).difference(two) == "minimize"


@pytest.mark.parametrize(
    "changed,key,allowed,given",
    [
        ("{target: 0.8, eval_every_samples: 256, cap_s: 2.0}", "objective.target", "0.9", 0.8),
        ("{metric: loss, target: 0.9, eval_every_samples: 256, cap_s: 2.0}", "objective.metric", "'accuracy'", "loss"),
        ("{target: 0.9, eval_every_samples: 256, cap_s: 2.0, clock: wall}", "objective.clock", None, "wall"),
        ("{target: 0.9, eval_every_samples: 512, cap_s: 2.0}", "objective.eval_every_samples", "256", 512),
    ],
)
def test_a_difference_is_refused_in_one_line_naming_its_key(
    tmp_path: Path, changed: str, key: str, allowed: str | None, given: object
) -> None:
    there = identity(tmp_path)
    wanted = identity(tmp_path, f"objective: {changed}\n")
    with pytest.raises(ConfigError) as caught:
        there.refuse_other(wanted, "exp.yaml", " as in the existing study 'exp'")
    err = caught.value
    assert (err.key, err.given) == (key, given) and len(str(err).splitlines()) == 1
    assert err.allowed == f"{allowed or repr(there.clock)} as in the existing study 'exp'"


def test_a_replay_compares_the_task_the_target_and_the_cadence_not_the_clock_or_the_cap(tmp_path: Path) -> None:
    table = identity(tmp_path)
    other_clock_and_cap = identity(tmp_path, "objective: {target: 0.9, eval_every_samples: 256, cap_s: 1.0, clock: wall}\n")
    assert table.same_as(other_clock_and_cap, REPLAYED) and not table.same_as(other_clock_and_cap, EVERY)
    with pytest.raises(ConfigError, match=r"objective\.target: expected 0\.9, as the table t\.json\.gz was recorded"):
        table.refuse_other(identity(tmp_path, "objective: {target: 0.95}\n"), "exp.yaml", ", as the table t.json.gz was recorded", REPLAYED)
