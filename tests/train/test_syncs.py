"""Host syncs per step (tuner/train/syncs.py): nothing to count on a CPU, where every operation
is synchronous; counted on a GPU (tests/cuda/test_cuda.py), and kept out of the evaluation boundary."""

from __future__ import annotations

import warnings

import torch
from conftest import CPU, FAST

from tuner.train.result import Outcome
from tuner.train.syncs import SYNC_WARNING, HostSyncs, count_warnings_into
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig


def test_a_cpu_trial_records_no_sync_figure(synthetic) -> None:
    r = train_trial(synthetic, TrialConfig(lr=1e-2, batch_size=64), FAST.stop_rule(), CPU, seed=0)
    assert r.outcome is Outcome.REACHED, r.reason
    assert r.host_syncs_per_step is None  # not zero: nothing was counted


def test_counting_on_a_cpu_leaves_the_warnings_as_they_were() -> None:
    syncs = HostSyncs(CPU)
    before = (warnings.showwarning, list(warnings.filters))
    syncs.resume()
    assert (warnings.showwarning, list(warnings.filters)) == before
    syncs.pause()
    assert not syncs.available and syncs.per_step(10) is None


# What c10 raises at each synchronising operation in CUDA's sync debug mode (no GPU here to raise it).
RAISED = SYNC_WARNING + " (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:160.)"


def test_sync_warnings_are_counted_even_where_warnings_are_errors() -> None:
    counter = HostSyncs(torch.device("cuda", 0))  # made without touching a GPU
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # python -W error, or a test runner's filterwarnings
        count_warnings_into(counter)
        try:
            for _ in range(3):
                warnings.warn(RAISED, UserWarning, stacklevel=1)  # the same line each time: counted every time
        finally:
            count_warnings_into(None)
    assert counter.count == 3 and counter.per_step(6) == 0.5


def test_other_warnings_are_still_shown_and_syncs_outside_counting_are_not_counted() -> None:
    counter = HostSyncs(torch.device("cuda", 0))
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        count_warnings_into(counter)
        try:
            warnings.warn("something else", UserWarning, stacklevel=1)
        finally:
            count_warnings_into(None)
        warnings.warn(RAISED, UserWarning, stacklevel=1)  # counting is off: shown, not counted
    assert counter.count == 0
    assert [str(w.message) for w in shown] == ["something else", RAISED]
