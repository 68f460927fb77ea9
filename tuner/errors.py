"""The one error type for bad input: a single line naming file, key, allowed and given."""

from __future__ import annotations

import re

from tuner.redact import redact

# Every character str.splitlines() breaks at: a key or a file name holding one must not
# split the error over two lines.
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


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
        line = redact(f"{source}: {_shorten(redact(key))}: expected {allowed}, got {_show(given)}")
        super().__init__(_LINE_BREAKS.sub(lambda m: ascii(m[0])[1:-1], line))


def _show(value: object) -> str:
    return _shorten(redact(repr(value)))  # redacted before shortening, which could cut a URL short of its '@'


def _shorten(text: str) -> str:
    # Cut in the middle: the start names the value, the end often holds the reason.
    return text if len(text) <= 120 else text[:70] + " ... " + text[-45:]


def first_line(err: BaseException, fallback: str = "") -> str:
    """The first line of an error's message, for a one-line report; ``fallback`` when the message is empty."""
    return (str(err).strip().splitlines() or [fallback])[0]
