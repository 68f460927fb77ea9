"""Every learning-rate schedule, declared once: its name, the dimensions it reads, its factor.

``SCHEDULE_KINDS`` is the one list: the ``schedule`` dimension accepts its names
(tuner/train/trial_config.py), ``lr_factor`` (tuner/train/schedules.py) reads from a
configuration only the dimensions an entry names, and the documentation's table of schedules is
written from it (tuner/docs_reference.py). A factor maps training samples seen to a factor of
the base rate in [0, 1]; a decaying schedule reaches 0 at the horizon.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

Schedule = Callable[[int], float]
WARMUP = ("warmup_frac", "horizon_samples")  # what a warm-up then a decay to a horizon reads


@dataclass(frozen=True)
class ScheduleKind:
    """One schedule: what it does, the dimensions it reads (as keyword arguments of ``factor``)."""

    name: str
    summary: str
    factor: Callable[..., Schedule]
    reads: tuple[str, ...] = WARMUP
    decays: bool = True  # reaches 0 at horizon_samples: training past it cannot change the model


def constant() -> Schedule:
    return lambda samples: 1.0


def warmup_linear(warmup_frac: float, horizon_samples: int) -> Schedule:
    warmup = warmup_frac * horizon_samples

    def linear(samples: int) -> float:
        if samples < warmup:
            return samples / warmup
        return max(0.0, (horizon_samples - samples) / (horizon_samples - warmup))

    return linear


def warmup_cosine(warmup_frac: float, horizon_samples: int) -> Schedule:
    warmup = warmup_frac * horizon_samples

    def cosine(samples: int) -> float:
        if samples < warmup:
            return samples / warmup
        progress = min(1.0, (samples - warmup) / (horizon_samples - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return cosine


def warmup_stable_decay(warmup_frac: float, horizon_samples: int, decay_frac: float) -> Schedule:
    # Hägele et al. 2024: the full rate until the last ``decay_frac`` of the horizon, then a
    # (1 - sqrt) cooldown to 0; a cooldown longer than what the warm-up leaves starts at its end.
    warmup = warmup_frac * horizon_samples
    cooldown = max(warmup, (1.0 - decay_frac) * horizon_samples)

    def wsd(samples: int) -> float:
        if samples < warmup:
            return samples / warmup
        if samples < cooldown:
            return 1.0
        if samples >= horizon_samples:
            return 0.0
        return 1.0 - math.sqrt((samples - cooldown) / (horizon_samples - cooldown))

    return wsd


def onecycle(warmup_frac: float, horizon_samples: int) -> Schedule:
    # As torch's OneCycleLR: cosine up from lr/25 over the warm-up, then cosine down to ~0.
    warmup = warmup_frac * horizon_samples
    start, end = 1 / 25, 1 / 25 / 1e4

    def one(samples: int) -> float:
        if samples >= horizon_samples:
            return 0.0
        if samples < warmup:
            p = samples / warmup
            return start + (1 - start) * 0.5 * (1 - math.cos(math.pi * p))
        p = (samples - warmup) / (horizon_samples - warmup)
        return end + (1 - end) * 0.5 * (1 + math.cos(math.pi * p))

    return one


SCHEDULE_KINDS: dict[str, ScheduleKind] = {
    kind.name: kind
    for kind in (
        ScheduleKind("constant", "the base rate throughout", constant, reads=(), decays=False),
        ScheduleKind("warmup_linear", "a linear warm-up over `warmup_frac` of the horizon, then linear decay to 0 at it", warmup_linear),
        ScheduleKind("warmup_cosine", "a linear warm-up, then cosine decay to 0 at the horizon", warmup_cosine),
        ScheduleKind("onecycle", "as torch's `OneCycleLR`: cosine up from lr/25 over the warm-up, then cosine down to ~0", onecycle),
        ScheduleKind(
            "warmup_stable_decay",
            "a warm-up, the full rate, then a (1 - sqrt) cooldown over the last `decay_frac` of the horizon (Hägele et al. 2024)",
            warmup_stable_decay,
            reads=(*WARMUP, "decay_frac"),
        ),
    )
}
