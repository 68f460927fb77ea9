"""The study's plots, from made-up trials in an in-memory study: nothing trained."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.report.plots import best_time_plot, curves_plot, param_plot, study_plots, write_study_plots


def made_up_study(n: int = 6) -> optuna.Study:
    study = optuna.create_study(direction="minimize")
    study.set_user_attr("objective", {"target": 0.9, "clock": "robust", "cap_s": 2.0})
    dists = {
        "lr": FloatDistribution(1e-3, 1e-1, log=True),
        "batch_size": CategoricalDistribution([32, 64, 128]),
        "optimizer": CategoricalDistribution(["adam", "adamw"]),
    }
    for i in range(n):
        reached = i % 3 != 2
        curve = {
            "samples": [256, 512, 768],
            "metric": [0.5, 0.8, 0.95 if reached else 0.7],
            "train_s": [0.1, 0.2, 0.3],
            "wall_s": [0.2, 0.4, 0.6],
        }
        params = {"lr": 10 ** (-3 + i / 3), "batch_size": [32, 64, 128][i % 3], "optimizer": ["adam", "adamw"][i % 2]}
        attrs = {"outcome": "reached" if reached else "timeout", "curve": curve}
        study.add_trial(
            create_trial(
                state=TrialState.COMPLETE, value=0.3 + i / 10 if reached else 2.5, params=params, distributions=dists, user_attrs=attrs
            )
        )
    return study


def test_plots_show_the_best_so_far_every_curve_with_the_target_and_each_parameter() -> None:
    study = made_up_study()
    best = best_time_plot(study).panels[0]
    points, line = best.series
    assert points.y == [0.3, 0.4, 0.6, 0.7] and line.y == [0.3, 0.3, 0.3, 0.3, 0.3]  # held to the last trial's end
    curves = curves_plot(study).panels[0]
    assert curves.hline == 0.9 and len(curves.series) == 6 and {s.label for s in curves.series} == {"reached", "timeout"}
    panels = {p.title: p for p in param_plot(study).panels}
    assert set(panels) == {"lr", "batch_size", "optimizer"}
    assert panels["lr"].xlog and not panels["optimizer"].xlog
    assert all(isinstance(x, int) for s in panels["batch_size"].series for x in s.x)  # numeric choices in order, not as text
    assert [p.name for p in study_plots(study)] == ["best_time", "accuracy_vs_time", "importance", "time_vs_params"]


def test_a_study_without_trials_still_gets_its_plots(tmp_path: Path) -> None:
    files = write_study_plots(optuna.create_study(), tmp_path)
    assert [f.name for f in files] == ["best_time.png", "accuracy_vs_time.png", "plots.html"]
    assert all(f.stat().st_size > 1000 for f in files)


def test_written_files_are_pngs_and_one_html_page(tmp_path: Path) -> None:
    files = write_study_plots(made_up_study(), tmp_path)
    assert sorted(f.name for f in files) == ["accuracy_vs_time.png", "best_time.png", "importance.png", "plots.html", "time_vs_params.png"]
    assert all(f.read_bytes().startswith(b"\x89PNG") for f in files if f.suffix == ".png")
    assert (tmp_path / "plots.html").read_text().count("plotly") > 10


def test_curves_are_drawn_on_the_clock_the_study_minimises() -> None:
    study = made_up_study(3)
    assert curves_plot(study).panels[0].xlabel == "robust_s (s)"
    assert curves_plot(study).panels[0].series[0].x == [0.1, 0.2, 0.3]  # no robust_s stored: train_s, its closest clock
    study.set_user_attr("objective", {"target": 0.9, "clock": "wall", "cap_s": 2.0})
    wall = curves_plot(study).panels[0]
    assert wall.xlabel == "wall_s (s)" and all(s.x == [0.2, 0.4, 0.6] for s in wall.series)
    robust = {"samples": [256], "metric": [0.95], "train_s": [0.1], "wall_s": [0.2], "robust_s": [0.05]}
    study.add_trial(create_trial(state=TrialState.COMPLETE, value=0.05, user_attrs={"outcome": "reached", "curve": robust}))
    study.set_user_attr("objective", {"target": 0.9, "clock": "robust", "cap_s": 2.0})
    assert curves_plot(study).panels[0].series[-1].x == [0.05]


def test_a_loss_target_is_drawn_on_the_loss_axis_and_the_values_carry_their_unit() -> None:
    study = made_up_study(3)
    assert curves_plot(study).panels[0].hline_label == "target: accuracy >= 0.9"
    study.set_user_attr("objective", {"target": 1.6, "metric": "loss", "direction": "minimize", "clock": "robust", "cap_s": 2.0})
    study.set_user_attr("experiment", {"objective": {"minimize": "energy"}})
    curves = curves_plot(study).panels[0]
    assert (curves.ylabel, curves.hline, curves.hline_label) == ("held-out loss", 1.6, "target: loss <= 1.6")  # curves fall to it
    assert best_time_plot(study).panels[0].ylabel == "energy to loss <= 1.6 (J)"
    assert {p.ylabel for p in param_plot(study).panels} == {"energy to loss <= 1.6 (J)"}


def test_the_interactive_page_labels_the_target_line(tmp_path: Path) -> None:
    study = made_up_study(3)
    study.set_user_attr("objective", {"target": 1.6, "metric": "loss", "direction": "minimize", "clock": "robust", "cap_s": 2.0})
    write_study_plots(study, tmp_path)
    assert "target: loss \\u003c= 1.6" in (tmp_path / "plots.html").read_text()  # plotly's JSON escapes "<"
