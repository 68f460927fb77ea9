"""Before anything is written: the storage and the tracking store are reachable, or exit 2."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from tuner.cli import build_parser
from tuner.errors import ConfigError
from tuner.study.storage.preflight import check_tracking


def test_a_server_that_answers_is_reachable_even_when_it_refuses_health() -> None:
    seen = []

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Authorization")))
            self.send_error(401)

        def log_message(self, *args) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        check_tracking(f"http://alice:s3cret@127.0.0.1:{server.server_port}/", "e.yaml")
    finally:
        server.shutdown()
    assert seen == [("/health", "Basic YWxpY2U6czNjcmV0")]  # the URL's credentials, as basic auth


def test_an_unreachable_server_is_refused_with_the_password_masked() -> None:
    with pytest.raises(ConfigError, match=r"tracking_uri: .*got 'http://u:\*\*\*@127.0.0.1:1 \(no answer: Connection refused\)'"):
        check_tracking("http://u:pw@127.0.0.1:1", "e.yaml")


def test_a_new_sqlite_store_needs_only_a_writable_folder_and_is_not_created(tmp_path: Path) -> None:
    check_tracking("sqlite:///deep/new/mlflow.db", "e.yaml")  # MLflow creates the folders itself
    assert list(tmp_path.iterdir()) == []


def test_a_folder_store_is_refused_unless_mlflow_allows_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="a folder store, which MLflow 3 refuses"):
        check_tracking("file:./mlruns", "e.yaml")
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    check_tracking("file:./mlruns", "e.yaml")


def test_the_ui_listens_on_this_machine_only_unless_told() -> None:
    assert build_parser().parse_args(["ui"]).host == "127.0.0.1"
    assert build_parser().parse_args(["ui", "--host", "0.0.0.0"]).host == "0.0.0.0"
