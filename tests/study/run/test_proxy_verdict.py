"""What a proxy study says of its full-size study (tuner/study/run/proxy_verdict.py), on stored trials."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from tests.study.test_record import add
from tuner.study.record import PROXY_OF, baseline_attrs
from tuner.study.run.proxy_verdict import cost_line, saving_line, transfer_verdict
from tuner.study.study_record import add_proxy_cost


def studies(proxy_s: float, full_s: float, baseline_reached: bool = True) -> tuple[optuna.Study, optuna.Study]:
    """A proxy study and its full-size study: the baseline and one candidate at each size."""
    proxy, full = optuna.create_study(), optuna.create_study()
    add(proxy, proxy_s, **baseline_attrs({}, 0))
    candidate = add(proxy, proxy_s / 2)
    add(full, full_s / 2, **{PROXY_OF: candidate})
    outcome = "reached" if baseline_reached else "capped"
    add(full, full_s if baseline_reached else full_s / 1.5, outcome=outcome, **baseline_attrs({}, 0))
    return proxy, full


def test_the_saving_line_compares_the_baseline_at_both_sizes() -> None:
    proxy, full = studies(proxy_s=10.0, full_s=47.0)
    line = saving_line(proxy, full)
    assert line.startswith("proxy: a proxy trial was 4.7x cheaper than a full-size one (the baseline reached its target in 10")
    assert "saves little" not in line


def test_a_capped_baseline_leaves_the_best_candidate_at_both_sizes() -> None:
    proxy, full = studies(proxy_s=10.0, full_s=47.0, baseline_reached=False)
    assert saving_line(proxy, full).startswith("proxy: a proxy trial was 4.7x cheaper than a full-size one (the best candidate ")


def test_a_proxy_that_saves_little_or_costs_more_is_said_so() -> None:
    close = saving_line(*studies(proxy_s=10.0, full_s=15.0))
    assert "1.5x cheaper" in close and close.endswith("saves little: without proxy: the study searches the job itself")
    dearer = saving_line(*studies(proxy_s=10.0, full_s=5.0))
    assert "2.0x dearer than a full-size one" in dearer and "saves little" in dearer


def test_nothing_reached_at_both_sizes_is_said_so() -> None:
    proxy, full = optuna.create_study(), optuna.create_study()
    add(proxy, 10.0, outcome="capped", **baseline_attrs({}, 0))
    assert saving_line(proxy, full) == "proxy: no configuration reached at both sizes, so a proxy trial's saving is not known"


def test_a_decision_whose_baseline_did_not_finish_is_not_judged() -> None:
    """The budget ended the baseline's full-size run: a candidate that reached has beaten nothing yet."""
    full = optuna.create_study()
    candidate = add(full, 45.9, **{PROXY_OF: 3})
    add(full, None, outcome="interrupted", state=TrialState.FAIL, **baseline_attrs({}, 0))
    verdict = transfer_verdict(full, [(3, {})])
    assert not verdict.judged and not verdict.held
    assert verdict.line.startswith(f"proxy: not judged yet: trial {candidate} (proxy trial 3) reached at full size in 45.9")
    assert verdict.line.endswith("did not finish (the budget ended first); `tuner run` again finishes the decision")
    add(full, 51.9, **baseline_attrs({}, 0))
    assert transfer_verdict(full, [(3, {})]).held


def test_the_cost_line_counts_every_run_of_the_study() -> None:
    """A study resumed after its budget ended the decision: each run's line says what all of them cost."""
    full = optuna.create_study()
    add(full, 45.0, wall_s=50.0, **baseline_attrs({}, 0))  # the baseline's full-size run: 50 s of wall time
    first = cost_line(full, 100.0, add_proxy_cost(full, 100.0))
    assert first.startswith("proxy: cost 100 s, ") and "over its" not in first
    second = cost_line(full, 60.0, add_proxy_cost(full, 60.0))
    assert "proxy: cost 60 s, " in second and "; 160 s over its 2 runs, " in second, second


def test_a_candidate_whose_run_the_budget_ended_is_not_judged_either() -> None:
    full = optuna.create_study()
    add(full, None, outcome="interrupted", state=TrialState.FAIL, **{PROXY_OF: 3})
    verdict = transfer_verdict(full, [(3, {})])
    assert not verdict.judged
    assert verdict.line == ("proxy: not judged yet: no candidate's full-size run finished; `tuner run` again finishes the decision")
    add(full, 60.0, outcome="capped", **{PROXY_OF: 3})  # ran to its cap: the transfer failed
    assert transfer_verdict(full, [(3, {})]).line.startswith("proxy: transfer not confirmed: none of the proxy's 1 best reached")
