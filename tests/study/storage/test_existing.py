"""Loading a study that must already exist creates nothing."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from tuner.errors import ConfigError
from tuner.study.storage.existing import load_existing_study


def test_load_existing_study_errors_create_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'absent.db'}"
    with pytest.raises(ConfigError) as info:
        load_existing_study(url, "exp", "best.yaml")
    assert (info.value.key, info.value.allowed, info.value.given) == ("storage", "an existing study database", url)
    assert not (tmp_path / "absent.db").exists()

    stored = f"sqlite:///{tmp_path / 'study.db'}"
    optuna.create_study(study_name="exp", storage=stored)
    with pytest.raises(ConfigError) as info:
        load_existing_study(stored, "nope", "e.yaml")
    assert (info.value.key, info.value.allowed, info.value.given) == ("study", "one of exp", "nope")
    assert load_existing_study(stored, "exp", "e.yaml").study_name == "exp"
