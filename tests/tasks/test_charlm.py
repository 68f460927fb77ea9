"""The character-level language model task: causal attention, a held-out split never trained on,
a deterministic corpus, a user's own text file, and a short study through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import cli, write

from tuner.tasks.charlm import ALPHABET, HELD_OUT_SHARE, charlm_task, corpus_arrays, sequence_loss
from tuner.tasks.registry import build_task, hyperparameters_at_load

SMALL = {"max_chars": 20_000, "block": 32, "n_test": 16}


@pytest.fixture(scope="module")
def task():
    return charlm_task(**SMALL)


def test_attention_is_causal(task) -> None:
    torch.manual_seed(0)
    model = task.build_model(0.5, depth=2, heads=2).eval()
    x = task.test_x[:2].clone()
    changed = x.clone()
    changed[:, 20:] = (changed[:, 20:] + 1) % len(ALPHABET)
    with torch.no_grad():
        before, after = model(x), model(changed)
    assert torch.allclose(before[:, :20], after[:, :20], atol=1e-5), "an earlier position saw a later character"
    assert not torch.allclose(before[:, 20:], after[:, 20:])


def test_held_out_windows_come_from_the_last_tenth_never_trained_on(task) -> None:
    ids = torch.from_numpy(corpus_arrays(None, SMALL["max_chars"])[0]["ids"])
    split = int(len(ids) * (1 - HELD_OUT_SHARE))
    assert torch.equal(task.test_x[0], ids[split : split + 32]) and torch.equal(task.test_x[1], ids[split + 32 : split + 64])
    # The last training window's label ends before the held-out split starts.
    starts = torch.arange(0, split - 32 - 1, 16)
    assert int(starts[-1]) + 32 + 1 <= split and len(starts) == len(task.train_x)
    assert task.test_x.shape == (16, 32) and torch.equal(task.test_x[:, 1:], task.test_y[:, :-1])


def test_the_corpus_is_the_same_twice_and_described(task) -> None:
    again = charlm_task(**SMALL)
    assert again.corpus == task.corpus and task.corpus.chars == 20_000 and len(task.corpus.sha256) == 64
    assert torch.equal(again.train_x, task.train_x)


def test_the_loss_is_per_character_in_nats(task) -> None:
    uniform = torch.zeros(2, 32, len(ALPHABET))
    assert sequence_loss(uniform, task.test_y[:2]).item() == pytest.approx(torch.log(torch.tensor(float(len(ALPHABET)))).item())


def test_a_text_file_of_ones_own(tmp_path: Path) -> None:
    text = "the quick brown fox jumps over the lazy dog.\n" * 200
    path = write(tmp_path / "corpus.txt", text)
    task = build_task("charlm", {"path": str(path), "block": 16, "n_test": 4})
    assert task.corpus.source == str(path) and task.corpus.chars == len(text)
    with pytest.raises(ValueError, match="too short"):
        charlm_task(path=str(write(tmp_path / "tiny.txt", "abc")), block=16)


def test_depth_and_heads_are_known_at_load() -> None:
    assert hyperparameters_at_load("charlm", {}) == {"depth": 2, "heads": 4}


@pytest.mark.e2e
def test_a_short_study_reaches_a_validation_loss_target(tmp_path: Path) -> None:
    write(
        tmp_path / "lm.yaml",
        """
        name: charlm-short
        task: charlm
        task_options: {max_chars: 20000, block: 32, n_test: 16}
        search_space:
          optimizer: adam
          lr: {low: 3.0e-3, high: 1.0e-2, log: true}
          batch_size: 32
          precision: fp32
          width: 0.5
          depth: {choices: [1, 2]}
          heads: 2
        objective: {metric: loss, direction: minimize, target: 3.2, eval_every_samples: 320, cap_s: 20}
        budget: {n_trials: 2}
        confirm: {after_search: false}
        baseline: {optimizer: adam, lr: 3.0e-3, batch_size: 32}
        storage: sqlite:///lm.db
    """,
    )
    done = cli("run", "lm.yaml", "--no-tracking", cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "reached" in done.stdout, done.stdout[-2000:]
    assert "seconds to loss <= 3.2" in done.stdout and "best loss" in done.stdout + done.stderr, done.stdout[-2000:]
