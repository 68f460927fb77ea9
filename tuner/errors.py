"""The one error type for bad input: a single line naming file, key, allowed and given."""

from __future__ import annotations

from tuner.redact import redact


class ConfigError(Exception):
    """Bad input found while loading an experiment or search space.

    The CLI prints ``str(error)`` as one line and exits with code 2; nothing has been
    written to any store when this is raised.
    """

    def __init__(self, source: str, key: str, allowed: str, given: object) -> None:
        self.source = source
        self.key = key
        self.allowed = allowed
        self.given = given
        # Masked here so that no error line, wherever it is printed or logged, shows a password.
        super().__init__(redact(f"{source}: {key}: expected {allowed}, got {_show(given)}"))


def _show(value: object) -> str:
    text = redact(repr(value))  # before shortening, which could cut a URL short of its '@'
    # Cut in the middle: the start names the value, the end often holds the reason.
    return text if len(text) <= 120 else text[:70] + " ... " + text[-45:]
