"""A run's MLflow tracking: the hook that logs the study's runs, set as each command needs it."""

from __future__ import annotations

from tuner.orchestrate.options import RunOptions
from tuner.orchestrate.worker_role import SETTLE_S
from tuner.redact import redact
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks


def sync_source(options: RunOptions) -> str:
    """How the study's runs name where they came from: `tuner run`'s names the flags that find the
    study again (what `tuner sync` needs); the other commands' the experiment file."""
    if options.command != "run":
        return options.experiment
    flags = {
        "--study-name": options.overrides.name,
        "--storage": options.overrides.storage,
        "--tracking-uri": options.overrides.tracking_uri,
    }
    return " ".join([options.experiment, *(f"{k} {v}" for k, v in flags.items() if v)])


def tracking_hooks(options: RunOptions, experiment: Experiment) -> list[StudyHooks]:
    """The MLflow hook, or none without tracking. `tuner run` prints its result before MLflow's last
    writes are drained; a worker shares the study's runs with the other workers (a worker that
    `tuner run --workers` started leaves the summary to it)."""
    if not options.tracking:
        return []
    from tuner.track.trial_runs import MlflowTracking  # importing mlflow takes seconds: only when tracking

    source = redact(options.source or sync_source(options))
    if options.command == "worker":
        coordinated = options.worker is not None and options.worker.coordinated
        # The worker that ends the study's last trial writes its summary, unless a coordinator does.
        return [
            MlflowTracking(
                experiment.tracking_uri,
                source=source,
                summary=not coordinated,
                settle_s=0.0 if coordinated else SETTLE_S,
                shared=not coordinated,
            )
        ]
    return [MlflowTracking(experiment.tracking_uri, source=source, drain_later=options.command == "run")]
