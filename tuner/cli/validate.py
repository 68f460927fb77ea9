"""`tuner validate EXPERIMENT.yaml`: load and check, print the resolved experiment; train nothing."""

from __future__ import annotations

import argparse

from tuner.cli.common import dump_yaml
from tuner.errors import ConfigError
from tuner.redact import redact_data
from tuner.study.experiment.load import load_experiment, resolve_threads
from tuner.study.run.prepare import check_cpu_clock
from tuner.study.run.runnable import runnable_space
from tuner.study.space.levers import own_loop_levers
from tuner.study.space.space import Choice, Fixed, Range
from tuner.tasks.registry import BUILTIN_TASKS, is_training_function, task_factory
from tuner.train.devices import resolve_device


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check an experiment file and print it resolved")
    p.add_argument("experiment", help="experiment YAML file")
    p.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment)
    try:
        device = resolve_device(experiment.trainer.device)
    except (ValueError, RuntimeError) as err:  # as `tuner run` reports it: one line, exit 2
        raise ConfigError(
            experiment.source, "trainer.device", "a device this machine has", f"{experiment.trainer.device} ({err})"
        ) from None
    check_cpu_clock(experiment, device, resolve_threads(experiment.trainer))
    space, notes = runnable_space(experiment, device)
    if experiment.task not in BUILTIN_TASKS and is_training_function(task_factory(experiment.task)):
        space, more = own_loop_levers(space, experiment.task)  # as `tuner run` narrows it: not listed as sampled
        notes += more
    print("# resolved experiment")
    print(dump_yaml(redact_data(experiment.to_dict())), end="")  # a log line like any other: no passwords
    print("\n# search space as sampled on this machine")
    for name, spec in space.dims.items():
        cond = " when " + ", ".join(f"{k} in {list(v)}" for k, v in spec.when.items()) if spec.when else ""
        if isinstance(spec, Fixed):
            desc = f"fixed {spec.value}"
        elif isinstance(spec, Choice):
            desc = "one of " + ", ".join(str(c) for c in spec.choices)
        else:
            assert isinstance(spec, Range)
            desc = f"{spec.low:g} .. {spec.high:g}" + (" (log)" if spec.log else "") + (f" step {spec.step:g}" if spec.step else "")
        print(f"{name:<16} {desc}{cond}")
    for note in notes:
        print(f"# {note}")
    print("# ok: nothing was trained or stored")
    return 0
