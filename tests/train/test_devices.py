"""Devices of a worker (tuner/train/devices.py): thread shares, GPU claims (faked on this CPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tuner.train import devices


def test_threads_are_split_evenly_and_never_below_one() -> None:
    assert devices.split_threads(8, 3) == [3, 3, 2]
    assert devices.split_threads(2, 2) == [1, 1]
    assert devices.split_threads(2, 3) == [1, 1, 1]  # oversubscribed, but every worker runs


@pytest.fixture
def four_fake_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(devices, "gpu_count", lambda: 4)
    monkeypatch.setattr(devices, "_gpu_key", lambda i: f"fake-{i}")
    monkeypatch.setattr(devices, "LOCK_DIR", tmp_path / "locks")
    monkeypatch.setattr(devices, "_held", [])
    monkeypatch.setattr(devices, "_claimed", None)
    yield
    for handle in devices._held:
        handle.close()


def test_workers_claim_different_gpus_until_none_is_free(four_fake_gpus: None) -> None:
    assert devices.claim_gpus(1) == [0]
    assert devices.claim_gpus(2) == [1, 2]  # a lock is held per open file: this process counts as another worker
    with pytest.raises(devices.DevicesBusy, match="--share-devices"):
        devices.claim_gpus(2)
    assert devices.claim_gpus(2, share=True, worker_index=1)[0] == 3  # the free one first, then a shared one


def test_a_data_parallel_trial_uses_the_claimed_gpus_in_order(four_fake_gpus: None) -> None:
    devices._claimed = [2, 0]
    assert devices.trial_devices(torch.device("cuda", 2), 2) == [torch.device("cuda", 2), torch.device("cuda", 0)]
    with pytest.raises(ValueError, match="needs 3 GPUs"):
        devices.trial_devices(torch.device("cuda", 2), 3)
    assert devices.trial_devices(torch.device("cpu"), 2) == [torch.device("cpu")] * 2
