"""`tuner ui`: the MLflow UI for the tracking store, on this machine only by default."""

from __future__ import annotations

import argparse
import subprocess

from tuner.cli.common import add_tracking_flag
from tuner.study.experiment import Experiment, load_experiment
from tuner.redact import redact


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ui", help="start the MLflow UI for the local tracking store")
    p.add_argument("experiment", nargs="?", help="experiment YAML (for its tracking URI)")
    add_tracking_flag(p)
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)")
    p.add_argument("--port", type=int, default=5000, help="port (default: 5000)")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    if args.experiment:
        uri = load_experiment(args.experiment).with_overrides(tracking_uri=args.tracking_uri).tracking_uri
    else:
        uri = args.tracking_uri or Experiment(source="", name="ui").tracking_uri
    if uri.startswith(("http://", "https://")):
        print(f"{redact(uri)} is a tracking server: its UI is at that address")
        return 0
    from tuner.track.tracking import ui_command  # mlflow is imported only by the commands that use it

    print(f"MLflow UI for {redact(uri)} at http://{args.host}:{args.port} (starts in about 10 s; Ctrl-C to stop)", flush=True)
    try:
        return subprocess.run(ui_command(uri, args.host, args.port), check=False).returncode
    except KeyboardInterrupt:
        return 0
