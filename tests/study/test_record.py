"""The trial record: written once, read back typed, queried over an in-memory study."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState, create_trial

from tuner.study import record
from tuner.study.record import (
    COMPLETE,
    ENDED,
    FINISHED,
    FINISHED_OR_RUNNING,
    NOT_FAILED,
    QUEUED,
    RUNNING,
    Curve,
    TrialRecord,
    best_of,
    best_reached,
    confirmation_attrs,
    confirmation_groups,
    finished_search_trials,
    records,
    result_attrs,
    retry_attrs,
    warm_start_attrs,
    write_result,
    write_run_id,
    write_start,
)
from tuner.train.result import Evaluation, Outcome, TrialResult
from tuner.train.trial_config import TrialConfig

TUNER = Path(__file__).resolve().parents[2] / "tuner"
CONFIG = TrialConfig(optimizer="adamw", lr=0.012, batch_size=128, precision="bf16")


def evaluations() -> list[Evaluation]:
    return [Evaluation(256 * i, 4 * i, 0.3 * i, 1.0 / i, 1.1 / i, 0.1 * i, 0.2 * i, 0.05 * i) for i in (1, 2, 3)]


def reached_result() -> TrialResult:
    return TrialResult(
        Outcome.REACHED,
        "reached 0.9 at 768 samples",
        0.9,
        setup_s=0.5,
        train_s=0.3,
        wall_s=0.6,
        samples=768,
        steps=12,
        samples_to_target=768,
        steps_to_target=12,
        train_s_to_target=0.3,
        wall_s_to_target=0.6,
        robust_s_to_target=0.15,
        median_step_s=0.0125,
        throughput=2560.0,
        best_metric=0.9,
        final_metric=0.9,
        evaluations=evaluations(),
    )


def add(
    study: optuna.Study,
    value: float | None,
    outcome: str | None = "reached",
    state: TrialState = TrialState.COMPLETE,
    config: dict | None = None,
    **marks: object,
) -> int:
    """A made-up trial as the runner stores it; returns its number."""
    attrs: dict = {**marks}
    if outcome is not None:
        attrs.update(outcome=outcome, reason=outcome, target=0.9)
    attrs["config"] = config if config is not None else {"lr": 0.01 * (len(study.trials) + 1)}
    study.add_trial(create_trial(state=state, value=value if state is TrialState.COMPLETE else None, user_attrs=attrs))
    return study.trials[-1].number


def test_what_a_trial_writes_reads_back_typed() -> None:
    study = optuna.create_study(direction="minimize")
    trial = study.ask()
    write_start(trial, CONFIG, seed=7)
    write_result(trial, reached_result())
    write_run_id(trial, "run-1")
    study.tell(trial, 0.15)

    r = TrialRecord.of(study.trials[0])
    assert (r.number, r.state, r.value, r.outcome, r.reason) == (
        0,
        TrialState.COMPLETE,
        0.15,
        Outcome.REACHED,
        "reached 0.9 at 768 samples",
    )
    assert (r.config, r.seed, r.confirm_of, r.retry_of, r.warm_start, r.mlflow_run_id) == (CONFIG, 7, None, None, None, "run-1")
    assert r.reached and not r.is_confirmation
    assert r.result == dataclasses.replace(reached_result(), evaluations=[])  # the curve holds the evaluations
    assert r.curve.samples == (256, 512, 768) and r.curve.metric == pytest.approx((0.3, 0.6, 0.9))
    assert r.curve.times("train") == pytest.approx((0.1, 0.2, 0.3))
    assert r.curve.times("wall") == pytest.approx((0.2, 0.4, 0.6))
    assert r.curve.times("robust") == pytest.approx((0.05, 0.1, 0.15))
    assert r.curve.loss == pytest.approx((1.0, 0.5, 1 / 3), abs=1e-5)
    assert r.config_key == TrialRecord.of(study.trials[0]).config_key is not None


def test_a_live_trial_reads_what_it_was_queued_with() -> None:
    study = optuna.create_study()
    study.enqueue_trial({}, user_attrs=confirmation_attrs(3, seed=100_001))
    live = study.ask()
    r = TrialRecord.of(live)
    assert (r.state, r.value, r.outcome, r.result, r.curve, r.config) == (TrialState.RUNNING, None, None, None, None, None)
    assert (r.confirm_of, r.seed, r.is_confirmation) == (3, 100_001, True)


def test_queue_marks_for_warm_starts_and_re_runs() -> None:
    study = optuna.create_study()
    study.enqueue_trial({}, user_attrs=warm_start_attrs("2024-01-02 trial 4"))
    dead = study.trials[0]
    assert TrialRecord.of(dead).warm_start == "2024-01-02 trial 4"
    again = create_trial(state=TrialState.FAIL, user_attrs=retry_attrs(dead, 0))
    assert (TrialRecord.of(again).retry_of, TrialRecord.of(again).warm_start) == (0, "2024-01-02 trial 4")


def test_curves_of_older_studies_still_read() -> None:
    old = Curve.of({"samples": [1, 2], "metric": [0.5, 0.7], "train_s": [0.1, 0.2], "wall_s": [0.3, 0.4]})
    assert old.times("robust") == (0.1, 0.2)  # before robust_s was stored: train_s, its closest clock
    assert old.loss == () and old.times("wall") == (0.3, 0.4)
    assert Curve.of({"samples": [1, 2], "metric": [0.5, 0.7], "wall_s": [0.3]}).times("wall") is None  # lengths disagree
    assert Curve.of(old.as_dict()) == old
    assert result_attrs(reached_result())["curve"] == Curve.of_result(reached_result()).as_dict()


def test_best_reached_is_the_fastest_completed_hit_earliest_on_a_tie() -> None:
    study = optuna.create_study()
    assert best_reached(study) is None
    add(study, 2.0)
    fast = add(study, 1.0)
    add(study, 1.0)  # a tie: the earlier trial stays the best
    add(study, 0.5, outcome="capped")  # a capped time is a lower bound, not a time to target
    add(study, None, outcome="pruned", state=TrialState.PRUNED)
    add(study, None, outcome=None, state=TrialState.FAIL)
    assert best_reached(study).number == fast
    assert best_of(records(study)).number == fast
    assert best_of([]) is None


def test_finished_search_trials_leave_out_confirmation_runs_and_unfinished_trials() -> None:
    study = optuna.create_study()
    search = [add(study, 1.0), add(study, None, outcome="pruned", state=TrialState.PRUNED)]
    add(study, 1.1, confirm_of=search[0], seed=100_000)
    add(study, None, outcome="failed", state=TrialState.FAIL)
    study.enqueue_trial({})
    assert [r.number for r in finished_search_trials(study)] == search
    assert len(records(study, FINISHED)) == 3 and len(records(study, QUEUED)) == 1


def test_confirmation_groups_by_the_configuration_of_the_trial_confirmed() -> None:
    study = optuna.create_study()
    a = add(study, 1.0, config={"lr": 0.05})
    twin = add(study, 1.2, config={"lr": 0.05, "optimizer": "adam"})  # the same training configuration, spelt out
    b = add(study, 1.5, config={"lr": 0.02})
    runs = [
        add(study, 1.1, config={"lr": 0.05}, confirm_of=a, seed=1),
        add(study, 1.3, config={"lr": 0.05}, confirm_of=twin, seed=2),
        add(study, 1.6, config={"lr": 0.02}, confirm_of=b, seed=1),
        add(study, None, outcome=None, state=TrialState.FAIL, config={"lr": 0.02}, confirm_of=b, seed=2),
    ]
    groups = confirmation_groups(study, COMPLETE)
    assert {g[0].number: [r.number for r in g[1]] for g in groups.values()} == {a: runs[:2], b: [runs[2]]}
    assert [r.number for r in confirmation_groups(study, ENDED)[TrialRecord.of(study.trials[b]).config_key][1]] == runs[2:]


def test_trial_state_sets_say_what_they_hold() -> None:
    every = set(TrialState)
    assert set(FINISHED) == {TrialState.COMPLETE, TrialState.PRUNED}
    assert set(ENDED) == set(FINISHED) | {TrialState.FAIL}
    assert set(FINISHED_OR_RUNNING) == set(FINISHED) | set(RUNNING)
    assert set(NOT_FAILED) == every - {TrialState.FAIL}
    assert set(COMPLETE) | set(QUEUED) | set(RUNNING) < every


def test_trial_state_sets_are_defined_only_in_the_record() -> None:
    pattern = re.compile(r"\(\s*(optuna\.trial\.)?TrialState\.\w+\s*,")  # a tuple of trial states
    defined = [p.relative_to(TUNER).as_posix() for p in TUNER.rglob("*.py") if pattern.search(p.read_text())]
    assert defined == ["study/record.py"]


def test_no_module_but_the_record_reads_trial_attributes_by_key() -> None:
    # (A nightly study keeps its own study-level "warm_start" list, so that key is not scanned.)
    keys = "|".join(
        re.escape(k)
        for k in (
            record.CONFIG,
            record.SEED,
            record.CONFIRM_OF,
            record.RETRY_OF,
            record.CURVE,
            record.OUTCOME,
            record.REASON,
            record.MLFLOW_RUN_ID,
            "samples_to_target",
            "best_metric",
            "wall_s",
        )
    )
    by_key = re.compile(rf"""user_attrs(\.get\(|\[)\s*["']({keys})["']|["']({keys})["']\s+(not\s+)?in\s+\w+\.user_attrs""")
    readers = [p.relative_to(TUNER).as_posix() for p in TUNER.rglob("*.py") if by_key.search(p.read_text())]
    assert readers in ([], ["study/record.py"])


def test_a_stored_configuration_reads_with_a_key_it_no_longer_knows_and_without_one_it_lacked() -> None:
    stored = {k: v for k, v in CONFIG.as_dict().items() if k not in ("head_lr_mult", "hyper")} | {"momentum_kind": "nesterov"}
    assert TrialConfig.from_stored(stored) == CONFIG  # the keys it lacked keep their defaults, as CONFIG's do
    assert TrialConfig.unknown_keys(stored) == ["momentum_kind"] and TrialConfig.unknown_keys(CONFIG.as_dict()) == []
    assert TrialConfig.from_stored({}) == TrialConfig()
    with_hyper = TrialConfig(lr=0.03, hyper={"dropout": 0.1})
    assert TrialConfig.from_stored(with_hyper.as_dict()) == with_hyper  # the task's own hyperparameters read back too
    study = optuna.create_study()
    add(study, 1.0, config=stored)
    r = TrialRecord.of(study.trials[0])
    assert (r.config, r.unknown_config_keys) == (CONFIG, ["momentum_kind"])
    assert r.config_key == TrialRecord.key_of(CONFIG)  # the same configuration as one this version stored
