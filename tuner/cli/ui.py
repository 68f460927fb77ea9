"""`tuner ui`: the MLflow UI for the tracking store, opened on the study's runs; this machine only by default."""

from __future__ import annotations

import argparse
import os
import threading
import time
import urllib.request
import webbrowser

from tuner.cli.common import add_tracking_flag
from tuner.process_group import run_group
from tuner.redact import redact
from tuner.study.experiment.load import Experiment
from tuner.study.run.experiment_file import load_experiment
from tuner.track.ui import study_runs_url, ui_command  # mlflow itself runs in the child process


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="start the MLflow UI for the local tracking store, on the study's runs")
    p.add_argument("experiment", nargs="?", help="experiment YAML (for its tracking URI and study name)")
    p.add_argument("--study-name", dest="name", help="the study to open (default: the experiment's name)")
    add_tracking_flag(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=5000, help="port (default: 5000)")
    p.add_argument("--open", action="store_true", help="open the study's runs in the default web browser once the UI answers")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    if args.experiment:
        experiment = load_experiment(args.experiment).with_overrides(tracking_uri=args.tracking_uri, name=args.name)
        uri, study = experiment.tracking_uri, experiment.name
    else:
        uri, study = args.tracking_uri or Experiment(source="", name="ui").tracking_uri, args.name
    remote = uri.startswith(("http://", "https://"))
    host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    base = uri.rstrip("/") if remote else f"http://{host}:{args.port}"
    address = study_runs_url(uri, study, base) if study else None
    if remote:
        print(f"{redact(uri)} is a tracking server: its UI is at that address")
    else:
        print(f"MLflow UI for {redact(uri)} at http://{args.host}:{args.port} (starts in about 10 s; Ctrl-C to stop)", flush=True)
    if address is not None:
        print(f"study {study!r}: {redact(address)}", flush=True)
    elif study:
        print(f"study {study!r} has no runs in this store yet; the UI lists every experiment", flush=True)
    if args.open:
        _open_when_up(address or base, None if remote else f"{base}/health")
    if remote:
        return 0
    # MLflow's job runners (about eight processes) serve GenAI jobs, not the review of runs: off
    # unless asked for, so the UI starts with two processes instead of ten.
    os.environ.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    return run_group(ui_command(uri, args.host, args.port))


def _open_when_up(address: str, health: str | None, timeout_s: float = 120) -> None:
    """Open the browser once the server answers, from a thread: the UI starts in the meantime."""

    def wait_and_open() -> None:
        deadline = time.monotonic() + timeout_s
        while health is not None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(health, timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        webbrowser.open(address)

    threading.Thread(target=wait_and_open, daemon=True).start()
