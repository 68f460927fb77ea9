"""A character-level language model: a small decoder-only Transformer predicting the next character.

The corpus is available offline on every machine: the English docstrings of the Python standard
library, extracted deterministically (modules in sorted order, docstrings in source order) and
cached. Its size and SHA-256 are on the task (``corpus``), since another Python version ships
other docstrings. ``task_options: {path: my.txt}`` trains on a text file of one's own instead.

The held-out split is the corpus' last tenth, never trained on; the held-out figures are taken
on a fixed slice of it (``n_test`` windows): the next-character accuracy and the validation
loss in nats per character.
"""

from __future__ import annotations

import ast
import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tuner.tasks.base import Task, scaled
from tuner.tasks.cache import cached_arrays

# Printable ASCII and the newline; anything else is dropped from the corpus.
ALPHABET = "\n" + "".join(chr(c) for c in range(32, 127))
HELD_OUT_SHARE = 0.1


@dataclass(frozen=True)
class Corpus:
    """What was trained on: where it came from, its size in characters and its SHA-256."""

    source: str
    chars: int
    sha256: str


def stdlib_docstrings(max_chars: int) -> str:
    """The standard library's docstrings in a fixed order, up to ``max_chars`` characters."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts: list[str] = []
    total = 0
    for path in sorted(root.glob("*.py")):  # top-level modules: sorted, so the same Python gives the same text
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) > 40:  # one-liners say little about English
                    parts.append(doc)
                    total += len(doc) + 2
        if total >= max_chars:
            break
    return "\n\n".join(parts)[:max_chars]


def encode(text: str) -> np.ndarray:
    """Character indices into ALPHABET; characters outside it are dropped."""
    index = {c: i for i, c in enumerate(ALPHABET)}
    return np.array([index[c] for c in text if c in index], dtype=np.int64)


def corpus_arrays(path: str | None, max_chars: int) -> tuple[dict[str, np.ndarray], Corpus]:
    """The encoded corpus (cached when it is the standard library's) and its description."""
    if path is not None:
        text = Path(path).read_text(encoding="utf-8", errors="replace")[:max_chars]
        ids = encode(text)
        source = str(path)
    else:
        version = sysconfig.get_python_version()
        ids = cached_arrays(
            "charlm-stdlib", {"python": version, "max_chars": max_chars}, lambda: {"ids": encode(stdlib_docstrings(max_chars))}
        )["ids"]
        source = f"Python {version} standard library docstrings"
    digest = hashlib.sha256(ids.astype(np.uint8).tobytes()).hexdigest()
    return {"ids": ids}, Corpus(source, len(ids), digest)


def windows(ids: torch.Tensor, block: int, stride: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and next-character labels of every window of ``block`` characters, ``stride`` apart."""
    starts = torch.arange(0, len(ids) - block - 1, stride)
    offsets = torch.arange(block)
    x = ids[starts[:, None] + offsets]
    return x, ids[starts[:, None] + offsets + 1]


def sequence_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy per character, in nats, over (batch, time, vocabulary) logits."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where a position sees only itself and earlier positions."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # the causal mask
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    """A pre-norm Transformer block: attention then an MLP, each around a residual."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class CharTransformer(nn.Module):
    """Token and position embeddings, ``depth`` pre-norm blocks, a final norm and a tied output head."""

    def __init__(self, vocab: int, block: int, dim: int, depth: int, heads: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(block, dim)
        self.blocks = nn.Sequential(*(Block(dim, heads) for _ in range(depth)))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied: fewer parameters, faster early learning

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(x.shape[1], device=x.device)
        h = self.blocks(self.tokens(x) + self.positions(pos))
        return self.head(self.norm(h))


def charlm_task(path: str | None = None, block: int = 64, max_chars: int = 400_000, n_test: int = 128, target: float = 0.33) -> Task:
    """Next-character prediction on a text corpus; the model's width scales its embedding size.

    ``depth`` (blocks) and ``heads`` are the model's own hyperparameters (search dimensions or
    fixed by the space); the embedding size is 64 x width, rounded to a multiple of ``heads``.
    """
    if block < 2 or n_test < 1:
        raise ValueError(f"charlm: block must be >= 2 and n_test >= 1, got block={block}, n_test={n_test}")
    arrays, corpus = corpus_arrays(path, max_chars)
    ids = torch.from_numpy(arrays["ids"])
    split = int(len(ids) * (1 - HELD_OUT_SHARE))
    if split < 4 * block or len(ids) - split < n_test + block + 1:
        raise ValueError(f"charlm: the corpus ({len(ids)} characters) is too short for block {block} and {n_test} held-out windows")
    train_x, train_y = windows(ids[:split], block, block // 2)
    test_x, test_y = windows(ids[split:], block, block)  # the held-out tenth: never trained on
    test_x, test_y = test_x[:n_test], test_y[:n_test]  # a fixed slice, the same for every trial

    def build(width: float, depth: int = 2, heads: int = 4) -> nn.Module:
        dim = max(heads, scaled(64, width) // heads * heads)
        return CharTransformer(len(ALPHABET), block, dim, depth, heads)

    task = Task("charlm", train_x, train_y, test_x, test_y, build, target=target, loss=sequence_loss)
    task.corpus = corpus  # type: ignore[attr-defined]  # recorded with the study: what was trained on
    return task


# Known before the task is built, so that an experiment's space can name them at load.
charlm_task.model_hyperparameters = {"depth": 2, "heads": 4}  # type: ignore[attr-defined]
