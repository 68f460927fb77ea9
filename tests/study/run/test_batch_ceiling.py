"""The batch ceiling (tuner/study/run/batch_ceiling.py, tuner/train/batch_probe.py): the knee and
the out-of-memory search, measured once per storage, and the batch dimension bounded with a note."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest
import torch
from conftest import synthetic_experiment
from torch import nn

from tuner.errors import ConfigError
from tuner.study.experiment.load import Experiment
from tuner.study.run.batch_ceiling import (
    CEILINGS_STUDY,
    Measured,
    bound_batch,
    ceiling_key,
    ceilings_study,
    doubling,
    entry_name,
    keep_ceilings,
    measure,
    probe_config,
)
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.study.space.space import Choice, Fixed, Range, SearchSpace
from tuner.tasks.base import Task
from tuner.tasks.registry import build_task
from tuner.train.batch_probe import Probe, fits, largest_fitting, throughput_knee
from tuner.train.trial_config import TrialConfig

CPU = torch.device("cpu")
DEFAULT_SPACE = Path(__file__).resolve().parents[3] / "search_spaces" / "default.yaml"


def experiment_with(tmp_path: Path, batches: str, extra: str = "", name: str = "ceiling") -> Experiment:
    """A synthetic experiment with the ceiling on and these batch sizes."""
    text = (
        f"trainer:\n  threads: 1\n  batch_ceiling: true\nsearch_space:\n  file: {DEFAULT_SPACE}\n  override:\n"
        f"    precision: fp32\n    batch_size: {batches}\n" + extra
    )
    return load_experiment(synthetic_experiment(tmp_path / f"{name}.yaml", text, name=name))


def test_the_knee_is_the_smallest_batch_within_a_tenth_of_the_best_throughput() -> None:
    assert throughput_knee({32: 35_000, 64: 66_000, 128: 104_000, 256: 137_000, 512: 103_000}) == 256
    assert throughput_knee({32: 35_000, 64: 66_000, 128: 130_000, 256: 137_000}) == 128  # within 10% of the best
    assert doubling(32, 512) == [32, 64, 128, 256, 512] and doubling(24, 200) == [24, 48, 96, 192, 200]


def test_the_out_of_memory_search_doubles_then_bisects() -> None:
    tried: list[int] = []

    def fit(batch: int) -> bool:  # a device on which 300 samples fit and 301 do not
        tried.append(batch)
        return batch <= 300

    good, bad = largest_fitting(fit, 16, 4096)
    assert good <= 300 < bad and bad - good <= max(1, good // 16)
    assert tried[:6] == [16, 32, 64, 128, 256, 512]  # doubling until the first that does not fit
    assert largest_fitting(fit, 16, 200) == (200, None)  # the space's largest fits
    assert largest_fitting(fit, 512, 4096) == (None, 512)  # not even the smallest


class TooBig(nn.Module):
    """A model that runs out of memory past 200 samples, as a GPU would (faked on a CPU, as
    Lightning's batch-size finder tests it), and raises anything else on a negative input."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] > 200:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if x[0, 0] < -100:
            raise ValueError("a bug in the model")
        return self.linear(x)


@pytest.mark.e2e
def test_fits_tells_out_of_memory_from_other_failures(synthetic: Task) -> None:
    task = Task("too-big", synthetic.train_x, synthetic.train_y, synthetic.test_x, synthetic.test_y, lambda width: TooBig())
    probe = Probe(task, TrialConfig(), CPU)
    assert fits(probe, 200) and not fits(probe, 201)
    good, bad = largest_fitting(lambda b: fits(probe, b), 150, 300)  # the search on the real probe, briefly
    assert good <= 200 < bad and bad - good <= good // 16
    broken = Task("broken", synthetic.train_x - 1000, synthetic.train_y, synthetic.test_x, synthetic.test_y, lambda width: TooBig())
    with pytest.raises(ValueError, match="a bug in the model"):
        fits(Probe(broken, TrialConfig(), CPU), 16)


@pytest.mark.e2e
def test_the_out_of_memory_measurement_is_kept_and_reused(synthetic: Task) -> None:
    # The GPU branch of the bookkeeping, driven by the faked out-of-memory model on a CPU.
    task = Task("too-big", synthetic.train_x, synthetic.train_y, synthetic.test_x, synthetic.test_y, lambda width: TooBig())
    probe, gpu = Probe(task, TrialConfig(), CPU), torch.device("cuda")
    measured = Measured()
    assert measure(probe, measured, [64, 128, 256, 512], gpu)
    assert measured.fits is not None and measured.ooms is not None and measured.fits <= 200 < measured.ooms
    assert not measure(probe, measured, [64, 128, 256, 512], gpu)  # known: nothing measured again
    assert not measure(probe, Measured(fits=512), [64, 128, 256, 512], gpu)  # the whole range fitted before
    assert Measured.of(measured.as_attr({})) == measured  # what the storage keeps reads back the same


def test_the_probe_measures_the_widest_width_in_fp32_and_its_layout() -> None:
    space = load_experiment(synthetic_experiment(Path("probe.yaml"))).search_space
    config = probe_config(space)
    assert config.width == 2.0 and config.precision == "fp32"


def ceilings(storage: str) -> dict:
    return optuna.load_study(study_name=CEILINGS_STUDY, storage=storage).user_attrs


def test_the_ceiling_is_measured_once_and_read_from_the_storage_by_the_next_study(tmp_path: Path) -> None:
    first = experiment_with(tmp_path, "{choices: [32, 64, 128, 256, 512]}", name="first")
    prepared = prepare(first)
    [note] = [n for n in prepared.notes if "batch ceiling" in n]
    assert "this CPU" in note and "measured in" in note and "kept in the storage" in note
    assert not list(tmp_path.glob("*.db"))  # preparing writes nothing: the storage is not even created
    keep_ceilings(first, prepared.to_keep)  # what a run does once its stores are checked
    stored = ceilings(first.storage)
    [entry] = stored.values()
    assert sorted(entry["throughput"]) == ["128", "256", "32", "512", "64"]
    # Another study in the same storage: read, not measured, and the same bound.
    second = experiment_with(tmp_path, "{choices: [32, 64, 128, 256, 512]}", name="second")
    again = prepare(second)
    [note2] = [n for n in again.notes if "batch ceiling" in n]
    assert "read from the storage" in note2
    assert ceilings(first.storage) == stored
    assert again.space.dims["batch_size"] == prepared.space.dims["batch_size"]


def stored_throughput(experiment: Experiment, task: Task, space: SearchSpace, samples_per_s: dict[int, float]) -> None:
    """Put a measurement in the storage, as an earlier study on this machine would have."""
    key = ceiling_key(experiment, task, probe_config(space), CPU)
    ceilings_study(experiment).set_user_attr(entry_name(key), Measured(samples_per_s).as_attr(key))


def test_batch_sizes_above_the_ceiling_are_removed_with_a_note(tmp_path: Path, synthetic: Task) -> None:
    experiment = experiment_with(tmp_path, "{choices: [64, 128, 256, 512]}")
    space = experiment.search_space
    stored_throughput(experiment, synthetic, space, {64: 100_000, 128: 200_000, 256: 205_000, 512: 150_000})
    bounded, [note], fresh = bound_batch(experiment, synthetic, space, CPU)
    assert fresh == {}  # read, so nothing to keep
    assert bounded.dims["batch_size"] == Choice((64, 128))
    assert note.startswith(
        "removed batch_size 256, 512: above 128, the batch ceiling 128 per forward pass (the throughput knee on this CPU"
    )
    assert "read from the storage" in note
    # Accumulation lets the effective batch pass the ceiling: one forward sees batch_size / accumulate.
    with_accumulate = experiment_with(tmp_path, "{choices: [64, 128, 256, 512]}", name="acc")
    space2 = with_accumulate.search_space
    space2 = SearchSpace({**space2.dims, "accumulate": Choice((1, 2))}, space2.custom)
    stored_throughput(with_accumulate, synthetic, space2, {64: 100_000, 128: 200_000, 256: 205_000, 512: 150_000})
    bounded2, [note2], _ = bound_batch(with_accumulate, synthetic, space2, CPU)
    assert bounded2.dims["batch_size"] == Choice((64, 128, 256)) and "above 256" in note2


def test_a_range_is_cut_at_the_ceiling_and_a_fixed_batch_is_left_alone(tmp_path: Path, synthetic: Task) -> None:
    experiment = experiment_with(tmp_path, "{low: 64, high: 512, step: 64}")
    space = experiment.search_space
    stored_throughput(experiment, synthetic, space, {64: 100_000, 128: 200_000, 256: 205_000, 512: 150_000})
    bounded, [note], _ = bound_batch(experiment, synthetic, space, CPU)
    assert bounded.dims["batch_size"] == Range(64, 128, False, 64)
    assert "removed batch_size 129-512" in note
    fixed = experiment_with(tmp_path, "256", name="fixed")
    assert bound_batch(fixed, synthetic, fixed.search_space, CPU) == (fixed.search_space, [], {})
    assert isinstance(fixed.search_space.dims["batch_size"], Fixed)


def test_off_by_default_on_a_cpu_and_checked_as_a_setting(tmp_path: Path, synthetic: Task) -> None:
    experiment = load_experiment(synthetic_experiment(tmp_path / "default.yaml"))
    assert experiment.trainer.batch_ceiling is None
    assert bound_batch(experiment, synthetic, experiment.search_space, CPU) == (experiment.search_space, [], {})
    with pytest.raises(ConfigError) as err:
        load_experiment(synthetic_experiment(tmp_path / "bad.yaml", "trainer:\n  batch_ceiling: sometimes\n"))
    assert "trainer.batch_ceiling" in str(err.value) and "true, false or null" in str(err.value)


def test_an_own_training_function_is_not_probed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "fixtures" / "own_job"))
    experiment = experiment_with(tmp_path, "{choices: [64, 128]}")
    task = build_task("own_job_mod:own_loop")
    space, [note], _ = bound_batch(experiment, task, experiment.search_space, CPU)
    assert space == experiment.search_space and "not measured" in note
