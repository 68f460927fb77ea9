"""`tuner storage-proxy EXPERIMENT.yaml --host H --port P`: serve a study storage to many workers over gRPC.

Workers, and `tuner run`, `confirm`, `best`, `report`, `doctor`, then take ``--storage
grpc://H:P``: the database (PostgreSQL or SQLite) holds the proxy's connections only, and
the trial budget and heartbeats work as without a proxy (tuner/study/storage/proxy_server.py).
Who may call it (a token, TLS) is set in the environment (tuner/study/storage/proxy_auth.py).
"""

from __future__ import annotations

import argparse

from tuner.study.run.experiment_file import load_experiment
from tuner.study.storage.proxy_server import THREADS, serve


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "storage-proxy",
        help="serve an experiment's storage to many workers over gRPC (Optuna's storage proxy)",
        # Secrets never as flags (a command line is readable by everyone on the machine): tuner/study/storage/proxy_auth.py.
        epilog="Calls without a shared token are refused when TUNER_PROXY_TOKEN (or TUNER_PROXY_TOKEN_FILE, a file holding it) "
        "is set; workers send the token from the same variables. TLS with TUNER_PROXY_TLS_CERT and TUNER_PROXY_TLS_KEY "
        "(PEM files); clients then set TUNER_PROXY_TLS_CA. A database unreachable longer than the experiment's "
        "heartbeat.retry_s ends the proxy with exit 75.",
    )
    p.add_argument("experiment", help="experiment YAML file: its storage and heartbeat settings")
    p.add_argument("--storage", help="the database to serve (default: the experiment's storage)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1; 0.0.0.0 for every interface)")
    p.add_argument("--port", type=int, default=13000, help="port to listen on (default: 13000)")
    p.add_argument(
        "--threads",
        type=int,
        default=THREADS,
        help=f"calls served at once, and the database connections the proxy holds (default: {THREADS})",
    )
    p.add_argument("--quiet", action="store_true", help="no line when it starts listening")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment).with_overrides(storage=args.storage)
    serve(experiment.storage, experiment.heartbeat, experiment.source, args.host, args.port, args.threads, args.quiet)
    return 0
