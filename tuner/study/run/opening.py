"""Opening a study: create it or load it to resume, refuse one made for another objective, and
keep what preparing measured, once the stores are in use.

Every way to run a study opens it here: one process (tuner/study/run/runner.py), the process that
starts workers (tuner/study/run/workers.py), and a night (tuner/nightly/night.py).
"""

from __future__ import annotations

import optuna

from tuner.environment import fingerprint
from tuner.redact import redact_data
from tuner.study.experiment.load import Experiment
from tuner.study.objective_identity import ObjectiveIdentity
from tuner.study.run.auto_cap import seconds_cap
from tuner.study.run.auto_clock import resolve_clock
from tuner.study.run.batch_ceiling import keep_ceilings
from tuner.study.run.prepare import Prepared
from tuner.study.run.sampler import make_sampler
from tuner.study.scoring.units import metric_names, unit
from tuner.study.stopping import make_pruner
from tuner.study.storage.open import STORAGE_ERRORS, StaleListener, open_storage, storage_error
from tuner.study.study_record import stored_definition, write_definition, write_environment, write_metric_names


def objective_metric_names(experiment: Experiment) -> list[str]:
    """Optuna's name for each objective: what it is, to which target, in which unit (``time to loss <= 1.6 (s)``)."""
    o = experiment.objective
    return metric_names(o.names, tuple(unit(name, experiment.cost) for name in o.names), o.goal)


def open_study(
    experiment: Experiment, on_stale: StaleListener | None = None, storage: optuna.storages.BaseStorage | None = None
) -> optuna.Study:
    """Create the study, or load it to resume; refuses a study made for another objective.

    The storage sends heartbeats (experiment.heartbeat); ``on_stale`` hears of each trial
    whose worker died, after it is failed and re-queued. ``storage``: one already open (a
    simulation's in-memory storage, tuner/simulate/) instead of the experiment's.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage or open_storage(experiment.storage, experiment.heartbeat, experiment.source, on_stale)
    try:
        directions = ["minimize"] * len(experiment.objective.names)  # several: a Pareto front (tuner/study/scoring/pareto.py)
        study = optuna.create_study(study_name=experiment.name, storage=storage, directions=directions, load_if_exists=True)
    except STORAGE_ERRORS as err:
        raise storage_error(experiment.source, experiment.storage, err) from None
    stored = stored_definition(study)
    experiment = resolve_clock(experiment, stored)  # clock: auto, named once: the study's own, or this machine's for a new one
    wanted = ObjectiveIdentity.of(experiment)
    if stored is None:
        write_definition(study, wanted.as_stored(), redact_data(experiment.to_dict()))  # exported by `tuner best`: no passwords
    else:  # its trials and this run's compare only under the same objective
        where = f" as in the existing study {experiment.name!r} (or a new --study-name)"
        ObjectiveIdentity.stored(stored).refuse_other(wanted, experiment.source, where)
    write_metric_names(study, objective_metric_names(experiment))  # a study an earlier version made gets them too
    # Re-load with the sampler seeded past the trials already there.
    n_existing = len(study.get_trials(deepcopy=False))
    return optuna.load_study(
        study_name=experiment.name,
        storage=storage,
        sampler=make_sampler(experiment, n_existing),
        pruner=make_pruner(experiment.pruner, seconds_cap(study, experiment).objective),
    )


def open_run(
    experiment: Experiment,
    prepared: Prepared,
    on_stale: StaleListener | None = None,
    storage: optuna.storages.BaseStorage | None = None,
) -> tuple[optuna.Study, Experiment]:
    """Open the study for a run, keep the batch ceilings measured while preparing and the machine's
    fingerprint; returns the study and the experiment with its cap in seconds (resolved, or
    provisional until the baseline has run: tuner/study/run/auto_cap.py)."""
    study = open_study(experiment, on_stale=on_stale, storage=storage)
    keep_ceilings(experiment, prepared.to_keep)  # measured while preparing, kept now that the stores are in use
    write_environment(study, fingerprint())  # the report's fingerprint, with or without tracking
    return study, seconds_cap(study, resolve_clock(experiment, stored_definition(study)))  # the clock the study stored
