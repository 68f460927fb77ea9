"""A study's energy, as measured: where it came from, the winner's and the baseline's medians.

Figures come from the trials' counters (tuner/train/energy.py), never from an estimate: a
study whose trials read no counter says so and states no figure. The report, the study run in
MLflow (tuner/track/summary.py) and the closing summary of `tuner run` read them here.
"""

from __future__ import annotations

import statistics
from typing import Any

import optuna

from tuner.study.record import COMPLETE, records
from tuner.study.reruns.baseline import Comparison, baseline_figures
from tuner.study.scoring.units import with_unit

UNIT = "J"


def energy_figures(study: optuna.Study, comparison: Comparison | None) -> dict[str, Any]:
    """The source, how many trials were measured, the winner's and the baseline's medians (joules, None
    where a side was not measured on every seed) and the median energy to the target of the trials that reached it."""
    measured = [r for r in records(study, COMPLETE) if r.result is not None and getattr(r.result, "energy_j", None) is not None]
    sources = sorted({getattr(r.result, "energy_source", None) or "measured" for r in measured})
    out: dict[str, Any] = {
        "trials_measured": len(measured),
        "source": ", ".join(sources) if sources else "unavailable (no trial had a readable energy counter)",
    }
    if comparison is not None:
        out["winner_median_j"] = comparison.winner.median_energy_j
        out["baseline_median_j"] = comparison.baseline.median_energy_j
    elif (baseline := baseline_figures(study)) is not None:  # no winner to compare yet, or none faster
        out["baseline_median_j"] = baseline.median_energy_j
    reached = [getattr(r.result, "energy_j_to_target", None) for r in measured if r.reached]
    reached = [e for e in reached if e is not None]
    if reached:
        out["median_j_to_target_reached_trials"] = statistics.median(reached)
    return out


def energy_line(figures: dict[str, Any]) -> str | None:
    """One line for a summary, from ``energy_figures``; None where no trial read a counter."""
    if not figures.get("trials_measured"):
        return None
    parts = []
    winner, baseline = figures.get("winner_median_j"), figures.get("baseline_median_j")
    if winner is not None and baseline is not None:
        parts.append(f"winner {with_unit(winner, UNIT)} against the baseline's {with_unit(baseline, UNIT)} (medians over seeds)")
    elif baseline is not None:
        parts.append(f"the baseline's median {with_unit(baseline, UNIT)} over its seeds")
    if figures.get("median_j_to_target_reached_trials") is not None:
        parts.append(
            f"a median of {with_unit(figures['median_j_to_target_reached_trials'], UNIT)} to the target in the trials that reached it"
        )
    parts.append(f"{figures['trials_measured']} trials measured")
    return f"energy ({figures['source']}): " + "; ".join(parts)
