"""Many workers on one study's storage: trials per second, where each trial's overhead goes, and
whether the budget stays exact when a third of the workers die.

    .venv/bin/python benchmarks/storage_scale.py [--workers 8 32 64] [--backends sqlite postgres proxy]

For each backend and number of workers, that many `tuner worker` processes run one study of
the default experiment (TPE, equal-time pruning, capping, the screen, racing), each trial
replaying a recorded one from benchmarks/tables/mnist1d_cnn.json.gz in real time
(`tuner worker --replay`, scaled by ``--time-scale``: nothing trains, so only the storage,
the sampler and the machine's cores limit the rate). The backends:

  sqlite     one SQLite file
  postgres   PostgreSQL, each worker connected directly (a pool of one connection)
  proxy      the same PostgreSQL behind `tuner storage-proxy` (Optuna's gRPC storage proxy)

Once half of the searched trials have finished, a third of the workers are killed with
SIGKILL and started again with the same command (as a Job restarts a pod). Measured:

- trials finished per second once every first worker was up (start-up on a 2-core machine
  takes a minute at 64 workers, and is left out);
- the storage's and the sampler's milliseconds per trial, as the study loop of each worker
  that ended normally timed them (`tuner worker` prints them: tuner/study/run/overhead.py);
- whether the study holds exactly the searched trials asked for, with none left running;
  trials lost (a killed worker's trial never re-run) or duplicated (re-run twice, or counted
  beyond the budget);
- each error message the workers printed, with how many times.

PostgreSQL comes from $TUNER_TEST_POSTGRES_URL, or scripts/postgres.sh starts one (max 200
connections). Writes benchmarks/results/storage_scale.{json,md}.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import optuna
from optuna.trial import TrialState

from tuner.environment import fingerprint
from tuner.study.record import FINISHED, finished_search_trials

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "benchmarks" / "tables" / "mnist1d_cnn.json.gz"
RESULTS = ROOT / "benchmarks" / "results" / "storage_scale"
OVERHEAD = re.compile(r"worker overhead: (\d+) trials here; (.*)")
SHARE = re.compile(r"(\w+) [\d.]+ ms/trial \(([\d.]+) s, (\d+) calls\)")


def experiment(folder: Path, name: str, storage: str, n_trials: int, time_scale: float) -> Path:
    """The default experiment's study on ``storage``, its cap scaled as the replay is; heartbeats find dead workers' trials."""
    path = folder / f"{name}.yaml"
    path.write_text(
        f"""
name: {name}
task: mnist1d-cnn
search_space: {ROOT / "search_spaces" / "default.yaml"}
objective: {{target: 0.90, eval_every_samples: 2000, cap_s: {6.0 * time_scale:g}, clock: robust}}
sampler: {{name: tpe, n_startup_trials: 10}}
budget: {{n_trials: {n_trials}}}
confirm: {{after_search: false}}
heartbeat: {{interval_s: 2, grace_s: 15}}
storage: {storage}
"""
    )
    return path


class Worker:
    """A `tuner worker --replay` process; its stderr read on a thread."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        self.up_at: float | None = None  # wall time it began its study
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            if self.up_at is None and line.startswith("worker on study"):
                self.up_at = time.time()
            self.lines.append(line)

    def finish(self, timeout: float) -> int | None:
        try:
            code = self.proc.wait(timeout=max(1.0, timeout))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None
        self.reader.join(timeout=10)
        return code


def start_proxy(path: Path, storage: str, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "tuner", "storage-proxy", str(path), "--storage", storage, "--port", str(port)]
    proxy = subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    line = proxy.stderr.readline()
    if "listening on" not in line:
        raise SystemExit(f"storage_scale: the proxy did not start: {line}{proxy.stderr.read()}")
    threading.Thread(target=proxy.stderr.read, daemon=True).start()  # keep its pipe drained
    return proxy


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres(folder: str) -> str:
    """$TUNER_TEST_POSTGRES_URL, or a server scripts/postgres.sh starts in ``folder`` (one the `postgres` user may enter)."""
    url = os.environ.get("TUNER_TEST_POSTGRES_URL")
    if url:
        return url
    out = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "start", folder], check=False, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"storage_scale: no PostgreSQL: {out.stderr.strip()}")
    return next(line.split("=", 1)[1] for line in out.stdout.splitlines() if "TUNER_TEST_POSTGRES_URL=" in line)


def one_run(backend: str, workers: int, args: argparse.Namespace, folder: Path, pg_url: str | None) -> dict:
    name = f"scale-{backend}-{workers}-{uuid.uuid4().hex[:6]}"
    n_trials = workers * args.trials_per_worker
    direct = f"sqlite:///{folder / (name + '.db')}" if backend == "sqlite" else pg_url
    path = experiment(folder, name, direct, n_trials, args.time_scale)
    env = {**os.environ, "TUNER_CACHE_DIR": str(folder / "cache"), "OMP_NUM_THREADS": "1"}
    proxy, url = None, direct
    if backend == "proxy":
        port = free_port()
        proxy, url = start_proxy(path, direct, port, env), f"grpc://127.0.0.1:{port}"

    def worker(index: int) -> Worker:
        cmd = [sys.executable, "-m", "tuner", "worker", str(path), "--storage", url, "--no-tracking", "--worker-index", str(index)]
        return Worker([*cmd, "--replay", str(TABLE), "--time-scale", str(args.time_scale)], env)

    reader = optuna.storages.RDBStorage(direct)
    started = time.time()
    pool = [worker(i) for i in range(workers)]
    first = list(pool)
    killed: list[int] = []
    deadline = started + args.timeout
    try:
        while time.time() < deadline and any(w.proc.poll() is None for w in pool):
            if not killed:
                try:
                    done = len(finished_search_trials(optuna.load_study(study_name=name, storage=reader)))
                except KeyError:
                    done = 0
                if done >= n_trials // 2:
                    killed = [i for i, w in enumerate(pool) if w.proc.poll() is None][: workers // 3]
                    for i in killed:
                        pool[i].proc.send_signal(signal.SIGKILL)
                    for i in killed:
                        pool[i].finish(30)
                        pool[i] = worker(i)  # the same command, the same index
            time.sleep(0.5)
        codes = [w.finish(deadline - time.time()) for w in pool]
    finally:
        for w in pool:
            w.proc.kill()
        if proxy is not None:
            proxy.send_signal(signal.SIGTERM)
            proxy.wait(timeout=30)
    elapsed = time.time() - started

    trials = optuna.load_study(study_name=name, storage=reader).get_trials(deepcopy=False)
    study = optuna.load_study(study_name=name, storage=reader)
    searched = len(finished_search_trials(study))
    states = collections.Counter(t.state.name for t in trials)
    # Failed by a heartbeat gone stale (a worker killed, or one too slow to beat), not by the trial itself (outcome "failed").
    dead = [t for t in trials if t.state is TrialState.FAIL and t.user_attrs.get("outcome") != "failed"]

    # A dead trial and its re-runs (Optuna's retries, ``retry_of`` naming the first) are one configuration:
    # it is done once one of them finished; queued while one waits; lost otherwise (its re-runs spent,
    # heartbeat.max_retry); counted twice when more than one of them finished.
    def original(t: optuna.trial.FrozenTrial) -> int:
        return t.user_attrs.get("retry_of", t.number)

    queued_retries = [t.number for t in trials if t.state is TrialState.WAITING and "retry_of" in t.user_attrs]
    ended = collections.Counter(original(t) for t in trials if t.state in FINISHED)
    waiting = {original(t) for t in trials if t.state is TrialState.WAITING}
    lost = sorted({original(t) for t in dead if ended[original(t)] == 0 and original(t) not in waiting})
    duplicated = sorted(n for n, k in ended.items() if k > 1)
    all_up = max((w.up_at for w in first if w.up_at is not None), default=started)
    ends = sorted(t.datetime_complete.timestamp() for t in trials if t.datetime_complete is not None and t.state is not TrialState.FAIL)
    steady = [e for e in ends if e >= all_up]
    rate = (len(steady) - 1) / (steady[-1] - steady[0]) if len(steady) > 2 and steady[-1] > steady[0] else None
    lengths = sorted(
        (t.datetime_complete - t.datetime_start).total_seconds()
        for t in trials
        if t.datetime_complete is not None and t.datetime_start is not None and t.state is not TrialState.FAIL
    )
    shares: dict[str, float] = collections.defaultdict(float)
    counted = 0
    everyone = pool + [w for w in first if w not in pool]  # the killed ones, and those started in their place
    for w in everyone:
        for line in w.lines:
            m = OVERHEAD.search(line)
            if m:
                counted += int(m.group(1))
                for share, seconds, _ in SHARE.findall(m.group(2)):
                    shares[share] += float(seconds)
    errors = collections.Counter(
        line.strip()[:240]
        for w in everyone
        for line in w.lines
        if ("error" in line.lower() or "Traceback" in line or "Exception" in line) and "worker overhead" not in line
    )
    row = {
        "backend": backend,
        "workers": workers,
        "asked": n_trials,
        "searched": searched,
        "exact": searched == n_trials,
        "states": dict(states),
        "left_running": states.get("RUNNING", 0),
        "killed": len(killed),
        "dead_trials": len(dead),
        "lost": lost,
        "retries_left_queued": queued_retries,
        "duplicated": duplicated,
        "exit_codes": dict(collections.Counter(str(c) for c in codes)),
        "trials_per_s": rate,
        "trials_per_s_per_worker": rate / workers if rate else None,
        "median_trial_s": lengths[len(lengths) // 2] if lengths else None,
        "storage_ms_per_trial": 1000 * shares["storage"] / counted if counted else None,
        "sampler_ms_per_trial": 1000 * shares["sampler"] / counted if counted else None,
        "startup_s": all_up - started,
        "elapsed_s": elapsed,
        "errors": dict(errors.most_common(8)),
    }
    print(json.dumps({k: v for k, v in row.items() if k != "errors"}), file=sys.stderr)
    for message, count in errors.most_common(3):
        print(f"    {count}x {message}", file=sys.stderr)
    return row


def markdown(rows: list[dict], meta: dict) -> str:
    def f(v: float | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    lines = [
        "# Storage load test",
        "",
        (
            f"{meta['machine']}; `tuner worker --replay` at time scale {meta['time_scale']} (median replayed trial "
            f"{meta['time_scale'] * meta['table_trial_s']:.2f} s), {meta['trials_per_worker']} searched trials per worker, "
            "a third of the workers SIGKILLed and restarted at half the budget. One run per cell."
        ),
        "",
        (
            "| backend | workers | trials/s | per worker | median trial s | storage ms/trial | sampler ms/trial "
            "| exact | left running | killed / dead trials | re-runs left queued | lost | duplicated | errors |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['workers']} | {f(r['trials_per_s'], '.1f')} | {f(r['trials_per_s_per_worker'], '.2f')} | "
            f"{f(r['median_trial_s'], '.2f')} | {f(r['storage_ms_per_trial'], '.0f')} | {f(r['sampler_ms_per_trial'], '.1f')} | "
            f"{'yes' if r['exact'] else 'NO: ' + str(r['searched'])} | {r['left_running']} | {r['killed']} / {r['dead_trials']} | "
            f"{len(r['retries_left_queued'])} | "
            f"{len(r['lost'])} | {len(r['duplicated'])} | {sum(r['errors'].values())} |"
        )
    messages = collections.Counter()
    for r in rows:
        for message, count in r["errors"].items():
            messages[f"{r['backend']} x{r['workers']}: {message}"] += count
    if messages:
        lines += ["", "Error lines the workers printed (backend x workers: line, count):", ""]
        lines += [f"- `{m}`: {c}" for m, c in messages.most_common(20)]
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, nargs="+", default=[8, 32, 64])
    p.add_argument("--backends", nargs="+", default=["sqlite", "postgres", "proxy"], choices=["sqlite", "postgres", "proxy"])
    p.add_argument("--trials-per-worker", type=int, default=4, dest="trials_per_worker")
    p.add_argument("--time-scale", type=float, default=0.1, dest="time_scale", help="replayed time per recorded second")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds one run may take before its workers are killed")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tuner-scale-"))
    pg_folder = tempfile.mkdtemp(prefix="tuner-scale-pg-")
    pg_url = postgres(pg_folder) if {"postgres", "proxy"} & set(args.backends) else None
    from tuner.simulate.table import load_table

    meta = {
        "machine": f"{os.cpu_count()} cores, {fingerprint().get('cpu', '')}".strip(", "),
        "environment": fingerprint(),
        "time_scale": args.time_scale,
        "trials_per_worker": args.trials_per_worker,
        "table_trial_s": load_table(TABLE).trial_length_s(),
    }
    rows = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        for workers in args.workers:
            for backend in args.backends:
                rows.append(one_run(backend, workers, args, folder, pg_url))
                # After every run: a long benchmark stopped midway keeps what it measured.
                args.out.with_suffix(".json").write_text(json.dumps({**meta, "rows": rows}, indent=2, default=str) + "\n")
                args.out.with_suffix(".md").write_text(markdown(rows, meta))
    finally:
        if pg_url is not None and "TUNER_TEST_POSTGRES_URL" not in os.environ:
            subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "stop", pg_folder], check=False, capture_output=True)
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
