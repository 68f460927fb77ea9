"""One training configuration: the values a trial trains with, and the names they may take."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tuner.train.compile_modes import COMPILE_MODE_KINDS
from tuner.train.mup import PARAMETRIZATIONS
from tuner.train.optimizer_registry import OPTIMIZER_KINDS
from tuner.train.precision import PRECISION_KINDS
from tuner.train.schedule_registry import SCHEDULE_KINDS

# The names each dimension accepts come from its registry, the one place an optimizer, schedule,
# precision or compile mode is declared (tuner/train/optimizer_registry.py, schedule_registry.py,
# precision.py, compile_modes.py).
OPTIMIZERS = tuple(OPTIMIZER_KINDS)
AMSGRAD_OPTIMIZERS = tuple(name for name, kind in OPTIMIZER_KINDS.items() if kind.amsgrad)
ADAM_FAMILY = ("adam", "adamw", "nadam", "radam", "adamax")  # what search_spaces/default.yaml offers
PRECISIONS = tuple(PRECISION_KINDS)
SCHEDULES = tuple(SCHEDULE_KINDS)
CACHES = ("none", "memory", "device")
# torch.compile's mode, or eager; reduce-overhead replays CUDA graphs (a CUDA device only: tuner/study/space/levers.py)
COMPILE_MODES = tuple(COMPILE_MODE_KINDS)
LR_SCALINGS = ("none", "linear", "sqrt")  # how lr follows the batch: lr is then the rate per 256 samples
# The DataLoader of a Dataset task (tuner/train/batches.py); removed from a tensor task's space.
PIPELINE_DIMENSIONS = ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor", "cache")
# The built-in loop's efficiency levers (tuner/train/levers.py).
LEVER_DIMENSIONS = ("compile", "channels_last", "accumulate", "lr_scaling", "ramp_start", "ramp_frac")
# Those an own loop reaches through the session's calls (session.compile, session.train_step,
# session.schedule: tuner/train/session_levers.py); the others are removed from an own loop's space.
SESSION_LEVERS = ("compile", "accumulate", "lr_scaling")


@dataclass(frozen=True)
class TrialConfig:
    """Everything a trial trains with. The defaults are the MNIST-1D paper's setting."""

    optimizer: str = "adam"
    amsgrad: bool = False
    lr: float = 1e-2
    beta1: float = 0.9
    beta2: float = 0.999
    weight_decay: float = 0.0
    muon_momentum: float = 0.95  # muon: the momentum of its orthogonalised updates
    sf_weight_lr_power: float = 2.0  # adamw_schedulefree: how strongly larger rates weigh in its average
    schedule: str = "constant"
    warmup_frac: float = 0.05
    decay_frac: float = 0.2  # warmup_stable_decay: the share of the horizon its cooldown takes
    horizon_samples: int = 50_000
    batch_size: int = 100
    precision: str = "fp32"
    width: float = 1.0
    # How the model's rates scale with width: "mup" keeps a rate found at one width right at
    # another (tuner/train/mup.py); a model at mup_base (muP's base width) trains the same under both.
    parametrization: str = "standard"
    mup_base: float = 1.0
    devices: int = 1  # processes of a data-parallel trial (tuner/train/data_parallel.py); batch_size is split between them
    # The data path of a Dataset task (tuner/train/batches.py, tuner/train/data_cache.py).
    num_workers: int = 0
    pin_memory: bool = False
    persistent_workers: bool = False
    prefetch_factor: int = 2
    cache: str = "none"
    # Fine-tuning from a pretrained start (init_from; tuner/train/checkpoint.py): the share of
    # the horizon the body (all but the last Linear) stays frozen, and the head's lr multiplier.
    freeze_frac: float = 0.0
    head_lr_mult: float = 1.0
    # Efficiency levers (tuner/train/levers.py). batch_size stays the effective batch of one
    # optimizer step: ``accumulate`` splits it into that many forward/backward passes, and a
    # growing batch starts at ``ramp_start`` of it and reaches it at ``ramp_frac`` of the horizon.
    compile: str = "none"
    channels_last: bool = False
    accumulate: int = 1
    lr_scaling: str = "none"
    ramp_start: float = 1.0
    ramp_frac: float = 0.0
    # The task's own hyperparameters by name (tuner/tasks/hyperparameters.py): part of the
    # configuration (equality, as_dict, the record's config key), left out of the hash.
    hyper: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> TrialConfig:
        """Build from sampled parameters; dimensions not given keep their defaults, and a
        name that is not a built-in dimension is one of the task's own hyperparameters."""
        known = {k: DIMENSIONS[k].cast(v) for k, v in params.items() if k in DIMENSIONS}
        hyper = {k: v for k, v in params.items() if k not in DIMENSIONS and k != "hyper"}
        return cls(**known, hyper={**params.get("hyper", {}), **hyper})

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> TrialConfig:
        """Read back a configuration a study stored (``as_dict``), by any version: a field it
        lacks keeps its default, and a key this version no longer knows is left out
        (``unknown_keys`` names those, for a note). Not taken as one of the task's own
        hyperparameters: `tuner best` would export a dropped dimension that no task accepts."""
        return cls(**{k: v for k, v in stored.items() if k in STORED_FIELDS})

    @staticmethod
    def unknown_keys(stored: Mapping[str, Any]) -> list[str]:
        """The keys of a stored configuration that ``from_stored`` leaves out, sorted."""
        return sorted(k for k in stored if k not in STORED_FIELDS)

    def as_dict(self) -> dict[str, Any]:
        """Every field; the task's own hyperparameters as the mapping ``hyper``.

        ``dataclasses.asdict``'s result, without its deep copies: every field is a plain value
        but ``hyper``, a mapping of plain values (a study groups its trials by this, many times over)."""
        out = {name: getattr(self, name) for name in _FIELD_NAMES}
        out["hyper"] = dict(self.hyper)
        return out

    def as_params(self) -> dict[str, Any]:
        """Every value under its dimension's name, the task's own beside the built-in ones:
        a search space that fixes them all (what `tuner best` exports), or MLflow parameters."""
        params = {k: v for k, v in dataclasses.asdict(self).items() if k != "hyper"}
        return {**params, **self.hyper}

    def _pipeline_short(self) -> str:
        """The data path, where it differs from the default (a Dataset task's loader)."""
        parts = (
            [f"workers={self.num_workers}" + ("p" if self.persistent_workers else "") + f"/{self.prefetch_factor}"]
            if self.num_workers
            else []
        )
        parts += ["pin"] if self.pin_memory else []
        parts += [f"cache={self.cache}"] if self.cache != "none" else []
        return "".join(" " + p for p in parts)

    def _levers_short(self) -> str:
        """The efficiency levers that are on."""
        parts = [f"compile={self.compile}"] if self.compile != "none" else []
        parts += ["channels_last"] if self.channels_last else []
        parts += [f"acc={self.accumulate}"] if self.accumulate > 1 else []
        parts += [f"lr/256:{self.lr_scaling}"] if self.lr_scaling != "none" else []
        parts += [f"ramp={self.ramp_start:g}@{self.ramp_frac:.2g}"] if self.ramp_start < 1 and self.ramp_frac > 0 else []
        return "".join(" " + p for p in parts)

    def short(self) -> str:
        """A few words naming the key choices, for progress lines and run names."""
        return (
            f"{self.optimizer}{'+ams' if self.amsgrad else ''} lr={self.lr:.3g} "
            f"bs={self.batch_size} {self.precision} w={self.width:g} {self.schedule}"
            + (f" x{self.devices}" if self.devices > 1 else "")
            + self._pipeline_short()
            + self._levers_short()
            + "".join(f" {k}={v:.3g}" if isinstance(v, float) else f" {k}={v}" for k, v in self.hyper.items())
        )


# What ``as_dict`` stores, and so what ``from_stored`` reads back.
STORED_FIELDS = frozenset(f.name for f in dataclasses.fields(TrialConfig))
_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(TrialConfig))


@dataclass(frozen=True)
class Dimension:
    """What one dimension accepts: its value type, allowed names and numeric bounds."""

    name: str
    kind: type
    allowed: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_inclusive: bool = True
    max_inclusive: bool = False

    def cast(self, value: Any) -> Any:
        return self.kind(value)

    def describe(self) -> str:
        if self.allowed is not None:
            return "one of " + ", ".join(str(a) for a in self.allowed)
        if self.kind is bool:
            return "true or false"
        parts = [self.kind.__name__]
        if self.minimum is not None:
            parts.append(f"{'>=' if self.min_inclusive else '>'} {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"{'<=' if self.max_inclusive else '<'} {self.maximum:g}")
        return " ".join(parts)

    def accepts(self, value: Any) -> bool:
        if self.kind is bool:
            return isinstance(value, bool)
        if isinstance(value, bool):
            return False
        if self.kind is str:
            ok = isinstance(value, str)
        elif self.kind is int:
            ok = isinstance(value, int)
        else:
            ok = isinstance(value, (int, float))
        if not ok:
            return False
        if self.allowed is not None and value not in self.allowed:
            return False
        if self.minimum is not None and (value < self.minimum or (not self.min_inclusive and value == self.minimum)):
            return False
        return not (self.maximum is not None and (value > self.maximum or (not self.max_inclusive and value == self.maximum)))


DIMENSIONS: dict[str, Dimension] = {
    d.name: d
    for d in (
        Dimension("optimizer", str, OPTIMIZERS),
        Dimension("amsgrad", bool),
        Dimension("lr", float, minimum=0.0, min_inclusive=False),
        Dimension("beta1", float, minimum=0.0, maximum=1.0),
        Dimension("beta2", float, minimum=0.0, maximum=1.0),
        Dimension("weight_decay", float, minimum=0.0),
        Dimension("muon_momentum", float, minimum=0.0, maximum=1.0),
        Dimension("sf_weight_lr_power", float, minimum=0.0),
        Dimension("schedule", str, SCHEDULES),
        Dimension("warmup_frac", float, minimum=0.0, maximum=1.0),
        Dimension("decay_frac", float, minimum=0.0, maximum=1.0, min_inclusive=False, max_inclusive=True),
        Dimension("horizon_samples", int, minimum=1),
        Dimension("batch_size", int, minimum=1),
        Dimension("precision", str, PRECISIONS),
        Dimension("width", float, minimum=0.0, min_inclusive=False),
        Dimension("parametrization", str, PARAMETRIZATIONS),
        Dimension("mup_base", float, minimum=0.0, min_inclusive=False),
        Dimension("devices", int, minimum=1),
        Dimension("num_workers", int, minimum=0),
        Dimension("pin_memory", bool),
        Dimension("persistent_workers", bool),
        Dimension("prefetch_factor", int, minimum=1),
        Dimension("cache", str, CACHES),
        Dimension("freeze_frac", float, minimum=0.0, maximum=1.0, max_inclusive=True),
        Dimension("head_lr_mult", float, minimum=0.0, min_inclusive=False),
        Dimension("compile", str, COMPILE_MODES),
        Dimension("channels_last", bool),
        Dimension("accumulate", int, minimum=1),
        Dimension("lr_scaling", str, LR_SCALINGS),
        Dimension("ramp_start", float, minimum=0.0, maximum=1.0, min_inclusive=False, max_inclusive=True),
        Dimension("ramp_frac", float, minimum=0.0, maximum=1.0, max_inclusive=True),
    )
}
