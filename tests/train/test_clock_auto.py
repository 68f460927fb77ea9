"""``objective.clock: auto``: which clock it names, that the cpu clock charges a DataLoader's workers,
and that a study keeps the clock it stored (tuner/train/clocks.py, worker_cpu.py, tuner/study/run/auto_clock.py)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import optuna
import pytest
import torch
from torch.utils.data import Dataset

from tuner.errors import ConfigError
from tuner.study.experiment.load import Trainer
from tuner.study.run.auto_clock import existing_definition, machine_clock, resolve_clock
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.runner import run_study
from tuner.study.study_record import study_objective
from tuner.tasks.base import Task
from tuner.train import devices
from tuner.train.clocks import auto_clock
from tuner.train.time_to_target import StopRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import TrialConfig
from tuner.train.worker_cpu import children_cpu_s

LOAD_CPU_S = 0.002  # CPU seconds a sample costs to load
BATCH = 16


def test_auto_names_the_cpu_clock_only_where_the_training_thread_does_all_the_work() -> None:
    assert auto_clock("cpu", threads=1) == "cpu"
    assert auto_clock("cpu", threads=2) == "robust"  # OpenMP's waiting threads spin: CPU time grows with the load
    assert auto_clock("cpu", threads=1, processes=2) == "robust"  # a data-parallel trial: several processes' times
    assert auto_clock("cuda", threads=1) == "robust"  # the work is on the GPU
    assert auto_clock("cpu", threads=1, own_loop=True) == "robust"  # a loop of one's own may wait, or work elsewhere


def test_auto_reads_the_experiments_device_threads_and_processes(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "e.yaml"))
    assert exp.objective.clock == "auto"  # the default
    assert machine_clock(exp) == "cpu"  # a CPU device, one thread
    assert machine_clock(dataclasses.replace(exp, trainer=Trainer(device="cpu", threads=2))) == "robust"
    two = load_experiment(write(tmp_path / "dp.yaml", "search_space: {devices: {choices: [1, 2]}}\n"))
    assert machine_clock(two) == "robust"
    named = load_experiment(write(tmp_path / "w.yaml", "objective: {clock: wall}\n"))
    assert resolve_clock(named).objective.clock == "wall"  # a clock the experiment names is kept


def test_auto_counts_the_threads_each_worker_of_a_run_gets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `tuner run --workers N` without trainer.threads splits the cores between its workers (tuner/train/devices.py).
    exp = load_experiment(write(tmp_path / "e.yaml"))
    exp = dataclasses.replace(exp, trainer=Trainer(device="cpu"))  # trainer.threads unset
    monkeypatch.setattr(devices, "cpu_cores", lambda: 16)  # a machine of 16 cores
    assert machine_clock(exp, workers=2) == "robust"  # 8 threads each: CPU time spins with the load
    assert machine_clock(exp, workers=16) == "cpu"  # one thread each
    assert machine_clock(exp) == "cpu"  # one process runs one thread unless trainer.threads says more
    one_each = dataclasses.replace(exp, trainer=Trainer(device="cpu", threads=1))
    assert machine_clock(one_each, workers=2) == "cpu"


class Burning(Dataset):
    """Samples whose loading costs CPU time, as decoding and augmenting do."""

    def __init__(self, n: int) -> None:
        gen = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 8, generator=gen)
        self.y = (self.x[:, 0] > 0).long()

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        start = time.thread_time()
        while time.thread_time() - start < LOAD_CPU_S:
            pass
        return self.x[i], self.y[i]


def test_a_trial_whose_loader_workers_are_slow_is_charged_for_them_on_the_auto_clock() -> None:
    task = Task("burning", build_model=lambda w: torch.nn.Linear(8, 2), train_data=Burning(512), test_data=Burning(64))
    rule = StopRule(target=1.01, eval_every_samples=256, cap_s=60.0, clock=auto_clock("cpu", 1), max_samples=1024)
    config = TrialConfig(batch_size=BATCH, num_workers=2, persistent_workers=True, lr=0.01)
    torch.set_num_threads(1)
    r = train_trial(task, config, rule, torch.device("cpu"))
    assert r.outcome.value == "timeout" and r.steps == 1024 // BATCH
    # Each step's 16 samples cost 32 ms of the workers' CPU; the linear model's step is well under 1 ms
    # (the training thread's own time alone came to 1.7 ms a step). Up to 4 batches a loader has in
    # flight when an evaluation pauses the clock are made off it: at most a quarter of an interval's.
    assert r.median_step_cpu_s >= 0.6 * BATCH * LOAD_CPU_S
    assert r.cpu_train_s >= 0.6 * r.steps * BATCH * LOAD_CPU_S
    assert r.elapsed("cpu") == pytest.approx(r.steps * r.median_step_cpu_s)


def test_children_cpu_counts_ended_workers_too() -> None:
    before = children_cpu_s()
    loader = torch.utils.data.DataLoader(Burning(64), batch_size=BATCH, num_workers=2)  # not persistent: joined at the end
    assert sum(len(x) for x, _ in loader) == 64
    assert children_cpu_s() - before >= 0.8 * 64 * LOAD_CPU_S


def test_a_new_study_stores_the_clock_auto_named_and_a_resume_keeps_it(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "s.yaml"))
    assert existing_definition(exp) is None  # nothing there yet, and nothing written by looking
    assert not (tmp_path / "s.db").exists()
    study = run_study(exp)
    assert study.user_attrs["objective"]["clock"] == "cpu"  # where resumes compare it
    assert all(t.value == pytest.approx(t.user_attrs["cpu_s_to_target"]) for t in study.trials if t.user_attrs["outcome"] == "reached")
    resumed = dataclasses.replace(exp, trainer=Trainer(device="cpu", threads=2))  # where a new study would take robust
    assert resolve_clock(resumed, existing_definition(resumed)).objective.clock == "cpu"


def test_a_study_stored_before_auto_keeps_the_robust_clock(tmp_path: Path) -> None:
    exp = load_experiment(write(tmp_path / "old.yaml"))
    study = optuna.create_study(study_name=exp.name, storage=exp.storage)
    stored = {"task": "synthetic", "task_options": {}, "target": 0.9, "cap_s": 2.0, "eval_every_samples": 256, "minimize": "time"}
    study.set_user_attr("objective", stored)  # as a study stored before the objective held its clock
    assert resolve_clock(exp, existing_definition(exp)).objective.clock == "robust"
    assert study_objective(study).clock == "robust"  # what tuner best and tuner report read
    study.set_user_attr("objective", stored | {"clock": "robust"})
    assert resolve_clock(exp, existing_definition(exp)).objective.clock == "robust"
    resumed = run_study(exp)  # auto: resumed on the study's clock, not refused
    assert resumed.user_attrs["objective"]["clock"] == "robust"
    reached = [t for t in resumed.trials if t.user_attrs["outcome"] == "reached"]
    assert reached and all(t.value == pytest.approx(t.user_attrs["robust_s_to_target"]) for t in reached)


def test_a_resume_with_another_clock_is_refused_in_one_line(tmp_path: Path) -> None:
    run_study(load_experiment(write(tmp_path / "r.yaml")))  # auto: cpu here
    robust = "objective: {target: 0.9, eval_every_samples: 256, cap_s: 2.0, clock: robust}\n"
    with pytest.raises(ConfigError) as info:
        run_study(load_experiment(write(tmp_path / "r.yaml", robust)))
    assert info.value.key == "objective.clock"
    assert "\n" not in str(info.value) and "'cpu'" in str(info.value) and "robust" in str(info.value)


def write(path: Path, extra: str = "") -> Path:
    """A one-trial synthetic study on a CPU with one torch thread, where auto names the cpu clock."""
    objective = "" if "objective:" in extra else "objective: {target: 0.9, eval_every_samples: 256, cap_s: 2.0}\n"
    head = f"name: {path.stem}\ntask: synthetic\nstorage: sqlite:///{path.with_suffix('.db')}\ntrainer: {{device: cpu, threads: 1}}\n"
    space = "" if "search_space:" in extra else "search_space: {optimizer: adam, lr: 0.01, batch_size: 64, precision: fp32}\n"
    path.write_text(head + space + "budget: {n_trials: 1}\nconfirm: {after_search: false}\n" + objective + extra)
    return path
