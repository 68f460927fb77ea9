"""Passwords in storage and tracking URLs never show: one helper masks them everywhere."""

from __future__ import annotations

import time

import pytest

from tuner.errors import ConfigError
from tuner.redact import redact, redact_data


@pytest.mark.parametrize(
    "text,masked",
    [
        ("postgresql://tuner:hunter2@db.example.com:5432/studies", "postgresql://tuner:***@db.example.com:5432/studies"),
        ("postgresql+psycopg2://u:p%40ss:w0rd@h/db", "postgresql+psycopg2://u:***@h/db"),
        ("mysql://root:s3cret@127.0.0.1/optuna?charset=utf8", "mysql://root:***@127.0.0.1/optuna?charset=utf8"),
        ("https://alice:tok3n@mlflow.example.com", "https://alice:***@mlflow.example.com"),
        ("postgresql://h/db?user=u&password=hunter2&sslmode=require", "postgresql://h/db?user=u&password=***&sslmode=require"),
        ("study on postgresql://u:pw@h/db, tracking http://a:b@c:5000", "study on postgresql://u:***@h/db, tracking http://a:***@c:5000"),
    ],
)
def test_passwords_are_masked(text: str, masked: str) -> None:
    assert redact(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        "sqlite:///tuner.db",
        "sqlite:////abs/path/tuner.db",
        "postgresql://db.example.com:5432/studies",
        "postgresql://tuner@db/studies",
        "http://127.0.0.1:5000",
        "no url here: a@b",
    ],
)
def test_text_without_a_password_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_nested_data_is_masked() -> None:
    data = {"storage": "postgresql://u:pw@h/db", "budget": {"n_trials": 3}, "list": ["http://a:b@c"], "n": 1}
    assert redact_data(data) == {"storage": "postgresql://u:***@h/db", "budget": {"n_trials": 3}, "list": ["http://a:***@c"], "n": 1}


def test_an_error_line_masks_even_a_url_cut_short() -> None:
    long_url = "postgresql://tuner:hunter2@" + "a-very-long-host-name." * 5 + "example.com/db"
    err = ConfigError("e.yaml", "storage", "a database this machine can open", long_url + " (could not connect)")
    assert "hunter2" not in str(err) and "***" in str(err)


@pytest.mark.parametrize(
    "token",
    ["a" * 1_000_000, "a://:" * 200_000, "x:" * 500_000 + "@", "?password=" * 100_000],
    ids=["letters", "schemes", "colons", "queries"],
)
def test_a_long_unbroken_token_is_redacted_in_linear_time(token: str) -> None:
    # One pattern over the whole text once took seconds for 40 000 letters, and grew with the square.
    start = time.perf_counter()
    redact(token)
    assert time.perf_counter() - start < 0.5


def test_a_password_in_a_long_text_is_still_masked() -> None:
    text = "a" * 100_000 + " postgresql://u:hunter2@h/db " + "b://" * 10_000
    assert "hunter2" not in redact(text) and "postgresql://u:***@h/db" in redact(text)
