"""`tuner best`: print the best configuration and write it as a YAML `tuner train` runs."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

import optuna

from tuner.cli.common import add_study_flags, dump_yaml
from tuner.errors import ConfigError
from tuner.study.reruns.baseline import baseline_sentence
from tuner.study.reruns.exported import exported_params
from tuner.study.reruns.winner import best_choice, write_best, write_pick
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.progress import top_trials_table
from tuner.study.scoring.pareto import front_heading, front_table, how_to_pick, several
from tuner.study.scoring.units import in_words, study_unit
from tuner.study.storage.existing import load_existing_study
from tuner.tasks.registry import folder_of


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("best", help="print and export the best configuration of a study")
    p.add_argument("experiment", nargs="?", help="experiment YAML (for its study name and storage)")
    p.add_argument("-o", "--output", default="best.yaml", help="where to write the configuration (default: best.yaml)")
    add_study_flags(p)
    p.add_argument("--json", action="store_true", help="print one JSON object with the results on stdout (the rest goes to stderr)")
    p.add_argument(
        "--pick",
        help="a study of several objectives: the point of the Pareto front to export (an objective's name, knee, or a trial number)",
    )
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    if args.experiment:
        experiment = load_experiment(args.experiment).with_overrides(name=args.name, storage=args.storage)
        name, storage, source = experiment.name, experiment.storage, args.experiment
    else:
        name, storage, source = args.name, args.storage or "sqlite:///tuner.db", "tuner best"
        if name is None:  # which study: the experiment names it, or --study-name does
            raise ConfigError(source, "EXPERIMENT", "the experiment file (tuner best EXPERIMENT.yaml) or --study-name NAME", None)
    study = load_existing_study(storage, name, source)
    if several(study):  # a Pareto front: the user picks the point
        return front_main(study, storage, args)
    if args.pick is not None:
        raise ConfigError("tuner best", "--pick", "only with a study of several objectives (this one minimizes one)", args.pick)
    trial, experiment_dict = write_best(study, args.output)
    choice = best_choice(study)
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        print(f"# study {study.study_name!r}: best {choice.headline(study)}")
        print(f"# {choice.note}")
        if trial.unknown_config_keys:  # stored by a version that had them: the export cannot set them
            print(
                f"# left out of trial {trial.number}'s stored configuration, unknown to this version: "
                f"{', '.join(trial.unknown_config_keys)}"
            )
        print(f"# {baseline_sentence(study)}")
        for title, table in (
            (f"trials that reached the target ({in_words(study_unit(study))})", top_trials_table(study)),
            ("trials stopped or missing it (scores, not times)", top_trials_table(study, reached=False)),
        ):
            if table not in ("none", "no finished trials"):
                print(f"# {title}:\n" + "\n".join(f"#   {line}" for line in table.splitlines()))
        print(dump_yaml(experiment_dict["search_space"]), end="")
        left_out = exported_params(study, trial.config).note()
        if left_out:
            print(f"# {left_out}")
        print(f"# written to {args.output}; train it once with: tuner train {args.output}")
        note = import_note(experiment_dict.get("task", ""), args.output)
        if note:
            print(note)
    if args.json:
        from tuner.report.data import build_report

        print(json.dumps(build_report(study, storage).as_json(), default=str))
    return 0


def import_note(task: str, output: str) -> str | None:
    """Where `tuner train` finds a task module that lies in the experiment's folder, when the export is written elsewhere."""
    folder = folder_of(task)
    if folder is None or Path(output).resolve().parent == folder:
        return None  # beside the export, `tuner train` looks in the export's folder and finds it
    return f"# its task {task} lies in {folder}: run tuner train with PYTHONPATH={folder}"


# `tuner best` on a study of several objectives without --pick: the front is printed and
# nothing is written, so a script's `tuner best && tuner train best.yaml` stops here.
EXIT_NOT_PICKED = 1


def front_main(study: optuna.Study, storage: str, args: argparse.Namespace) -> int:
    """A Pareto front: print it; with --pick, export the chosen point as today's best export."""
    picked = write_pick(study, args.output, args.pick) if args.pick is not None else None  # a bad --pick: exit 2 before any output
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        print(f"# study {study.study_name!r}: {front_heading(study)}")
        print("\n".join(f"#   {line}" for line in front_table(study).splitlines()))
        print(f"# {baseline_sentence(study)}")
        if picked is None:
            print(f"# nothing written: {how_to_pick(study)}")
        else:
            point, experiment_dict = picked
            print(f"# picked {args.pick!r}: trial {point.trial.number}'s configuration")
            print(dump_yaml(experiment_dict["search_space"]), end="")
            print(f"# written to {args.output}; train it once with: tuner train {args.output}")
    if args.json:
        from tuner.report.data import build_report

        print(json.dumps(build_report(study, storage).as_json(), default=str))
    return EXIT_NOT_PICKED if args.pick is None else 0
