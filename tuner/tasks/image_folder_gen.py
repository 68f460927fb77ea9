"""A synthetic image-classification set written as a folder per class, for the image-folder task.

Each class is a shape (circle, square, triangle, ...), and past ten classes a shape with a
fill texture. Every image draws its own position, scale, rotation, colours, background
gradient, clutter and pixel noise, so that colour and place say little and a small CNN has to
learn the shapes: it takes some epochs, not one batch, to reach 90%. Image ``i`` depends only
on ``(seed, i)``: the same seed writes the same files.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

Shape = Callable[[np.ndarray, np.ndarray], np.ndarray]
SUPERSAMPLE = 2  # rendered at twice the size and averaged down: smooth edges, as a camera's

# Each shape is a test on coordinates (u, v) in [-1, 1], the shape's own frame.
SHAPES: dict[str, Shape] = {
    "circle": lambda u, v: u**2 + v**2 <= 0.85,
    "square": lambda u, v: np.maximum(abs(u), abs(v)) <= 0.75,
    "triangle": lambda u, v: (v >= -0.55) & (math.sqrt(3) * abs(u) + v <= 0.95),
    "cross": lambda u, v: ((abs(u) <= 0.24) | (abs(v) <= 0.24)) & (np.maximum(abs(u), abs(v)) <= 0.9),
    "stripes": lambda u, v: (np.maximum(abs(u), abs(v)) <= 0.85) & (np.sin(u * 3.5 * math.pi) > 0),
    "ring": lambda u, v: (u**2 + v**2 <= 0.9) & (u**2 + v**2 >= 0.3),
    "star": lambda u, v: np.hypot(u, v) <= 0.5 + 0.42 * np.cos(5 * np.arctan2(u, v)),
    "diamond": lambda u, v: abs(u) + abs(v) <= 0.95,
    "corner": lambda u, v: (np.maximum(abs(u), abs(v)) <= 0.85) & ((u <= -0.3) | (v >= 0.3)),
    "dots": lambda u, v: (np.maximum(abs(u), abs(v)) <= 0.9) & (np.hypot(abs(u) - 0.45, abs(v) - 0.45) <= 0.3),
}
# A fill drawn inside the shape for classes past the tenth: (u, v) -> True where the shape shows.
TEXTURES: dict[str, Shape] = {
    "solid": lambda u, v: np.ones_like(u, dtype=bool),
    "hatched": lambda u, v: np.sin((u + v) * 5 * math.pi) > -0.3,
    "checked": lambda u, v: (np.floor(u * 3) + np.floor(v * 3)) % 2 == 0,
}
MAX_ROTATION = math.radians(20)  # a square turned 45 degrees is a diamond: turns stay well short of that


def class_names(classes: int) -> list[str]:
    """Folder names, in label order: ``00_circle``, ``01_square``, ... then ``10_circle_hatched``."""
    if not 2 <= classes <= len(SHAPES) * len(TEXTURES):
        raise ValueError(f"classes: expected 2 to {len(SHAPES) * len(TEXTURES)}, got {classes}")
    names = []
    for label in range(classes):
        shape, texture = list(SHAPES)[label % len(SHAPES)], list(TEXTURES)[label // len(SHAPES)]
        names.append(f"{label:02d}_{shape}" + ("" if texture == "solid" else f"_{texture}"))
    return names


def render(label: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """One image of class ``label``: uint8 array of shape (size, size, 3)."""
    shape = list(SHAPES.values())[label % len(SHAPES)]
    texture = list(TEXTURES.values())[label // len(SHAPES)]
    n = size * SUPERSAMPLE
    y, x = (np.mgrid[0:n, 0:n] + 0.5) / n * 2 - 1  # pixel centres in [-1, 1]
    image, ends = _background(x, y, rng)
    for _ in range(rng.integers(2, 6)):  # clutter: thin strokes and small blobs of other colours
        _clutter(image, x, y, rng)
    scale = rng.uniform(0.4, 0.75)
    cx, cy = rng.uniform(-(1 - scale), 1 - scale, size=2)
    angle = rng.uniform(-MAX_ROTATION, MAX_ROTATION)
    cos, sin = math.cos(angle), math.sin(angle)
    u = ((x - cx) * cos + (y - cy) * sin) / scale
    v = (-(x - cx) * sin + (y - cy) * cos) / scale
    v = -v  # image rows grow downwards; the shape's "up" is up
    mask = shape(u, v) & texture(u, v)
    image[mask] = _colour(rng, (label % len(SHAPES)) / len(SHAPES), ends)
    image = image.reshape(size, SUPERSAMPLE, size, SUPERSAMPLE, 3).mean(axis=(1, 3))
    image += rng.normal(0, rng.uniform(0.02, 0.08), image.shape)
    return (np.clip(image, 0, 1) * 255 + 0.5).astype(np.uint8)


def make_image_folder(out: str | Path, n: int, size: int = 32, classes: int = 10, seed: int = 0, test_fraction: float = 0.2) -> Path:
    """Write ``n`` PNG images, balanced over classes, as out/train/<class>/ and out/test/<class>/.

    ``test_fraction=0`` writes one folder per class directly under ``out`` (the layout the
    image-folder task splits itself). Returns ``out``.
    """
    if n < classes:
        raise ValueError(f"n: expected at least one image per class ({classes}), got {n}")
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction: expected a number in [0, 1), got {test_fraction}")
    if size < 8:
        raise ValueError(f"size: expected at least 8 pixels, got {size}")
    root = Path(out)
    names = class_names(classes)
    per_class = [len(range(label, n, classes)) for label in range(classes)]
    for i in range(n):
        label, k = i % classes, i // classes
        split = "" if test_fraction == 0 else "test" if k < round(per_class[label] * test_fraction) else "train"
        folder = root / split / names[label]
        folder.mkdir(parents=True, exist_ok=True)
        pixels = render(label, size, np.random.default_rng([seed, i]))
        Image.fromarray(pixels).save(folder / f"{i:06d}.png", compress_level=1)  # fast to write; PNG is lossless at any level
    return root


def _background(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A smooth gradient between two random colours, in any direction; and those two colours."""
    ends = rng.uniform(0, 1, size=(2, 3))
    direction = rng.uniform(0, 2 * math.pi)
    t = (x * math.cos(direction) + y * math.sin(direction) + 1.5) / 3
    return ends[0] + (ends[1] - ends[0]) * t[..., None], ends


def _clutter(image: np.ndarray, x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> None:
    colour = rng.uniform(0, 1, size=3)
    if rng.random() < 0.5:  # a thin stroke across the image
        angle = rng.uniform(0, math.pi)
        offset = rng.uniform(-1, 1)
        near = abs(x * math.sin(angle) - y * math.cos(angle) - offset) <= rng.uniform(0.02, 0.06)
    else:  # a small blob
        cx, cy = rng.uniform(-1, 1, size=2)
        near = np.hypot(x - cx, y - cy) <= rng.uniform(0.05, 0.15)
    image[near] = 0.5 * image[near] + 0.5 * colour


def _colour(rng: np.random.Generator, hue: float, background: np.ndarray) -> np.ndarray:
    """A saturated colour near the class's hue (a weak hint, as colour is in photographs), apart from the background."""
    for _ in range(20):
        h = (hue + rng.normal(0, 0.3)) % 1.0
        s, v = rng.uniform(0.5, 1.0), rng.uniform(0.35, 1.0)
        k = (np.array([5, 3, 1]) + h * 6) % 6
        colour = v - v * s * np.clip(np.minimum(k, 4 - k), 0, 1)
        if np.linalg.norm(background - colour, axis=1).min() >= 0.35:  # a shape the eye can see
            break
    return colour
