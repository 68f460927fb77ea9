"""Learning-rate schedules as a factor of the base rate, indexed by training samples seen."""

from __future__ import annotations

import math
from collections.abc import Callable

from tuner.train.trial_config import TrialConfig

Schedule = Callable[[int], float]


def lr_factor(config: TrialConfig) -> Schedule:
    """Factor in [0, 1] by samples seen. Decaying schedules reach 0 at the horizon.

    A constant schedule reads neither the horizon nor the warm-up: an own loop's recorded
    reads (tuner/train/config_reads.py) then name only what its schedule applies.
    """
    if config.schedule == "constant":
        return lambda samples: 1.0
    horizon = config.horizon_samples
    warmup = config.warmup_frac * horizon

    def warm(samples: int) -> float | None:
        return samples / warmup if samples < warmup else None

    if config.schedule == "warmup_linear":

        def linear(samples: int) -> float:
            w = warm(samples)
            return w if w is not None else max(0.0, (horizon - samples) / (horizon - warmup))

        return linear
    if config.schedule == "warmup_cosine":

        def cosine(samples: int) -> float:
            w = warm(samples)
            if w is not None:
                return w
            progress = min(1.0, (samples - warmup) / (horizon - warmup))
            return 0.5 * (1.0 + math.cos(math.pi * progress))

        return cosine
    if config.schedule == "warmup_stable_decay":
        # Hägele et al. 2024: the full rate until the last ``decay_frac`` of the horizon, then a
        # (1 - sqrt) cooldown to 0; a cooldown longer than what the warm-up leaves starts at its end.
        cooldown = max(warmup, (1.0 - config.decay_frac) * horizon)

        def wsd(samples: int) -> float:
            w = warm(samples)
            if w is not None:
                return w
            if samples < cooldown:
                return 1.0
            if samples >= horizon:
                return 0.0
            return 1.0 - math.sqrt((samples - cooldown) / (horizon - cooldown))

        return wsd
    if config.schedule == "onecycle":
        # As torch's OneCycleLR: cosine up from lr/25 over the warm-up, then cosine down to ~0.
        start, end = 1 / 25, 1 / 25 / 1e4

        def onecycle(samples: int) -> float:
            if samples >= horizon:
                return 0.0
            if samples < warmup:
                p = samples / warmup
                return start + (1 - start) * 0.5 * (1 - math.cos(math.pi * p))
            p = (samples - warmup) / (horizon - warmup)
            return end + (1 - end) * 0.5 * (1 + math.cos(math.pi * p))

        return onecycle
    raise ValueError(f"unknown schedule {config.schedule}")


def decays_to_zero(config: TrialConfig) -> bool:
    """True when training past the horizon cannot change the model."""
    return config.schedule != "constant"
