"""Passwords out of sight: one place masks them in URLs and in any text that quotes a URL."""

from __future__ import annotations

import re
from typing import Any

MASK = "***"

# scheme://user:PASSWORD@host  (the user part cannot hold ':', '/', '@' or spaces)
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s'\"]*:)(?P<secret>[^@\s'\"]+)(?P<tail>@)")
# ...?password=PASSWORD&...  as libpq and SQLAlchemy accept it in the query string
_QUERY = re.compile(r"(?P<head>[?&](?:password|pwd|passwd)=)(?P<secret>[^&\s'\"]+)", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every password of a URL in it replaced by ``***``."""
    text = _USERINFO.sub(lambda m: m["head"] + MASK + m["tail"], text)
    return _QUERY.sub(lambda m: m["head"] + MASK, text)


def redact_data(value: Any) -> Any:
    """A copy of plain data (dicts, lists, strings) with every string redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value
