"""Any bytes as an experiment file: `tuner validate` answers exit 0, or exit 2 with one line, within a second.

The examples run in-process through the CLI's own error path (tuner.cli.main), which is what a
user sees; a few hostile documents also run in a fresh process. The run is derandomised and
bounded, so that the default test run stays fast and repeatable; set TUNER_FUZZ_EXAMPLES to
search further with fresh random examples (e.g. ``TUNER_FUZZ_EXAMPLES=5000``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import time
from pathlib import Path

import pytest
import yaml
from conftest import DEFAULT_SPACE, cli, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tuner.cli import main
from tuner.study.experiment.load import Budget, Confirm, Heartbeat, Objective, Pruning, Sampler, Trainer
from tuner.train.trial_config import DIMENSIONS

EXAMPLES = int(os.environ.get("TUNER_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize="TUNER_FUZZ_EXAMPLES" not in os.environ,
    database=None,  # nothing written into the repository or the test folder
    deadline=None,  # timed below, with one retry, so that a busy shared machine does not fail it
    # One file in the test's folder is rewritten by every example, on purpose.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
SECOND = 1.0
SECTIONS = {
    name: [f.name for f in dataclasses.fields(cls)]
    for name, cls in (
        ("objective", Objective),
        ("sampler", Sampler),
        ("budget", Budget),
        ("trainer", Trainer),
        ("heartbeat", Heartbeat),
        ("pruner", Pruning),
        ("confirm", Confirm),
    )
}

VALID = f"""\
name: fuzz
task: synthetic
search_space:
  file: {DEFAULT_SPACE}
  override:
    precision: fp32
    lr: {{low: 1.0e-3, high: 1.0e-1, log: true}}
    batch_size: {{choices: [64, 128]}}
objective: {{target: 0.9, eval_every_samples: 256, cap_s: 2.0}}
budget: {{n_trials: 2}}
trainer: {{device: cpu, threads: 1}}
storage: sqlite:///fuzz.db
""".encode()
SEEDS = [VALID, b"task: synthetic\nobjective:\n  target: 0.95\n", b"", DEFAULT_SPACE.read_bytes()]

KEYS = [
    "name",
    "task",
    "task_options",
    "search_space",
    "objective",
    "sampler",
    "budget",
    "trainer",
    "heartbeat",
    "pruner",
    "confirm",
    "storage",
    "tracking_uri",
    "seed",
    "file",
    "override",
    "remove",
    "target",
    "cap_s",
    "eval_every_samples",
    "clock",
    "max_samples",
    "lr",
    "batch_size",
    "optimizer",
    "amsgrad",
    "precision",
    "width",
    "low",
    "high",
    "log",
    "step",
    "choices",
    "when",
    "value",
    "n_trials",
    "timeout_s",
    "threads",
    "device",
    "interval_s",
    "grace_s",
    "cap_slack",
    "noise",
    "<<",
]
# Values chosen to reach each check: numbers at and past their bounds, every YAML tag family,
# anchors and aliases, escapes, huge tokens and the start of deep nesting.
SCALARS = [
    "0",
    "1",
    "-1",
    "0.5",
    "1e-3",
    "1.0e-3",
    "1e400",
    "-1e400",
    ".nan",
    ".inf",
    "-.inf",
    "~",
    "null",
    "true",
    "yes",
    "off",
    "synthetic",
    "digits-mlp",
    "nosuch",
    "no_such_module_here:make",
    "tuner.tasks.synthetic:synthetic_task",
    "tpe",
    "adam",
    "fp32",
    "fp16",
    "cpu",
    "cuda:7",
    "tpu",
    "sqlite:///fuzz.db",
    "postgresql://u:hunter2@h/db",
    "'quoted'",
    '"\\ud800"',
    '"a\\nb"',
    '"\\x85"',
    "2001-12-14",
    "2001-13-45",
    "!!binary aGk=",
    "!!binary ???",
    "!!python/object/apply:os.system [echo]",
    "!!set {a: null}",
    "!!omap [a: 1]",
    "!!float x",
    "!!int 1.5",
    "&a 1",
    "&a [1, 2]",
    "*a",
    "*nowhere",
    "9" * 5000,
    "1" + "0" * 400,
    "x" * 3000,
    "a://" * 500,
    "[",
    "{",
    "]",
    "}",
    "[1, 2]",
    "{a: 1}",
    "|\n  text",
    "[" * 40 + "]" * 40,
    "0x1F",
    "0o17",
    "1_000",
    ":",
    "- ",
    "@",
    "`",
    "%",
    "? a",
    "<<: *a",
    "---",
    "...",
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A good document with a few bytes inserted, deleted or replaced."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    pieces = st.binary(min_size=1, max_size=8) | st.sampled_from([s.encode() for s in SCALARS])
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        if op == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        else:
            chunk = draw(pieces)
            data[at : at + (len(chunk) if op == "replace" else 0)] = chunk
    return bytes(data)


@st.composite
def lines(draw: st.DrawFn) -> bytes:
    """Lines of ``key: value`` at a few indents: shapes the schema looks at, with hostile values."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 4, 6]))
        key = draw(st.sampled_from(KEYS) | st.text(max_size=6))
        value = draw(st.sampled_from(SCALARS) | st.text(max_size=12))
        out.append(indent + draw(st.sampled_from([f"{key}: {value}", f"- {value}", f"{key}:"])))
    return "\n".join(out).encode("utf-8", "surrogatepass")


@st.composite
def substituted(draw: st.DrawFn) -> bytes:
    """The good document with one value, or one key, replaced by a hostile one: every other field passes."""
    text = VALID.decode().splitlines()
    at = draw(st.integers(0, len(text) - 1))
    key, sep, _ = text[at].partition(": ")
    hostile = draw(st.sampled_from(SCALARS))
    if draw(st.booleans()) and sep:
        text[at] = f"{key}: {hostile}"
    else:  # a new line here: a new key (maybe a duplicate), or a line of its own
        text.insert(
            at, key[: len(key) - len(key.lstrip())] + draw(st.sampled_from([f"{hostile}: 1", hostile, f"{key.strip()}: {hostile}"]))
        )
    return "\n".join(text).encode()


leaves = (
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) | st.sampled_from(["synthetic", "adam", "fp32", "cpu"])
)
# Valid YAML of experiment-shaped data, so that examples get past the parser to every field's check.
dumped = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=5),
    max_leaves=20,
).map(lambda data: yaml.safe_dump(data, allow_unicode=True).encode("utf-8", "surrogatepass"))
# Experiment-shaped documents: the schema's own keys at the right places, so that most examples
# reach a field's check (or pass), with numbers at and past every bound, NaN and infinities included.
values = (
    st.floats()
    | st.integers(-3, 10**7)
    | st.integers()
    | st.just(10**400)
    | st.booleans()
    | st.none()
    | st.sampled_from(SCALARS[:30])
    | st.text(max_size=8)
)
spec = values | st.fixed_dictionaries(
    {},
    optional={
        "low": values,
        "high": values,
        "log": st.booleans() | values,
        "step": values,
        "value": values,
        "choices": st.lists(values, max_size=4) | values,
        "when": st.dictionaries(st.sampled_from(list(DIMENSIONS)), st.lists(values, max_size=3) | values, max_size=2) | values,
    },
)
space = st.dictionaries(st.sampled_from(list(DIMENSIONS)) | st.text(max_size=5), spec, max_size=5)
search_spaces = space | st.fixed_dictionaries(
    {"file": st.just(str(DEFAULT_SPACE)) | values},
    optional={
        "override": space | values,
        "remove": st.lists(st.sampled_from(list(DIMENSIONS)) | values, max_size=2) | values,
    },
)


def mostly(good: st.SearchStrategy, bad: st.SearchStrategy = values) -> st.SearchStrategy:
    """Three draws in four from ``good``: the fields checked first must often pass for later ones to be reached."""
    return st.integers(0, 3).flatmap(lambda i: good if i else bad)


experiments = st.fixed_dictionaries(
    {},
    optional={
        "name": mostly(st.just("fuzz")),
        "task": mostly(st.just("synthetic"), st.sampled_from(["digits-mlp", "nosuch", "no_such_module_here:make"]) | values),
        "task_options": mostly(
            st.dictionaries(st.sampled_from(["noise", "n_train", "seed"]), values, max_size=2), st.dictionaries(values, values)
        ),
        "search_space": search_spaces,
        "storage": mostly(st.sampled_from(["sqlite:///fuzz.db", "postgresql://u:hunter2@h/db"])),
        "tracking_uri": values,
        "seed": mostly(st.integers(0, 10)),
        **{
            name: mostly(st.dictionaries(mostly(st.sampled_from(fields), st.text(max_size=5)), values, max_size=4))
            for name, fields in SECTIONS.items()
        },
    },
).map(lambda data: yaml.safe_dump(data, allow_unicode=True).encode("utf-8", "surrogatepass"))
nested = st.builds(lambda n, opener: (opener * n).encode(), st.integers(1, 300), st.sampled_from(["[", "{a: ", "- ", "a:\n  ", "&x ["]))

DOCUMENTS = st.binary(max_size=600) | mutated() | lines() | dumped | nested | experiments | substituted() | substituted()


def validate(path: Path) -> tuple[int, str, str, float]:
    """`tuner validate PATH` in this process: exit code, stdout, stderr, and the seconds of CPU this
    process spent (a hang or a blow-up shows there; other jobs on a busy machine do not).

    The streams encode as a terminal's would (UTF-8; stdout strict, stderr with backslashes),
    so that text no terminal can print fails here as it would for a user.
    """
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    start = time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", str(path)])
    seconds = time.process_time() - start
    out.flush()
    err.flush()
    return code, out.buffer.getvalue().decode(), err.buffer.getvalue().decode(), seconds


@pytest.fixture(scope="module", autouse=True)
def _warm(tmp_path_factory: pytest.TempPathFactory) -> None:
    # The first validate imports the built-in tasks and probes the machine: not the example's time.
    folder = tmp_path_factory.mktemp("warm")
    assert validate(write(folder / "warm.yaml", VALID.decode()))[0] == 0


@pytest.mark.e2e
@FUZZ
@given(document=DOCUMENTS)
def test_any_bytes_answer_exit_0_or_one_error_line_within_a_second(tmp_path: Path, document: bytes) -> None:
    path = tmp_path / "fuzzed.yaml"
    path.write_bytes(document)
    code, out, err, seconds = validate(path)
    if seconds > SECOND:
        # A systematic slowness (say, quadratic in a token's length) repeats; a busy machine seldom twice.
        code, out, err, seconds = validate(path)
    assert seconds < SECOND, (document[:200], seconds)
    assert code in (0, 2), (document[:200], code, err)
    if code == 2:
        assert out == "", (document[:200], out)
        assert len(err.splitlines()) == 1 and err.startswith("tuner: error: "), (document[:200], err)
        source = err.removeprefix("tuner: error: ").split(": ", 1)[0]
        assert Path(source).is_file(), err  # the line names the file, or the search-space file it points to
    else:
        assert len(err.splitlines()) <= 3, (document[:200], err)
        assert out.rstrip().endswith("# ok: nothing was trained or stored"), out


# Documents that each broke the loader before it was hardened: a traceback, a hang, or a multi-line message.
NASTY = {
    "billion laughs": "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")),
    "deep nesting": "[" * 100_000 + "]" * 100_000,
    "recursive alias": "&a [*a]\n",
    "long token": "name: " + "a" * 300_000 + "\nseed: " + "b" * 300_000 + "\n",
    "huge integer": "seed: " + "9" * 5000 + "\n",
    "duplicate key": "task: synthetic\nobjective: {target: 0.9}\ntask: digits-mlp\n",
    "key with a newline": '"a\\nb": 1\n',
    "impossible date": "seed: 0000-00-00\n",
    "integer past a float's range": "task: synthetic\nobjective: {cap_s: 1" + "0" * 400 + "}\n",
    "lone surrogate": 'task: synthetic\nname: "\\ud800"\n',
    "search-space file name too long": "task: synthetic\nsearch_space:\n  file: " + "x" * 3000 + "\n",
}


@pytest.mark.parametrize("text", NASTY.values(), ids=NASTY.keys())
def test_nasty_documents_in_process(tmp_path: Path, text: str) -> None:
    code, out, err, seconds = validate(write(tmp_path / "nasty.yaml", text))
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (code, err[:500])
    assert seconds < SECOND, seconds


@pytest.mark.e2e
def test_nasty_documents_in_a_fresh_process(tmp_path: Path) -> None:
    """The real command, as a user runs it: exit 2 and one line on stderr, for each document."""
    names = ["billion laughs", "deep nesting", "lone surrogate"]
    for i, name in enumerate(names):
        write(tmp_path / f"nasty{i}.yaml", NASTY[name])
    for i, name in enumerate(names):
        start = time.perf_counter()
        result = cli("validate", f"nasty{i}.yaml", cwd=tmp_path, timeout=60)
        lines = result.stderr.strip().splitlines()
        assert result.returncode == 2 and result.stdout == "" and len(lines) == 1, (name, result.returncode, result.stderr[-2000:])
        assert lines[0].startswith(f"tuner: error: nasty{i}.yaml: "), (name, lines[0])
        assert time.perf_counter() - start < 30, name  # the process's imports included
