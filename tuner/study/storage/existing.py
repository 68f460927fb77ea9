"""Loading a study that must already exist, as the commands that read one do (`tuner best`,
`tuner report`, `tuner doctor`, `tuner sync`, `tuner confirm`): nothing is created."""

from __future__ import annotations

from pathlib import Path

import optuna

from tuner.errors import ConfigError
from tuner.study.storage.open import STORAGE_ERRORS, optuna_storage, storage_error


def load_existing_study(storage: str, name: str | None, source: str) -> optuna.Study:
    """Load a study without creating anything: a missing file or name is a ConfigError."""
    if storage.startswith("sqlite:///"):
        path = Path(storage.removeprefix("sqlite:///"))
        if not path.is_file():
            raise ConfigError(source, "storage", "an existing study database", storage)
    readable = optuna_storage(storage, source)  # a storage proxy's client for grpc://
    try:
        names = optuna.get_all_study_names(storage=readable)
    except STORAGE_ERRORS as err:
        raise storage_error(source, storage, err) from None
    if name not in names:
        raise ConfigError(source, "study", "one of " + (", ".join(names) or "(no studies)"), name)
    return optuna.load_study(study_name=name, storage=readable)
