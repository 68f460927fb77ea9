"""A run's MLflow tracking: the hook that logs the study's runs, set as each command needs it."""

from __future__ import annotations

from tuner.orchestrate.options import Overrides, RunOptions
from tuner.orchestrate.worker_role import SETTLE_S
from tuner.redact import redact
from tuner.study.experiment.load import Experiment
from tuner.study.hooks import StudyHooks


def sync_source(experiment: str, overrides: Overrides) -> str:
    """Where the study's runs came from, as `tuner sync` finds the study again: the experiment file
    and the flags that name another study, storage or tracking URI (`tuner run`'s, a night's)."""
    flags = {"--study-name": overrides.name, "--storage": overrides.storage, "--tracking-uri": overrides.tracking_uri}
    return " ".join([experiment, *(f"{k} {v}" for k, v in flags.items() if v)])


def tracking_hooks(options: RunOptions, experiment: Experiment) -> list[StudyHooks]:
    """The MLflow hook, or none without tracking. A run that drains MLflow's last writes after its
    closing lines (`tuner run`) leaves them queued as its study ends; a worker shares the study's
    runs with the other workers (a worker that `tuner run --workers` started leaves the summary to it)."""
    if not options.tracking:
        return []
    from tuner.report.study_run import ReportViews  # the study run's plots and report: their libraries load with tracking
    from tuner.track.trial_runs import MlflowTracking  # importing mlflow takes seconds: only when tracking

    source = redact(options.source or options.experiment)
    if options.worker is not None:
        coordinated = options.worker.coordinated
        # The worker that ends the study's last trial writes its summary, unless a coordinator does.
        return [
            MlflowTracking(
                experiment.tracking_uri,
                views=ReportViews(),
                source=source,
                summary=not coordinated,
                settle_s=0.0 if coordinated else SETTLE_S,
                shared=not coordinated,
            )
        ]
    return [MlflowTracking(experiment.tracking_uri, views=ReportViews(), source=source, drain_later=options.drain_tracking)]
