"""Every compression row on the synthetic task, and the tuner compress command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from tuner.cli import main as cli
from tuner.compress.measure import dense_state, held_out_metric, measure, sparse_state, state_bytes
from tuner.compress.prune import make_permanent, prune_global
from tuner.compress.quantize import quantize_linear_int8
from tuner.compress.table import Plan, compress_all, markdown, write_results
from tuner.tasks.hyperparameters import build_model
from tuner.tasks.registry import build_task
from tuner.train.loop import SingleProcess, train
from tuner.train.target import Target
from tuner.train.time_to_target import TimeToTarget
from tuner.train.trial_config import TrialConfig

CPU = torch.device("cpu")
CONFIG = TrialConfig(lr=0.01, batch_size=64)


def _trained():
    task = build_task("synthetic", {})
    tt = TimeToTarget(target=0.9, eval_every_samples=256, cap_s=5.0)
    tt.start()
    kept: dict = {}
    train(task, CONFIG, CPU, 0, tt, SingleProcess(), keep=lambda m: kept.update(m.state_dict()))
    model = build_model(task, CONFIG)
    model.load_state_dict(kept)
    return task, model, tt.result()


def test_each_compression_row_is_produced_and_measured() -> None:
    task, model, result = _trained()
    plan = Plan(target=0.9, eval_every=256, cap_s=5.0, sparsities=(0.5, 0.95), finetune_samples=512, repeats=3)
    rows = compress_all(model, task, CONFIG, CPU, plan, result.train_s)
    methods = [r.method for r in rows]
    assert methods == ["original", "int8 dynamic (Linear)", "pruned 50%", "pruned 95%", "distilled w=0.5", "distilled w=0.25"]
    original = {r.method: r for r in rows}["original"]
    assert original.accuracy >= 0.9 and not original.below_target
    assert original.parameters == sum(p.numel() for p in model.parameters())
    for r in rows:
        assert 0 <= r.accuracy <= 1 and r.size_bytes > 0 and r.latency_ms_b1 > 0 and r.latency_ms_b256 > 0
        assert r.below_target == (r.accuracy < 0.9)
    by = {r.method: r for r in rows}
    # Pruning keeps the masked share at zero through the fine-tune; 95% of the weights are gone.
    weights = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    assert by["pruned 95%"].parameters <= original.parameters - 0.9 * weights
    assert by["pruned 95%"].size_bytes < original.size_bytes  # stored sparse
    assert by["pruned 50%"].train_s_added > 0 and by["distilled w=0.5"].train_s_added > 0
    assert by["distilled w=0.25"].parameters < by["distilled w=0.5"].parameters < original.parameters


def test_int8_quantization_keeps_the_accuracy_close_and_shrinks_linear_weights() -> None:
    task = build_task("synthetic", {})
    model = build_model(task, TrialConfig(width=8.0))  # big enough that the int8 weights dominate the file
    quantized = quantize_linear_int8(model)
    assert "quantized.dynamic" in type(quantized[0]).__module__
    assert state_bytes(quantized.state_dict()) < 0.5 * state_bytes(model.state_dict())
    assert abs(held_out_metric(quantized, task, CPU) - held_out_metric(model, task, CPU)) < 0.05


def test_pruning_is_global_and_permanent() -> None:
    model = build_model(build_task("synthetic", {}), TrialConfig())
    pruned = make_permanent(prune_global(model, 0.8))
    weights = torch.cat([m.weight.flatten() for m in pruned.modules() if isinstance(m, torch.nn.Linear)])
    assert abs(float((weights == 0).float().mean()) - 0.8) < 0.01
    assert set(pruned.state_dict()) == set(model.state_dict())  # no masks left behind
    stored = sparse_state(pruned)
    assert state_bytes(stored) < state_bytes(pruned.state_dict())  # a tiny model: the container dominates
    restored = dense_state(stored)
    assert all(torch.equal(restored[k], v) for k, v in pruned.state_dict().items())  # lossless


def test_tuner_compress_writes_the_table(tmp_path: Path, capsys) -> None:
    raw = {
        "name": "c",
        "task": "synthetic",
        "search_space": {"lr": 0.01, "batch_size": 64},
        "objective": {"target": 0.9, "eval_every_samples": 256, "cap_s": 5.0},
        "tracking_uri": f"sqlite:///{tmp_path}/mlruns/mlflow.db",
    }
    (tmp_path / "best.yaml").write_text(yaml.safe_dump(raw))
    assert cli(["train", "best.yaml", "--save", "model.pt"]) == 0
    code = cli(
        [
            "compress",
            "best.yaml",
            "--from",
            "model.pt",
            "--out",
            "out/c.json",
            "--sparsities",
            "0.5",
            "--finetune-samples",
            "256",
            "--repeats",
            "3",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "| original |" in out and "| int8 dynamic (Linear) |" in out and "| distilled w=0.25 |" in out
    data = json.loads((tmp_path / "out" / "c.json").read_text())
    assert [r["method"] for r in data["rows"]][:3] == ["original", "int8 dynamic (Linear)", "pruned 50%"]
    assert (tmp_path / "out" / "c.md").read_text().startswith("| method |")
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=raw["tracking_uri"])
    run = client.search_runs([client.get_experiment_by_name("c").experiment_id])[0]
    assert "compress.original.accuracy" in run.data.metrics
    assert {a.path for a in client.list_artifacts(run.info.run_id, "compress")} == {"compress/c.json", "compress/c.md"}


def test_a_loss_target_names_the_column_the_results_and_the_footnote_after_the_loss(tmp_path: Path) -> None:
    task = build_task("synthetic", {})
    _, model, _ = _trained()
    goal = Target(1e-6, "loss", "minimize")  # out of reach: the row is starred
    row = measure("original", model, task, goal, repeats=3)
    assert row.accuracy == pytest.approx(held_out_metric(model, task, CPU, metric="loss")) and row.below_target
    table = markdown([row], goal)
    assert table.startswith("| method | held-out loss | size (KiB) |") and table.endswith("\\* short of the target, loss <= 1e-06")
    assert "| original | " in table and " * |" in table
    [json_path, _] = write_results([row], goal, tmp_path / "c.json", {})
    [stored] = json.loads(json_path.read_text())["rows"]
    assert stored["loss"] == pytest.approx(row.accuracy) and "accuracy" not in stored  # the value under the metric's own name
    accuracy = measure("original", model, task, 0.9, repeats=3)
    assert "accuracy" in accuracy.as_dict() and markdown([accuracy], 0.9).startswith("| method | held-out accuracy |")
