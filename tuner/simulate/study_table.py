"""A study's own trials as a table: replaying a study someone ran, decision by decision.

Each finished trial that recorded its curve is one row, under its full configuration and its
seed; a replay looks a trial up by both (tuner/simulate/table.py), so that a study replayed
with its own seed samples the same first configurations and meets the same curves. The
stored curve keeps times to 0.1 ms and metrics exactly; a study stored before curves
kept their steps has them from the samples and the batch size.
"""

from __future__ import annotations

from typing import Any

import optuna

from tuner.simulate.table import EVALUATION_FIELDS, FORMAT, Table
from tuner.study.record import FINISHED, records


def study_table(study: optuna.Study, objective: dict[str, Any], source: str) -> Table:
    """The table of ``study``'s finished trials, recorded under ``objective`` (``table_objective``)."""
    rows = []
    for r in records(study, FINISHED):
        if r.result is None or r.curve is None or r.config is None or r.seed is None:
            continue
        c = r.curve
        steps = c.steps or tuple(s // r.config.batch_size for s in c.samples)
        n = len(c.metric)
        column = {
            "samples": c.samples,
            "steps": steps,
            "metric": c.metric,
            "loss": c.loss or (None,) * n,
            "train_loss": (None,) * n,
            "train_s": c.train_s,
            "wall_s": c.wall_s,
            "robust_s": c.robust_s or c.train_s,
            "cpu_s": c.cpu_s or (None,) * n,
        }
        evaluations = [[column[name][i] for name in EVALUATION_FIELDS] for i in range(n)]
        rows.append({"config": r.config.as_params(), "seed": r.seed, "result": r.result.to_attrs(), "evaluations": evaluations})
    if not rows:
        raise ValueError(f"{source}: study {study.study_name!r} holds no finished trial with its curve")
    return Table(
        {"format": FORMAT, "objective": objective, "grid": {}, "fixed": {}, "meta": {"study": study.study_name}, "trials": rows}, source
    )
