"""Passwords out of sight: one place masks them in URLs and in any text that quotes a URL."""

from __future__ import annotations

import re
from typing import Any

MASK = "***"

# A password in scheme://user:PASSWORD@host runs up to the first '@', space or quote, and the
# scheme and user parts cannot hold those either: so a masked span never crosses one of them,
# and the text is cut at them first. Searching each piece on its own keeps the time linear in
# the length of the text; one pattern over the whole text tried every start again and took
# seconds on a long unbroken token.
_PIECES = re.compile(r"([@\s'\"])")
# The head of scheme://user: ; a scheme is a run of [A-Za-z0-9+.-] holding a letter, matched
# from the start of its run (the look-behind), so that a long run is scanned once, not once
# per character.
_URL_HEAD = re.compile(r"(?<![A-Za-z0-9+.\-])[0-9+.\-]*[A-Za-z][A-Za-z0-9+.\-]*://[^:/]*:")
# ...?password=PASSWORD&...  as libpq and SQLAlchemy accept it in the query string
_QUERY = re.compile(r"(?P<head>[?&](?:password|pwd|passwd)=)(?P<secret>[^&\s'\"]+)", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every password of a URL in it replaced by ``***``."""
    return _QUERY.sub(lambda m: m["head"] + MASK, _mask_userinfo(text))


def _mask_userinfo(text: str) -> str:
    pieces = _PIECES.split(text)  # text, separator, text, separator, ..., text
    for i in range(0, len(pieces) - 1, 2):
        if pieces[i + 1] != "@":
            continue
        head = _URL_HEAD.search(pieces[i])
        if head is not None and head.end() < len(pieces[i]):  # a password is at least one character
            pieces[i] = pieces[i][: head.end()] + MASK
    return "".join(pieces)


def redact_data(value: Any) -> Any:
    """A copy of plain data (dicts, lists, strings) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value
