"""The commands around a study: set-up and checks, one training run, the stores and the UI: one module each."""

from __future__ import annotations

from tuner.cli import compress, doctor, env, init, storage_proxy, sync, train, ui, validate

TOOL_COMMANDS = (init, validate, train, compress, env, doctor, ui, sync, storage_proxy)
