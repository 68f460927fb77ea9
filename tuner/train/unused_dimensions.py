"""The built-in dimensions a configuration's own choices leave unread.

An AdamW trial on a constant rate never reads ``muon_momentum`` (Muon's own), ``warmup_frac``
or ``horizon_samples`` (what a warm-up and a decay read): its optimizer's entry in
tuner/train/optimizer_registry.py says what it takes, its schedule's entry in
tuner/train/schedule_registry.py what it reads, and a lever that is off reads its companions
for nothing. `tuner best` leaves such dimensions out of its export
(tuner/study/reruns/exported.py), where they would read as knobs the winner turned.
"""

from __future__ import annotations

from tuner.train.optimizer_registry import OPTIMIZER_KINDS
from tuner.train.schedule_registry import SCHEDULE_KINDS
from tuner.train.trial_config import TrialConfig

OWN_OF_SOME_OPTIMIZER = frozenset(name for kind in OPTIMIZER_KINDS.values() for name in kind.own)
READ_BY_SOME_SCHEDULE = frozenset(name for kind in SCHEDULE_KINDS.values() for name in kind.reads)


def unused_dimensions(config: TrialConfig) -> set[str]:
    """The dimensions of ``config`` that neither its optimizer, nor its schedule, nor its levers read."""
    return _unused_by_optimizer(config) | _unused_by_schedule(config) | _unused_by_levers(config)


def _unused_by_optimizer(config: TrialConfig) -> set[str]:
    kind = OPTIMIZER_KINDS[config.optimizer]
    unused = set(OWN_OF_SOME_OPTIMIZER - set(kind.own))
    unused |= set() if kind.betas else {"beta1", "beta2"}
    unused |= set() if kind.amsgrad else {"amsgrad"}
    unused |= set() if kind.decay is not None else {"weight_decay"}
    return unused


def _unused_by_schedule(config: TrialConfig) -> set[str]:
    unused = set(READ_BY_SOME_SCHEDULE - set(SCHEDULE_KINDS[config.schedule].reads))
    # The horizon also times a frozen body's release and a growing batch's end (tuner/train/loop.py, levers.py).
    if config.freeze_frac > 0 or _ramps(config):
        unused.discard("horizon_samples")
    return unused


def _unused_by_levers(config: TrialConfig) -> set[str]:
    unused = {"ramp_frac"} if config.ramp_start >= 1.0 else set()  # the whole batch from the start: no ramp to time
    # The DataLoader takes these only with worker processes (tuner/train/batches.py loader_options).
    unused |= {"persistent_workers", "prefetch_factor"} if config.num_workers == 0 else set()
    unused |= {"mup_base"} if config.parametrization != "mup" else set()  # muP's base width
    return unused


def _ramps(config: TrialConfig) -> bool:
    """A growing batch (tuner/train/levers.py ramp_splits): it starts below the whole batch, over a share of the horizon."""
    return config.ramp_start < 1.0 and config.ramp_frac > 0.0
