"""The morning report of a night: one JSON summary for machines, one Markdown page for people."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import optuna

from tuner.nightly.canary import canary_value
from tuner.nightly.regression import Verdict
from tuner.redact import redact
from tuner.study.counts import trial_counts
from tuner.study.experiment.load import Experiment
from tuner.study.reruns.baseline import baseline_sentence
from tuner.study.scoring.units import in_words, with_unit
from tuner.study.study_record import night_spent_s, stored_definition, study_night
from tuner.train.trial_config import TrialConfig


def explain(best: Verdict, canary: Verdict | None, changes: dict[str, list[str]] | None) -> str:
    """One sentence: what happened tonight, and why it can be trusted."""
    changed = "; environment changed: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changes.items()) if changes else ""
    what = f"best {best.minimize}"  # the best time (or cost, or energy) to the target
    if canary is not None and canary.regressed:
        where = "since the environment changed" if changes else "on an unchanged environment"
        if best.regressed:
            return (
                f"Slower environment: the canary (same configuration, same seeds) regressed {where} ({canary.describe()}), "
                f"and the {what} with it{changed}."
            )
        best_said = "held" if best.status in ("ok", "improved") else "has too little history to judge"
        return (
            f"The canary (same configuration, same seeds) regressed {where} ({canary.describe()}), "
            f"while tonight's {what} {best_said}{changed}."
        )
    if best.regressed:
        if canary is not None and canary.status != "no history":
            return f"Worse search: the {what} regressed ({best.describe()}) while the canary held steady ({canary.describe()})."
        return f"The {what} regressed ({best.describe()}); without canary history a slower machine cannot be told from a worse search."
    return f"All well: {what} {best.describe()}; canary {canary.describe() if canary else 'not run'}{changed}."


def build_report(
    study: optuna.Study,
    experiment: Experiment,
    winner: dict[str, Any] | None,
    best: Verdict,
    canary: dict[str, Any],
    canary_verdict: Verdict | None,
    changes: dict[str, list[str]] | None,
    previous: Any,
    environment: dict[str, str],
    ending: str,
    status: str,
) -> dict[str, Any]:
    """Everything the morning report says, as plain JSON-able data (passwords masked)."""
    night = study_night(study)
    prev_value = previous.winner["value"] if previous is not None else None
    return {
        "experiment": night.experiment,
        "night": night.date,
        "study": study.study_name,
        "status": status,
        "summary": explain(best, canary_verdict, changes),
        "target": experiment.objective.goal.describe(),
        "unit": best.unit,  # of every objective value below (budgets are in seconds)
        "baseline": baseline_sentence(study),
        "ending": ending,
        "budget": {"budget_s": night.budget_s, "spent_s": night_spent_s(study)},
        "best": winner,
        "best_vs_history": best.to_dict(),
        "previous_night": None
        if previous is None
        else {
            "night": previous.date.isoformat(),
            "value_s": prev_value,
            "change": None if winner is None or not prev_value else winner["value"] / prev_value - 1,
        },
        "canary": {
            **canary,
            "median_s": canary_value(canary),
            "verdict": canary_verdict.to_dict() if canary_verdict else None,
            "environment_changes": changes,
        },
        "trials": trial_counts(study),
        "objective": stored_definition(study),
        "environment": environment,
        "storage": redact(experiment.storage),
        "tracking_uri": redact(experiment.tracking_uri),
    }


def write_report(report: dict[str, Any], folder: Path) -> list[Path]:
    """report.json and report.md in ``folder``; returns both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / "report.json", folder / "report.md"]
    paths[0].write_text(json.dumps(report, indent=2) + "\n")
    paths[1].write_text(markdown(report))
    return paths


def _s(value: float | None, unit: str = "s") -> str:
    return "-" if value is None else with_unit(value, unit)


def markdown(r: dict[str, Any]) -> str:
    """The report as a page a person reads over coffee."""
    o, env, best, canary = r["objective"] or {}, r["environment"], r["best"], r["canary"]
    unit, target = r.get("unit", "s"), r.get("target", o.get("target"))  # a report written before either was kept: seconds
    minimized = r["best_vs_history"].get("minimize", "time")
    lines = [
        f"# {r['experiment']}: night of {r['night']} — {r['status'].upper()}",
        "",
        r["summary"],
        "",
        f"Against the baseline: {r['baseline']}." if r.get("baseline") else "",
        "",
        f"Objective: {in_words(unit)} to {target} on the {o.get('clock')} clock, task {o.get('task')}, cap {o.get('cap_s')} s per trial.",
        (
            f"Machine: {env.get('cpu')} ({env.get('cores')} cores), GPU {env.get('gpu')}; "
            f"torch {env.get('torch')}, Python {env.get('python')}, "
            f"commit {env.get('git_commit')}, host {env.get('host')}."
        ),
        "",
        "## Best configuration",
        "",
    ]
    if best is None:
        lines.append("No trial reached the target tonight.")
    else:
        c = best["confirmed"]
        lines += [
            f"- {minimized} to {target}: **{_s(best['value'], unit)}** ({best['basis']}; trial {best['trial']})",
            f"- configuration: {TrialConfig.from_stored(best['config']).short()}",
        ]
        if c:
            lines.append(
                f"- confirmed: median {_s(c['median_s'], unit)}, range {_s(c['min_s'], unit)} to {_s(c['max_s'], unit)}, "
                f"reached on {c['reached']} of {c['seeds']} seeds"
            )
    prev = r["previous_night"]
    lines += [
        "",
        "## Against history",
        "",
        f"- best {minimized} against earlier nights: {r['best_vs_history']['status']}, " + Verdict(**r["best_vs_history"]).describe(),
    ]
    if prev is not None:
        change = "" if prev["change"] is None else f" ({prev['change']:+.1%})"
        lines.append(f"- previous night ({prev['night']}): {_s(prev['value_s'], unit)}{change}")
    lines += ["", "## Canary", ""]
    if "skipped" in canary:
        lines.append(f"Not run: {canary['skipped']}.")
    elif canary.get("runs") is not None:
        values = ", ".join(_s(run["value"], unit) for run in canary["runs"])
        lines.append(
            f"Winner of {canary['from_night']} ({TrialConfig.from_stored(canary['config']).short()}) on {len(canary['runs'])} seeds: "
            f"{values}; median {_s(canary['median_s'], unit)}."
        )
        if canary["verdict"]:
            lines.append(f"Against its history: {canary['verdict']['status']}, {Verdict(**canary['verdict']).describe()}.")
        for key, (before, after) in (canary["environment_changes"] or {}).items():
            lines.append(f"- changed since its last run: {key} {before} -> {after}")
    t = r["trials"]
    lines += [
        "",
        "## Trials",
        "",
        "| outcome | trials |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in t["by_outcome"].items()),
        "",
        (
            f"{t['total']} trials in all: {t['confirmation_runs']} confirmation runs, "
            f"{t['warm_started']} warm-started from earlier nights, "
            f"{t['re_runs_after_a_dead_worker']} re-runs after a dead worker."
        ),
        "",
        "## Budget",
        "",
        f"{_s(r['budget']['spent_s'])} used of {_s(r['budget']['budget_s'])}; the night ended: {r['ending']}.",
        "",
        f"Study `{r['study']}` in {r['storage']}; MLflow at {r['tracking_uri']}.",
        "",
    ]
    return "\n".join(lines)
