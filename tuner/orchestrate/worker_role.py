"""What a worker of a shared study does apart from a single run: it claims a GPU of its own, seeds
its sampler apart from the others', may replay a recorded table instead of training
(tuner/simulate/paced_time.py), and tracks the study's runs with the other workers."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import optuna
import torch

from tuner.errors import ConfigError
from tuner.orchestrate.options import RunOptions, WorkerRole
from tuner.simulate.fit import check_table
from tuner.simulate.grid_space import table_space
from tuner.simulate.paced_time import PacedTime
from tuner.simulate.replay import ReplayTrainer
from tuner.simulate.table import load_table
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks
from tuner.study.run.prepare import Prepared
from tuner.study.run.runnable import max_devices
from tuner.study.run.sampler import make_sampler
from tuner.tasks.registry import build_task
from tuner.train.devices import DevicesBusy, claim_gpus

# Workers that may start a new study at the same moment wait this long for each other's
# study id and study run (tuner/track/store.py), so that all of them keep the same ones.
SETTLE_S = 1.0


class ReseedSampler(StudyHooks):
    """Workers that start together would draw the same random configurations: each reseeds."""

    def __init__(self, experiment: Experiment, salt: int) -> None:
        self.experiment = experiment
        self.salt = salt

    def study_started(self, study: optuna.Study, experiment: Experiment) -> None:
        study.sampler = make_sampler(self.experiment, len(study.get_trials(deepcopy=False)) + self.salt)


def sampler_salt(role: WorkerRole) -> int:
    """Apart from every other worker's: by its index, reproducibly, else at random."""
    return (role.index + 1) * 1_000_003 if role.index is not None else random.randrange(1, 2**30)


def claim_device(experiment: Experiment, options: RunOptions) -> Experiment:
    """On GPUs, claim this worker's own (as many as a trial may use) unless a device was named."""
    role = options.worker or WorkerRole()
    if role.device is not None or experiment.trainer.device not in ("auto", "cuda") or not torch.cuda.is_available():
        return experiment
    try:
        gpus = claim_gpus(max_devices(experiment.search_space), options.share_devices, role.index or 0)
    except DevicesBusy as err:
        raise ConfigError("tuner worker", "--device", "a free GPU (or --share-devices)", str(err)) from None
    return dataclasses.replace(experiment, trainer=dataclasses.replace(experiment.trainer, device=f"cuda:{gpus[0]}"))


def replaying(experiment: Experiment, role: WorkerRole) -> tuple[Prepared, ReplayTrainer, Callable[[], float]]:
    """With a table to replay: its space and a trainer that replays it on the real clock (tuner/simulate/paced_time.py)."""
    if role.time_scale <= 0:
        raise ConfigError("tuner worker", "--time-scale", "a number > 0", role.time_scale)
    try:
        table = load_table(role.replay)
    except ValueError as err:
        raise ConfigError("tuner worker", "--replay", "a table of recorded trials", str(err)) from None
    check_table(experiment, table, role.time_scale)
    task = build_task(experiment.task, experiment.task_options)
    prepared = Prepared(torch.device("cpu"), task, table_space(table, experiment.search_space), notes=[])
    paced = PacedTime()
    return prepared, ReplayTrainer(table, paced, role.time_scale), paced.now
