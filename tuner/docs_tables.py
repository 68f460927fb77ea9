"""The documentation's generated tables, written into its Markdown pages, where people read them.

A page of docs/ holds each table between two markers::

    <!-- begin generated: schedules (python -m tuner.docs_tables --write) -->

    | `schedule` | ... |

    <!-- end generated: schedules -->

so the lists of optimizers, schedules, precisions, compile modes, pruners, objectives, search
dimensions and experiment keys read the same on the repository as on the site, which builds
from the same files. The tables come from the code (tuner/docs_reference.py, from the registries and the
settings' dataclasses): ``python -m tuner.docs_tables --write`` writes them into every page,
``--check`` names each page whose table no longer matches the code (tests/docs/test_tables.py
runs it on every test run).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from tuner.docs_reference import (
    compile_modes_markdown,
    dimensions_markdown,
    keys_markdown,
    objectives_markdown,
    optimizers_markdown,
    precisions_markdown,
    pruners_markdown,
    schedules_markdown,
)

TABLES: dict[str, Callable[[], str]] = {
    "experiment keys": keys_markdown,
    "search dimensions": dimensions_markdown,
    "optimizers": optimizers_markdown,
    "schedules": schedules_markdown,
    "precisions": precisions_markdown,
    "compile modes": compile_modes_markdown,
    "pruners": pruners_markdown,
    "objectives": objectives_markdown,
}
COMMAND = "python -m tuner.docs_tables --write"
DOCS = Path(__file__).resolve().parents[1] / "docs"  # the repository's pages (an editable install: the working tree)
BLOCK = re.compile(
    r"(?P<begin><!-- begin generated: (?P<name>[a-z ]+) \(.*?\) -->\n).*?(?P<end><!-- end generated: (?P=name) -->)", re.DOTALL
)


def filled(markdown: str) -> str:
    """``markdown`` with every generated block holding its table as the code writes it now."""

    def table(block: re.Match[str]) -> str:
        name = block["name"]
        if name not in TABLES:
            raise ValueError(f"generated block {name!r}: no such table (one of {', '.join(TABLES)})")
        # Blank lines around the table: Markdown reads a table that touches an HTML comment as part of the comment.
        return f"{block['begin']}\n{TABLES[name]().rstrip()}\n\n{block['end']}"

    return BLOCK.sub(table, markdown)


def begin_marker(name: str) -> str:
    """The line that opens table ``name``'s block in a page."""
    return f"<!-- begin generated: {name} ({COMMAND}) -->"


def pages_with_tables(docs: Path) -> list[Path]:
    return sorted(p for p in docs.glob("*.md") if BLOCK.search(p.read_text()))


def stale_pages(docs: Path = DOCS) -> list[Path]:
    """The pages whose generated tables differ from what the code writes now."""
    return [p for p in pages_with_tables(docs) if filled(text := p.read_text()) != text]


def write_pages(docs: Path = DOCS) -> list[Path]:
    """Write the current tables into every page of ``docs``; returns the pages that changed."""
    stale = stale_pages(docs)
    for page in stale:
        page.write_text(filled(page.read_text()))
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tuner.docs_tables", description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="write the current tables into the pages")
    action.add_argument("--check", action="store_true", help="exit 1, naming each page whose tables are stale")
    parser.add_argument("--docs", type=Path, default=DOCS, help=f"the folder of pages (default: {DOCS})")
    args = parser.parse_args(argv)
    if args.write:
        for page in write_pages(args.docs):
            print(f"wrote the generated tables of {page}")
        return 0
    stale = stale_pages(args.docs)
    for page in stale:
        print(f"{page}: a generated table is stale; run {COMMAND}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
