"""The code blocks of the documentation and of README.md are true: every YAML block loads with
`tuner validate` (unless marked `# fragment`), every shell line that runs a `tuner` subcommand uses
only flags that subcommand's parser has, and every Python block parses.

The rules for writing blocks are on the architecture page (docs/architecture.md, "Contributing").
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from tuner.cli import build_parser, main

PAGES = sorted((REPO_ROOT / "docs").glob("*.md")) + [REPO_ROOT / "README.md"]
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>[^`]*)$")
SHELLS = ("bash", "sh", "shell", "console")
FRAGMENT = "# fragment"
TITLE = re.compile(r'title="([^"]+)"')


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and title, and its text."""

    page: Path
    line: int
    lang: str
    title: str | None
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page (also those indented inside a list item)."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        info, indent, start = m["info"].strip(), len(m["indent"]), i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][indent:])
            i += 1
        title = TITLE.search(info)
        found.append(Block(page, start + 1, info.split()[0] if info else "", title[1] if title else None, "\n".join(body) + "\n"))
        i += 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def subcommand_flags() -> dict[str, set[str]]:
    """Each subcommand's option strings, read from the CLI's own parsers."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {name: {s for a in p._actions for s in a.option_strings} for name, p in sub.choices.items()}


def tuner_calls(text: str) -> list[tuple[str, list[str]]]:
    """(subcommand, arguments) for every `tuner ...` or `python -m tuner ...` in shell text."""
    calls = []
    joined = re.sub(r"\\\n", " ", text)  # line continuations
    for line in joined.splitlines():
        line = re.sub(r"^\s*\$\s+", "", line)  # a console prompt
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # an unbalanced quote: not a command line
            continue
        command: list[list[str]] = [[]]
        for w in words:  # split at shell operators
            if w in ("&&", "||", ";", "|"):
                command.append([])
            else:
                command[-1].append(w)
        for cmd in command:
            for j, w in enumerate(cmd):
                runs_tuner = Path(w).name == "tuner" and (j == 0 or "=" in cmd[j - 1] or cmd[j - 1] == "-m")
                if runs_tuner and j + 1 < len(cmd):
                    calls.append((cmd[j + 1], cmd[j + 2 :]))
                    break
    return calls


def test_the_pages_have_blocks_of_each_kind() -> None:
    langs = {b.lang for b in ALL}
    assert {"yaml", "bash", "python"} <= langs, langs
    assert len([b for b in ALL if b.lang == "yaml" and not b.text.startswith(FRAGMENT)]) >= 5


def test_the_call_reader_finds_tuner_commands() -> None:
    text = (
        "# comment\n.venv/bin/tuner run exp.yaml --n-trials 2 \\\n  --timeout 3   # why\n"
        "$ python -m tuner best x.yaml -o b.yaml && ls\nmlflow server --host 0\n"
    )
    assert tuner_calls(text) == [("run", ["exp.yaml", "--n-trials", "2", "--timeout", "3"]), ("best", ["x.yaml", "-o", "b.yaml"])]
    assert tuner_calls("PYTHONPATH=. tuner validate a.yaml") == [("validate", ["a.yaml"])]


@pytest.mark.parametrize("block", [b for b in ALL if b.lang in SHELLS], ids=lambda b: b.where)
def test_shell_blocks_use_only_real_subcommands_and_flags(block: Block) -> None:
    flags = subcommand_flags()
    for command, args in tuner_calls(block.text):
        assert command in flags, f"{block.where}: `tuner {command}` is not a subcommand ({', '.join(flags)})"
        for arg in args:
            if arg.startswith("-") and arg != "-":
                flag = arg.split("=", 1)[0]
                assert flag in flags[command], f"{block.where}: `tuner {command}` has no flag {flag} (it has {sorted(flags[command])})"


@pytest.mark.parametrize("block", [b for b in ALL if b.lang == "python"], ids=lambda b: b.where)
def test_python_blocks_parse(block: Block) -> None:
    try:
        ast.parse(block.text)
    except SyntaxError as err:
        pytest.fail(f"{block.where}: {err}")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_yaml_blocks_validate(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Each whole experiment in the page loads with `tuner validate`, from experiments/ beside the
    shipped search spaces, with the page's file-titled Python blocks beside it."""
    folder = tmp_path / "experiments"
    folder.mkdir()
    (tmp_path / "search_spaces").symlink_to(REPO_ROOT / "search_spaces")
    monkeypatch.syspath_prepend(str(REPO_ROOT))  # examples.plain_loop:train
    monkeypatch.syspath_prepend(str(folder))
    mine = [b for b in blocks(page) if b.lang == "python" and b.title and b.title.endswith(".py")]
    for b in mine:
        (folder / b.title).write_text(b.text)
        sys.modules.pop(Path(b.title).stem, None)  # another page's module of the same name
    for b in blocks(page):
        if b.lang != "yaml" or b.text.startswith(FRAGMENT):
            continue
        path = folder / (b.title if b.title and b.title.endswith(".yaml") else f"block-{b.line}.yaml")
        path.write_text(b.text)
        code = main(["validate", str(path)])
        err = capsys.readouterr().err
        assert code == 0, f"{b.where}: tuner validate exited {code}: {err.strip()} (mark a part of a file with a first line '{FRAGMENT}')"
    for b in mine:
        sys.modules.pop(Path(b.title).stem, None)


def test_the_readme_links_to_files_that_exist() -> None:
    """The site's build checks the pages' links; README.md is read on the forge, so its own are checked here."""
    text = (REPO_ROOT / "README.md").read_text()
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert len(targets) >= 10
    missing = [t for t in targets if not (REPO_ROOT / t.split("#", 1)[0]).exists()]
    assert not missing, missing
    assert len(text.splitlines()) < 200
