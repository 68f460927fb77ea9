"""Tonight against history: regressed only beyond the noise history itself shows."""

from __future__ import annotations

import pytest

from tuner.nightly.regression import MIN_HISTORY, MIN_TOLERANCE, Verdict, judge, tolerance
from tuner.nightly.report import explain, markdown


def test_too_little_history_gives_no_verdict() -> None:
    verdict = judge(9.0, [1.0] * (MIN_HISTORY - 1))
    assert verdict.status == "no history" and not verdict.regressed
    assert "not judged yet" in verdict.describe()


def test_a_steady_history_uses_the_floor() -> None:
    history = [1.0, 1.0, 1.01, 0.99]
    assert tolerance(history) == MIN_TOLERANCE
    assert judge(1.05, history).status == "ok"
    assert judge(1.2, history).regressed
    assert judge(0.8, history).status == "improved"


def test_a_noisy_history_widens_the_tolerance() -> None:
    history = [1.0, 1.3, 0.8, 1.2, 0.9]  # median 1.0, MAD 0.2: three robust sigmas are 89%
    assert tolerance(history) == pytest.approx(3 * 1.4826 * 0.2, rel=1e-6)
    assert judge(1.5, history).status == "ok"  # +50% is within this history's noise
    assert judge(2.0, history).regressed


def test_nothing_reached_against_a_history_is_a_regression() -> None:
    verdict = judge(None, [1.0, 1.1, 0.9])
    assert verdict.regressed and "nothing reached the target" in verdict.describe()


def test_a_verdict_says_what_was_slower_to_reach_which_target_in_which_unit() -> None:
    history = [40.0, 41.0, 39.0, 40.0]
    slower = judge(52.0, history, target="loss <= 1.6")
    assert slower.regressed
    assert slower.describe() == "30% slower to reach loss <= 1.6: 52.000 s against 40.000 s (tolerance 10%, 4 earlier values)"
    hungry = judge(130.0, [100.0] * 3, unit="J", minimize="energy", target="accuracy >= 0.9")
    assert hungry.describe().startswith("30% more energy-hungry to reach accuracy >= 0.9: 130 J against 100 J")
    assert judge(None, history, target="loss <= 1.6").describe() == "nothing reached loss <= 1.6, against 40.000 s in history"
    # A verdict a report stored before it said what its values were reads as seconds to the target.
    stored = {k: v for k, v in slower.to_dict().items() if k not in ("unit", "minimize", "target")}
    assert Verdict(**stored).describe().startswith("30% slower to reach the target: 52.000 s")


def test_the_morning_report_names_the_target_and_the_unit_and_a_cost_is_not_a_time() -> None:
    best = judge(0.052, [0.04] * 4, unit="EUR", minimize="cost", target="loss <= 1.6")
    canary = judge(0.041, [0.04] * 4, unit="EUR", minimize="cost", target="loss <= 1.6")
    summary = explain(best, canary, None)
    assert summary.startswith("Worse search: the best cost regressed (30% dearer to reach loss <= 1.6: 0.052 EUR against 0.04 EUR")
    report = {
        "experiment": "exp",
        "night": "2025-03-03",
        "status": "regressed",
        "summary": summary,
        "target": "loss <= 1.6",
        "unit": "EUR",
        "objective": {"task": "synthetic", "target": 1.6, "metric": "loss", "clock": "robust", "cap_s": 2.0, "minimize": "cost"},
        "environment": {},
        "best": {"value": 0.052, "basis": "a single run", "trial": 3, "config": {"optimizer": "adam"}, "confirmed": None},
        "best_vs_history": best.to_dict(),
        "previous_night": {"night": "2025-03-02", "value_s": 0.04, "change": 0.3},
        "canary": {"skipped": "no accepted winner from an earlier night yet"},
        "trials": {"by_outcome": {}, "total": 0, "confirmation_runs": 0, "warm_started": 0, "re_runs_after_a_dead_worker": 0},
        "budget": {"budget_s": 120.0, "spent_s": 100.0},
        "ending": "the budget ran out",
        "study": "exp-night-20250303",
        "storage": "sqlite:///study.db",
        "tracking_uri": "sqlite:///mlflow.db",
    }
    page = markdown(report)
    assert "Objective: EUR to loss <= 1.6 on the robust clock" in page
    assert "- cost to loss <= 1.6: **0.052 EUR** (a single run; trial 3)" in page
    assert "- previous night (2025-03-02): 0.04 EUR (+30.0%)" in page
    assert "- best cost against earlier nights: regressed, 30% dearer to reach loss <= 1.6" in page
    assert "100.000 s used of 120.000 s" in page  # the budget is time whatever the study minimizes
