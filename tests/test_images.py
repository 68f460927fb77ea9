"""The image-folder task: datasets read from disk, reproducible augmentation, a residual CNN, clear errors."""

from __future__ import annotations

import pickle
import runpy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from tuner.tasks import images
from tuner.tasks.image_folder_gen import class_names, make_image_folder
from tuner.tasks.images import ImageFolderData, build_resnet, image_folder

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def two_splits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 images of 4 classes as train/<class>/ and test/<class>/ (a quarter held out)."""
    return make_image_folder(tmp_path_factory.mktemp("shapes") / "set", n=40, size=16, classes=4, seed=3, test_fraction=0.25)


@pytest.fixture(scope="module")
def one_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 images of 4 classes as <class>/, which the task splits itself."""
    return make_image_folder(tmp_path_factory.mktemp("shapes") / "set", n=40, size=16, classes=4, seed=3, test_fraction=0)


def test_this_machine_reads_with_pillow() -> None:
    # torchvision does not load with this torch here; the Pillow path is the one these tests run.
    assert images._DECODE is None


def test_the_generator_writes_a_balanced_folder_per_class(two_splits: Path, one_folder: Path) -> None:
    names = class_names(4)
    assert names == ["00_circle", "01_square", "02_triangle", "03_cross"]
    for split, per_class in (("train", 8), ("test", 2)):
        assert sorted(p.name for p in (two_splits / split).iterdir()) == names
        assert [len(list((two_splits / split / name).glob("*.png"))) for name in names] == [per_class] * 4
    assert sorted(p.name for p in one_folder.iterdir()) == names
    with Image.open(next((two_splits / "train" / names[0]).glob("*.png"))) as image:
        assert image.size == (16, 16) and image.mode == "RGB"


def test_the_generator_is_deterministic_per_seed(tmp_path: Path) -> None:
    def pixels(seed: int, folder: str) -> list[np.ndarray]:
        root = make_image_folder(tmp_path / folder, n=6, size=16, classes=2, seed=seed, test_fraction=0)
        return [np.asarray(Image.open(p)) for p in sorted(root.rglob("*.png"))]

    first, again, other = pixels(1, "first"), pixels(1, "again"), pixels(2, "other")
    assert all((a == b).all() for a, b in zip(first, again))
    assert not all((a == b).all() for a, b in zip(first, other))


@pytest.mark.parametrize("layout", ["two_splits", "one_folder"])
def test_items_are_normalised_tensors_and_int_labels(layout: str, request: pytest.FixtureRequest) -> None:
    root = request.getfixturevalue(layout)
    task = image_folder(root, seed=0)
    assert task.num_classes == 4 and task.train.classes == task.test.classes
    assert len(task.train) + len(task.test) == 40 and len(task.test) == 8
    x, y = task.train[0]
    assert x.dtype == torch.float32 and x.shape == (3, 16, 16)
    assert isinstance(y, int) and 0 <= y < 4
    assert sorted({label for _, label in task.train.samples}) == [0, 1, 2, 3]
    # Normalised with the training split's statistics: near zero mean and unit spread there.
    plain = ImageFolderData(root, "train", augment=False, seed=0)
    stacked = torch.stack([plain[i][0] for i in range(len(plain))])
    assert stacked.mean(dim=(0, 2, 3)).abs().max() < 0.05
    assert (stacked.std(dim=(0, 2, 3)) - 1).abs().max() < 0.05


def test_one_folder_is_split_the_same_way_for_a_seed_and_not_for_another(one_folder: Path) -> None:
    def held_out(seed: int) -> list[Path]:
        return [path for path, _ in ImageFolderData(one_folder, "test", seed=seed).samples]

    assert held_out(0) == held_out(0)
    assert held_out(0) != held_out(1)
    train = {path for path, _ in ImageFolderData(one_folder, "train", seed=0).samples}
    assert not train & set(held_out(0)) and len(train) + len(held_out(0)) == 40


def test_augmentation_is_reproducible_per_seed_and_changes_with_the_epoch(two_splits: Path) -> None:
    def epoch_items(seed: int, epoch: int) -> torch.Tensor:
        data = ImageFolderData(two_splits, "train", augment=True, seed=seed)
        data.set_epoch(epoch)
        return torch.stack([data[i][0] for i in range(len(data))])

    assert torch.equal(epoch_items(0, 0), epoch_items(0, 0))
    assert not torch.equal(epoch_items(0, 0), epoch_items(0, 1))
    assert not torch.equal(epoch_items(0, 0), epoch_items(1, 0))
    # Each augmented item is a shifted (and maybe mirrored) view of the plain one, padded with zeros.
    plain = ImageFolderData(two_splits, "train", augment=False, seed=0)
    x, shifted = plain[5][0], epoch_items(0, 3)[5]
    padded = torch.nn.functional.pad(x, (4, 4, 4, 4))
    views = [padded[:, dy : dy + 16, dx : dx + 16] for dy in range(9) for dx in range(9)]
    assert any(torch.equal(shifted, v) or torch.equal(shifted, v.flip(2)) for v in views)


def test_the_held_out_split_is_not_augmented(two_splits: Path) -> None:
    task = image_folder(two_splits, seed=0)
    first = task.test[2][0]
    task.test.set_epoch(7)
    assert torch.equal(task.test[2][0], first)


def test_workers_see_the_same_batches_as_the_main_process(two_splits: Path) -> None:
    data = ImageFolderData(two_splits, "train", augment=True, seed=0)
    data.set_epoch(2)
    alone = torch.cat([x for x, _ in DataLoader(data, batch_size=8)])
    with_workers = torch.cat([x for x, _ in DataLoader(data, batch_size=8, num_workers=2)])
    assert torch.equal(alone, with_workers)


def test_the_resnet_builds_trains_a_step_and_grows_with_width(two_splits: Path) -> None:
    task = image_folder(two_splits)
    x, y = next(iter(DataLoader(task.train, batch_size=8)))
    model = task.build_model(1.0)
    logits = model(x)
    assert logits.shape == (8, 4)
    torch.nn.functional.cross_entropy(logits, y).backward()
    assert all(p.grad is not None for p in model.parameters())
    sizes = [sum(p.numel() for p in build_resnet(width, 10).parameters()) for width in (0.25, 0.5, 1.0, 2.0)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    assert any(isinstance(m, torch.nn.BatchNorm2d) for m in build_resnet(1.0, 10).modules())
    assert pickle.loads(pickle.dumps(task.build_model))(0.5)(x).shape == (8, 4)  # other processes can build it too


def test_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"^image folder .*nowhere: no such folder$"):
        image_folder(tmp_path / "nowhere")


def test_a_folder_without_images(tmp_path: Path) -> None:
    (tmp_path / "empty" / "cats").mkdir(parents=True)
    (tmp_path / "empty" / "cats" / "notes.txt").write_text("no image here")
    with pytest.raises(ValueError, match=r"^image folder .*empty: no images \(\.png, .*\) in any class folder$"):
        image_folder(tmp_path / "empty")


def test_a_folder_with_one_class(tmp_path: Path, two_splits: Path) -> None:
    only = tmp_path / "only"
    (only / "circles").mkdir(parents=True)
    for path in list((two_splits / "train" / "00_circle").glob("*.png"))[:3]:
        (only / "circles" / path.name).write_bytes(path.read_bytes())
    with pytest.raises(ValueError, match=r"^image folder .*only: one class \(circles\); classification needs at least two$"):
        image_folder(only)


def test_a_file_that_is_not_an_image_names_itself(tmp_path: Path, two_splits: Path) -> None:
    root = tmp_path / "broken"
    good = next((two_splits / "train" / "00_circle").glob("*.png")).read_bytes()
    for split in ("train", "test"):
        for name in ("a", "b"):
            (root / split / name).mkdir(parents=True)
            (root / split / name / "0.png").write_bytes(good)
    (root / "train" / "b" / "9.png").write_bytes(b"not a png")
    data = ImageFolderData(root, "train", mean=torch.zeros(3), std=torch.ones(3))
    assert [path.name for path, _ in data.samples] == ["0.png", "0.png", "9.png"]
    with pytest.raises(ValueError, match=r"^image .*9\.png: cannot be read \(UnidentifiedImageError"):
        data[2]


def test_the_script_writes_a_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = REPO_ROOT / "scripts" / "make_image_folder.py"
    result = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path / "set"), "--n", "20", "--size", "16", "--classes", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "set").rglob("*.png"))) == 20
    main = runpy.run_path(str(script))["main"]  # the error path in-process: a second interpreter start costs seconds
    assert main(["--out", str(tmp_path / "bad"), "--n", "1"]) == 2
    assert capsys.readouterr().err.splitlines() == ["make_image_folder: error: n: expected at least one image per class (10), got 1"]
