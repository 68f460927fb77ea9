"""The study's results for people, as `tuner run` and `tuner confirm` end with them."""

from __future__ import annotations

import optuna

from tuner.orchestrate.options import RunOptions
from tuner.report.energy import energy_figures, energy_line
from tuner.study.experiment.load import Experiment
from tuner.study.record import FINISHED, records
from tuner.study.reruns.baseline import baseline_sentence, compare
from tuner.study.reruns.confirmation import confirmation_table, confirmed, confirmed_winner
from tuner.study.reruns.racing import best_in_study
from tuner.study.reruns.winner import winner
from tuner.study.run.progress import outcomes_line, top_trials_table
from tuner.study.scoring.pareto import front_heading, front_table, how_to_pick, several, study_front
from tuner.study.scoring.units import in_words, span, study_unit, with_unit


def _named(options: RunOptions, experiment: Experiment) -> str:
    """How a command names this study: the experiment file, and the study's name when a flag gave it."""
    return options.experiment + (f" --study-name {experiment.name}" if options.overrides.name else "")


def print_summary(study: optuna.Study, experiment: Experiment, options: RunOptions) -> None:
    if several(study):  # several objectives: a Pareto front (tuner/study/scoring/pareto.py)
        print(
            f"\n{len(records(study, FINISHED))} finished trials in study {experiment.name!r}. {front_heading(study)}\n{front_table(study)}"
        )
        print(how_to_pick(study).replace("...", _named(options, experiment)))
        print(baseline_sentence(study))
        return
    unit = study_unit(study)
    print(
        f"\n{len(records(study, FINISHED))} finished trials in study {experiment.name!r}. "
        f"Top trials ({in_words(unit)} to {experiment.objective.goal.describe()} on the {experiment.objective.clock} clock):"
    )
    print(top_trials_table(study))
    print(outcomes_line(study))
    stopped = top_trials_table(study, reached=False)
    if stopped != "none":
        print(f"Stopped or missed the target (scores, not times: tuner/study/scoring/censoring.py):\n{stopped}")
    best = best_in_study(study)  # a raced configuration counts by its median (tuner/study/reruns/racing.py)
    choice = winner(study)  # what tuner best exports, and every other view names (tuner/study/reruns/winner.py)
    export = f"Export it with: tuner best {_named(options, experiment)}"
    if best is None:
        print("no search trial reached the target yet")
    else:
        low, high = best.spread
        runs = f" (median of {len(best.values)} runs on different seeds, range {span(low, high, unit)})" if best.raced else ""
        # The export hint goes on the line of the configuration tuner best exports: this one when the winner is the search's best run.
        single = choice is not None and choice.confirmation is None and not choice.trial.is_baseline
        print(f"best: trial {best.trial.number}, {with_unit(best.median, unit)}{runs}{f'. {export}' if single else ''}")
    if confirmed(study):
        print(f"\nConfirmed on fresh seeds (tuner confirm re-runs them):\n{confirmation_table(study)}")
    if choice is not None and choice.confirmation is not None:
        unsure = "" if choice.confirmed else f" ({choice.note})"
        print(f"winner: trial {choice.trial.number}'s configuration, {choice.confirmation.summary()}{unsure}. {export}")
    print(baseline_sentence(study))
    if choice is not None and choice.trial.is_baseline:
        print(f"the search found nothing faster than the baseline: tuner best exports the baseline's configuration. {export}")
    energy = energy_line(energy_figures(study, compare(study)))
    if energy is not None:  # only where the trials read an energy counter (tuner/train/energy.py)
        print(energy)


def finished_count(study: optuna.Study) -> int:
    return len(records(study, FINISHED))


def confirmed_summary(study: optuna.Study, experiment: Experiment, options: RunOptions) -> int:
    """`tuner confirm`'s summary; 0 when a configuration reached the target in confirmation, else 1."""
    if several(study):  # several objectives: the confirmed Pareto front (tuner/study/scoring/pareto.py)
        front = study_front(study)
        print(f"\n{front_heading(study)}\n{front_table(study)}\n{how_to_pick(study).replace('...', options.experiment)}")
        return 0 if front and front[0].confirmed else 1
    print(
        f"\nConfirmed configurations of study {experiment.name!r} "
        f"({in_words(study_unit(study))} to {experiment.objective.goal.describe()} on the {experiment.objective.clock} clock):"
    )
    print(confirmation_table(study))
    best = confirmed_winner(study)
    if best is None:
        print("no configuration reached the target in confirmation" if study.get_trials(deepcopy=False) else "nothing to confirm")
        return 1
    export = f"Export it with: tuner best {options.experiment}"
    choice = winner(study)  # the baseline when it is faster than the best confirmed: what tuner best exports
    if choice is not None and choice.trial.is_baseline:
        print(f"best confirmed: trial {best.trial.number}'s configuration, {best.summary()}")
        print(f"the baseline is faster: tuner best exports the baseline's configuration. {export}")
    else:
        print(f"winner: trial {best.trial.number}'s configuration, {best.summary()}. {export}")
    print(baseline_sentence(study))
    return 0
