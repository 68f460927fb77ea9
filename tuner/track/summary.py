"""The study run's summary: best.yaml, the plots and the description on the parent run."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any

import optuna

from tuner.report.energy import energy_figures, energy_line
from tuner.report.plots import warm_up, write_study_plots
from tuner.study.reruns.baseline import compare
from tuner.study.reruns.winner import winner
from tuner.study.study_record import study_experiment
from tuner.track.run_layout import PARENT_ENERGY, now_ms, parent_summary
from tuner.track.store import TrackingStore


def warm_up_plots() -> None:
    """Load the plotting library ahead of the summary. Not a write: a plotting library that
    fails here fails again, and is reported, in the summary."""
    with contextlib.suppress(Exception):
        warm_up()


def energy_points(study: optuna.Study) -> list[tuple[str, float, int, int]]:
    """The winner's and the baseline's median energy, for the study run, where both were measured."""
    figures, stamp = energy_figures(study, compare(study)), now_ms()
    return [(metric, float(figures[key]), 0, stamp) for key, metric in PARENT_ENERGY.items() if figures.get(key) is not None]


def _report(study: optuna.Study, folder: Path, drawn: list[Path]) -> tuple[list[Path], str]:
    """`tuner report` of the study, for the parent run, and its summary for the run's description."""
    from tuner.report.data import build_report
    from tuner.report.figures import report_figures
    from tuner.report.render import write_report

    report = build_report(study, study_experiment(study).get("storage", ""))
    files = write_report([(report, report_figures(study, report, {p.stem: p for p in drawn if p.suffix == ".png"}))], folder)
    lines = [f"\n\n**{report.summary[0].upper() + report.summary[1:]}.**"]
    if "saving" in report.cost:
        lines.append(f"The winner {report.cost['saving']['sentence']}.")
    energy = energy_line(report.energy) or f"energy: {report.energy['source']}"
    lines.append(f"{energy[0].upper()}{energy[1:]}. The full report is report/{files[0].name} in the artifacts.")
    return files, "\n\n".join(lines)


def write_summary(store: TrackingStore, study: optuna.Study, experiment: dict[str, Any], with_plots: bool = True) -> None:
    """best.yaml, the plots and the description on the parent run (at the end of a study, or by sync).

    They name the study's winner (tuner/study/reruns/winner.py), as `tuner best` and the reports
    do: the confirmed one, or the baseline when the search found nothing faster, not the fastest
    single run that the study run's tags followed while the study ran.
    """
    best_dict, tags, note = parent_summary(study, winner(study))
    stale = [k for k in store.client.get_run(store.parent_id).data.tags if k.startswith("best.") and k not in tags]
    for key in stale:  # a dimension the best-so-far had and the winner has not
        store.client.delete_tag(store.parent_id, key)
    with tempfile.TemporaryDirectory() as folder:
        files = write_study_plots(study, Path(folder)) if with_plots else []
        report_files, story = _report(study, Path(folder) / "report", files) if with_plots else ([], "")
        store.log_study_files(experiment, best_dict, files, note + story)
        for path in report_files:
            store.client.log_artifact(store.parent_id, str(path), "report")
    points = energy_points(study)
    if tags or points:
        store.log(store.parent_id, points, tags=tags)
