"""The batch ceiling: the batch dimension bounded, before the study starts, by what one
forward pass of the space's most demanding model can take on this machine.

Measured once (tuner/train/batch_probe.py) for the widest width of the space, in its most
memory-hungry precision (fp32 when offered) and its layout, and kept in the study's
storage, in a study of its own (``tuner-batch-ceilings``) whose user attributes hold one
entry per (task, model shape, width, precision, layout, device): every study in that
storage, on SQLite or PostgreSQL alike, reads it instead of measuring again. Measuring
writes nothing: the study keeps a fresh measurement when it opens, after its stores are
checked (tuner/study/run/prepare.py), so that bad input leaves no storage behind.

- On a GPU, the largest batch that fits (an out-of-memory binary search): a batch above it
  could only end as an ``oom`` trial.
- On a CPU, the throughput knee: the smallest batch within 10% of the best throughput of
  the batches measured, doubling over the space's range. A larger batch buys no more
  samples per second, and rarely needs fewer samples to reach the target.

``batch_size`` is the effective batch of one optimizer step: ``accumulate`` passes of a
``devices``-way data-parallel trial each see ``batch_size / (accumulate x devices)``. The
ceiling bounds what one pass sees, so the dimension is bounded at ceiling x the largest
``accumulate`` x the largest ``devices`` of the space; a removed value is printed as a note.

On by default with a GPU (``trainer.batch_ceiling: null``): an over-large batch is a
certain failure there. Off by default on a CPU: the knee is a preference, not a limit,
measured on a machine that is often shared, and it changes the space an experiment
states; ``trainer.batch_ceiling: true`` turns it on (3-5 s at the start of the first study
in a storage for the MNIST-1D CNN's five batch sizes on a shared 2-core CPU, first-call
costs included; then a read).
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import dataclass, field
from typing import Any

import optuna
import sqlalchemy
import torch

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.space.space import Choice, Fixed, Range, SearchSpace
from tuner.study.storage.open import CONNECT_TIMEOUT_S, STORAGE_ERRORS, open_storage, optuna_storage, sqlite_path, storage_error
from tuner.study.storage.proxy import is_proxy
from tuner.study.study_record import ceiling_entry, write_ceiling_entry
from tuner.tasks.base import Task
from tuner.tasks.hyperparameters import build_model
from tuner.train.batch_probe import Probe, fits, largest_fitting, throughput_knee, throughputs
from tuner.train.trial_config import TrialConfig

CEILINGS_STUDY = "tuner-batch-ceilings"
# Optuna writes its schema version into these when it opens a storage that lacks them.
OPTUNA_TABLES = {"studies", "version_info", "alembic_version"}


@dataclass
class Measured:
    """What the storage keeps for one model on one device: throughput by batch (a CPU), or the
    largest batch that fitted and the smallest that did not (a GPU)."""

    throughput: dict[int, float] = field(default_factory=dict)
    fits: int | None = None
    ooms: int | None = None

    def as_attr(self, key: dict[str, Any]) -> dict[str, Any]:
        return {"key": key, "throughput": {str(b): v for b, v in self.throughput.items()}, "fits": self.fits, "ooms": self.ooms}

    @classmethod
    def of(cls, attr: dict[str, Any] | None) -> Measured:
        if not attr:
            return cls()
        return cls({int(b): float(v) for b, v in attr.get("throughput", {}).items()}, attr.get("fits"), attr.get("ooms"))


def enabled(experiment: Experiment, device: torch.device) -> bool:
    """``trainer.batch_ceiling``, or by default: on with a GPU, off on a CPU (module docstring)."""
    setting = experiment.trainer.batch_ceiling
    return device.type == "cuda" if setting is None else setting


Bounded = tuple[SearchSpace, list[str], dict[str, Any]]


def bound_batch(experiment: Experiment, task: Task, space: SearchSpace, device: torch.device) -> Bounded:
    """The space with the batch sizes above the ceiling removed, the notes saying so, and a
    fresh measurement to keep (``{entry name: attribute}``, empty when read from the storage).

    It reads the storage and writes nothing: the run keeps what it measured (``keep_ceilings``)
    once the stores are checked.
    """
    spec = space.dims.get("batch_size")
    if not enabled(experiment, device) or spec is None or isinstance(spec, Fixed):
        return space, [], {}
    if task.train_fn is not None or task.train_x is None:
        return space, ["batch ceiling not measured: it probes tasks whose training data are tensors"], {}
    batches = sorted(spec.choices) if isinstance(spec, Choice) else doubling(int(spec.low), int(spec.high))
    config = probe_config(space)
    key = ceiling_key(experiment, task, config, device)
    started = time.perf_counter()
    name = entry_name(key)
    stored = stored_ceilings(experiment)
    measured = Measured.of(ceiling_entry(stored, name) if stored is not None else None)
    probe = Probe(task, config, device, experiment.seed)
    fresh = measure(probe, measured, batches, device)
    to_keep = {name: measured.as_attr(key)} if fresh else {}
    how = f"measured in {time.perf_counter() - started:.1f} s and kept in the storage" if fresh else "read from the storage"
    if device.type == "cuda":
        if measured.fits is None:
            raise ConfigError(
                experiment.source,
                "search_space.batch_size",
                "a batch size one forward pass fits on this GPU",
                f"{batches[0]} (out of memory at width {config.width:g}, {config.precision})",
            )
        ceiling, what = measured.fits, "the largest batch that fits this GPU"
    else:
        ceiling, what = throughput_knee({b: measured.throughput[b] for b in batches}), "the throughput knee on this CPU"
    bound = ceiling * largest(space, "accumulate") * largest(space, "devices")
    narrowed, removed = without_above(space, bound)
    about = f"batch ceiling {ceiling} per forward pass ({what}, width {config.width:g}, {config.precision}; {how})"
    if not removed:
        return narrowed, [f"{about}: every batch size of the space is within it"], to_keep
    return narrowed, [f"removed batch_size {removed}: above {bound}, the {about}"], to_keep


def doubling(low: int, high: int) -> list[int]:
    """``low``, twice that, ... up to and including ``high``."""
    out = [low]
    while out[-1] * 2 < high:
        out.append(out[-1] * 2)
    return out + [high] if out[-1] != high else out


def measure(probe: Probe, measured: Measured, batches: list[int], device: torch.device) -> bool:
    """Fill in what ``measured`` lacks for these batches; True when anything was measured."""
    if device.type == "cuda":
        low, high = batches[0], batches[-1]
        known = measured.fits is not None and (measured.fits >= high or measured.ooms is not None)
        if known or (measured.ooms is not None and measured.ooms <= low):
            return False
        good, bad = largest_fitting(lambda b: fits(probe, b), measured.fits or low, high)
        measured.fits = good
        measured.ooms = bad if bad is not None else measured.ooms
        return True
    missing = [b for b in batches if b not in measured.throughput]
    measured.throughput.update(throughputs(probe, missing) if missing else {})
    return bool(missing)


def probe_config(space: SearchSpace) -> TrialConfig:
    """The space's most demanding model: its widest width, fp32 when offered, its layout."""
    precisions = values(space, "precision") or ["fp32"]
    layouts = values(space, "channels_last") or [False]
    return TrialConfig(
        width=float(max(values(space, "width") or [TrialConfig.width])),
        precision="fp32" if "fp32" in precisions else precisions[0],
        channels_last=all(layouts),
    )


def values(space: SearchSpace, dim: str) -> list[Any]:
    """The values a dimension can take: its choices, its value, or the ends of its range."""
    spec = space.dims.get(dim)
    if isinstance(spec, Choice):
        return list(spec.choices)
    if isinstance(spec, Fixed):
        return [spec.value]
    return [spec.low, spec.high] if spec is not None else []


def largest(space: SearchSpace, dim: str) -> int:
    return int(max(values(space, dim) or [1]))


def without_above(space: SearchSpace, bound: int) -> tuple[SearchSpace, str]:
    """The space with batch sizes above ``bound`` removed (the smallest kept if none is within)."""
    spec = space.dims["batch_size"]
    if isinstance(spec, Choice):
        kept = tuple(b for b in spec.choices if b <= bound) or (min(spec.choices),)
        removed = ", ".join(str(b) for b in spec.choices if b not in kept)
        new: Any = Choice(kept, spec.when) if len(kept) > 1 else Fixed(kept[0], spec.when)
    else:
        assert isinstance(spec, Range)
        if spec.high <= bound:
            return space, ""
        step = int(spec.step or 1)
        high = max(int(spec.low), int(spec.low) + (bound - int(spec.low)) // step * step)
        removed = f"{high + 1}-{int(spec.high)}"
        new = Range(spec.low, high, spec.log, spec.step, spec.when) if high > spec.low else Fixed(int(spec.low), spec.when)
    if not removed:
        return space, ""
    return SearchSpace({**space.dims, "batch_size": new}, space.custom), removed


def ceiling_key(experiment: Experiment, task: Task, config: TrialConfig, device: torch.device) -> dict[str, Any]:
    """What the ceiling depends on: the task and its model's shape, width, precision, layout, device."""
    model = build_model(task, config)
    shapes = [[name, list(p.shape)] for name, p in model.named_parameters()]
    assert task.train_x is not None
    return {
        "task": experiment.task,
        "task_options": experiment.task_options,
        "input": list(task.train_x.shape[1:]),
        "model": hashlib.sha1(json.dumps(shapes).encode()).hexdigest()[:16],
        "width": config.width,
        "precision": config.precision,
        "channels_last": config.channels_last,
        "device": device_kind(device),
    }


def entry_name(key: dict[str, Any]) -> str:
    """The user attribute of the ceilings study that holds the measurement for ``key``."""
    return "ceiling-" + hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def device_kind(device: torch.device) -> str:
    """The device as the ceiling depends on it: a GPU's name and memory, a CPU's model and threads."""
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return f"cuda {props.name} {props.total_memory // 2**20} MiB"
    return f"cpu {platform.processor() or platform.machine()} {torch.get_num_threads()} threads"


def ceilings_study(experiment: Experiment) -> optuna.Study:
    """The storage's study of measured ceilings (created on first use)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # as open_study: no "A new study created" lines
    storage = open_storage(experiment.storage, None, experiment.source)
    return optuna.create_study(study_name=CEILINGS_STUDY, storage=storage, load_if_exists=True)


def keep_ceilings(experiment: Experiment, entries: dict[str, Any]) -> None:
    """Write measured ceilings (``bound_batch``'s third value) to the storage's ceilings study."""
    if entries:
        study = ceilings_study(experiment)
        for name, attr in entries.items():
            write_ceiling_entry(study, name, attr)


def stored_ceilings(experiment: Experiment) -> optuna.Study | None:
    """The storage's ceilings study, read without writing anything (Optuna's storage creates
    its tables when it opens): None where the storage, its tables or the study are not there yet."""
    url = experiment.storage
    path = sqlite_path(url)
    if (path is not None and not path.exists()) or (path is None and url.startswith("sqlite")):
        return None  # no file yet, or in memory
    try:
        if is_proxy(url):  # the proxy's storage made its tables when it started
            return optuna.load_study(study_name=CEILINGS_STUDY, storage=optuna_storage(url, experiment.source))
        engine = sqlalchemy.create_engine(url, connect_args={} if path is not None else {"connect_timeout": CONNECT_TIMEOUT_S})
        try:
            tables = set(sqlalchemy.inspect(engine).get_table_names())
        finally:
            engine.dispose()
        if not OPTUNA_TABLES <= tables:
            return None
        storage = optuna.storages.RDBStorage(url, skip_table_creation=True)  # its tables are there: opening writes nothing
        return optuna.load_study(study_name=CEILINGS_STUDY, storage=storage)
    except KeyError:
        return None  # no ceiling measured in this storage yet
    except STORAGE_ERRORS as err:
        raise storage_error(experiment.source, url, err) from None
