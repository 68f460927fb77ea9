"""The report's figures as PNG bytes: the study plots (tuner/report/plots.py) plus the
confirmation spread against the baseline and the outcomes by kind."""

from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import optuna

from tuner.report.data import StudyReport
from tuner.report.plots import COLORS, Panel, Plot, Series, best_time_plot, curves_plot, importance_plot, param_plot, render_png


@dataclass(frozen=True)
class Figure:
    name: str
    caption: str
    png: bytes


def spread_plot(report: StudyReport) -> Plot | None:
    """Each confirmed configuration's values over seeds, and the baseline's, on one axis."""
    first = report.minimize if isinstance(report.minimize, str) else report.minimize[0]
    what = f"{first} to {report.goal.describe()} ({report.unit}, {report.clock} clock)"
    panel = Panel("Confirmation spread over seeds (lower is better)", what, "")
    for c in reversed(report.confirmation):
        label = f"trial {c['trial']}"
        panel.series.append(Series(c["values_s"], [label] * len(c["values_s"]), "confirmed configuration", "points", COLORS["reached"]))
    if report.baseline is not None:
        panel.series.append(
            Series(report.baseline["values"], ["baseline"] * report.baseline["seeds"], "baseline", "points", COLORS["failed"])
        )
    return Plot("spread", "Winner against the baseline", [panel]) if panel.series else None


def front_plot(report: StudyReport) -> Plot | None:
    """A study of several objectives: the first two, every configuration that reached the target, the front marked."""
    front = report.front
    if front is None or not front["trials"]:
        return None
    (x, y), (ux, uy) = front["objectives"][:2], front["units"][:2]
    panel = Panel("Pareto front (lower is better on both)", f"{x} ({ux})", f"{y} ({uy})")
    panel.series.append(
        Series([t[0] for t in front["trials"]], [t[1] for t in front["trials"]], "reached the target", "points", COLORS["pruned"])
    )
    points = sorted(front["points"], key=lambda p: p["values"][x])
    panel.series.append(Series([p["values"][x] for p in points], [p["values"][y] for p in points], "Pareto front", "step", COLORS["best"]))
    panel.series.append(
        Series([p["values"][x] for p in points], [p["values"][y] for p in points], "front points", "points", COLORS["reached"])
    )
    return Plot("front", "Pareto front", [panel])


def outcomes_plot(report: StudyReport) -> Plot | None:
    by_outcome = report.outcomes.get("by_outcome", {})
    if not by_outcome:
        return None
    names = list(by_outcome)
    panel = Panel("Trials by outcome", "trials", "", [Series([by_outcome[n] for n in names], names, "trials", "barh", COLORS["best"])])
    return Plot("outcomes", "Outcomes", [panel])


CAPTIONS = {
    "spread": "Winner against the baseline: every seed of each confirmed configuration and of the baseline.",
    "best_time": "Best time to target against tuning time.",
    "accuracy_vs_time": "The target's held-out metric against time for every trial, coloured by outcome; the dashed line is the target.",
    "importance": "Which dimensions mattered: Optuna's importance of each parameter for the time to target.",
    "time_vs_params": "Effect of each parameter: time to target against its value (misses at their censored value).",
    "outcomes": "Trials by outcome.",
    "front": "Pareto front: every configuration that reached the target on the first two objectives; the front's points joined.",
}


STUDY_PLOTS = {"best_time": best_time_plot, "accuracy_vs_time": curves_plot, "importance": importance_plot, "time_vs_params": param_plot}


def report_figures(study: optuna.Study, report: StudyReport, drawn: dict[str, Path] | None = None) -> list[Figure]:
    """The figures in report order, each drawn once as PNG.

    ``drawn``: study plots already rendered as PNG (the parent run's, tuner/track/summary.py),
    by name; they are read, not computed again (importance alone takes seconds).
    """
    drawn = drawn or {}
    order: list[Plot | Path | None] = [front_plot(report), spread_plot(report)]
    order += [drawn[name] if name in drawn else make(study) for name, make in STUDY_PLOTS.items()]
    order.append(outcomes_plot(report))
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        for item in order:
            if isinstance(item, Path):
                figures.append(Figure(item.stem, CAPTIONS[item.stem], item.read_bytes()))
                continue
            if item is None or not any(p.series for p in item.panels):
                continue
            path = Path(tmp) / f"{item.name}.png"
            with warnings.catch_warnings():  # a bar chart has no legend entries, and matplotlib says so
                warnings.simplefilter("ignore", UserWarning)
                render_png(item, path)
            figures.append(Figure(item.name, CAPTIONS.get(item.name, item.title), path.read_bytes()))
    return figures
