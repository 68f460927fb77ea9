"""The documentation site builds with `mkdocs build --strict`: no broken link or anchor, no page
left out of the navigation, the generated reference in place and the API rendered from docstrings."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT

from tuner.docs_reference import experiment_keys

NEEDED = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name.split(".")[0]) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"needs the docs extra ({', '.join(MISSING)} missing): pip install -e '.[docs]'")
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its successor, printed on every build


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=REPO_ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = build(REPO_ROOT / "mkdocs.yml", out)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]
    return out


def page(site: Path, name: str) -> str:
    return (site / name / "index.html").read_text() if name else (site / "index.html").read_text()


def test_every_page_in_the_navigation_is_built(site: Path) -> None:
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())

    def pages(nav: list) -> list[str]:
        return [p for item in nav for v in item.values() for p in (pages(v) if isinstance(v, list) else [v])]

    names = pages(config["nav"])
    assert sorted(names) == sorted(p.name for p in (REPO_ROOT / "docs").glob("*.md"))
    for name in names:
        assert "md-content" in page(site, "" if name == "index.md" else name.removesuffix(".md")), name


def test_the_experiment_file_page_lists_every_key_with_its_default(site: Path) -> None:
    html = page(site, "experiment-file")
    assert "<!-- generated:" not in html  # no marker left unfilled
    for key in experiment_keys():
        assert f"<code>{key.path}</code>" in html, key.path
    assert "<code>equal_time</code>" in html and "one of auto, robust, train, wall, cpu" in html
    assert "<code>head_lr_mult</code>" in page(site, "search-space")


def test_the_api_reference_is_rendered_from_docstrings(site: Path) -> None:
    html = page(site, "api")
    for anchor in ("tuner.api.run", "tuner.train.session.Session.report", "tuner.TimeToTarget", "tuner.Task", "tuner.objective_value"):
        assert f'id="{anchor}"' in html, anchor
    assert "Run or resume the study" in html  # tuner.api.run's docstring


def test_the_screenshots_are_pages_of_the_site(site: Path) -> None:
    assert (site / "mlflow-ui.png").is_file() and (site / "report.png").is_file()
    assert 'src="../mlflow-ui.png"' in page(site, "reviewing")


def test_a_broken_link_or_a_page_left_out_fails_the_build(tmp_path: Path) -> None:
    """The strictness lives in mkdocs.yml: the same settings on two tiny pages."""
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md) and [an anchor](index.md#nowhere).\n")
    (docs / "orphan.md").write_text("# Not in the navigation\n")
    config.update(docs_dir=str(docs), nav=[{"Home": "index.md"}], plugins=["search"], hooks=[str(REPO_ROOT / "docs" / "hooks.py")])
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config))
    result = build(path, tmp_path / "site")
    assert result.returncode != 0
    for problem in ("missing.md", "#nowhere", "orphan.md"):
        assert problem in result.stderr, result.stderr[-3000:]
