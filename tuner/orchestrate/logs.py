"""What libraries may print on the terminal while a study runs: never a traceback for a failed trial.

A failed trial is a trial outcome, said once by the study's own progress line (``failed`` and
its reason) and, when several fail alike, by the run's one error line. Optuna logs every
failed trial again as a warning with the objective's traceback (``Trial 3 failed with
parameters ...`` and ``Trial 3 failed with value None``): those records are dropped here, at
the logger that emits them, so that no later ``optuna.logging.set_verbosity`` brings them back.
Optuna's other warnings pass.

With ``--verbose`` the traceback of the first trial that failed is shown, as the trainer
logged it (tuner/train/trial.py, at DEBUG): the user's own code, where the error was raised.
"""

from __future__ import annotations

import logging
import sys

OPTUNA_TRIAL_LOGGER = "optuna.study._optimize"  # where Optuna 5 logs a failed trial, with exc_info
TRIAL_LOGGER = "tuner.train.trial"  # where the trainer logs a failed trial's traceback, at DEBUG
# MLflow logs every failed write of its database store with the traceback (a full disk: pages of
# them), then raises it; the tracking layer reports that error in one line (tuner/track/trial_runs.py).
MLFLOW_DB_LOGGER = "mlflow.store.db.utils"


class _DropFailedTrials(logging.Filter):
    """Drops Optuna's records of a failed trial; lets everything else through."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("Trial ") and " failed with " in message)


class _DropAll(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return False


class _FirstOnly(logging.Filter):
    """Lets one record through: the first failure's traceback is enough to debug it."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        first, self.seen = not self.seen, True
        return first


def quiet_failed_trials(verbose: bool = False) -> None:
    """Keep failed trials' tracebacks off the terminal; ``verbose`` shows the first one."""
    mlflow_db = logging.getLogger(MLFLOW_DB_LOGGER)
    if not any(isinstance(f, _DropAll) for f in mlflow_db.filters):  # a filter: MLflow's logging set-up resets levels
        mlflow_db.addFilter(_DropAll())
    optuna_logger = logging.getLogger(OPTUNA_TRIAL_LOGGER)
    if not any(isinstance(f, _DropFailedTrials) for f in optuna_logger.filters):  # main() may run twice in one process
        optuna_logger.addFilter(_DropFailedTrials())
    trial_logger = logging.getLogger(TRIAL_LOGGER)
    for handler in [h for h in trial_logger.handlers if getattr(h, "tuner_verbose", False)]:
        trial_logger.removeHandler(handler)
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.tuner_verbose = True  # type: ignore[attr-defined]  # so that a second call replaces it
        handler.setFormatter(logging.Formatter("tuner: the first failed trial's traceback (--verbose): %(message)s"))
        handler.addFilter(_FirstOnly())
        trial_logger.addHandler(handler)
        trial_logger.setLevel(logging.DEBUG)
