"""What `tuner simulate` prints and writes: the regret over repeats as JSON, Markdown and a figure."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from pathlib import Path
from typing import Any

from tuner.simulate.simulation import SimulatedStudy, summary


def results(label: str, studies: list[SimulatedStudy], settings: dict[str, Any]) -> dict[str, Any]:
    """One strategy's results: its settings, the regret's summary and every study."""
    rows = [{k: v for k, v in dataclasses.asdict(s).items() if k != "decisions"} for s in studies]
    return {"label": label, "settings": settings, "summary": summary(studies), "studies": rows}


def summary_line(result: dict[str, Any]) -> str:
    s = result["summary"]
    return (
        f"{result['label']}: regret median {s['regret_median']:.2f} (IQR {s['regret_q1']:.2f}-{s['regret_q3']:.2f}), "
        f"{s['within_10pct']:.0%} of {s['studies']} studies within 10% of the table's best, "
        f"{s['no_winner']} without a winner, {s['trials_median']:g} searched configurations per study (median)"
    )


def no_winner_line(result: dict[str, Any], proxy: bool) -> str | None:
    """Said when most studies named no winner: their budget ended too soon."""
    s = result["summary"]
    if s["no_winner"] * 2 <= s["studies"]:
        return None
    why = "the budget ended before the full-size decision (docs/proxy.md)" if proxy else "no trial reached the target within the budget"
    return f"{s['no_winner']} of {s['studies']} studies named no winner: {why}; try a larger --budget"


def markdown(results_list: list[dict[str, Any]], heading: str, label: str = "strategy") -> str:
    """A table of the results, one row each; ``label`` heads the first column(s) (``a | b`` for a label of two)."""
    rows = [
        f"| {label} | studies | regret median | IQR | within 10% | no winner | searched (median) | re-runs (median) |",
        "|" + "---|" * (label.count("|") + 8),
    ]
    for r in results_list:
        s = r["summary"]
        rows.append(
            f"| {r['label']} | {s['studies']} | {s['regret_median']:.3f} | {s['regret_q1']:.3f}-{s['regret_q3']:.3f} | "
            f"{s['within_10pct']:.0%} | {s['no_winner']} | {s['trials_median']:g} | {s['reruns_median']:g} |"
        )
    return f"{heading}\n\n" + "\n".join(rows) + "\n"


def incumbent_regret(study: dict[str, Any], at: float) -> float:
    """The regret of the study's incumbent at virtual time ``at`` (inf before its first)."""
    best = study["best_true_s"]
    held = [true_s for t, true_s in study["incumbent"] if t <= at]
    return held[-1] / best if held else math.inf


def plot(results_list: list[dict[str, Any]], path: Path, budget_s: float) -> None:
    """Best-so-far (the incumbent's true time over the table's best) against the budget: median and IQR band per strategy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    times = [budget_s * (i + 1) / 60 for i in range(60)]
    for r in results_list:
        lows, mids, highs = [], [], []
        for t in times:
            values = sorted(incumbent_regret(s, t) for s in r["studies"])
            q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (values[0],) * 3
            lows.append(q1), mids.append(q2), highs.append(q3)
        line = ax.plot(times, mids, label=r["label"])[0]
        ax.fill_between(times, lows, highs, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("budget (virtual seconds)")
    ax.set_ylabel("incumbent's true time / table's best")
    ax.set_yscale("log")
    ax.set_ylim(0.95, 5)
    ax.axhline(1.1, color="grey", linewidth=0.8, linestyle=":")
    ax.legend(fontsize=8)
    ax.set_title("best so far against the budget (median, IQR over repeats)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_results(results_list: list[dict[str, Any]], out: Path, heading: str, budget_s: float) -> list[Path]:
    """``out``.json, ``out``.md and ``out``.png; returns their paths."""
    out.parent.mkdir(parents=True, exist_ok=True)
    paths = [out.with_suffix(".json"), out.with_suffix(".md"), out.with_suffix(".png")]
    paths[0].write_text(json.dumps(results_list, indent=1, default=str) + "\n")
    paths[1].write_text(markdown(results_list, heading))
    plot(results_list, paths[2], budget_s)
    return paths
