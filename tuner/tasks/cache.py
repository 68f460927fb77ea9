"""Generated data cached on disk, so the second run does not pay for generation."""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def cache_dir() -> Path:
    return Path(os.environ.get("TUNER_CACHE_DIR", Path.home() / ".cache" / "tuner"))


def cached_arrays(kind: str, params: dict[str, Any], make: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Arrays made by ``make()``, stored under a key of ``kind`` and ``params``."""
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / f"{kind}-{key}.npz"
    if path.is_file():
        try:
            with np.load(path) as stored:
                return {k: stored[k] for k in stored.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):  # .npz is a zip: a cut file fails there
            pass  # a truncated or foreign file: make the data again and replace it
    arrays = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)  # atomic, so a concurrent reader never sees half a file
    return arrays
