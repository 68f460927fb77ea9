"""`tuner report STUDY [STUDY]`: the study's report as HTML, Markdown and JSON; two side by side."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tuner.cli.common import add_tracking_flag, study_target
from tuner.study.storage.existing import load_existing_study

FORMATS = ("html", "json")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a study's report (HTML, Markdown, JSON); two studies side by side")
    p.add_argument("studies", nargs="+", metavar="STUDY", help="experiment YAML or study name; a second one is shown beside the first")
    p.add_argument("--study-name", dest="name", help="with an experiment YAML: the study's name, if not the experiment's")
    p.add_argument("--storage", help="Optuna storage URL (default: the experiment's, else sqlite:///tuner.db)")
    add_tracking_flag(p)
    p.add_argument("-o", "--output", default="reports", help="folder for the report files (default: reports)")
    p.add_argument(
        "--format", choices=FORMATS, default="html", help="html: write HTML, Markdown and JSON files; json: print one JSON object"
    )
    p.set_defaults(handler=main)


def load_reports(args: argparse.Namespace) -> list:
    """(report, figures) per named study; figures only when files are written."""
    from tuner.report.data import build_report
    from tuner.report.figures import report_figures

    if len(args.studies) > 2:
        from tuner.errors import ConfigError

        raise ConfigError("tuner report", "STUDY", "one study, or two to compare", " ".join(args.studies))
    out = []
    for name in args.studies:
        one = argparse.Namespace(study=name, name=args.name, storage=args.storage, tracking_uri=args.tracking_uri)
        study_name, storage, _, source = study_target(one)
        study = load_existing_study(storage, study_name, source)
        report = build_report(study, storage)
        out.append((report, report_figures(study, report) if args.format == "html" else []))
    return out


def main(args: argparse.Namespace) -> int:
    reports = load_reports(args)
    if args.format == "json":
        data = [r.as_json() for r, _ in reports]
        print(json.dumps(data[0] if len(data) == 1 else {"studies": data}, default=str))
        return 0
    from tuner.report.render import write_report

    files = write_report(reports, Path(args.output))
    for r, _ in reports:
        print(f"{r.study}: {r.summary}")
    print("report written: " + ", ".join(str(f) for f in files))
    return 0
