"""A study's plots as PNG (shown inline by the MLflow UI) and one interactive HTML page.

Each plot is described once as data (panels of series) and drawn by two small renderers,
matplotlib for PNG and plotly for HTML, so the two always show the same thing.
"""

from __future__ import annotations

import math
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState

from tuner.study.record import COMPLETE, TrialRecord, records
from tuner.study.scoring.units import metric_names, objective_names, study_units
from tuner.study.study_record import study_objective
from tuner.train.clocks import CLOCK_FIELDS
from tuner.train.target import Target

COLORS = {
    "reached": "#2a9d8f",
    "timeout": "#e9c46a",
    "capped": "#f4a261",
    "screened": "#ffb4a2",
    "pruned": "#8d99ae",
    "diverged": "#e76f51",
    "oom": "#9b5de5",
    "failed": "#d62828",
    "interrupted": "#adb5bd",
    "best": "#264653",
}


@dataclass
class Series:
    x: list[Any]
    y: list[float]
    label: str
    kind: str = "line"  # line, step, points or barh
    color: str = "#264653"


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)
    hline: float | None = None
    xlog: bool = False
    hline_label: str = "target"  # what the dashed line is: the target as views print it, ``loss <= 1.6``


@dataclass
class Plot:
    name: str
    title: str
    panels: list[Panel]


def _finished(study: optuna.Study) -> list[FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False) if t.state.is_finished()]


def value_label(study: optuna.Study) -> str:
    """What the study's (first) objective values are, with their unit: ``time to loss <= 1.6 (s)``."""
    objective = study_objective(study)
    goal = objective.goal if objective is not None else Target()
    return metric_names(objective_names(study)[:1], study_units(study)[:1], goal)[0]


def best_time_plot(study: optuna.Study) -> Plot:
    """Best time to target so far against the study's elapsed time."""
    trials = sorted((t for t in _finished(study) if t.datetime_complete is not None), key=lambda t: t.datetime_complete)
    panel = Panel("Best value against tuning time", "tuning time (s)", value_label(study))
    if trials:
        t0 = min(t.datetime_start for t in trials if t.datetime_start is not None)
        xs, values, best = [], [], []
        for t in trials:
            r = TrialRecord.of(t)  # a study of several objectives has no single value: its front is plotted instead
            if t.state is TrialState.COMPLETE and r.reached and r.value is not None:
                xs.append((t.datetime_complete - t0).total_seconds())
                values.append(r.value)
                best.append(min(r.value, best[-1]) if best else r.value)
        if best:  # hold the best line until the last trial ended
            end = (trials[-1].datetime_complete - t0).total_seconds()
            panel.series = [
                Series(xs, values, "trial that reached the target", "points", COLORS["reached"]),
                Series([*xs, end], [*best, best[-1]], "best so far", "step", COLORS["best"]),
            ]
    return Plot("best_time", "Best time against tuning time", [panel])


def curves_plot(study: optuna.Study) -> Plot:
    """Every trial's held-out metric (the target's) against its time, coloured by outcome, with the target."""
    objective = study_objective(study)
    clock = objective.clock if objective is not None else "robust"  # the clock the study minimises
    goal = objective.goal if objective is not None else None
    name = goal.metric if goal is not None else "accuracy"
    panel = Panel(f"{name.capitalize()} against time, all trials", f"{CLOCK_FIELDS[clock]} (s)", f"held-out {name}")
    if goal is not None:  # a loss's curves fall to the line, an accuracy's rise to it: the label says which side reaches
        panel.hline, panel.hline_label = goal.value, f"target: {goal.describe()}"
    for t in _finished(study):
        r = TrialRecord.of(t)
        times = r.curve.times(clock) if r.curve is not None else None
        if times:
            outcome = r.outcome.value if r.outcome is not None else "interrupted"
            panel.series.append(Series(list(times), list(r.curve.metric), outcome, "line", COLORS.get(outcome, "#555555")))
    return Plot("accuracy_vs_time", f"{name.capitalize()} against time", [panel])


def importance_plot(study: optuna.Study) -> Plot | None:
    """Optuna's parameter importance for the objective; None until there is enough to estimate it."""
    try:
        with warnings.catch_warnings():  # "fewer than 2 trials in a regime" is expected early in a study
            warnings.simplefilter("ignore", UserWarning)
            importance = optuna.importance.get_param_importances(study)
    except (RuntimeError, ValueError, ZeroDivisionError):  # too few complete trials, or nothing varies
        return None
    if not importance:
        return None
    names = list(reversed(importance))
    panel = Panel(
        f"Parameter importance ({value_label(study)})",
        "importance",
        "",
        [Series([importance[n] for n in names], names, "importance", "barh")],
    )
    return Plot("importance", "Parameter importance", [panel])


def param_plot(study: optuna.Study) -> Plot | None:
    """Time to target against each sampled parameter; misses are censored values (above the cap)."""
    trials = [r for r in records(study, COMPLETE) if r.value is not None]
    names = sorted({n for t in trials for n in t.params})
    if not names:
        return None
    panels, label = [], value_label(study)
    for name in names:
        panel = Panel(name, name, label)
        dist = next(r.trial.distributions[name] for r in trials if name in r.params)
        # Numeric choices (batch size, width) on a numeric axis, so they appear in order.
        as_text = isinstance(dist, CategoricalDistribution) and not all(
            isinstance(c, (int, float)) and not isinstance(c, bool) for c in dist.choices
        )
        if isinstance(dist, CategoricalDistribution) and not as_text:
            panel.xlog = min(dist.choices) > 0 and max(dist.choices) >= 8 * min(dist.choices)
        else:
            panel.xlog = isinstance(dist, (FloatDistribution, IntDistribution)) and dist.log
        for hit in (True, False):
            chosen = [r for r in trials if name in r.params and r.reached == hit]
            xs = [str(t.params[name]) if as_text else t.params[name] for t in chosen]
            outcome = "reached" if hit else "timeout"
            panel.series.append(Series(xs, [t.value for t in chosen], "reached" if hit else "missed (censored)", "points", COLORS[outcome]))
        panels.append(panel)
    return Plot("time_vs_params", "Time to target against each parameter", panels)


def study_plots(study: optuna.Study) -> list[Plot]:
    plots = [best_time_plot(study), curves_plot(study), importance_plot(study), param_plot(study)]
    return [p for p in plots if p is not None]


def warm_up() -> None:
    """Pay the plotting libraries' first use now: seconds of imports (optuna.importance,
    matplotlib) and of matplotlib's first drawing. The tracking writer calls this in the
    background while the first trials train, so that the study's end, which waits for its
    summary, does not pay them."""
    import optuna.importance  # noqa: F401 - the importance plot's evaluator: the slowest import here

    panel = Panel("warm-up", "x", "y", [Series([1, 2], [1.0, 2.0], "a", "points"), Series([1, 2], [1.0, 2.0], "b", "step")], 1.5, True)
    bars = Panel("warm-up", "x", "y", [Series([1.0], ["p"], "importance", "barh")])
    with tempfile.TemporaryDirectory() as folder:
        for plot in (Plot("one", "one", [panel]), Plot("grid", "grid", [panel, bars])):
            render_png(plot, Path(folder) / f"{plot.name}.png")
            render_html(plot, include_plotlyjs=False)


def _grid(n: int) -> tuple[int, int]:
    cols = min(3, n)
    return math.ceil(n / cols), cols


def render_png(plot: Plot, path: Path) -> None:
    # Figure without pyplot: no global backend is chosen, so this is safe inside a notebook.
    from matplotlib.figure import Figure

    rows, cols = _grid(len(plot.panels))
    grid = len(plot.panels) > 1
    # A fixed layout for grids: the constrained solver costs more than all the drawing there.
    fig = Figure(figsize=(5.2 * cols, 3.8 * rows), layout=None if grid else "constrained")
    if grid:
        fig.suptitle(plot.title)
        height = 3.8 * rows  # inches: margins for the title and the axis labels
        fig.subplots_adjust(left=0.06, right=0.98, bottom=0.55 / height, top=1 - 0.75 / height, hspace=0.45, wspace=0.25)
    for i, panel in enumerate(plot.panels):
        ax = fig.add_subplot(rows, cols, i + 1)
        seen: set[str] = set()
        for s in panel.series:
            label = None if s.label in seen else s.label
            seen.add(s.label)
            if s.kind == "step":
                ax.step(s.x, s.y, where="post", color=s.color, label=label)
            elif s.kind == "points":
                ax.scatter(s.x, s.y, color=s.color, label=label, s=18)
            elif s.kind == "barh":
                ax.barh(s.y, s.x, color=s.color)
            else:
                ax.plot(s.x, s.y, color=s.color, label=label, linewidth=1, alpha=0.8)
        if panel.hline is not None:
            ax.axhline(panel.hline, color="black", linestyle="--", linewidth=1, label=panel.hline_label)
        if panel.xlog:
            ax.set_xscale("log")
        ax.set(title=panel.title, xlabel=panel.xlabel, ylabel=panel.ylabel)
        if (seen - {"importance"} or panel.hline is not None) and i == 0:  # the same legend in every panel of a grid
            ax.legend(fontsize=7)
    fig.savefig(path, dpi=100)


def render_html(plot: Plot, include_plotlyjs: bool) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows, cols = _grid(len(plot.panels))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[p.title for p in plot.panels])
    seen: set[str] = set()
    for i, panel in enumerate(plot.panels):
        row, col = i // cols + 1, i % cols + 1
        for s in panel.series:
            show = s.label not in seen
            seen.add(s.label)
            if s.kind == "barh":
                trace = go.Bar(x=s.x, y=s.y, orientation="h", marker_color=s.color, name=s.label, showlegend=False)
            else:
                mode = "markers" if s.kind == "points" else "lines"
                trace = go.Scatter(
                    x=s.x,
                    y=s.y,
                    mode=mode,
                    name=s.label,
                    legendgroup=s.label,
                    showlegend=show,
                    line_color=s.color,
                    line_shape="hv" if s.kind == "step" else "linear",
                    opacity=0.85,
                )
            fig.add_trace(trace, row=row, col=col)
        if panel.hline is not None:
            fig.add_hline(y=panel.hline, line_dash="dash", annotation_text=panel.hline_label, row=row, col=col)
        fig.update_xaxes(title_text=panel.xlabel, type="log" if panel.xlog else None, row=row, col=col)
        fig.update_yaxes(title_text=panel.ylabel, row=row, col=col)
    fig.update_layout(title=plot.title, height=380 * rows, template="plotly_white")
    return fig.to_html(full_html=False, include_plotlyjs=include_plotlyjs)


def write_study_plots(study: optuna.Study, folder: Path) -> list[Path]:
    """One PNG per plot and one HTML page with all of them (plotly.js embedded once, so it works offline)."""
    folder.mkdir(parents=True, exist_ok=True)
    files, parts = [], []
    for i, plot in enumerate(study_plots(study)):
        png = folder / f"{plot.name}.png"
        render_png(plot, png)
        files.append(png)
        parts.append(render_html(plot, include_plotlyjs=i == 0))
    page = folder / "plots.html"
    page.write_text(f"<html><head><meta charset='utf-8'><title>{study.study_name}</title></head><body>" + "".join(parts) + "</body></html>")
    return [*files, page]
