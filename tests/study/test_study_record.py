"""The study's own attributes: written and read back typed, under the keys and formats earlier versions stored."""

from __future__ import annotations

import re
from pathlib import Path

import optuna

from tuner.study.experiment.load import Objective
from tuner.study.study_record import (
    NightAttr,
    ceiling_entry,
    night_canary,
    night_spent_s,
    night_status,
    night_warm_starts,
    night_winner,
    study_environment,
    study_experiment,
    study_night,
    study_objective,
    tracking_uid,
    write_ceiling_entry,
    write_definition,
    write_night,
    write_night_canary,
    write_night_spent_s,
    write_night_verdict,
    write_night_warm_starts,
    write_tracking_uid,
)

TUNER = Path(__file__).resolve().parents[2] / "tuner"
ENVIRONMENT = {"cpu": "AMD EPYC", "torch": "2.13.0"}
WINNER = {
    "trial": 3,
    "params": {"lr": 0.02},
    "config": {"lr": 0.02},
    "value": 0.41,
    "basis": "a single trial (no confirmation runs)",
    "confirmed": None,
}
CANARY = {"config": {"lr": 0.02}, "from_night": "2025-03-01", "environment": ENVIRONMENT, "runs": [{"seed": 1, "value": 0.4}]}


def test_the_study_definition_reads_back_as_an_objective() -> None:
    study = optuna.create_study()
    assert (study_objective(study), study_experiment(study), study_environment(study)) == (None, {}, {})
    definition = {"task": "synthetic", "task_options": {}, "target": 0.8, "clock": "wall", "cap_s": 5.0, "eval_every_samples": 128}
    write_definition(study, definition, {"name": "x"})
    assert study_objective(study) == Objective(target=0.8, eval_every_samples=128, cap_s=5.0, clock="wall")
    assert study_experiment(study) == {"name": "x"}


def test_a_nights_attributes_are_stored_under_the_keys_and_formats_earlier_versions_wrote() -> None:
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(study_name="exp-night-20250302", storage=storage)
    assert (study_night(study), night_spent_s(study), night_canary(study), night_warm_starts(study)) == (None, None, None, None)
    assert (night_winner(study), night_status(study), tracking_uid(study)) == (None, None, None)
    write_night(study, NightAttr("2025-03-02", 600.0, "exp", ENVIRONMENT))
    write_night_spent_s(study, 12.3456)
    write_night_canary(study, CANARY)
    write_night_warm_starts(study, ["2025-03-01 trial 3"])
    write_night_verdict(study, WINNER, "ok")
    write_tracking_uid(study, "61acb484")
    assert study.user_attrs == {
        "night": {"date": "2025-03-02", "budget_s": 600.0, "experiment": "exp", "environment": ENVIRONMENT},
        "spent_s": 12.35,
        "canary": CANARY,
        "warm_start": ["2025-03-01 trial 3"],
        "winner": WINNER,
        "status": "ok",
        "tuner_uid": "61acb484",
    }
    # Read back from the study, and from its summary (what `nights` lists without loading each study).
    summary = optuna.get_all_study_summaries(storage)[0]
    for holder in (study, summary):
        assert study_night(holder) == NightAttr("2025-03-02", 600.0, "exp", ENVIRONMENT)
        assert (night_spent_s(holder), night_canary(holder), night_warm_starts(holder)) == (12.35, CANARY, ["2025-03-01 trial 3"])
        assert (night_winner(holder), night_status(holder), tracking_uid(holder)) == (WINNER, "ok", "61acb484")


def test_a_night_stored_before_its_fingerprint_was_kept_still_reads() -> None:
    study = optuna.create_study()
    study.set_user_attr("night", {"date": "2024-11-30", "budget_s": 300, "experiment": "exp"})
    assert study_night(study) == NightAttr("2024-11-30", 300, "exp", None)
    study.set_user_attr("night", {"date": "2024-11-30", "budget_s": 300, "experiment": "exp", "host": "a key no longer kept"})
    assert study_night(study).environment is None
    write_night_verdict(study, None, "ok")  # a night without a winner
    assert (night_winner(study), night_status(study)) == (None, "ok")


def test_the_batch_ceilings_study_keeps_one_entry_per_name() -> None:
    study = optuna.create_study()
    assert ceiling_entry(study, "ceiling-0123") is None
    write_ceiling_entry(study, "ceiling-0123", {"key": {"width": 1.0}, "throughput": {"64": 9000.0}, "fits": None, "ooms": None})
    assert ceiling_entry(study, "ceiling-0123")["throughput"] == {"64": 9000.0}


def test_no_module_but_the_two_records_reads_or_writes_user_attributes() -> None:
    # Reads (``x.user_attrs[...]``, ``.get``, a whole mapping) and writes (``set_user_attr``, a storage's
    # study attributes); ``enqueue_trial(user_attrs=...)`` and a queued trial's ``user_attrs = ...`` pass what
    # tuner/study/record.py built.
    access = re.compile(r"\.user_attrs\b(?!\s*=[^=])|\bset_user_attr\(|_study_user_attrs?\(")
    found = sorted(p.relative_to(TUNER).as_posix() for p in TUNER.rglob("*.py") if access.search(p.read_text()))
    assert found == ["study/record.py", "study/study_record.py"]
