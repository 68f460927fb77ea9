"""ConfigError: one line whatever the key or value holds, shortened, with passwords masked."""

from __future__ import annotations

from tuner.errors import ConfigError, first_line


def test_a_key_with_line_breaks_stays_on_one_line() -> None:
    err = ConfigError("e.yaml", "a\nb\rc\u2028d\x85e", "one of name, task", "a\nb")
    assert len(str(err).splitlines()) == 1
    assert str(err) == "e.yaml: a\\nb\\rc\\u2028d\\x85e: expected one of name, task, got 'a\\nb'"


def test_a_long_key_is_cut_in_the_middle_like_a_long_value() -> None:
    err = ConfigError("e.yaml", "k" * 500 + "end", "a key", "v" * 500)
    key = str(err).split(": ")[1]
    assert len(key) == 120 and key.endswith("end") and " ... " in key
    assert len(str(err)) < 300


def test_a_password_in_a_long_key_is_masked_before_it_is_cut() -> None:
    # Cut first, the kept end would start at ":hunter2@", no longer a URL that masking finds.
    err = ConfigError("e.yaml", "x" * 200 + "postgresql://u:hunter2@" + "h" * 36, "a key", 1)
    assert "hunter2" not in str(err)


def test_first_line_of_an_error_or_the_fallback() -> None:
    assert first_line(ValueError("\n  bad value\nsecond line\n")) == "bad value"
    assert first_line(OSError("one\r\ntwo")) == "one"
    assert first_line(KeyError()) == ""
    err = RuntimeError("  \n ")
    assert first_line(err, type(err).__name__) == "RuntimeError"
