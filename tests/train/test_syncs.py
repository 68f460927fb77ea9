"""Host syncs per step (tuner/train/syncs.py): nothing to count on a CPU, where every operation
is synchronous; counted on a GPU (tests/cuda/test_cuda.py), and kept out of the evaluation boundary."""

from __future__ import annotations

import warnings

from conftest import CPU, FAST

from tuner.train.result import Outcome
from tuner.train.syncs import HostSyncs
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
