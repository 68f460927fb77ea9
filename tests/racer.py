"""Test helper: a worker process racing others on one study's trial budget
(tests/study/storage/test_budget.py on SQLite and PostgreSQL, test_proxy.py through the proxy).

    python racer.py URL STUDY N_TOTAL SEED

Random-length trials, a quarter failing (they free their place) and some pruned (they
count), through the storage tuner opens for ``URL`` (a database, or a grpc:// proxy), until
the study's budget is finished.
"""

from __future__ import annotations

import random
import sys
import time
import warnings

import optuna
from optuna.trial import TrialState

from tuner.study.experiment.load import Heartbeat
from tuner.study.storage.budget_loop import optimize_within_budget
from tuner.study.storage.open import open_storage

PATH = __file__


class Flaky(Exception):
    pass


def main() -> None:
    warnings.simplefilter("ignore")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    url, name, n_total, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    storage = open_storage(url, Heartbeat(interval_s=1, grace_s=30), "racer")
    study = optuna.load_study(study_name=name, storage=storage, sampler=optuna.samplers.RandomSampler(seed))
    rng = random.Random(seed)

    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0, 1)
        time.sleep(rng.uniform(0.0, 0.04))
        if rng.random() < 0.25:
            raise Flaky()
        if rng.random() < 0.2:
            raise optuna.TrialPruned()
        return x

    done = optuna.study.MaxTrialsCallback(n_total, states=(TrialState.COMPLETE, TrialState.PRUNED))
    optimize_within_budget(study, objective, n_total, (Flaky,), [done])


if __name__ == "__main__":
    main()
