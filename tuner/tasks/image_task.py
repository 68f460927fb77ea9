"""The built-in ``image-folder`` task: images on disk, a folder per class, read through a Dataset."""

from __future__ import annotations

from pathlib import Path

from tuner.tasks.base import Task
from tuner.tasks.images import image_folder


def image_folder_task(
    path: str, size: int = 32, augment: bool = True, test_fraction: float = 0.2, seed: int = 0, target: float = 0.9
) -> Task:
    """A residual CNN on the images under ``path`` (tuner/tasks/images.py), resized to ``size`` pixels.

    ``path`` holds train/<class>/ and test/<class>/, or one folder per class that is split
    by ``test_fraction`` and ``seed``. The training split is augmented (random crop and flip)
    unless ``augment`` is false. ``scripts/make_image_folder.py`` writes such a folder.
    """
    data = image_folder(Path(path), seed=seed, test_fraction=test_fraction, augment=augment, size=size)
    return Task(f"image-folder:{Path(path).name}", build_model=data.build_model, target=target, train_data=data.train, test_data=data.test)
