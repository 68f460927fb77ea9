"""The default experiment with the efficiency levers and the throughput pre-screen, against
the same experiment without them: same budget, same machine, alternating, ``--repeats``
times (sampler seeds 0, 1, ...).

"With" is experiments/mnist1d_cnn.yaml as shipped (search_spaces/default.yaml with its lever
dimensions, the pre-screen on). "Without" removes the lever dimensions from the space (they
keep their off defaults) and turns the pre-screen off (`screen: null`). Each side is one
`tuner run --json` (search, then confirmation of the winner on its seeds, then the
baseline). Reported per run: the confirmed winner's median time to target, the search
trials (configurations evaluated), and the share of them that ended `screened`.

Prints a table and writes benchmarks/results/levers_study.json and levers_study.md.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
RESULTS = REPO / "benchmarks" / "results"
LEVERS = ["lr_scaling", "ramp_start", "ramp_frac", "channels_last", "compile", "accumulate"]


def experiment(folder: Path, side: str, seed: int, budget_s: int) -> Path:
    raw = yaml.safe_load((REPO / "experiments" / "mnist1d_cnn.yaml").read_text())
    raw["name"] = f"levers-{side}-{seed}"
    raw["seed"] = seed
    raw["budget"] = {"timeout_s": budget_s}
    raw["storage"] = f"sqlite:///{folder / 'tuner.db'}"
    raw["tracking_uri"] = f"sqlite:///{folder / 'mlflow.db'}"
    space = str(REPO / "search_spaces" / "default.yaml")
    raw["search_space"] = {"file": space, "remove": LEVERS} if side == "without" else {"file": space}
    if side == "without":
        raw["screen"] = None
    path = folder / f"{raw['name']}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def run_side(folder: Path, side: str, seed: int, budget_s: int) -> dict:
    import optuna

    from tuner.study.record import finished_search_trials

    path = experiment(folder, side, seed, budget_s)
    started = time.time()
    proc = subprocess.run(
        [sys.executable, "-m", "tuner", "run", str(path), "--json"], cwd=folder, capture_output=True, text=True, check=False
    )
    if proc.returncode not in (0, 1):
        raise SystemExit(f"tuner run failed ({side}, seed {seed}):\n{proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    study = optuna.load_study(study_name=f"levers-{side}-{seed}", storage=f"sqlite:///{folder / 'tuner.db'}")
    search = finished_search_trials(study)
    outcomes = Counter(r.outcome.value for r in search if r.outcome is not None)
    confirmation = out.get("confirmation") or []
    winner = confirmation[0] if confirmation else None
    return {
        "side": side,
        "seed": seed,
        "minutes": (time.time() - started) / 60,
        "winner_median_s": winner["median_s"] if winner else None,
        "winner_range_s": winner["range_s"] if winner else None,
        "winner_reached": winner["reached"] if winner else None,
        "winner_config": (out.get("winner") or {}).get("config"),
        "configurations": len(search),
        "outcomes": dict(outcomes),
        "screened_share": outcomes.get("screened", 0) / len(search) if search else 0.0,
        "baseline_ratio": out.get("baseline_ratio"),
    }


def markdown(rows: list[dict], summary: dict) -> str:
    lines = ["| side | seed | winner median s (range) | reached | configurations | screened | outcomes |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        med = (
            f"{r['winner_median_s']:.3f} ({r['winner_range_s'][0]:.3f}-{r['winner_range_s'][1]:.3f})"
            if r["winner_median_s"] is not None
            else "none"
        )
        lines.append(
            f"| {r['side']} | {r['seed']} | {med} | {r['winner_reached']} | {r['configurations']} | {r['screened_share']:.0%} | "
            + ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
            + " |"
        )
    lines.append("")
    for side, s in summary.items():
        lines.append(
            f"- {side}: median of the winners' medians {s['winner_median_s']}, median configurations {s['configurations']}, "
            f"median screened share {s['screened_share']:.0%}"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--budget", type=int, default=240, help="seconds of search per study (default 240)")
    args = parser.parse_args()
    from tuner.environment import fingerprint

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.repeats):
            order = ("without", "with") if seed % 2 == 0 else ("with", "without")  # alternate who goes first
            for side in order:
                folder = Path(tmp) / f"{side}-{seed}"
                folder.mkdir()
                row = run_side(folder, side, seed, args.budget)
                print(json.dumps(row), flush=True)
                rows.append(row)
    summary = {}
    for side in ("without", "with"):
        mine = [r for r in rows if r["side"] == side]
        medians = [r["winner_median_s"] for r in mine if r["winner_median_s"] is not None]
        summary[side] = {
            "winner_median_s": statistics.median(medians) if medians else None,
            "configurations": statistics.median(r["configurations"] for r in mine),
            "screened_share": statistics.median(r["screened_share"] for r in mine),
        }
    out = {
        "rows": rows,
        "summary": summary,
        "budget_s": args.budget,
        "repeats": args.repeats,
        "environment": fingerprint(),
        "note": "alternating sides, sampler seeds 0..repeats-1; winners' medians are the studies' own confirmation medians",
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "levers_study.json").write_text(json.dumps(out, indent=2, default=str) + "\n")
    (RESULTS / "levers_study.md").write_text(markdown(rows, summary))
    print(markdown(rows, summary))


if __name__ == "__main__":
    main()
