"""The generated tables are in the Markdown pages themselves, and a stale one fails, naming its page and the fix."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from tuner.docs_tables import COMMAND, TABLES, begin_marker, filled, stale_pages

DOCS = REPO_ROOT / "docs"


def test_every_generated_table_in_the_docs_is_current() -> None:
    stale = [str(p.relative_to(REPO_ROOT)) for p in stale_pages(DOCS)]
    assert not stale, f"generated tables out of date in {', '.join(stale)}: run {COMMAND}"


def test_every_table_is_on_a_page_and_readable_there_without_a_build() -> None:
    pages = {p.name: p.read_text() for p in DOCS.glob("*.md")}
    for name in TABLES:
        assert any(begin_marker(name) in text for text in pages.values()), name
    schedules = pages["search-space.md"].partition(begin_marker("schedules"))[2]
    assert schedules.lstrip().startswith("| `schedule` |") and "| `warmup_stable_decay` |" in schedules  # the names, on the repository


@pytest.mark.e2e
def test_a_stale_table_is_named_with_the_command_that_fixes_it(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("*.png", "*.py"))
    page = docs / "search-space.md"
    page.write_text(page.read_text().replace("| `warmup_cosine` |", "| `cosine` |"))  # a schedule renamed in the code, not here

    def tables(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tuner.docs_tables", *flags, "--docs", str(docs)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    check = tables("--check")
    assert check.returncode == 1
    assert check.stderr.splitlines() == [f"{page}: a generated table is stale; run {COMMAND}"]
    write = tables("--write")
    assert write.returncode == 0 and str(page) in write.stdout
    assert tables("--check").returncode == 0
    assert page.read_text() == (DOCS / "search-space.md").read_text()


def test_filling_writes_between_the_markers_and_nowhere_else() -> None:
    text = f"# Page\n\nBefore.\n\n{begin_marker('precisions')}\nold\n<!-- end generated: precisions -->\n\nAfter.\n"
    out = filled(text)
    assert out.startswith("# Page\n\nBefore.\n\n") and out.endswith("<!-- end generated: precisions -->\n\nAfter.\n")
    assert "old" not in out and "| `bf16` |" in out
    assert filled(out) == out
