"""The Task contract: data, a model builder that takes a width, and its held-out metrics."""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import Dataset, IterableDataset


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Fraction of correct argmax predictions, as a 0-d tensor (no host sync)."""
    return (logits.argmax(dim=-1) == labels).float().mean()


# The held-out metrics every task with data has: ``metric`` (named accuracy) and ``loss``.
BUILT_IN_METRICS = {"accuracy": "maximize", "loss": "minimize"}


@dataclass(frozen=True)
class HeldOutMetric:
    """A further held-out metric a task declares: a trial can target it by ``name``
    (``objective.metric``). ``fn`` maps (logits, labels) to a 0-d tensor; ``direction`` is
    ``maximize`` or ``minimize``."""

    name: str
    direction: str
    fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class Task:
    """What a trial trains.

    The data is either ``train_x``/``train_y`` and ``test_x``/``test_y``, in-memory tensors
    (the trainer moves them to the device once), or ``train_data`` and ``test_data``,
    map-style ``torch.utils.data.Dataset``s whose items are (input tensor, integer label)
    pairs, read through a DataLoader whose settings are search dimensions (num_workers,
    pin_memory, persistent_workers, prefetch_factor, cache; see tuner/train/batches.py). A
    dataset may split its items so that a cache keeps per-epoch augmentation
    (tuner/train/data_cache.py): ``decode(index)`` returns the (input, label) pair a cache keeps,
    ``transform(input, index)`` returns the input alone; the first results of both are checked
    when the task is built. ``build_model(width)`` returns a fresh ``nn.Module``
    whose size scales with the width multiplier (1.0 is the reference model). ``metric``
    maps (logits, labels) to a 0-d tensor where higher is better (the metric named
    ``accuracy``); ``loss`` is the held-out loss (named ``loss``, lower is better);
    ``metrics`` declares further held-out metrics (``HeldOutMetric``). The experiment's
    ``objective.metric`` names the one a trial targets; ``target`` is the value the task
    suggests reaching for accuracy (the experiment's objective.target wins).
    """

    name: str
    train_x: torch.Tensor | None = None
    train_y: torch.Tensor | None = None
    test_x: torch.Tensor | None = None
    test_y: torch.Tensor | None = None
    build_model: Callable[[float], nn.Module] = None  # type: ignore[assignment]  # required: checked below
    target: float = 0.9
    metric: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = accuracy
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] = field(default=F.cross_entropy)
    # (name, options) when built by name: how the other processes of a data-parallel trial build it too.
    spec: tuple[str, dict] | None = field(default=None, repr=False, compare=False)
    train_data: Dataset | None = field(default=None, repr=False)
    test_data: Dataset | None = field(default=None, repr=False)
    # The task's own hyperparameters with their defaults, when not read from the signatures
    # of build_model and loss (tuner/tasks/hyperparameters.py).
    hyperparameters: dict[str, Any] | None = None
    # A training function of one's own, reporting to a session (tuner/train/session.py):
    # such a task has no data or model builder of its own.
    train_fn: Callable[..., None] | None = field(default=None, repr=False)
    # The ``config`` fields a training function read in this process's trials so far
    # (tuner/train/config_reads.py): the dimensions that reach its loop.
    config_reads: set[str] = field(default_factory=set, repr=False, compare=False)
    # A pretrained start (the experiment's init_from, checked against the model by prepare):
    # every trial loads this state dict into the freshly built model (tuner/train/checkpoint.py).
    init_state: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    metrics: tuple[HeldOutMetric, ...] = ()

    def __post_init__(self) -> None:
        if self.train_fn is not None:
            return
        if not callable(self.build_model):
            # ValueError, as every other broken-task check: the task builder reports it in one line.
            raise ValueError(f"task {self.name}: build_model must be a function of the width, got {type(self.build_model).__name__}")  # noqa: TRY004
        tensors = (self.train_x, self.train_y, self.test_x, self.test_y)
        datasets = (self.train_data, self.test_data)
        if any(t is not None for t in tensors) and any(d is not None for d in datasets):
            raise ValueError(
                f"task {self.name}: give tensors (train_x, train_y, test_x, test_y) or datasets (train_data, test_data), not both"
            )
        if any(d is not None for d in datasets):
            for key, data in zip(("train_data", "test_data"), datasets):
                check_dataset(data, key)
            return
        if any(t is None for t in tensors):
            raise ValueError(f"task {self.name}: expected train_x, train_y, test_x, test_y tensors, or train_data and test_data datasets")
        if len(self.train_x) != len(self.train_y) or len(self.test_x) != len(self.test_y):
            raise ValueError(f"task {self.name}: inputs and labels differ in length")
        if len(self.train_x) == 0 or len(self.test_x) == 0:
            raise ValueError(f"task {self.name}: empty train or held-out split")

    def metric_directions(self) -> dict[str, str]:
        """Every held-out metric a trial of this task can target, with its direction."""
        return {**BUILT_IN_METRICS, **{m.name: m.direction for m in self.metrics}}

    def metric_fn(self, name: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
        """The function of (logits, labels) that measures the held-out metric ``name``."""
        declared = {"accuracy": self.metric, "loss": self.loss, **{m.name: m.fn for m in self.metrics}}
        if name not in declared:
            raise ValueError(f"task {self.name}: no held-out metric {name!r}; it measures " + ", ".join(declared))
        return declared[name]

    @property
    def n_train(self) -> int:
        """Samples in the training split, whichever form it takes."""
        return len(self.train_data) if self.train_data is not None else len(self.train_x)


def check_dataset(data: Any, key: str) -> None:
    """Raise a one-line ValueError unless ``data`` is a non-empty map-style Dataset of (input tensor, integer label) pairs.

    Only the first item is read: enough to catch the usual mistakes (a bare tensor, a dict,
    a label that is not a class index) before any trial starts.
    """
    # No task name here: the error line that shows this names the task already, and cuts a long value.
    where = key
    if data is None:
        raise ValueError(f"{where}: missing (train_data and test_data go together)")
    if isinstance(data, IterableDataset) or not (hasattr(data, "__getitem__") and hasattr(data, "__len__")):
        raise ValueError(f"{where} must be a map-style torch.utils.data.Dataset (with __len__ and __getitem__), got {type(data).__name__}")
    if len(data) == 0:
        raise ValueError(f"{where} is empty")
    check_pair(data[0], f"{where} items")
    check_split_items(data, where)


def check_pair(item: Any, what: str, tensor_input: bool = True) -> None:
    """Raise a one-line ValueError unless ``item`` is an (input, integer label) pair (a tensor input with ``tensor_input``)."""
    if not (isinstance(item, (tuple, list)) and len(item) == 2):
        raise ValueError(f"{what} must be (input, label) pairs, got {_shown(item)}")
    x, label = item
    if tensor_input and not isinstance(x, torch.Tensor):
        raise ValueError(f"{what} must be (input, label) pairs with a tensor input, got a {type(x).__name__} input")
    if isinstance(label, torch.Tensor):
        integer = label.dim() == 0 and not label.is_floating_point() and not label.is_complex()
    else:
        integer = isinstance(label, numbers.Integral) and not isinstance(label, bool)  # int, numpy integers
    if not integer:
        raise ValueError(
            f"{what} must be (input, label) pairs with an integer class label, got a {type(label).__name__} label ({label!r:.40})"
        )


def check_split_items(data: Any, where: str) -> None:
    """A dataset that splits its items (``decode`` and ``transform``, tuner/train/data_cache.py): the first results checked.

    ``decode(index)`` must return the (input, label) pair a cache keeps, and ``transform(input,
    index)`` the input alone; a ``decode`` that returns the bare input would fail every cached
    trial, so it is refused here, before any trial, naming the method and what it returned.
    """
    decode, transform = getattr(data, "decode", None), getattr(data, "transform", None)
    if not callable(decode):
        return
    decoded = decode(0)
    # The input may be anything a transform turns into a tensor; without a transform it is what the model sees.
    check_pair(decoded, f"{where}.decode(index) results", tensor_input=not callable(transform))
    if callable(transform):
        x = transform(decoded[0], 0)
        if not isinstance(x, torch.Tensor):
            # ValueError as for every item the contract refuses (tests and callers catch that one).
            raise ValueError(f"{where}.transform(input, index) must return the input tensor alone, got {_shown(x)}")  # noqa: TRY004


def _shown(value: Any) -> str:
    """A returned value in a few words: its type, and its length when it is a tuple or list."""
    return f"a {len(value)}-item {type(value).__name__}" if isinstance(value, (tuple, list)) else f"a {type(value).__name__}"


def scaled(base: int, width: float) -> int:
    """A layer size scaled by the width multiplier, never below 1."""
    return max(1, round(base * width))
