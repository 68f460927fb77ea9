"""The study run's summary: best.yaml, the plots and the description on the parent run."""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any, Protocol

import optuna

from tuner.study.reruns.winner import winner
from tuner.track.run_layout import PARENT_ENERGY, now_ms, parent_summary
from tuner.track.store import TrackingStore


class StudyViews(Protocol):
    """What the study run shows that the report draws (tuner/report/study_run.py: ``ReportViews``),
    handed in by the command that tracks: tracking imports no report module."""

    def warm_up(self) -> None:
        """Pay the plotting libraries' first use now, in the background while the first trials train."""

    def energy(self, study: optuna.Study) -> dict[str, Any]:
        """The study's energy figures, ``winner_median_j`` and ``baseline_median_j`` among them."""

    def plots(self, study: optuna.Study, folder: Path) -> list[Path]:
        """The study's plots, written into ``folder``."""

    def report(self, study: optuna.Study, folder: Path, drawn: list[Path]) -> tuple[list[Path], str]:
        """The report's files, written into ``folder`` with the plots ``drawn``, and its lines for the run's description."""


def warm_up_plots(views: StudyViews) -> None:
    """Load the plotting library ahead of the summary. Not a write: a plotting library that
    fails here fails again, and is reported, in the summary."""
    with contextlib.suppress(Exception):
        views.warm_up()


def energy_points(study: optuna.Study, views: StudyViews) -> list[tuple[str, float, int, int]]:
    """The winner's and the baseline's median energy, for the study run, where both were measured."""
    figures, stamp = views.energy(study), now_ms()
    return [(metric, float(figures[key]), 0, stamp) for key, metric in PARENT_ENERGY.items() if figures.get(key) is not None]


def write_summary(
    store: TrackingStore, study: optuna.Study, experiment: dict[str, Any], views: StudyViews | None, with_plots: bool = True
) -> None:
    """best.yaml, the plots and the description on the parent run (at the end of a study, or by sync).
    Without ``views``: best.yaml and the tags only.

    They name the study's winner (tuner/study/reruns/winner.py), as `tuner best` and the reports
    do: the confirmed one, or the baseline when the search found nothing faster, not the fastest
    single run that the study run's tags followed while the study ran.
    """
    best_dict, tags, note = parent_summary(study, winner(study))
    stale = [k for k in store.client.get_run(store.parent_id).data.tags if k.startswith("best.") and k not in tags]
    for key in stale:  # a dimension the best-so-far had and the winner has not
        store.client.delete_tag(store.parent_id, key)
    with tempfile.TemporaryDirectory() as folder:
        drawing = views is not None and with_plots
        files = views.plots(study, Path(folder)) if drawing else []
        report_files, story = views.report(study, Path(folder) / "report", files) if drawing else ([], "")
        store.log_study_files(experiment, best_dict, files, note + story)
        for path in report_files:
            store.client.log_artifact(store.parent_id, str(path), "report")
    points = energy_points(study, views) if views is not None else []
    if tags or points:
        store.log(store.parent_id, points, tags=tags)
