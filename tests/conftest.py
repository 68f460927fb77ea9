"""Shared fixtures: every test runs in its own temporary folder with its own data cache."""

from __future__ import annotations

import os
import sys

# Where PYTHONDONTWRITEBYTECODE is set (CI machines set it), no process writes the bytecode it
# compiles, so each of the few hundred `tuner` processes the tests start compiled torch, MLflow and
# Optuna again: 16-18 s to import them instead of 7 s. The tests' processes write it, once; set
# before the imports below, and before the test workers and their subprocesses inherit the environment.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

import contextlib
import re
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml

from tuner.study.experiment.load import Objective
from tuner.tasks.base import Task
from tuner.tasks.registry import build_task

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SPACE = REPO_ROOT / "search_spaces" / "default.yaml"
CPU = torch.device("cpu")

# Small, fast settings shared by the tests that train: the synthetic task reaches 0.9 in a
# few hundred samples, so a 256-sample cadence sees the crossing within a few evaluations.
# On the robust clock by name: the default, auto, would name the cpu clock on one machine and robust on another.
FAST = Objective(target=0.9, eval_every_samples=256, cap_s=5.0, clock="robust")

# A synthetic task so noisy that 0.99 is out of reach (its best is near 0.66).
HARD_OPTIONS = {"noise": 3.0}


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in tmp_path, so a default storage (tuner.db) or mlruns/ lands there, never in the repo."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


# -- CUDA: what differs on a GPU is tested where there is one; every other test sees a CPU --------

CUDA_SKIP = "needs a CUDA GPU: torch.cuda.is_available() is False on this machine"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"cuda: runs on a CUDA GPU (select them with -m cuda); skipped where none is ({CUDA_SKIP})")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not torch.cuda.is_available():
        for item in items:
            if item.get_closest_marker("cuda") is not None:
                item.add_marker(pytest.mark.skip(reason=CUDA_SKIP))


@pytest.fixture(autouse=True)
def _cpu_unless_cuda(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test not marked ``cuda`` runs as on a machine without a GPU, also where one is.

    Those tests were written for the CPU (``trainer.device: auto``, the default, resolves to
    the GPU where there is one: its batch ceiling, energy counter, precisions and device
    locks differ, and a data-parallel trial needs as many GPUs as processes). The CLI's
    processes get CUDA_VISIBLE_DEVICES="" (what a user sets to hide the GPUs); this
    process, where CUDA may already be initialised, is told there is none. On a machine
    without a GPU both change nothing. The tests marked ``cuda`` (tests/cuda/) see the GPU.
    """
    if request.node.get_closest_marker("cuda") is None:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    # Two cores, shared: one thread keeps the tiny models fast and the timings calm.
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def synthetic() -> Task:
    return build_task("synthetic")


@pytest.fixture(scope="session")
def hard_synthetic() -> Task:
    return build_task("synthetic", HARD_OPTIONS)


def write(path: Path, text: str) -> Path:
    """Write dedented text, creating folders; returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


# A user's task whose model raises in forward: every trial fails (exit codes, a failing study).
BROKEN_FORWARD_TASK = """
import torch.nn as nn
from tuner.tasks.synthetic import synthetic_task


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 4)

    def forward(self, x):
        raise ValueError("forward is broken")


def make():
    task = synthetic_task(n_train=200, n_test=50)
    task.build_model = lambda width: Broken()
    return task
"""

# Time and model size at once; widths make the model size vary, a wide range of rates makes
# slow learners that trail (tuner/study/scoring/pareto.py).
TWO_OBJECTIVES = """
objective:
  target: 0.9
  eval_every_samples: 256
  cap_s: 2.0
  clock: robust
  minimize: [time, model_size]
search_space:
  file: {space}
  override:
    precision: fp32
    batch_size: {{choices: [64, 128]}}
    lr: {{low: {lr_low}, high: 3.0e-2}}
    width: {{choices: [0.5, 1.0, 2.0]}}
"""


def two_objective_experiment(path: Path, extra: str = "", *, n_trials: int = 8, lr_low: float = 1.0e-4) -> Path:
    """A synthetic experiment minimizing time and model size (``extra`` as for synthetic_experiment)."""
    return synthetic_experiment(path, TWO_OBJECTIVES.format(space=DEFAULT_SPACE, lr_low=lr_low) + extra, n_trials=n_trials)


def slow_experiment(folder: Path, n_trials: int, cap_s: float, extra: str = "") -> Path:
    """Trials that never reach the target and run to their cap: a study to stop or kill mid-trial.

    ``extra``: more top-level lines (a heartbeat, a tracking URI).
    """
    return write(
        folder / "slow.yaml",
        f"""
        name: slow
        task: synthetic
        task_options: {{noise: 3.0}}
        search_space:
          file: {DEFAULT_SPACE}
          override: {{precision: fp32, batch_size: {{choices: [32, 64]}}}}
        objective: {{target: 0.99, eval_every_samples: 256, cap_s: {cap_s}}}
        sampler: {{name: random}}
        pruner: {{name: none}}
        confirm: {{after_search: false}}
        budget: {{n_trials: {n_trials}}}
        trainer: {{threads: 1}}
        storage: sqlite:///study.db
        """.rstrip(" ")
        + textwrap.indent(textwrap.dedent(extra), " " * 8),
    )


def synthetic_experiment(
    path: Path, extra: str = "", *, n_trials: int = 3, name: str | None = None, confirm: bool = False, race: bool = False
) -> Path:
    """A seconds-long synthetic experiment on a sqlite file in the same folder.

    Confirmation re-runs (tuner/study/reruns/confirmation.py) and race runs (tuner/study/reruns/racing.py),
    each tested on its own, are off unless asked for, so that the trials in the study are
    exactly the search's. Capping at a multiple of the baseline's time is off too (a ``pruner``
    block in ``extra`` replaces it): on a busy machine a search trial can run slower than
    1.2x the baseline and be capped before it reaches the target.
    """
    name = name or path.stem
    text = f"""
    name: {name}
    task: synthetic
    search_space:
      file: {DEFAULT_SPACE}
      override:
        precision: fp32
        batch_size: {{choices: [64, 128]}}
        lr: {{low: 3.0e-3, high: 3.0e-2}}
    objective:
      target: 0.9
      eval_every_samples: 256
      cap_s: 2.0
      clock: robust  # named: what auto names depends on the machine (tests/train/test_clock_auto.py)
    sampler:
      name: tpe
      n_startup_trials: 2
    budget:
      n_trials: {n_trials}
    storage: sqlite:///{path.parent / "study.db"}
    trainer:
      threads: 1
    confirm:
      after_search: {str(confirm).lower()}
    pruner:
      cap_slack: null  # a busy machine's slow search trial still reaches the target; capping has its own tests
    {"" if race else "race: null"}
    """
    extra = textwrap.dedent(extra)
    # A top-level key in ``extra`` replaces the block above: a key written twice is refused.
    replaced = set(yaml.safe_load(extra) or {}) if extra.strip() else set()
    blocks = re.split(r"\n(?=\S)", textwrap.dedent(text).strip("\n"))
    kept = [block for block in blocks if block.split(":", 1)[0] not in replaced]
    return write(path, "\n".join(kept) + "\n" + extra)


def no_stores_in(folder: Path) -> bool:
    """True when neither an Optuna sqlite file nor an MLflow folder was created."""
    return not (folder / "tuner.db").exists() and not (folder / "mlruns").exists() and not list(folder.glob("*.db"))


def cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``python -m tuner ARGS`` in a fresh process, as a user would."""
    full_env = {**os.environ, "TUNER_CACHE_DIR": str(cwd / "cache"), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "tuner", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False
    )


# -- MLflow: an empty store made once, and a real tracking server ---------------------------


def free_port() -> int:
    """A port nothing listens on now (also what an unreachable server looks like)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def _empty_mlflow_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Creating MLflow's tables takes ~6 s (its migrations); do it once and copy the file.
    from mlflow import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def tracking_uri(tmp_path: Path, _empty_mlflow_db: Path) -> str:
    """A fresh embedded MLflow store under tmp_path/mlruns, as the default layout has it."""
    import shutil

    target = tmp_path / "mlruns" / "mlflow.db"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(_empty_mlflow_db, target)
    return f"sqlite:///{target}"


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory, _empty_mlflow_db: Path):
    """A real `mlflow server` on 127.0.0.1 (its own process group), stopped at the end."""
    import shutil
    import signal
    import time
    import urllib.request

    root = tmp_path_factory.mktemp("mlflow-server")
    shutil.copy(_empty_mlflow_db, root / "mlflow.db")
    port = free_port()
    log = open(root / "server.log", "w")  # noqa: SIM115  # the server writes it for the whole session; closed at teardown
    cmd = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--backend-store-uri",
        f"sqlite:///{root / 'mlflow.db'}",
        "--default-artifact-root",
        str(root / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # no GenAI job runners: eight fewer processes
    proc = subprocess.Popen(cmd, cwd=root, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow server did not start: {(root / 'server.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        # The CLI's children (uvicorn, a job runner) share its process group; stop them all.
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        try:  # a child that outlived the CLI
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        log.close()


# -- PostgreSQL: the server CI starts (scripts/postgres.sh), or one started here -----------


@contextlib.contextmanager
def own_postgres(prefix: str, skip_reason: str) -> Iterator[tuple[str, Path]]:
    """A PostgreSQL server started here with scripts/postgres.sh: (its URL, its folder), stopped
    and removed afterwards; the test skips with ``skip_reason`` and the script's last line without one."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix=prefix)  # not under pytest's 0700 folders: the server runs as `postgres`
    script = str(REPO_ROOT / "scripts" / "postgres.sh")
    started = subprocess.run(
        ["bash", script, "start", folder],
        check=False,
        env={**os.environ, "TUNER_PG_NO_INSTALL": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if started.returncode != 0:
        why = (started.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"{skip_reason} ({why})")
    url = next(line.split("=", 1)[1] for line in started.stdout.splitlines() if "TUNER_TEST_POSTGRES_URL=" in line)
    try:
        yield url, Path(folder)
    finally:
        subprocess.run(["bash", script, "stop", folder], check=False, capture_output=True, timeout=60)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL database URL: $TUNER_TEST_POSTGRES_URL (.ci/run sets it), else a server
    started here with scripts/postgres.sh if PostgreSQL is installed; else the test skips."""
    url = os.environ.get("TUNER_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    with own_postgres("tuner-pg-", "no PostgreSQL: TUNER_TEST_POSTGRES_URL is unset and scripts/postgres.sh could not start a server") as (
        url,
        _,
    ):
        yield url


class FakeTimer:
    """The Timer interface (now, cpu_now, thread_now, sync) on a host clock the test moves by hand
    (``advance``, or ``t`` directly); counts the device syncs it was asked for.

    The thread's CPU clock follows the host clock at ``cpu_share`` (below 1: the machine is
    busy with other processes). Neither clock starts at zero, so that a reading taken as
    absolute instead of as a difference shows. ``switches`` counts the times the scheduler
    took the thread's core away: a test adds to it to interrupt a step.
    """

    def __init__(self, cpu_share: float = 1.0, t: float = 100.0, cpu: float = 7.0) -> None:
        self.t = t
        self.cpu_share = cpu_share
        self.syncs = 0
        self.switches = 0
        self._t0, self._cpu0 = t, cpu

    def now(self) -> float:
        return self.t

    def cpu_now(self) -> float:
        return self._cpu0 + (self.t - self._t0) * self.cpu_share

    def thread_now(self) -> tuple[float, int]:
        return self.cpu_now(), self.switches

    def sync(self) -> None:
        self.syncs += 1

    def advance(self, seconds: float) -> None:
        self.t += seconds
