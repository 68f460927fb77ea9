"""`tuner init`: the commented experiment file and the training-function skeleton, each checked by
`tuner validate`, and a skeleton filled with a three-line model tuned by a real two-trial study."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import cli

from tuner.cli import main
from tuner.docs_reference import experiment_keys

# A commented-out key: '# ' then the key at its indentation (tuner/cli/init.py writes them so).
COMMENTED_KEY = re.compile(r"^# (\s*[A-Za-z_]+:.*)$", re.MULTILINE)

THREE_LINE_MODEL = """\
    hidden = max(1, round(32 * width))
    return nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))
"""


def tuner(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The CLI in this process (the study itself runs in a subprocess): exit code, stdout, stderr."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_init_writes_a_file_that_validates_with_every_key_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tuner(capsys, "init")
    assert code == 0, err
    text = (tmp_path / "experiment.yaml").read_text()
    assert "tuner validate experiment.yaml" in out
    for key in experiment_keys():  # every key of the file is there, set or commented out at its default
        if key.path.startswith("proxy."):
            continue  # proxy: is off; its keys name fidelities the space must fix (docs/proxy.md), so only the section is shown
        name = key.path.rsplit(".", 1)[-1]
        assert re.search(rf"^(# )?\s*{name}:", text, re.MULTILINE), key.path
    code, out, err = tuner(capsys, "validate", "experiment.yaml")
    assert code == 0, err
    assert "task: mnist1d-cnn" in out and "target: 0.9" in out


def test_every_commented_key_uncommented_still_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert tuner(capsys, "init", "--task", "synthetic")[0] == 0
    text = (tmp_path / "experiment.yaml").read_text()
    uncommented = COMMENTED_KEY.sub(r"\1", text)
    assert uncommented.count("\n# ") < text.count("\n# ") - 40  # the defaults did come out of their comments
    (tmp_path / "all.yaml").write_text(uncommented)
    code, out, err = tuner(capsys, "validate", "all.yaml")
    assert code == 0, err
    assert "samples_from: any_batch" in out and "weights: best" in out


@pytest.mark.e2e
def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    (tmp_path / "train_loop.py").write_text("# mine\n")
    refused = cli("init", "--loop", cwd=tmp_path)  # a subprocess, as a user sees it: one line, exit 2
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "tuner: error: train_loop.py: tuner init: expected a file that does not exist yet (--force overwrites it), got 'an existing file'"
    )
    assert not (tmp_path / "experiment.yaml").exists()  # checked before anything was written
    assert (tmp_path / "train_loop.py").read_text() == "# mine\n"
    forced = cli("init", "--loop", "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert "session.report(" in (tmp_path / "train_loop.py").read_text()


def test_init_refuses_bad_names_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for args, key in ((["exp.txt"], "tuner init"), (["--loop", "my-loop.py"], "--loop"), (["--loop", "--task", "synthetic"], "--task")):
        code, _, err = tuner(capsys, "init", *args)
        assert code == 2, args
        assert len(err.strip().splitlines()) == 1 and f": {key}: expected " in err, err
    assert list(tmp_path.glob("*.yaml")) == [] and list(tmp_path.glob("*.py")) == []


@pytest.mark.e2e
def test_a_filled_in_skeleton_runs_a_two_trial_study(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = tuner(capsys, "init", "study.yaml", "--loop", "my_loop.py")
    assert code == 0, err
    assert "python -m tuner run study.yaml" in out
    monkeypatch.syspath_prepend(str(tmp_path))  # what `python -m tuner` does for the current folder
    code, out, err = tuner(capsys, "validate", "study.yaml")  # the unfilled skeleton already imports and validates
    assert code == 0, err
    assert "task: my_loop:train" in out

    module = tmp_path / "my_loop.py"
    placeholder = re.compile(r"    raise NotImplementedError\(.*\)\n")
    assert placeholder.search(module.read_text())
    module.write_text(placeholder.sub(lambda _: THREE_LINE_MODEL, module.read_text()))
    run = cli("run", "study.yaml", "--n-trials", "2", "--no-tracking", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    summary = json.loads(run.stdout)
    assert summary["study"] == "study"
    assert summary["winner"] is not None and summary["winner"]["median_s"] > 0  # the skeleton's loop reached the target
    assert summary["outcomes"]
