"""What the report draws for the study's MLflow run (``ReportViews``): the tracking layer
(tuner/track/summary.py) is handed these views by the command that tracks, and imports no
report module."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from tuner.report.data import build_report
from tuner.report.energy import energy_figures, energy_line
from tuner.report.figures import report_figures
from tuner.report.plots import warm_up, write_study_plots
from tuner.report.render import write_report
from tuner.study.reruns.baseline import compare
from tuner.study.study_record import study_experiment


class ReportViews:
    """The study run's plots, report and energy figures, as tuner/track/summary.py's ``StudyViews`` asks for them."""

    def warm_up(self) -> None:
        warm_up()

    def energy(self, study: optuna.Study) -> dict[str, Any]:
        """The study's energy figures (tuner/report/energy.py): the winner's and the baseline's medians among them."""
        return energy_figures(study, compare(study))

    def plots(self, study: optuna.Study, folder: Path) -> list[Path]:
        return write_study_plots(study, folder)

    def report(self, study: optuna.Study, folder: Path, drawn: list[Path]) -> tuple[list[Path], str]:
        """`tuner report` of the study, written into ``folder`` with the plots already ``drawn``, and
        its summary for the run's description."""
        report = build_report(study, study_experiment(study).get("storage", ""))
        files = write_report([(report, report_figures(study, report, {p.stem: p for p in drawn if p.suffix == ".png"}))], folder)
        lines = [f"\n\n**{report.summary[0].upper() + report.summary[1:]}.**"]
        if "saving" in report.cost:
            lines.append(f"The winner {report.cost['saving']['sentence']}.")
        energy = energy_line(report.energy) or f"energy: {report.energy['source']}"
        lines.append(f"{energy[0].upper()}{energy[1:]}. The full report is report/{files[0].name} in the artifacts.")
        return files, "\n\n".join(lines)
