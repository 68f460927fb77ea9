"""The Dataset side of the Task contract, and the built-in image-folder task."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import Dataset, IterableDataset, TensorDataset

from tuner.tasks.base import Task
from tuner.tasks.image_folder_gen import make_image_folder
from tuner.tasks.images import ImageFolderData
from tuner.tasks.registry import build_task, check_task_options

PAIRS = TensorDataset(torch.zeros(4, 3), torch.arange(4))


def build(width: float) -> nn.Module:
    return nn.Linear(3, 4)


class Items(Dataset):
    def __init__(self, item: object) -> None:
        self.item = item

    def __len__(self) -> int:
        return 3

    def __getitem__(self, index: int) -> object:
        return self.item


class Stream(IterableDataset):
    def __iter__(self):
        yield torch.zeros(3), 0


@pytest.mark.parametrize(
    "train, message",
    [
        (TensorDataset(torch.zeros(4, 3)), "train_data items must be (input, label) pairs, got a 1-item tuple"),
        (Items({"x": torch.zeros(3), "y": 1}), "train_data items must be (input, label) pairs, got a dict"),
        (Items((torch.zeros(3), 0, "extra")), "got a 3-item tuple"),
        (Items(([0.0, 1.0], 1)), "with a tensor input, got a list input"),
        (Items((torch.zeros(3), 0.5)), "with an integer class label, got a float label (0.5)"),
        (Items((torch.zeros(3), torch.zeros(10))), "with an integer class label, got a Tensor label"),
        (Stream(), "must be a map-style torch.utils.data.Dataset (with __len__ and __getitem__), got Stream"),
        (TensorDataset(torch.zeros(0, 3), torch.zeros(0)), "train_data is empty"),
    ],
)
def test_a_dataset_that_breaks_the_contract_is_one_line(train: object, message: str) -> None:
    with pytest.raises(ValueError) as err:
        Task("t", build_model=build, train_data=train, test_data=PAIRS)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_labels_may_be_any_integer_type_and_tensors_and_datasets_do_not_mix() -> None:
    for label in (1, np.int64(1), torch.tensor(1)):
        assert Task("t", build_model=build, train_data=Items((torch.zeros(3), label)), test_data=PAIRS).n_train == 3
    with pytest.raises(ValueError, match="not both"):
        Task("t", torch.zeros(4, 3), torch.arange(4), torch.zeros(4, 3), torch.arange(4), build, train_data=PAIRS, test_data=PAIRS)
    with pytest.raises(ValueError, match="test_data: missing"):
        Task("t", build_model=build, train_data=PAIRS)
    with pytest.raises(ValueError, match="expected train_x, train_y, test_x, test_y tensors, or train_data and test_data"):
        Task("t", build_model=build)
    with pytest.raises(ValueError, match="build_model must be a function"):
        Task("t", train_data=PAIRS, test_data=PAIRS)


def test_the_image_folder_task_is_built_by_name(tmp_path: Path) -> None:
    root = make_image_folder(tmp_path / "set", n=24, size=12, classes=3, seed=0, test_fraction=0.25)
    check_task_options("image-folder", {"path": str(root), "size": 16})
    task = build_task("image-folder", {"path": str(root), "size": 16})
    assert isinstance(task.train_data, ImageFolderData) and task.train_data.augment and not task.test_data.augment
    assert task.n_train == 18 and len(task.test_data) == 6 and task.train_x is None
    x, _label = task.train_data[0]
    assert x.shape == (3, 16, 16) and task.test_data[0][0].shape == (3, 16, 16)  # resized to ``size``
    assert task.build_model(0.5)(x[None]).shape == (1, 3)
    assert task.spec == ("image-folder", {"path": str(root), "size": 16})
    # decode + transform is the item: what a cache keeps, then the per-epoch part.
    decoded, same_label = task.train_data.decode(5)
    assert same_label == task.train_data[5][1]
    assert torch.equal(task.train_data.transform(decoded, 5), task.train_data[5][0])
    with pytest.raises(ValueError, match="size: expected a whole number of pixels >= 1, got 0"):
        build_task("image-folder", {"path": str(root), "size": 0})


class Split(Dataset):
    """Items split into decode and transform, returning what ``decoded`` and ``transformed`` say."""

    def __init__(self, decoded: object, transformed: object = None) -> None:
        self.decoded, self.transformed = decoded, transformed

    def __len__(self) -> int:
        return 3

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return torch.zeros(3), 1

    def decode(self, index: int) -> object:
        return self.decoded

    def transform(self, x: object, index: int) -> object:
        return self.transformed if self.transformed is not None else x


@pytest.mark.parametrize(
    "train, message",
    [
        (Split(torch.zeros(3)), "train_data.decode(index) results must be (input, label) pairs, got a Tensor"),
        (Split((torch.zeros(3),)), "train_data.decode(index) results must be (input, label) pairs, got a 1-item tuple"),
        (Split((torch.zeros(3), 0.5)), "train_data.decode(index) results must be (input, label) pairs with an integer class label"),
        (
            Split((torch.zeros(3), 1), (torch.zeros(3), 1)),
            "train_data.transform(input, index) must return the input tensor alone, got a 2-item tuple",
        ),
    ],
)
def test_decode_and_transform_that_break_the_contract_are_refused_at_build(train: Dataset, message: str) -> None:
    with pytest.raises(ValueError) as err:
        Task("t", build_model=build, train_data=train, test_data=PAIRS)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_decode_may_give_any_input_that_transform_turns_into_a_tensor() -> None:
    assert Task("t", build_model=build, train_data=Split(([0.0, 1.0, 2.0], 1), torch.zeros(3)), test_data=PAIRS).n_train == 3
