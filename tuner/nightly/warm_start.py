"""Warm start: the best configurations of earlier nights, queued first in tonight's search."""

from __future__ import annotations

import json
from typing import Any

import optuna

from tuner.nightly.history import Night
from tuner.study.record import warm_start_attrs
from tuner.study.reruns.confirmation import candidates, confirmed_winner
from tuner.study.space.space import Choice, Range, SearchSpace
from tuner.study.storage.open import optuna_storage

WARM_NIGHTS = 3  # earlier nights whose best configurations seed tonight's search


def within(space: SearchSpace, params: dict[str, Any]) -> dict[str, Any] | None:
    """``params`` as tonight's space can run them: dimensions no longer searched are dropped;
    None when a value lies outside tonight's choices or range (Optuna would fail the trial)."""
    kept = {}
    for name, value in params.items():
        spec = space.dims.get(name)
        if isinstance(spec, Choice):
            if value not in spec.choices:
                return None
        elif isinstance(spec, Range):
            if not spec.low <= value <= spec.high:
                return None
        else:
            continue  # absent or fixed tonight: the space decides
        kept[name] = value
    return kept or None


def warm_start(study: optuna.Study, earlier: list[Night], storage: str, space: SearchSpace, k: int) -> list[str]:
    """Enqueue the best configurations of earlier nights, newest night first; returns labels."""
    queued: list[str] = []
    seen: set[str] = set()
    for night in earlier[:WARM_NIGHTS]:
        prior = optuna.load_study(study_name=night.study_name, storage=optuna_storage(storage, "tuner nightly"))
        winner = confirmed_winner(prior)
        for trial in ([winner.trial] if winner else []) + candidates(prior, k):
            params = within(space, trial.params)
            key = json.dumps(params, sort_keys=True)
            if len(queued) >= k:
                return queued
            if params is not None and key not in seen:
                seen.add(key)
                label = f"{night.date} trial {trial.number}"
                study.enqueue_trial(params, user_attrs=warm_start_attrs(label), skip_if_exists=True)
                queued.append(label)
    return queued
