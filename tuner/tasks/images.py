"""Image classification from a folder per class (torchvision's ImageFolder layout), read from disk.

Two layouts are read: ``root/train/<class>/*`` with ``root/test/<class>/*``, or one
``root/<class>/*`` that is split deterministically (per class, by the seed). Images are decoded
per item (torchvision's decoder when ``import torchvision`` works, else Pillow), turned to RGB
floats, normalised with the training split's per-channel mean and deviation, and, for the
training split, augmented on the fly: a random crop of the image padded by 4 and a horizontal
flip, drawn from a generator seeded by (seed, epoch, index), so that every run sees the same
images in the same epoch whatever the number of DataLoader workers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from PIL import Image, UnidentifiedImageError
from torch import nn
from torch.utils.data import Dataset

from tuner.errors import first_line
from tuner.tasks.base import scaled

EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
PAD = 4  # pixels of padding around the image before the random crop: shifts of up to 4 pixels
STATS_IMAGES = 512  # training images read to estimate the per-channel mean and deviation


def _torchvision_decoder() -> Callable[[Path], torch.Tensor] | None:
    try:
        # A torchvision wheel built for another torch fails at import with a RuntimeError
        # ("operator torchvision::nms does not exist"), not an ImportError: any failure means Pillow.
        from torchvision.io import ImageReadMode, decode_image, read_file
    except Exception:  # noqa: BLE001
        return None
    return lambda path: decode_image(read_file(str(path)), mode=ImageReadMode.RGB)


_DECODE = _torchvision_decoder()


def read_image(path: Path) -> torch.Tensor:
    """The image as a uint8 tensor of shape (3, H, W); a file that is not an image is a one-line ValueError."""
    try:
        if _DECODE is not None:
            return _DECODE(path)
        with Image.open(path) as image:
            pixels = np.asarray(image.convert("RGB"))
    except (OSError, UnidentifiedImageError, SyntaxError, ValueError, RuntimeError, Image.DecompressionBombError) as err:
        # Pillow raises SyntaxError for some broken PNGs, torchvision RuntimeError for any.
        first = first_line(err)
        raise ValueError(f"image {path}: cannot be read ({type(err).__name__}: {first})") from None
    return torch.from_numpy(pixels.copy()).permute(2, 0, 1)


class ImageFolderData(Dataset):
    """One split of an image folder: items are (float tensor 3xHxW, normalised; int label).

    ``augment`` applies the random crop and flip (meant for the training split). Call
    ``set_epoch`` before each epoch for fresh augmentations; with DataLoader workers, do it
    before the loader's iterator is made (each epoch), as workers hold a copy of the dataset.
    ``mean`` and ``std`` default to the training split's own, estimated from up to 512 images.
    ``size`` resizes every image to size x size pixels (default: the first training image's size).
    An item is ``transform(*decode(index))``: the cache of a trial (tuner/train/data_cache.py)
    keeps the decoded image and still draws the augmentation per epoch.
    """

    def __init__(
        self,
        root: str | Path,
        split: str = "train",
        augment: bool = False,
        seed: int = 0,
        test_fraction: float = 0.2,
        mean: torch.Tensor | None = None,
        std: torch.Tensor | None = None,
        size: int | None = None,
    ) -> None:
        if split not in ("train", "test"):
            raise ValueError(f"split: expected train or test, got {split!r}")
        self.root = Path(root)
        self.split, self.augment, self.seed, self.epoch = split, augment, seed, 0
        self.classes, self.samples = index_folder(self.root, split, seed, test_fraction)
        if mean is None or std is None:
            mean, std = channel_stats(self.root, seed, test_fraction)
        self.mean, self.std = mean.view(3, 1, 1), std.view(3, 1, 1)
        if size is not None:
            if not isinstance(size, int) or isinstance(size, bool) or size < 1:
                raise ValueError(f"size: expected a whole number of pixels >= 1, got {size!r}")
            self.size: tuple[int, ...] = (size, size)
        else:
            first = self.samples[0][0] if split == "train" else index_folder(self.root, "train", seed, test_fraction)[1][0][0]
            self.size = tuple(read_image(first).shape[1:])  # every item of both splits comes out this size

    def __len__(self) -> int:
        return len(self.samples)

    def set_epoch(self, epoch: int) -> None:
        """Augmentations are drawn per (seed, epoch, index): a new epoch, new crops and flips."""
        self.epoch = epoch

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        x, label = self.decode(index)
        return self.transform(x, index), label

    def decode(self, index: int) -> tuple[torch.Tensor, int]:
        """The image read, resized and normalised, and its label: the same every epoch."""
        path, label = self.samples[index]
        image = read_image(path)
        if tuple(image.shape[1:]) != self.size:  # a folder of mixed sizes: all as the first (or ``size``)
            image = nn.functional.interpolate(image[None].float(), size=self.size, mode="bilinear", antialias=True)[0]
        return (image.float() / 255 - self.mean) / self.std, label

    def transform(self, x: torch.Tensor, index: int) -> torch.Tensor:
        """This epoch's random crop and flip of a decoded image (itself when not augmenting)."""
        return self._augment(x, np.random.default_rng([self.seed, self.epoch, index])) if self.augment else x

    @staticmethod
    def _augment(x: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        height, width = x.shape[1:]
        dy, dx = rng.integers(0, 2 * PAD + 1, size=2)
        # Padded after normalisation: the zeros are the training set's mean colour, not black.
        x = nn.functional.pad(x, (PAD, PAD, PAD, PAD))[:, dy : dy + height, dx : dx + width]
        return x.flip(2) if rng.random() < 0.5 else x


class ImageFolderTask(NamedTuple):
    """What the image-folder task is made of: two datasets, a model builder and the class count."""

    train: ImageFolderData
    test: ImageFolderData
    build_model: Callable[[float], nn.Module]
    num_classes: int


def image_folder(
    root: str | Path, seed: int = 0, test_fraction: float = 0.2, augment: bool = True, size: int | None = None
) -> ImageFolderTask:
    """The training split (augmented unless told not to), the held-out split, and a residual CNN builder.

    ``test_fraction`` applies to the one-folder layout only; train/ and test/ are used as they are.
    """
    mean, std = channel_stats(Path(root), seed, test_fraction)
    train = ImageFolderData(root, "train", augment, seed, test_fraction, mean, std, size)
    test = ImageFolderData(root, "test", False, seed, test_fraction, mean, std, size)
    num_classes = len(train.classes)
    # A partial, not a lambda: it pickles, for DataLoader workers and the processes of a data-parallel trial.
    return ImageFolderTask(train, test, functools.partial(build_resnet, num_classes=num_classes), num_classes)


def index_folder(root: Path, split: str, seed: int = 0, test_fraction: float = 0.2) -> tuple[list[str], list[tuple[Path, int]]]:
    """Class names (the training split's folder names, sorted) and the (path, label) pairs of one split.

    Raises FileNotFoundError for a folder that does not exist, ValueError for one without
    images or with a single class; each message is one line naming the folder.
    """
    if not root.is_dir():
        raise FileNotFoundError(f"image folder {root}: no such folder")
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction: expected a number in (0, 1), got {test_fraction}")
    two_splits = (root / "train").is_dir() or (root / "test").is_dir()
    if two_splits and not ((root / "train").is_dir() and (root / "test").is_dir()):
        raise ValueError(f"image folder {root}: expected both train/ and test/ (or one folder per class), found only one")
    train_base = root / "train" if two_splits else root
    classes = [name for name in _class_folders(train_base) if _images(train_base / name)]
    if not classes:
        raise ValueError(f"image folder {train_base}: no images ({', '.join(EXTENSIONS)}) in any class folder")
    if len(classes) == 1:
        raise ValueError(f"image folder {train_base}: one class ({classes[0]}); classification needs at least two")
    if two_splits and split == "test":
        unknown = sorted(set(_class_folders(root / "test")) - set(classes))
        if unknown:  # its label would mean nothing to a model trained on train/
            raise ValueError(f"image folder {root}: test/ has classes that train/ has not: {', '.join(unknown)}")
    samples = []
    for label, name in enumerate(classes):
        paths = _images(root / split / name) if two_splits else _images(root / name)
        if not two_splits:  # each class split alike: the same seed, the same held-out images
            order = np.random.default_rng([seed, label]).permutation(len(paths))
            n_test = min(len(paths) - 1, max(1, round(len(paths) * test_fraction)))
            chosen = order[:n_test] if split == "test" else order[n_test:]
            paths = [paths[i] for i in sorted(chosen)]
        samples.extend((path, label) for path in paths)
    if not samples:
        raise ValueError(f"image folder {root}: no images in the {split} split")
    return classes, samples


def _class_folders(base: Path) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")) if base.is_dir() else []


def _images(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix.lower() in EXTENSIONS and p.is_file())


def channel_stats(root: Path, seed: int = 0, test_fraction: float = 0.2) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and standard deviation of the training split, from up to 512 of its images."""
    _, samples = index_folder(root, "train", seed, test_fraction)
    picked = np.random.default_rng(seed).permutation(len(samples))[:STATS_IMAGES]
    pixels = torch.cat([read_image(samples[i][0]).flatten(1).float() / 255 for i in sorted(picked)], dim=1)
    return pixels.mean(dim=1), pixels.std(dim=1).clamp_min(1e-3)  # a flat channel divides by little, not zero


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions with batch norm and a shortcut (a 1x1 convolution where the shape changes)."""

    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or inputs != outputs:
            self.shortcut = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def build_resnet(width: float, num_classes: int, in_channels: int = 3, blocks: tuple[int, ...] = (1, 1, 1)) -> nn.Module:
    """A small ResNet: a 3x3 stem, stages of 16, 32, 64 channels (times ``width``), each halving the size after the first."""
    channels = [scaled(16 * 2**stage, width) for stage in range(len(blocks))]
    layers: list[nn.Module] = [nn.Conv2d(in_channels, channels[0], 3, padding=1, bias=False), nn.BatchNorm2d(channels[0]), nn.ReLU()]
    inputs = channels[0]
    for stage, (outputs, count) in enumerate(zip(channels, blocks)):
        for block in range(count):
            layers.append(ResidualBlock(inputs, outputs, stride=2 if stage > 0 and block == 0 else 1))
            inputs = outputs
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inputs, num_classes)]
    return nn.Sequential(*layers)
