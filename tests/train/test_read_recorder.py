"""Which ``config`` fields a training function reads: a view over the TrialConfig that records them."""

from __future__ import annotations

import dataclasses
import pickle

from tuner.train.config_reads import recording
from tuner.train.trial_config import TrialConfig


def test_the_view_is_the_configuration_and_records_each_field_read() -> None:
    reads: set[str] = set()
    view = recording(TrialConfig(optimizer="adamw", lr=0.02, hyper={"n_layer": 2}), reads)
    assert isinstance(view, TrialConfig) and view.as_params() == TrialConfig(optimizer="adamw", lr=0.02, hyper={"n_layer": 2}).as_params()
    reads.clear()
    assert (view.optimizer, view.lr, view.hyper["n_layer"]) == ("adamw", 0.02, 2)
    assert reads == {"optimizer", "lr", "hyper"}


def test_what_reads_every_field_marks_every_field_and_copies_do_not_record() -> None:
    reads: set[str] = set()
    view = recording(TrialConfig(), reads)
    copy = dataclasses.replace(view, lr=0.5)  # reads every field it keeps, as it should
    assert reads == {f.name for f in dataclasses.fields(TrialConfig)} - {"lr"}
    reads.clear()
    assert copy.lr == 0.5 and not reads  # a copy records nothing: it is the function's own object
    plain = pickle.loads(pickle.dumps(view))  # a spawned worker gets the plain configuration
    assert type(plain) is TrialConfig and plain == TrialConfig()
