"""Tune an expensive job for less than two of its runs: a proxy study's winner against the reference
and against the current default given the same cost.

1. The reference (``--reference``, the job's configuration today) trains once: the wall seconds
   of that run are one full-size trial-length.
2. The proxy study (``--experiment``, which names ``proxy:``) runs with a time budget of
   ``--budget`` trial-lengths; its whole wall time, search and full-size decision together, is
   the tuning cost. Its winner is exported with `tuner best`.
3. The current default at the same cost: the same experiment without ``proxy:``, the same budget.
4. The reference and both winners train alternately, one seed at a time, on ``--seeds`` seeds
   (`tuner train`); medians of the time to target on the experiment's clock (a miss counts at
   its censored value and is reported).

Results: ``benchmarks/results/proxy_check.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import tempfile
import time
from pathlib import Path

import optuna
import yaml
from tuned_vs_default import REPO, train, tuner

from tuner.study.record import COMPLETE, records
from tuner.train.result import Outcome

RESULTS = REPO / "benchmarks" / "results"


def study(experiment: Path, timeout: float, work: Path, name: str) -> dict:
    """Run one study into its own storage, export its winner; its wall seconds and the winner's file."""
    storage = f"sqlite:///{work / (name + '.db')}"
    start = time.perf_counter()
    # To the tenth of a second, rounded down: rounded to the second, a budget of 288.7 s ran as 289.
    ran = tuner("run", str(experiment), "--timeout", f"{math.floor(timeout * 10) / 10:.1f}", "--storage", storage, cwd=work)
    wall = time.perf_counter() - start
    print(ran.stdout[-3000:], ran.stderr[-3000:], sep="\n")
    if ran.returncode != 0:
        raise SystemExit(f"tuner run {experiment} failed:\n{ran.stderr}")
    best = work / f"{name}-best.yaml"
    exported = tuner("best", str(experiment), "--storage", storage, "-o", str(best), cwd=work)
    if exported.returncode != 0:
        raise SystemExit(f"tuner best failed:\n{exported.stderr}")
    lines = [line for line in ran.stderr.splitlines() if line.startswith(("proxy:", "pruner: auto"))]
    return {"wall_s": wall, "best": best, "lines": lines, "storage": storage, "summary": ran.stdout.strip().splitlines()[-4:]}


def proxy_baseline_s(proxy: dict) -> list[float]:
    """The times to target of the proxy study's baseline runs at the proxy (on the experiment's clock):
    the reference's configuration at the proxy's fidelity, what one proxy trial-length is."""
    named = [re.search(r"as study '([^']+)'", line) for line in proxy["lines"]]
    name = next(match.group(1) for match in named if match)
    searched = optuna.load_study(study_name=name, storage=proxy["storage"])
    return [r.value for r in records(searched, COMPLETE) if r.is_baseline and r.outcome is Outcome.REACHED]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--experiment", default=str(REPO / "experiments" / "charlm_wide.yaml"))
    parser.add_argument("--reference", default=str(REPO / "experiments" / "charlm_wide_reference.yaml"))
    parser.add_argument("--budget", type=float, default=2.0, help="the tuning budget in full-size trial-lengths")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--name", default="proxy_check")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="proxy_check_"))
    started = time.perf_counter()

    first = train(Path(args.reference), 0, work)
    length_s = first["wall_s"]
    timeout = args.budget * length_s
    print(f"one full-size trial-length: {length_s:.1f} s (the reference's wall time); budget {timeout:.0f} s")

    proxy = study(Path(args.experiment), timeout, work, "proxy")
    without = yaml.safe_load(Path(args.experiment).read_text())
    without.pop("proxy")
    without["name"] = f"{without.get('name', 'job')}-default"
    default_file = Path(args.experiment).parent / f".{Path(args.experiment).stem}-default.yaml"  # beside it: relative paths hold
    default_file.write_text(yaml.safe_dump(without, sort_keys=False))
    try:
        default = study(default_file, timeout, work, "default")
    finally:
        default_file.unlink()

    runs: dict[str, list[dict]] = {"reference": [first], "proxy": [], "default": []}
    for seed in range(args.seeds):  # alternating: the machine's drift hits every arm alike
        if seed:
            runs["reference"].append(train(Path(args.reference), seed, work))
        runs["proxy"].append(train(proxy["best"], seed, work))
        runs["default"].append(train(default["best"], seed, work))
        print(f"seed {seed}: " + ", ".join(f"{arm} {r[-1]['value']:.3g} ({r[-1]['outcome']})" for arm, r in runs.items()))

    medians = {arm: statistics.median(r["value"] for r in rs) for arm, rs in runs.items()}
    at_proxy = proxy_baseline_s(proxy)
    proxy_trial_s = statistics.median(at_proxy) if at_proxy else None
    figures = {
        "experiment": Path(args.experiment).name,
        "reference": Path(args.reference).name,
        "trial_length_s": length_s,
        "budget_trial_lengths": args.budget,
        "proxy_cost_trial_lengths": proxy["wall_s"] / length_s,
        "default_cost_trial_lengths": default["wall_s"] / length_s,
        "proxy_lines": proxy["lines"],
        "proxy_baseline_s": at_proxy,
        "full_over_proxy_trial": medians["reference"] / proxy_trial_s if proxy_trial_s else None,
        "default_lines": default["lines"],
        "seeds": args.seeds,
        "medians_s": medians,
        "reference_over_proxy": medians["reference"] / medians["proxy"],
        "reference_over_default": medians["reference"] / medians["default"],
        "default_over_proxy": medians["default"] / medians["proxy"],
        "misses": {arm: sum(r["outcome"] != "reached" for r in rs) for arm, rs in runs.items()},
        "values_s": {arm: [r["value"] for r in rs] for arm, rs in runs.items()},
        "configs": {arm: rs[0]["config"] for arm, rs in runs.items()},
        "minutes": round((time.perf_counter() - started) / 60, 1),
        "machine": "shared 2-core VM, no GPU (one torch thread a process)",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(figures, indent=2) + "\n")
    lines = [
        f"# {figures['experiment']}: a proxy study against the reference and the default, at {args.budget:g} trial-lengths",
        "",
        (
            f"One full-size trial-length: {length_s:.1f} s (the reference's run on seed 0). "
            f"Medians over {args.seeds} seeds, alternating, on the experiment's clock; {figures['machine']}; "
            f"{figures['minutes']} minutes. Made by `benchmarks/proxy_check.py`."
        ),
        "",
        "| arm | tuning cost (trial-lengths) | median time to target (s) | reference / arm | misses |",
        "|---|---|---|---|---|",
        f"| reference | 0 | {medians['reference']:.1f} | 1.00 | {figures['misses']['reference']} |",
        (
            f"| proxy study | {figures['proxy_cost_trial_lengths']:.2f} | {medians['proxy']:.1f} | "
            f"{figures['reference_over_proxy']:.2f} | {figures['misses']['proxy']} |"
        ),
        (
            f"| default study, same budget | {figures['default_cost_trial_lengths']:.2f} | {medians['default']:.1f} | "
            f"{figures['reference_over_default']:.2f} | {figures['misses']['default']} |"
        ),
        "",
        (
            f"A full-size trial against a proxy trial (the reference's configuration, median time to target at each): "
            f"{medians['reference']:.1f} s / {proxy_trial_s:.1f} s = {figures['full_over_proxy_trial']:.1f}x."
            if proxy_trial_s
            else "The proxy study's baseline reached nothing at the proxy: no proxy trial-length to compare."
        ),
        "",
        "The proxy study said:",
        "",
        *[f"- `{line}`" for line in proxy["lines"]],
    ]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
