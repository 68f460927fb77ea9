"""The report as one self-contained HTML page (figures embedded, no network) and as Markdown.

Both renderers read the same ``StudyReport`` sections in the same order; ``two`` reports
render side by side, one column each.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

import yaml

from tuner.report.data import StudyReport
from tuner.report.figures import Figure
from tuner.study.scoring.units import amount, counted, in_words, span, with_unit

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2730;max-width:1500px}
h1{font-size:22px}h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:3px;margin-top:26px}
.headline{font-size:18px;background:#eef6f4;border-left:5px solid #2a9d8f;padding:10px 14px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f5f5f5}pre{background:#f7f7f7;padding:8px;font-size:12px;overflow-x:auto}
.cols{display:grid;grid-template-columns:repeat(var(--n),minmax(0,1fr));gap:24px}img{max-width:100%}
figcaption{font-size:12px;color:#555}
"""


def _fmt(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _over_seeds(figures: dict[str, Any], median: str, spread: str, unit: str, missed: str = "") -> str:
    """'1.234 s over 3 seeds (range 1.100-1.400 s, reached on 3 of 3)': ``figures``' ``median`` and ``spread`` keys."""
    low, high, seeds = *figures[spread], figures["seeds"]
    return (
        f"{with_unit(figures[median], unit)} over {counted(seeds, 'seed')} (range {span(low, high, unit)}, "
        f"reached on {figures['reached']} of {seeds}{missed})"
    )


def config_changes(winner: dict[str, Any] | None, baseline: dict[str, Any] | None) -> str:
    """What the winner changed against the baseline, one dimension a line; a whole configuration only
    where there is nothing to compare it with (the JSON keeps both in full)."""
    if winner is None or baseline is None:
        return yaml.safe_dump({"winner": winner, "baseline": baseline}, sort_keys=False)
    flat_w, flat_b = _flat(winner), _flat(baseline)
    changed = [k for k in flat_w.keys() | flat_b.keys() if flat_w.get(k) != flat_b.get(k)]
    if not changed:
        return "the winner is the baseline's configuration"
    order = list(flat_w) + [k for k in flat_b if k not in flat_w]  # the configuration's own order
    rows = [("dimension", "baseline", "winner")] + [(k, _fmt(flat_b.get(k)), _fmt(flat_w.get(k))) for k in order if k in changed]
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    lines = [f"{a.ljust(widths[0])}  {b.ljust(widths[1])}  {c}" for a, b, c in rows]
    return "\n".join(lines) + f"\n(the other {len(order) - len(changed)} dimensions as the baseline's)"


def _flat(config: dict[str, Any]) -> dict[str, Any]:
    """A stored configuration with the task's own hyperparameters beside the built-in dimensions."""
    return {**{k: v for k, v in config.items() if k != "hyper"}, **(config.get("hyper") or {})}


def _sections(r: StudyReport) -> list[tuple[str, list[tuple[str, str]] | str]]:
    """(title, rows or preformatted text) in report order; shared by both renderers."""
    w = r.winner
    winner_rows = [
        ("study", r.study),
        ("storage", r.storage),
        ("task", r.task),
        ("objective", f"minimize {r.minimize}: {in_words(r.unit)} to {r.goal.describe()} on the {r.clock} clock"),
    ]
    if w is not None:
        winner_rows += [
            ("winner", f"trial {w['trial']}'s configuration ({'confirmed' if w['confirmed'] else 'not confirmed'})"),
            (
                f"median {r.minimize if isinstance(r.minimize, str) else r.minimize[0]} to target",
                _over_seeds(w, "median_s", "range_s", r.unit),
            ),
        ]
    if r.baseline is not None:
        b = r.baseline
        missed = "; a miss counts at its censored score, not a time" if b["reached"] < b["seeds"] else ""
        winner_rows.append(("baseline", _over_seeds(b, "median", "range", r.unit, missed)))
    if r.comparison is not None:
        winner_rows.append(("ratio", f"{r.comparison['ratio']:.2f}x"))
    if r.front is not None:  # several objectives (tuner/study/scoring/pareto.py): the front's points, the knee marked
        winner_rows += [
            (
                f"front: trial {p['trial']}" + (" (knee)" if p["knee"] else ""),
                ", ".join(f"{k} {v:.4g} {u}" for (k, v), u in zip(p["values"].items(), r.front["units"])) + f"; {p['config']}",
            )
            for p in r.front["points"]
        ]
    config = config_changes(w["config"] if w else None, r.baseline["config"] if r.baseline else None)
    u = r.unit
    confirmation = [("trial", f"median {u}, range, reached, configuration")] + [
        (
            str(c["trial"]),
            f"{amount(c['median_s'], u)} ({span(*c['range_s'], u, with_the_unit=False)}), {c['reached']}/{c['seeds']}, {c['config']}",
        )
        for c in r.confirmation
    ]
    cost = [(k.replace("_", " "), _fmt(v)) for k, v in r.cost.items() if k != "saving"]
    if "saving" in r.cost:
        cost.append(("saving", r.cost["saving"]["sentence"]))
    energy = [(k.replace("_", " "), _fmt(v)) for k, v in r.energy.items()]
    outcomes = [(k, str(v)) for k, v in r.outcomes.get("by_outcome", {}).items()] + [
        (k.replace("_", " "), str(v)) for k, v in r.outcomes.items() if k != "by_outcome"
    ]
    importance = [(k, f"{v:.3f}") for k, v in r.importance.items()] or [("", "too few trials to estimate")]
    environment = [(k, v) for k, v in r.environment.items()] or [("", "not recorded")]
    reproduce = "\n".join(r.reproduce) + "\n\n# resolved experiment\n" + yaml.safe_dump(r.experiment, sort_keys=False)
    return [
        ("Winner against the baseline", winner_rows),
        ("What the winner changed against the baseline", config),
        ("Confirmation spread", confirmation if len(confirmation) > 1 else [("", "no confirmation runs")]),
        ("Cost", cost),
        ("Energy", energy),
        ("Outcomes by kind", outcomes),
        ("Which dimensions mattered (importance)", importance),
        ("Environment", environment),
        ("Reproduce", reproduce),
    ]


def _html_column(r: StudyReport, figures: list[Figure]) -> str:
    parts = [f"<h1>Study {html.escape(r.study)}</h1>", f"<p class='headline'>{html.escape(r.summary)}</p>"]
    for title, body in _sections(r):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        if isinstance(body, str):
            parts.append(f"<pre>{html.escape(body)}</pre>")
        else:
            parts.append("<table>" + "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in body) + "</table>")
        if title == "Winner against the baseline":
            parts.append("<h2>Figures</h2>")
            for f in figures:
                data = base64.b64encode(f.png).decode()
                parts.append(
                    f"<figure><img alt='{html.escape(f.name)}' src='data:image/png;base64,{data}'>"
                    f"<figcaption>{html.escape(f.caption)}</figcaption></figure>"
                )
    return "\n".join(parts)


def render_html(reports: list[tuple[StudyReport, list[Figure]]]) -> str:
    """One page, no external resources: figures are embedded PNGs."""
    title = " vs ".join(r.study for r, _ in reports)
    columns = "".join(f"<div>{_html_column(r, f)}</div>" for r, f in reports)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>tuner report: {html.escape(title)}</title>"
        f"<style>{CSS}</style></head><body><div class='cols' style='--n:{len(reports)}'>{columns}</div></body></html>"
    )


def render_markdown(reports: list[tuple[StudyReport, list[Figure]]], figure_dir: str | None = None) -> str:
    """Markdown for a pull request; two reports share each table, one column per study."""
    lines = [f"# tuner report: {' vs '.join(r.study for r, _ in reports)}", ""]
    for r, _ in reports:
        lines.append(f"- **{r.study}**: {r.summary}")
    lines.append("")
    sections = [_sections(r) for r, _ in reports]
    for i, (title, _) in enumerate(sections[0]):
        lines += [f"## {title}", ""]
        bodies = [s[i][1] for s in sections]
        if isinstance(bodies[0], str):
            for (r, _), body in zip(reports, bodies):
                lines += ([f"**{r.study}**", ""] if len(reports) > 1 else []) + ["```", str(body).rstrip(), "```", ""]
            continue
        keys = list(dict.fromkeys(k for body in bodies for k, _ in body))
        lines.append("| | " + " | ".join(r.study for r, _ in reports) + " |")
        lines.append("|---" * (len(reports) + 1) + "|")
        for k in keys:
            cells = [dict(body).get(k, "") for body in bodies]
            lines.append(f"| {k} | " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    if figure_dir is not None:
        lines += ["## Figures", ""]
        for r, figures in reports:
            for f in figures:
                lines += [f"![{f.caption}]({figure_dir}/{r.study}-{f.name}.png)", ""]
    return "\n".join(lines)


def write_report(reports: list[tuple[StudyReport, list[Figure]]], folder: Path) -> list[Path]:
    """report.html (self-contained), report.md with its PNGs in report_files/, report.json."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = "report-" + "-vs-".join(r.study for r, _ in reports)
    files_dir = folder / f"{stem}_files"
    files_dir.mkdir(exist_ok=True)
    for r, figures in reports:
        for f in figures:
            (files_dir / f"{r.study}-{f.name}.png").write_bytes(f.png)
    page, md, js = folder / f"{stem}.html", folder / f"{stem}.md", folder / f"{stem}.json"
    page.write_text(render_html(reports))
    md.write_text(render_markdown(reports, files_dir.name))
    data = [r.as_json() for r, _ in reports]
    js.write_text(json.dumps(data[0] if len(data) == 1 else {"studies": data}, indent=2, default=str))
    return [page, md, js]
