"""GPU acceptance check: the one command a GPU user runs (about 6 minutes on one NVIDIA H200).

Six parts, each with its own time budget; a part that fails is recorded and the next runs:

1. ``machine``: the GPU, torch, CUDA and where energy figures come from.
2. ``tests``: ``pytest -m cuda tests/cuda`` (autocast dtypes, the fp16 scaler, pinned memory,
   the batch ceiling, NVML energy, host syncs, CUDA graphs, the GPU locks).
3. ``default``: ``tuner run experiments/mnist1d_cnn.yaml --timeout T`` tracked in MLflow: the
   winner against the baseline, and the energy metrics each MLflow run holds.
4. ``charlm``: ``tuner run experiments/charlm.yaml --timeout T``, the experiment as shipped.
5. ``levers``: charlm at width 1.5, depth 3, 128 windows, Adam 3e-3, seed 0, to a validation
   loss of 2.6, in fp32, bf16 and fp16, and in fp32 compiled (``default``, ``reduce-overhead``):
   time to target, compile time, energy, host syncs per step.
6. ``workers``: ``tuner run --workers 2 --share-devices`` on mnist1d-cnn, both workers on one GPU.

Everything goes to ONE results file, benchmarks/results/gpu_check.json (copied to $OUT when set);
docs/benchmarks.md's GPU section is built from it (``markdown``). On a machine with PyTorch but
not the rest, ``--wheels DIR`` first installs what scripts/gpu_wheels.sh downloaded
(``pip install --no-index --find-links DIR --no-deps --target``). ``--smoke`` rehearses every part
on a CPU with tiny budgets (CUDA-only pieces recorded as skipped, with the reason), writing to a
temporary file unless ``--results`` names one; ``--plan`` prints the parts and budgets and runs nothing.

    bash scripts/gpu_wheels.sh                      # here, with the package index
    python3 benchmarks/gpu_check.py --wheels .whl   # there: the device machine, from the repository root
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "gpu_check.json"
# (seconds on a GPU, seconds in the CPU rehearsal): each part's budget.
BUDGETS = {"machine": (10, 10), "tests": (100, 30), "default": (55, 20), "charlm": (45, 15), "levers": (100, 40), "workers": (35, 10)}
# The likeliest wins first: a run that would start past the part's budget is recorded as not run.
LEVERS = [("fp32", "none"), ("fp32", "reduce-overhead"), ("bf16", "none"), ("fp16", "none"), ("fp32", "default")]
WORKERS_EXPERIMENT = """
name: gpu-check-workers
task: mnist1d-cnn
search_space: {{file: {space}}}
objective: {{target: 0.90, eval_every_samples: 2000, cap_s: 6.0, clock: robust}}
sampler: {{name: tpe, n_startup_trials: 6}}
confirm: {{after_search: false}}
storage: sqlite:///{folder}/study.db
"""


def install_wheels(folder: str, argv: list[str]) -> None:
    """Install the carried wheels into a folder of their own and start again with it on the path."""
    site = Path(tempfile.gettempdir()) / "gpu-check-site"
    wheels = sorted(str(p) for p in Path(folder).glob("*.whl"))
    if not wheels:
        sys.exit(f"gpu_check: no wheels in {folder} (download them with scripts/gpu_wheels.sh where there is a package index)")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--find-links", folder, "--no-deps", "--no-compile"]
    subprocess.run([*pip, "--upgrade", "--target", str(site), *wheels], check=True)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), str(REPO), os.environ.get("PYTHONPATH")) if p)
    rest = [a for a, b in zip(argv, [None, *argv]) if a != "--wheels" and b != "--wheels"]
    os.execv(sys.executable, [sys.executable, __file__, *rest])


class Check:
    """What every part reads: the scratch folder, the device, the rehearsal flag and the budgets."""

    def __init__(self, smoke: bool, folder: Path) -> None:
        self.smoke, self.folder = smoke, folder
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
        self.env["PYTHONUNBUFFERED"] = "1"

    def budget(self, part: str) -> int:
        return BUDGETS[part][1 if self.smoke else 0]

    @property
    def cuda(self) -> bool:
        import torch

        return torch.cuda.is_available()

    def tuner(self, *args: str, cwd: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``tuner ARGS`` in a fresh process, its stderr echoed (the live line and the summary)."""
        cwd.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "tuner", *args]
        proc = subprocess.run(cmd, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout_s + 180, check=False)
        sys.stderr.write(proc.stderr[-4000:])
        return proc


def machine(check: Check) -> dict:
    import torch

    from tuner.train.energy import energy_source

    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if check.cuda else []
    return {
        "ok": True,
        "gpus": gpus,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "bf16_supported": torch.cuda.is_bf16_supported() if gpus else None,
        "python": sys.version.split()[0],
        "energy_source": energy_source("cuda" if gpus else "cpu", 0),
    }


def cuda_tests(check: Check) -> dict:
    junit = check.folder / "cuda-tests.xml"
    cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "-n", "0", "-p", "no:cacheprovider", f"--junitxml={junit}", "tests/cuda"]
    proc = subprocess.run(cmd, cwd=REPO, env=check.env, capture_output=True, text=True, timeout=check.budget("tests") + 120, check=False)
    sys.stderr.write(proc.stdout[-3000:])
    suite = ET.parse(junit).getroot().find("testsuite") if junit.exists() else None
    if suite is None:
        return {"ok": False, "exit_code": proc.returncode, "error": (proc.stdout + proc.stderr)[-1000:]}
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    failed = [
        f"{case.get('name')}: {(bad.get('message') or '').splitlines()[0][:200] if bad.get('message') else ''}"
        for case in suite.iter("testcase")
        for bad in [*case.findall("failure"), *case.findall("error")]
    ]
    skip_reasons = sorted({s.get("message", "") for s in suite.iter("skipped")})
    return {"ok": proc.returncode == 0, **counts, "failed": failed, "skip_reasons": skip_reasons}


def mlflow_energy(uri: str, name: str) -> dict:
    """How many of the study's MLflow runs carry energy, and the study run's energy figures."""
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name(name)
    runs = client.search_runs([experiment.experiment_id]) if experiment is not None else []
    children = [r for r in runs if r.data.tags.get("tuner.role") != "parent"]
    parent = next((r.data.metrics for r in runs if r.data.tags.get("tuner.role") == "parent"), {})
    return {
        "runs": len(children),
        "runs_with_energy_J": sum("energy_J" in r.data.metrics for r in children),
        "runs_with_host_syncs": sum("host_syncs_per_step" in r.data.metrics for r in children),
        "study_run": {k: v for k, v in parent.items() if "energy" in k},
    }


def study(check: Check, part: str, experiment: Path) -> dict:
    """``tuner run EXPERIMENT --json`` in a folder of its own, with its default stores there."""
    folder = check.folder / part
    extra = ["--n-trials", "4"] if check.smoke else []
    proc = check.tuner(
        "run", str(experiment), "--timeout", str(check.budget(part)), "--json", *extra, cwd=folder, timeout_s=check.budget(part)
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    report = json.loads(lines[-1]) if lines else {}
    summary = [x for x in proc.stderr.splitlines() if x.startswith(("winner", "energy (", "no trial", "the search found"))]
    out = {"ok": proc.returncode == 0, "exit_code": proc.returncode, "summary": report.get("summary"), "lines": summary}
    out.update({k: report.get(k) for k in ("outcomes", "baseline_ratio", "energy")})
    name = report.get("study")
    if name and (folder / "mlruns" / "mlflow.db").exists():
        out["mlflow"] = mlflow_energy(f"sqlite:///{folder / 'mlruns' / 'mlflow.db'}", name)
    return out


def levers(check: Check) -> dict:
    """The issue's charlm configuration in each precision and compile mode, one run each, in this process."""
    import torch

    from tuner.tasks.registry import build_task
    from tuner.train.target import Target
    from tuner.train.time_to_target import StopRule
    from tuner.train.trial import train_trial
    from tuner.train.trial_config import TrialConfig

    device = torch.device("cuda" if check.cuda else "cpu")
    task = build_task("charlm")
    if check.smoke:  # a tiny model and a short run: the path, not the figure
        config = TrialConfig(optimizer="adam", lr=3e-3, batch_size=16, width=0.5, hyper={"depth": 1})
        rule = StopRule(target=Target(2.6, "loss", "minimize"), eval_every_samples=320, cap_s=5.0, max_samples=640)
    else:
        config = TrialConfig(optimizer="adam", lr=3e-3, batch_size=128, width=1.5, hyper={"depth": 3})
        rule = StopRule(target=Target(2.6, "loss", "minimize"), eval_every_samples=3200, cap_s=20.0, clock="train")
    rule = dataclasses.replace(rule, charge_setup=False)  # compile time is recorded on its own, not spent from the cap
    rows, deadline = [], time.perf_counter() + check.budget("levers")
    for precision, mode in LEVERS:
        if mode == "reduce-overhead" and device.type != "cuda":
            rows.append({"precision": precision, "compile": mode, "skipped": "CUDA graphs need a CUDA device"})
            continue
        if time.perf_counter() > deadline:
            rows.append({"precision": precision, "compile": mode, "skipped": "not run: the part's time budget was spent"})
            continue
        config_i = TrialConfig.from_params({**config.as_params(), "precision": precision, "compile": mode})
        r = train_trial(task, config_i, rule, device, seed=0)
        keys = ("train_s_to_target", "robust_s_to_target", "wall_s_to_target", "compile_s", "samples_to_target", "energy_j")
        row = {"precision": precision, "compile": mode, "outcome": r.outcome.value, "reason": r.reason}
        row.update({k: getattr(r, k) for k in (*keys, "energy_j_to_target", "host_syncs_per_step", "peak_memory_mb", "throughput")})
        rows.append(row)
        print(f"levers: {precision} compile={mode}: {r.outcome.value}, train {r.train_s:.2f} s, energy {r.energy_j} J", file=sys.stderr)
    return {
        "ok": all(r.get("outcome") == "reached" or "skipped" in r or check.smoke for r in rows),
        "rule": dataclasses.asdict(rule),
        "runs": rows,
    }


def workers(check: Check) -> dict:
    import optuna
    from optuna.trial import TrialState

    folder = check.folder / "workers"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "w.yaml").write_text(WORKERS_EXPERIMENT.format(space=REPO / "search_spaces" / "default.yaml", folder=folder))
    # Untracked: MLflow is checked by the default study; this part measures the sharing.
    args = ["run", str(folder / "w.yaml"), "--workers", "2", "--share-devices", "--no-tracking", "--timeout", str(check.budget("workers"))]
    start = time.perf_counter()
    proc = check.tuner(*args, *(["--n-trials", "4"] if check.smoke else []), cwd=folder, timeout_s=check.budget("workers"))
    wall = time.perf_counter() - start
    trials = optuna.load_study(study_name="gpu-check-workers", storage=f"sqlite:///{folder}/study.db").get_trials(deepcopy=False)
    done = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    return {
        "ok": proc.returncode == 0,
        "exit_code": proc.returncode,
        "wall_s": round(wall, 1),
        "finished": len(done),
        "overlap_s": overlap(trials),
    }


def overlap(trials: list) -> float:
    """Seconds during which two trials ran at once: both workers really shared the GPU."""
    spans = sorted((t.datetime_start, t.datetime_complete) for t in trials if t.datetime_start and t.datetime_complete)
    total = sum(max(0.0, (min(e1, e2) - s2).total_seconds()) for (_, e1), (s2, e2) in itertools.pairwise(spans))
    return round(total, 1)


PARTS: dict[str, Callable[[Check], dict]] = {
    "machine": machine,
    "tests": cuda_tests,
    "default": lambda c: study(c, "default", REPO / "experiments" / "mnist1d_cnn.yaml"),
    "charlm": lambda c: study(c, "charlm", REPO / "experiments" / "charlm.yaml"),
    "levers": levers,
    "workers": workers,
}


def markdown(report: dict | None) -> str:
    """docs/benchmarks.md's GPU section from a results file (None: none committed yet)."""
    if not report or report.get("smoke"):
        return "No results file from a GPU is committed yet: `benchmarks/results/gpu_check.json` appears once the check has run on one."
    m, parts = report["parts"]["machine"], report["parts"]
    lines = [
        f"{', '.join(m.get('gpus') or ['no GPU'])}, torch {m.get('torch')}, CUDA {m.get('cuda')}; energy from {m.get('energy_source')}.",
        "",
    ]
    t = parts.get("tests", {})
    failed, skipped = t.get("failures", 0) + t.get("errors", 0), t.get("skipped", 0)
    lines.append(f"- CUDA tests: {t.get('tests', 0) - failed - skipped} passed, {failed} failed, {skipped} skipped ({t.get('seconds')} s).")
    for name in ("default", "charlm"):
        p = parts.get(name, {})
        said = "; ".join(x for x in p.get("lines", []) if x.startswith(("winner", "energy (")))
        lines.append(
            f"- {name} study ({p.get('seconds')} s): {p.get('summary') or p.get('error', 'no result')}" + (f"; {said}" if said else "")
        )
    w = parts.get("workers", {})
    lines.append(f"- 2 workers on one GPU: {w.get('finished')} trials in {w.get('wall_s')} s, {w.get('overlap_s')} s of overlap.")
    lines += [
        "",
        "| precision | compile | time to target (train clock) | compile_s | energy to target | host syncs per step |",
        "|---|---|---|---|---|---|",
    ]
    for r in parts.get("levers", {}).get("runs", []):
        fmt = lambda v, unit="": "-" if v is None else f"{v:.3g}{unit}"
        time_s = fmt(r.get("train_s_to_target"), " s") if r.get("outcome") == "reached" else r.get("outcome", r.get("skipped"))
        lines.append(
            f"| {r['precision']} | {r['compile']} | {time_s} | {fmt(r.get('compile_s'), ' s')} "
            f"| {fmt(r.get('energy_j_to_target'), ' J')} | {fmt(r.get('host_syncs_per_step'))} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="the CPU rehearsal: every part on tiny budgets")
    parser.add_argument("--plan", action="store_true", help="print the parts and their budgets; run nothing")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"which parts to run (default: all of {', '.join(PARTS)})")
    parser.add_argument("--wheels", help="a folder of wheels to install first (scripts/gpu_wheels.sh)")
    parser.add_argument("--results", help="the results file (default benchmarks/results/gpu_check.json; a temporary file with --smoke)")
    args = parser.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        parser.error(f"--parts: expected some of {', '.join(PARTS)}, got {', '.join(unknown)}")
    if args.plan:
        print(json.dumps({"smoke": args.smoke, "parts": {p: {"budget_s": BUDGETS[p][1 if args.smoke else 0]} for p in parts}}, indent=2))
        return
    if args.wheels:
        install_wheels(args.wheels, sys.argv[1:])
    if str(REPO) not in sys.path:
        sys.path.insert(1, str(REPO))  # tuner from this checkout, installed or not
    folder = Path(tempfile.mkdtemp(prefix="gpu-check-"))
    check = Check(args.smoke, folder)
    if not check.smoke and not check.cuda:
        sys.exit("gpu_check: no CUDA device here (rehearse on a CPU with --smoke)")
    results = Path(args.results) if args.results else (folder / "gpu_check.json" if args.smoke else RESULTS)
    report: dict = {"smoke": args.smoke, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "parts": {}}
    start = time.perf_counter()
    for name in parts:
        t0 = time.perf_counter()
        print(f"gpu_check: {name} (budget {check.budget(name)} s)", file=sys.stderr, flush=True)
        try:
            out = PARTS[name](check)
        except Exception as err:  # noqa: BLE001 -- a broken part is a finding; the other parts still run
            out = {"ok": False, "error": f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"}
        report["parts"][name] = {**out, "seconds": round(time.perf_counter() - t0, 1)}
        report["total_s"] = round(time.perf_counter() - start, 1)
        results.parent.mkdir(parents=True, exist_ok=True)
        results.write_text(json.dumps(report, indent=2, default=str) + "\n")  # after every part: a cut run keeps what it measured
    if os.environ.get("OUT"):
        shutil.copy(results, Path(os.environ["OUT"]) / "gpu_check.json")
    print(json.dumps({k: v.get("ok") for k, v in report["parts"].items()}), f"total {report['total_s']} s; wrote {results}")
    if results.parent != folder:
        shutil.rmtree(folder, ignore_errors=True)
    sys.exit(0 if all(p.get("ok", True) for p in report["parts"].values()) else 1)


if __name__ == "__main__":
    main()
