"""Tasks: the contract, built-ins, a user's own task, data files, and the data cache."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import CPU, FAST, write

from tuner.api import train_once
from tuner.errors import ConfigError
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.tasks.base import Task, accuracy, scaled
from tuner.tasks.cache import cache_dir, cached_arrays
from tuner.tasks.registry import BUILTIN_TASKS, build_task, check_task_name
from tuner.train.result import Outcome
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig

_unique = itertools.count()

USER_TASK = '''
"""A user's own task, written the way the README documents it."""
import torch
from torch import nn

from tuner import Task


def make_task(n: int = 600, seed: int = 0) -> Task:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=gen)
    y = (x[:, 0] + x[:, 1] > 0).long()  # a line through the origin: easy to learn

    def build(width: float) -> nn.Module:
        hidden = max(1, round(16 * width))
        return nn.Sequential(nn.Linear(8, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    return Task("halfplane", x[: n // 2], y[: n // 2], x[n // 2 :], y[n // 2 :], build, target=0.9)


def not_a_task():
    return {"x": 1}
'''


def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> str:
    """Write a module under a fresh name into tmp_path and make it importable."""
    name = f"user_task_{next(_unique)}"
    write(tmp_path / "usercode" / f"{name}.py", source)
    monkeypatch.syspath_prepend(str(tmp_path / "usercode"))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


def test_builtin_names_resolve_without_building() -> None:
    assert set(BUILTIN_TASKS) == {
        "mnist1d-cnn",
        "mnist1d-mlp",
        "mnist1d-gru",
        "digits-mlp",
        "synthetic",
        "file-mlp",
        "image-folder",
        "charlm",
    }
    for name in BUILTIN_TASKS:
        check_task_name(name)


def test_synthetic_task_follows_the_contract() -> None:
    task = build_task("synthetic", {"n_train": 300, "n_test": 100, "features": 5, "classes": 3})
    assert isinstance(task, Task)
    assert task.train_x.shape == (300, 5) and task.test_x.shape == (100, 5)
    assert task.train_y.dtype == torch.long and int(task.train_y.max()) < 3
    logits = task.build_model(1.0)(task.test_x)
    assert logits.shape == (100, 3)
    assert 0.0 <= float(task.metric(logits, task.test_y)) <= 1.0
    # Deterministic: the same seed gives the same data.
    again = build_task("synthetic", {"n_train": 300, "n_test": 100, "features": 5, "classes": 3})
    assert torch.equal(task.train_x, again.train_x)


def test_task_contract_rejects_bad_data() -> None:
    x, y = torch.zeros(4, 2), torch.zeros(3, dtype=torch.long)
    with pytest.raises(ValueError, match="inputs and labels differ in length"):
        Task("bad", x, y, x, torch.zeros(4, dtype=torch.long), lambda w: torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="empty train or held-out split"):
        Task("bad", x, torch.zeros(4, dtype=torch.long), x[:0], y[:0], lambda w: torch.nn.Linear(2, 2))


def test_accuracy_and_scaled() -> None:
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0]])
    assert float(accuracy(logits, torch.tensor([0, 1, 1, 1]))) == 0.75
    assert (scaled(25, 1.0), scaled(25, 0.5), scaled(25, 2.0), scaled(1, 0.1)) == (25, 12, 50, 1)


def test_digits_task_builds() -> None:
    task = build_task("digits-mlp")
    assert task.train_x.shape[1] == 64 and len(task.train_x) + len(task.test_x) == 1797
    assert float(task.train_x.max()) <= 1.0
    assert task.build_model(1.0)(task.test_x[:3]).shape == (3, 10)


# -- a user-defined task -------------------------------------------------------------------


def test_user_task_is_validated_and_trained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = user_module(tmp_path, monkeypatch, USER_TASK)
    path = write(
        tmp_path / "mine.yaml",
        f"""
        task: {module}:make_task
        task_options: {{n: 800}}
        search_space: {{optimizer: adam, lr: 0.02, batch_size: 32, precision: fp32}}
        objective: {{target: 0.9, eval_every_samples: 128, cap_s: 5.0}}
        trainer: {{threads: 1}}
        """,
    )
    exp = load_experiment(path)
    assert exp.task == f"{module}:make_task" and exp.task_options == {"n": 800}
    r = train_once(exp)
    assert r.outcome is Outcome.REACHED, r.reason
    assert r.samples_to_target is not None and r.samples_to_target % 32 == 0


def test_user_task_with_an_option_it_does_not_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = user_module(tmp_path, monkeypatch, USER_TASK)
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path / "e.yaml", f"task: {module}:make_task\ntask_options: {{size: 3}}\n"))
    assert info.value.key == "task_options"
    assert "size" in str(info.value)


def test_user_task_whose_import_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = user_module(tmp_path, monkeypatch, 'raise RuntimeError("needs the GPU cluster\\nmore detail")\n')
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path / "e.yaml", f"task: {module}:make_task\n"))
    err = info.value
    assert err.key == "task"
    assert err.given == f"{module}:make_task (needs the GPU cluster)"
    assert "\n" not in str(err)


def test_user_task_function_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = user_module(tmp_path, monkeypatch, USER_TASK)
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path / "e.yaml", f"task: {module}:make_tsk\n"))
    assert info.value.given == f"{module}:make_tsk ({module} has no function make_tsk)"


def test_user_task_that_returns_something_else_fails_before_any_study(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = user_module(tmp_path, monkeypatch, USER_TASK)
    exp = load_experiment(write(tmp_path / "e.yaml", f"task: {module}:not_a_task\n"))
    with pytest.raises(ConfigError) as info:
        prepare(exp)
    assert info.value.key == "task"
    assert info.value.given == f"{module}:not_a_task (TypeError: task {module}:not_a_task returned dict, not tuner.Task)"
    assert not (tmp_path / "tuner.db").exists()


def test_a_task_option_value_the_task_rejects_fails_in_prepare(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "e.yaml", "task: synthetic\ntask_options: {n_train: 0}\n"))
    with pytest.raises(ConfigError) as info:
        prepare(exp)
    assert info.value.key == "task"
    assert "ValueError: task synthetic: empty train or held-out split" in str(info.value)


# -- file-mlp ------------------------------------------------------------------------------


def blobs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centres = np.array([[4.0, 0, 0, 0], [0, 4.0, 0, 0], [0, 0, 4.0, 0]])
    return centres[y] + rng.normal(0, 0.5, (n, 4)), y


def test_file_mlp_from_npz_split_by_fraction(tmp_path: Path) -> None:
    x, y = blobs(500)
    np.savez(tmp_path / "data.npz", x=x, y=y)
    task = build_task("file-mlp", {"path": str(tmp_path / "data.npz"), "test_fraction": 0.2})
    assert task.name == "file:data.npz"
    assert (len(task.train_x), len(task.test_x)) == (400, 100)
    assert task.train_x.dtype == torch.float32 and task.train_y.dtype == torch.long
    r = train_trial(task, TrialConfig(lr=1e-2, batch_size=32), FAST.stop_rule(), CPU)
    assert r.outcome is Outcome.REACHED, r.reason


def test_file_mlp_from_npz_with_its_own_test_split(tmp_path: Path) -> None:
    x, y = blobs(300)
    xt, yt = blobs(50, seed=1)
    np.savez(tmp_path / "data.npz", x=x.reshape(300, 2, 2), y=y, x_test=xt, y_test=yt)  # features are flattened
    task = build_task("file-mlp", {"path": str(tmp_path / "data.npz")})
    assert task.train_x.shape == (300, 4) and task.test_x.shape == (50, 4)
    assert torch.equal(task.test_y, torch.from_numpy(yt))
    assert task.build_model(1.0)(task.test_x).shape == (50, 3)


def test_file_mlp_from_csv_with_a_header(tmp_path: Path) -> None:
    x, y = blobs(200)
    rows = "\n".join(",".join(f"{v:.4f}" for v in row) + f",{label}" for row, label in zip(x, y))
    write(tmp_path / "data.csv", "a,b,c,d,label\n" + rows + "\n")
    task = build_task("file-mlp", {"path": str(tmp_path / "data.csv"), "test_fraction": 0.25, "hidden": 8})
    assert (len(task.train_x), len(task.test_x)) == (150, 50)
    assert task.train_x.shape[1] == 4
    assert sorted(set(task.train_y.tolist()) | set(task.test_y.tolist())) == [0, 1, 2]
    assert task.build_model(2.0)[0].out_features == 16


def test_file_mlp_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="data file not found"):
        build_task("file-mlp", {"path": str(tmp_path / "none.npz")})
    np.savez(tmp_path / "wrong.npz", features=np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"expected arrays x and y, found \['features'\]"):
        build_task("file-mlp", {"path": str(tmp_path / "wrong.npz")})
    write(tmp_path / "data.txt", "1,2\n")
    with pytest.raises(ValueError, match="expected a .npz or .csv file"):
        build_task("file-mlp", {"path": str(tmp_path / "data.txt")})


def test_file_mlp_missing_file_is_a_one_line_config_error(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "e.yaml", f"task: file-mlp\ntask_options: {{path: {tmp_path / 'none.npz'}}}\n"))
    with pytest.raises(ConfigError) as info:
        prepare(exp)
    assert "FileNotFoundError: data file not found" in str(info.value)


def test_file_mlp_without_its_path_option_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_experiment(write(tmp_path / "e.yaml", "task: file-mlp\n"))
    assert info.value.key == "task_options"
    assert "path" in str(info.value)


# -- the data cache ------------------------------------------------------------------------


def test_cache_dir_follows_the_environment(tmp_path: Path) -> None:
    assert cache_dir() == tmp_path / "cache"  # set by the autouse fixture


def test_second_call_loads_from_disk() -> None:
    calls: list[int] = []

    def make() -> dict[str, np.ndarray]:
        calls.append(1)
        return {"x": np.arange(6.0).reshape(2, 3), "y": np.array([0, 1])}

    first = cached_arrays("demo", {"n": 2}, make)
    second = cached_arrays("demo", {"n": 2}, make)
    assert len(calls) == 1
    assert np.array_equal(first["x"], second["x"]) and np.array_equal(first["y"], second["y"])
    files = list(cache_dir().glob("demo-*.npz"))
    assert len(files) == 1 and not list(cache_dir().glob("*.tmp*"))
    cached_arrays("demo", {"n": 3}, make)  # other parameters, another file
    assert len(calls) == 2 and len(list(cache_dir().glob("demo-*.npz"))) == 2


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda data: data[: len(data) // 2],  # a write cut short
        lambda data: b"",
        lambda data: b"PK\x03\x04 not really a zip",
        lambda data: data[:-30],  # the zip's directory record cut off
    ],
    ids=["half", "empty", "garbage", "no-directory"],
)
def test_corrupt_cache_file_is_regenerated(corrupt) -> None:
    calls: list[int] = []

    def make() -> dict[str, np.ndarray]:
        calls.append(1)
        return {"x": np.ones(4)}

    cached_arrays("demo", {"n": 4}, make)
    (path,) = cache_dir().glob("demo-*.npz")
    path.write_bytes(corrupt(path.read_bytes()))
    again = cached_arrays("demo", {"n": 4}, make)
    assert len(calls) == 2 and np.array_equal(again["x"], np.ones(4))
    with np.load(path) as stored:  # replaced by a good file
        assert np.array_equal(stored["x"], np.ones(4))
    cached_arrays("demo", {"n": 4}, make)
    assert len(calls) == 2


def test_mnist1d_data_is_generated_once_then_cached() -> None:
    from tuner.tasks.mnist1d import cnn_task, gru_task, mlp_task, mnist1d_arrays

    arrays = mnist1d_arrays(num_samples=400, seed=1)
    assert arrays["x"].shape == (320, 40) and arrays["x_test"].shape == (80, 40)
    (path,) = cache_dir().glob("mnist1d-*.npz")
    stamp = path.stat().st_mtime_ns
    for make in (cnn_task, mlp_task, gru_task):
        task = make(num_samples=400, seed=1)
        assert task.build_model(1.0)(task.test_x[:2]).shape == (2, 10)
        assert task.build_model(0.5)(task.test_x[:2]).shape == (2, 10)
    assert path.stat().st_mtime_ns == stamp  # read, never written again
