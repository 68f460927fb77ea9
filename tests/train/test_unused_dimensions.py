"""The dimensions a configuration's own choices leave unread, from the optimizer and schedule registries."""

from __future__ import annotations

from tuner.train.trial_config import TrialConfig
from tuner.train.unused_dimensions import unused_dimensions


def test_adamw_on_a_constant_rate_reads_no_other_optimizers_or_schedules_dimensions() -> None:
    unused = unused_dimensions(TrialConfig(optimizer="adamw", schedule="constant"))
    assert {"muon_momentum", "sf_weight_lr_power", "decay_frac", "warmup_frac", "horizon_samples"} <= unused
    assert not {"optimizer", "lr", "beta1", "beta2", "amsgrad", "weight_decay", "schedule", "batch_size"} & unused


def test_each_optimizer_and_schedule_reads_its_own() -> None:
    assert "muon_momentum" not in unused_dimensions(TrialConfig(optimizer="muon"))
    assert "sf_weight_lr_power" not in unused_dimensions(TrialConfig(optimizer="adamw_schedulefree"))
    assert "amsgrad" in unused_dimensions(TrialConfig(optimizer="nadam"))  # NAdam takes no AMSGrad flag
    wsd = unused_dimensions(TrialConfig(schedule="warmup_stable_decay"))
    assert not {"warmup_frac", "horizon_samples", "decay_frac"} & wsd
    assert "decay_frac" in unused_dimensions(TrialConfig(schedule="warmup_cosine"))


def test_the_horizon_also_times_a_frozen_body_and_a_growing_batch() -> None:
    assert "horizon_samples" not in unused_dimensions(TrialConfig(schedule="constant", freeze_frac=0.2))
    assert "horizon_samples" not in unused_dimensions(TrialConfig(schedule="constant", ramp_start=0.5, ramp_frac=0.2))
    assert "ramp_frac" in unused_dimensions(TrialConfig(ramp_start=1.0))
    assert {"prefetch_factor", "persistent_workers"} <= unused_dimensions(TrialConfig(num_workers=0))
    assert not {"prefetch_factor", "persistent_workers"} & unused_dimensions(TrialConfig(num_workers=2))
