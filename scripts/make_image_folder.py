#!/usr/bin/env python
"""Write a synthetic image-classification set as a folder per class (see tuner/tasks/image_folder_gen.py).

    .venv/bin/python scripts/make_image_folder.py --out data/shapes --n 5000

writes data/shapes/train/<class>/*.png and data/shapes/test/<class>/*.png (``--test-fraction 0``:
data/shapes/<class>/*.png, which the image-folder task splits itself).
"""

from __future__ import annotations

import argparse
import sys
import time

from tuner.tasks.image_folder_gen import make_image_folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder to write (created; existing files of the same names are replaced)")
    parser.add_argument("--n", type=int, default=5000, help="images in total, balanced over the classes (default 5000)")
    parser.add_argument("--size", type=int, default=32, help="width and height in pixels (default 32)")
    parser.add_argument("--classes", type=int, default=10, help="number of classes, 2 to 30 (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="the same seed writes the same images (default 0)")
    parser.add_argument("--test-fraction", type=float, default=0.2, help="held out under test/; 0 for one folder per class (default 0.2)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        root = make_image_folder(args.out, args.n, args.size, args.classes, args.seed, args.test_fraction)
    except ValueError as err:
        print(f"make_image_folder: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {args.n} images of {args.classes} classes to {root} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
