"""Before a command writes anything: are the study storage and the tracking store reachable?

A store that cannot be reached when a run starts is bad input (exit 2, one line, nothing
written anywhere). A tracking server that fails later, mid-study, is not: the study goes on
and `tuner sync` fills MLflow in afterwards (tuner/track/sync.py).
"""

from __future__ import annotations

import base64
import os
import urllib.error
import urllib.parse
import urllib.request

from tuner.errors import ConfigError, first_line
from tuner.study.experiment.load import Experiment
from tuner.study.storage.open import CONNECT_TIMEOUT_S, STORAGE_ERRORS, check_storage, probe_database, sqlite_path

TRACKING_ALLOWED = "a reachable MLflow tracking store (sqlite:///FILE, http(s)://HOST:PORT, or a database URL)"
DATABASE_SCHEMES = ("postgresql", "mysql", "mssql")


def check_stores(experiment: Experiment, tracking: bool = True) -> None:
    """Raise ConfigError when the storage, or (with ``tracking``) the tracking store, cannot be used."""
    check_storage(experiment.storage, experiment.source)
    if tracking:
        check_tracking(experiment.tracking_uri, experiment.source)


def check_tracking(uri: str, source: str) -> None:
    """Reach the MLflow tracking store without writing to it (and without importing mlflow)."""
    scheme = uri.split(":", 1)[0].split("+", 1)[0].lower() if "://" in uri else ""
    try:
        if scheme in ("http", "https"):
            _check_server(uri)
        elif scheme == "sqlite":
            _check_sqlite_folder(uri)
        elif scheme in DATABASE_SCHEMES:
            probe_database(uri)  # the same check as the study storage
        elif scheme in ("databricks", "databricks-uc", "uc"):
            return  # a hosted service with its own credentials; MLflow reports its own errors
        elif os.environ.get("MLFLOW_ALLOW_FILE_STORE", "").lower() != "true":
            # MLflow 3 refuses a plain folder store at the first run it starts (API-NOTES.md 10).
            raise ValueError("a folder store, which MLflow 3 refuses")
    except (ValueError, *STORAGE_ERRORS) as err:
        first = first_line(err, type(err).__name__)
        raise ConfigError(source, "tracking_uri", TRACKING_ALLOWED, f"{uri} ({first})") from None


def _check_server(uri: str) -> None:
    parts = urllib.parse.urlsplit(uri)
    # urllib does not take user:password@ in a URL: send it as the basic auth MLflow would use.
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "") if parts.hostname else parts.netloc
    request = urllib.request.Request(urllib.parse.urlunsplit(parts._replace(netloc=netloc)).rstrip("/") + "/health")
    if parts.username:
        token = base64.b64encode(f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S):
            pass
    except urllib.error.HTTPError:
        return  # the server answered (an auth proxy may refuse /health): it is reachable
    except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
        reason = getattr(err, "reason", err)
        raise OSError(f"no answer: {getattr(reason, 'strerror', None) or reason}") from None


def _check_sqlite_folder(uri: str) -> None:
    path = sqlite_path(uri)
    if path is None:
        return
    if path.exists():
        probe_database(uri)  # an existing file must be a database
        return
    # MLflow creates the file and its missing folders: the nearest existing one must be writable.
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise OSError(f"cannot create {path}: {folder} is not a writable folder")
