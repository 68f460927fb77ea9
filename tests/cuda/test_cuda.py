"""What differs on a CUDA GPU: the device ``auto`` resolves to, autocast's dtypes, the fp16
gradient scaler, pinned memory, the batch ceiling by out-of-memory, the energy counter read
through NVML, host syncs per step, CUDA graphs, and the locks that share a GPU between workers.

Every test here is marked ``cuda``: it runs where ``torch.cuda.is_available()`` and is skipped,
with the reason, elsewhere (tests/conftest.py). Select them with ``pytest -m cuda``;
benchmarks/gpu_check.py runs them on a GPU machine.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch
from conftest import FAST, synthetic_experiment
from torch import nn
from torch.utils.data import TensorDataset

from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import prepare
from tuner.tasks.base import Task
from tuner.train.batch_probe import Probe, fits, largest_fitting
from tuner.train.batches import loader_options
from tuner.train.devices import resolve_device
from tuner.train.energy import energy_meter
from tuner.train.optimizers import build_optimizer
from tuner.train.precision import autocast, unsupported_precisions
from tuner.train.result import Outcome
from tuner.train.step import TrainStep, labels_only
from tuner.train.time_to_target import StopRule
from tuner.train.trial import train_trial
from tuner.train.trial_config import PRECISIONS, TrialConfig

pytestmark = pytest.mark.cuda

GPU = torch.device("cuda", 0)
GOOD = TrialConfig(lr=1e-2, batch_size=64)
REPO = Path(__file__).resolve().parents[2]


def test_auto_is_the_gpu_and_every_precision_runs_on_it() -> None:
    assert resolve_device("auto").type == "cuda"
    expected = {} if torch.cuda.is_bf16_supported() else {"bf16": "this GPU does not support bfloat16"}
    assert unsupported_precisions(GPU) == expected


@pytest.mark.parametrize(("precision", "dtype"), [("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)])
def test_autocast_computes_in_the_precision_and_keeps_fp32_weights(precision: str, dtype: torch.dtype) -> None:
    layer = nn.Linear(8, 8).to(GPU)
    with autocast(GPU, precision):
        out = layer(torch.randn(4, 8, device=GPU))
    out.float().sum().backward()
    assert out.dtype == dtype
    assert layer.weight.dtype == layer.weight.grad.dtype == torch.float32


def test_fp16_steps_scale_the_loss_and_learn() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)).to(GPU)
    step = TrainStep(model, labels_only(nn.functional.cross_entropy), build_optimizer(model.parameters(), GOOD, GPU), GPU, "fp16")
    assert step.scaler.is_enabled() and step.scaler.get_scale() == 2.0**16
    x, y = torch.randn(256, 16, device=GPU), torch.randint(0, 4, (256,), device=GPU)
    losses = [float(step(x, y)) for _ in range(50)]
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]
    assert all(torch.isfinite(p).all() for p in model.parameters())


@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_trial_on_the_gpu_reaches_the_target_without_syncs_in_its_steps(synthetic: Task, precision: str) -> None:
    r = train_trial(synthetic, dataclasses.replace(GOOD, precision=precision), FAST.stop_rule(), GPU, seed=0)
    assert r.outcome is Outcome.REACHED, r.reason
    assert r.peak_memory_mb is not None and r.peak_memory_mb > 0
    # Fused Adam takes the fp16 scaler's inf check on the device: no step waits for the GPU.
    # (An epoch's shuffle may copy once; the synthetic task's epoch is 15 steps.)
    assert r.host_syncs_per_step is not None and r.host_syncs_per_step < 0.2, r.host_syncs_per_step


def test_host_syncs_are_counted_where_a_step_reads_back(synthetic: Task) -> None:
    # NAdam has no fused kernel: the fp16 scaler reads its inf flag back at every step. Warnings
    # made errors (python -W error) neither fail the trial nor lose the count.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = train_trial(synthetic, dataclasses.replace(GOOD, optimizer="nadam", precision="fp16"), FAST.stop_rule(), GPU, seed=0)
    assert r.outcome in (Outcome.REACHED, Outcome.TIMEOUT), r.reason
    assert r.host_syncs_per_step is not None and r.host_syncs_per_step >= 0.9, r.host_syncs_per_step


def test_cuda_graphs_reach_the_target_with_their_recording_charged_as_compile_time(synthetic: Task) -> None:
    rule = dataclasses.replace(FAST.stop_rule(), cap_s=60.0)
    eager = train_trial(synthetic, GOOD, rule, GPU, seed=0)
    graphs = train_trial(synthetic, dataclasses.replace(GOOD, compile="reduce-overhead"), rule, GPU, seed=0)
    assert graphs.outcome is Outcome.REACHED, graphs.reason
    assert graphs.compile_s > 0 and graphs.setup_s >= graphs.compile_s
    assert graphs.host_syncs_per_step is not None and graphs.host_syncs_per_step < 0.2
    assert graphs.samples_to_target == pytest.approx(eager.samples_to_target, rel=0.5)  # the same model, trained the same way


def test_pinned_memory_feeds_a_dataset_trial_on_the_gpu(synthetic: Task) -> None:
    config = dataclasses.replace(GOOD, num_workers=1, pin_memory=True)
    assert loader_options(config, GPU, 0)["pin_memory"] is True
    as_datasets = Task(
        "synthetic-as-datasets",
        build_model=synthetic.build_model,
        train_data=TensorDataset(synthetic.train_x, synthetic.train_y),
        test_data=TensorDataset(synthetic.test_x, synthetic.test_y),
    )
    r = train_trial(as_datasets, config, FAST.stop_rule(), GPU, seed=0)
    assert r.outcome is Outcome.REACHED, r.reason
    assert r.data_wait_share is not None


def test_nvml_reads_the_gpus_energy_over_the_timed_region(hard_synthetic: Task) -> None:
    pytest.importorskip("pynvml", reason="NVIDIA's management library (pip install nvidia-ml-py) is not installed")
    meter = energy_meter("cuda", 0)
    assert meter.available and meter.source.startswith("nvml ("), meter.source
    # Two seconds of training that never reaches 0.99: the counter moves in steps of milliseconds.
    rule = StopRule(target=0.99, eval_every_samples=2048, cap_s=2.0, clock="train")
    r = train_trial(hard_synthetic, GOOD, rule, GPU, seed=0)
    assert r.outcome is Outcome.TIMEOUT, r.reason
    assert r.energy_source is not None and r.energy_source.startswith("nvml")
    assert r.energy_j is not None and r.energy_j > 0
    assert r.energy_j / r.train_s < 2000  # watts: below any single GPU's power limit


class WideHead(nn.Module):
    """Activations of 64 MiB per sample (fp32): a batch in the hundreds fills a large GPU."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(16, 2**24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


def test_the_batch_ceiling_on_a_gpu_is_found_by_running_out_of_memory(synthetic: Task) -> None:
    task = Task("wide", synthetic.train_x, synthetic.train_y, synthetic.test_x, synthetic.test_y, lambda width: WideHead())
    probe = Probe(task, TrialConfig(), GPU)
    free, _total = torch.cuda.mem_get_info(GPU)
    output = 4 * 2**24  # one sample's output in fp32; its log-softmax and their gradients are as large
    good, bad = largest_fitting(lambda b: fits(probe, b), 1, free // output)
    assert good is not None and bad is not None, (good, bad)  # it fitted at first, and ran out of memory before the end
    assert good * output < free and bad - good <= max(1, good // 16)
    assert fits(probe, good)  # the memory is given back after each out-of-memory step


def test_the_ceiling_is_on_by_default_on_a_gpu(tmp_path: Path) -> None:
    experiment = load_experiment(synthetic_experiment(tmp_path / "gpu.yaml", "trainer: {threads: 1, device: auto}\n"))
    prepared = prepare(experiment)
    assert prepared.device.type == "cuda"
    assert any("the largest batch that fits this GPU" in n for n in prepared.notes), prepared.notes
    assert prepared.to_keep  # measured here, kept in the storage when the study opens


HOLD = """
import sys, time
from tuner.train.devices import claim_gpus, gpu_count
print(claim_gpus(gpu_count()), flush=True)
time.sleep(120)
"""

SECOND = """
from tuner.train.devices import DevicesBusy, claim_gpus
try:
    claim_gpus(1)
    print("claimed")
except DevicesBusy as err:
    print("busy:", err)
print("shared", claim_gpus(1, share=True))
"""


def test_a_second_worker_finds_the_gpus_held_and_shares_them_only_when_asked() -> None:
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        held = holder.stdout.readline().strip()
        assert held.startswith("["), held
        second = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(SECOND)], check=False, capture_output=True, text=True, timeout=120, cwd=REPO
        )
        lines = second.stdout.splitlines()
        assert second.returncode == 0, second.stderr
        assert lines[0].startswith("busy:") and "--share-devices" in lines[0], lines
        assert lines[1].startswith("shared [") and lines[1] != "shared []", lines
    finally:
        holder.kill()
        holder.wait()
