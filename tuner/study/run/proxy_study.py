"""A study that searches at a cheap proxy and decides at full size (an experiment's ``proxy:``).

For a job whose one run takes hours, a search at its own size costs many runs. Here:

1. **The search** runs at the proxy's fidelity (tuner/study/experiment/proxy.py: a narrower
   model, its own target, a shorter horizon) as a study of its own, ``NAME-proxy``, for
   ``proxy.share`` of the time budget, with the baseline first and the budget rule as usual,
   and no re-runs: a proxy's time only ranks proxy trials. Under ``parametrization: mup``
   with its base at the proxy's width (the default of a proxy study) the learning rate it
   finds holds at the job's width (tuner/train/mup.py).
2. **Full size**, in the study ``NAME`` that `tuner best` exports from: the proxy's best
   ``proxy.candidates`` configurations at the job's fidelity, each capped at the best before
   it, with the baseline after the first, capped at ``CLEAR_MARGIN`` x the best candidate's
   time: a baseline that has not reached by then has lost clearly, and the rest of its run
   would decide nothing. A close call is decided on a second seed of both while time is left.
3. **Transfer checked**: when no candidate reaches the target at full size, or none beats the
   baseline there, the study says so in one line and searches at full size for the time left.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import optuna

from tuner.redact import redact_data
from tuner.study.experiment.load import Experiment
from tuner.study.experiment.proxy import CLEAR_MARGIN
from tuner.study.hooks import StudyHooks
from tuner.study.record import COMPLETE, NOT_FAILED, PROXY_OF, records
from tuner.study.reruns.baseline import enqueue_first
from tuner.study.run.baseline_race import BaselineRace
from tuner.study.run.opening import open_study
from tuner.study.run.progress import Progress
from tuner.study.run.proxy_verdict import cost_line, saving_line, transfer_verdict
from tuner.study.run.runner import run_study
from tuner.study.space.space import Fixed, Range, SearchSpace
from tuner.study.storage.open import optuna_storage
from tuner.study.study_record import add_proxy_cost, study_experiment, write_experiment, write_fidelity, write_run_confirm
from tuner.train.trial_config import TrialConfig

PROXY_SUFFIX = "-proxy"


def proxy_name(experiment: Experiment) -> str:
    return experiment.name + PROXY_SUFFIX


def at_proxy(experiment: Experiment, timeout_s: float | None) -> Experiment:
    """The experiment at its proxy's fidelity, as the study ``NAME-proxy`` that searches it."""
    proxy = experiment.proxy
    assert proxy is not None
    dims: dict[str, Any] = {}
    for name, spec in mup_space(experiment).dims.items():
        if name in proxy.dims:
            spec = Fixed(proxy.dims[name], spec.when)
        elif name == "horizon_samples":
            spec = _scaled_horizon(spec, proxy.horizon)
        dims[name] = spec
    objective = experiment.objective
    if proxy.target is not None:
        objective = dataclasses.replace(objective, target=proxy.target)
    return dataclasses.replace(
        experiment,
        name=proxy_name(experiment),
        search_space=SearchSpace(dims, experiment.search_space.custom),
        objective=objective,
        budget=dataclasses.replace(experiment.budget, timeout_s=timeout_s),
        confirm=dataclasses.replace(experiment.confirm, after_search=False),  # proxy times rank only proxy trials
        baseline={**todays_parametrization(experiment), **experiment.baseline, **proxy.dims},  # today's, at the proxy's fidelity
        proxy=None,
    )


def at_full_size(experiment: Experiment, n_candidates: int, timeout_s: float | None) -> Experiment:
    """The experiment at the job's fidelity, set to run ``n_candidates`` enqueued configurations and
    decide a close call on two seeds of the best and the baseline."""
    pruner = experiment.pruner
    if pruner.name == "auto":  # a few known candidates: capping at the incumbent, no halving among them
        pruner = dataclasses.replace(pruner, name="none")
    return dataclasses.replace(
        experiment,
        search_space=mup_space(experiment),
        budget=dataclasses.replace(experiment.budget, n_trials=n_candidates, timeout_s=timeout_s),
        pruner=pruner,
        confirm=dataclasses.replace(
            experiment.confirm,
            after_search=True,
            top_k=1,
            seeds=min(experiment.confirm.seeds, 2),
            budget_share=0.0,
            clear_margin=experiment.confirm.clear_margin or CLEAR_MARGIN,
        ),
        race=None,
        screen=None,
        baseline=full_size_baseline(experiment),
        proxy=None,
    )


def as_written(stored: dict[str, Any], experiment: Experiment) -> dict[str, Any]:
    """What the full-size study stores as its experiment: the space and baseline its trials ran
    (as stored) with the settings the user wrote, not the decision's own (a budget of the
    candidates, no pruner, race or screen), so that its report reproduces the proxy study and an
    export carries none of them."""
    written = redact_data(experiment.to_dict())
    return {**stored, **{key: written[key] for key in ("budget", "pruner", "confirm", "race", "screen", "proxy")}}


def full_size_study(experiment: Experiment) -> Experiment:
    """The experiment as its full-size study's runs train, without the proxy: the job's space with
    muP as the candidates ran and today's baseline at the job's fidelity (what `tuner confirm` re-runs)."""
    return dataclasses.replace(experiment, search_space=mup_space(experiment), baseline=full_size_baseline(experiment), proxy=None)


def full_size_baseline(experiment: Experiment) -> dict[str, Any]:
    """The baseline at the job's fidelity: the values the space fixes for the dimensions the proxy changes."""
    return {**todays_parametrization(experiment), **experiment.baseline, **job_fidelity(experiment)}


def job_fidelity(experiment: Experiment) -> dict[str, Any]:
    """The values the job's space fixes for the dimensions its proxy changes (``{"width": 2.0}``)."""
    assert experiment.proxy is not None
    return {name: _job_value(experiment, name) for name in experiment.proxy.dims}


def todays_parametrization(experiment: Experiment) -> dict[str, Any]:
    """TrialConfig's values of what the proxy fixes for muP (``Proxy.mup_dims``): a training
    function's baseline takes the values its space fixes, and must train as the job does today."""
    assert experiment.proxy is not None
    return {name: getattr(TrialConfig(), name) for name in experiment.proxy.mup_dims(experiment.search_space)}


def mup_space(experiment: Experiment) -> SearchSpace:
    """The experiment's space with what the proxy fixes for muP where it names none (``Proxy.mup_dims``)."""
    assert experiment.proxy is not None
    space = experiment.search_space
    return SearchSpace({**experiment.proxy.mup_dims(space), **space.dims}, space.custom)


def _scaled_horizon(spec: Any, share: float) -> Any:
    if share == 1.0:
        return spec
    if isinstance(spec, Fixed):
        return Fixed(max(1, round(spec.value * share)), spec.when)
    if isinstance(spec, Range):
        return dataclasses.replace(spec, low=max(1, round(spec.low * share)), high=max(1, round(spec.high * share)))
    return spec


def proxy_picks(study: optuna.Study, experiment: Experiment) -> list[tuple[int, dict[str, Any]]]:
    """The proxy's best distinct configurations that reached its target, fastest first, as
    (proxy trial number, parameters at the job's fidelity); at most ``proxy.candidates``."""
    assert experiment.proxy is not None
    reached = sorted(
        (r for r in records(study, COMPLETE) if r.reached and not r.is_measurement and r.value is not None),
        key=lambda r: (r.value, r.number),
    )
    picks: list[tuple[int, dict[str, Any]]] = []
    seen: set[str | None] = set()
    for r in reached:
        if r.config_key in seen:
            continue
        seen.add(r.config_key)
        picks.append((r.number, full_size_params(dict(r.trial.params), experiment)))
        if len(picks) == experiment.proxy.candidates:
            break
    return picks


def full_size_params(params: dict[str, Any], experiment: Experiment) -> dict[str, Any]:
    """A proxy trial's sampled parameters at the job's fidelity: its horizon scaled back, within the job's range."""
    proxy = experiment.proxy
    assert proxy is not None
    spec = experiment.search_space.dims.get("horizon_samples")
    if "horizon_samples" in params and isinstance(spec, Range):
        params["horizon_samples"] = int(min(spec.high, max(spec.low, round(params["horizon_samples"] / proxy.horizon))))
    return params


def run_proxy_study(
    experiment: Experiment,
    progress: Progress | None = None,
    hooks: list[StudyHooks] | None = None,
    now: Callable[[], float] = time.perf_counter,
    run: Callable[..., optuna.Study] = run_study,
    storage: optuna.storages.BaseStorage | None = None,
    spent_s: float = 0.0,
) -> optuna.Study:
    """Search at the proxy, decide at full size (see the module's docstring); returns the full-size study.

    ``run`` runs each of its studies as ``run_study`` does, and ``storage`` holds the full-size
    one: a simulation's (tuner/simulate/proxy_simulation.py) replays recorded trials in memory.
    ``spent_s``: seconds of ``budget.timeout_s`` the command has spent or kept, as for ``run_study``."""
    proxy = experiment.proxy
    assert proxy is not None
    say = progress.note if progress is not None else (lambda line: None)
    budget_s = experiment.budget.timeout_s
    # A phase is never given less than this, even past the deadline: a second, or a hundredth of a
    # budget shorter than 100 s (a simulated study of sub-second trials: a second would be many trials).
    least_s = min(1.0, budget_s / 100) if budget_s else 1.0
    timeout_s = max(least_s, budget_s - spent_s) if budget_s else None
    started = now()
    ends_at = started + timeout_s if timeout_s else None

    def left() -> float | None:
        return max(least_s, ends_at - now()) if ends_at is not None else None

    def with_cost_said(study: optuna.Study) -> optuna.Study:
        """The study, once what it cost in full-size trial-lengths is said and kept."""
        cost_s = now() - started
        say(cost_line(study, cost_s, add_proxy_cost(study, cost_s)))
        return study

    searched = at_proxy(experiment, timeout_s * proxy.share if timeout_s else None)
    picks = decision_left(experiment, storage)
    if picks:  # an earlier run's budget ended its decision: finish that first, with all the time there is
        say("proxy: finishing the full-size decision of an earlier run (its baseline has no full-size run yet) before any more search")
        proxy_study = open_study(searched)
    else:
        say(f"proxy: searching at {describe(searched, experiment)} as study {searched.name!r}, then deciding at full size")
        proxy_study = run(searched, progress=progress, hooks=hooks, now=now)
        write_fidelity(proxy_study, "proxy")
        picks = proxy_picks(proxy_study, experiment)
    full = at_full_size(experiment, len(picks), left())
    study = open_study(full, storage=storage)
    write_fidelity(study, "full", searched.name)
    write_experiment(study, as_written(study_experiment(study), experiment))
    write_run_confirm(study, full.confirm)  # what the summary's ratio was asked to measure, until a search sets its own
    if not picks:
        say("proxy: no proxy trial reached its target; searching at full size for the time left")
        study = run(searched_at_full_size(experiment, full, left()), progress=progress, hooks=hooks, now=now)
        return with_cost_said(study)
    _enqueue(study, full, picks)
    race = BaselineRace(full.confirm.clear_margin or CLEAR_MARGIN)
    study = run(full, progress=progress, hooks=[*(hooks or []), race], now=now)
    verdict = transfer_verdict(study, picks)
    say(saving_line(proxy_study, study))
    left_s = ends_at - now() if ends_at is not None else None
    if not verdict.judged:  # the budget ended the decision: a later run finishes it (decision_left)
        searches_on, line = False, verdict.line
    elif not verdict.held:  # the proxy misled: search the job itself while there is time
        searches_on, line = left_s is None or left_s > 1.0, f"{verdict.line}; searching at full size"
    else:  # time for a run as fast as the best candidate's: spend it at full size, beside the candidates
        searches_on = left_s is not None and verdict.fastest_s is not None and left_s > verdict.fastest_s
        line = f"{verdict.line}; searching at full size for the {left_s:.1f} s left" if searches_on else verdict.line
    say(line)
    if searches_on:
        study = run(searched_at_full_size(experiment, full, left()), progress=progress, hooks=hooks, now=now)
    return with_cost_said(study)


def decision_left(experiment: Experiment, storage: optuna.storages.BaseStorage | None) -> list[tuple[int, dict[str, Any]]]:
    """The candidates of an earlier run's full-size decision that its budget ended before the
    baseline's full-size run finished, as ``proxy_picks`` gives them; none when there is no such
    study, or its decision is complete (a resumed study then searches as a new one does)."""
    try:
        study = optuna.load_study(study_name=experiment.name, storage=storage or optuna_storage(experiment.storage, experiment.source))
    except KeyError:
        return []
    done = records(study)
    if any(r.is_baseline and r.trial.state is optuna.trial.TrialState.COMPLETE for r in done):
        return []
    candidates = {r.proxy_of: dict(r.trial.params) for r in sorted(done, key=lambda r: r.number) if r.proxy_of is not None}
    return list(candidates.items())


def describe(searched: Experiment, experiment: Experiment) -> str:
    """The proxy's fidelity in words: ``width 0.25 (job 2), target 2.9 (job 2.6)``."""
    proxy = experiment.proxy
    assert proxy is not None
    parts = [f"{k} {v:g} (job {_job_value(experiment, k)})" if isinstance(v, float) else f"{k} {v}" for k, v in proxy.dims.items()]
    if proxy.target is not None:
        parts.append(f"target {proxy.target:g} (job {experiment.objective.target:g})")
    if proxy.horizon != 1.0:
        parts.append(f"horizon x{proxy.horizon:g}")
    return ", ".join(parts)


def _job_value(experiment: Experiment, name: str) -> Any:
    spec = experiment.search_space.dims.get(name)
    return spec.value if isinstance(spec, Fixed) else "?"


def _enqueue(study: optuna.Study, full: Experiment, picks: list[tuple[int, dict[str, Any]]]) -> None:
    """The first candidate, then the baseline (raced against it), then the other candidates."""
    present = {r.proxy_of for r in records(study, NOT_FAILED)}  # a run the budget ended is run again
    for i, (number, params) in enumerate(picks):
        if number not in present:
            study.enqueue_trial(params, user_attrs={PROXY_OF: number})
        if i == 0:
            enqueue_first(study, full)


def searched_at_full_size(experiment: Experiment, full: Experiment, timeout_s: float | None) -> Experiment:
    """The fallback: the experiment's own search at full size, in the full-size study, for the time left."""
    return dataclasses.replace(
        experiment,
        search_space=full.search_space,
        budget=dataclasses.replace(experiment.budget, timeout_s=timeout_s),
        baseline=full.baseline,
        proxy=None,
    )
