"""`tuner validate EXPERIMENT.yaml`: load and check, print the resolved experiment; train nothing."""

from __future__ import annotations

import argparse

import torch

from tuner.cli.common import dump_yaml
from tuner.redact import redact_data
from tuner.study.experiment.load import Experiment, resolve_threads
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.prepare import check_cpu_clock
from tuner.study.run.proxy_study import at_proxy, describe, proxy_name
from tuner.study.run.runnable import runnable_space
from tuner.study.space.levers import own_loop_levers
from tuner.study.space.space import Choice, Fixed, Range
from tuner.tasks.registry import BUILTIN_TASKS, is_training_function, task_factory
from tuner.train.devices import resolve_device


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("validate", help="check an experiment file and print it resolved")
    p.add_argument("experiment", help="experiment YAML file")
    p.set_defaults(handler=main)


def machine_device(experiment: Experiment) -> tuple[torch.device, str | None]:
    """The device the study would train on here, or, for a device this machine lacks (an
    experiment for a GPU checked on a laptop), the CPU's and a note: `tuner run` checks the
    device when the study runs, in one line."""
    try:
        return resolve_device(experiment.trainer.device), None
    except (ValueError, RuntimeError) as err:
        device = experiment.trainer.device
        note = f"trainer.device {device} is not on this machine ({err}): the space is listed as on cpu; `tuner run` checks the device"
        return torch.device("cpu"), note


def described(spec: Fixed | Choice | Range) -> str:
    """A dimension in one line: ``one of adam, adamw``, ``0.001 .. 0.03 (log)``, ``fixed 2.0``, with its condition."""
    cond = " when " + ", ".join(f"{k} in {list(v)}" for k, v in spec.when.items()) if spec.when else ""
    if isinstance(spec, Fixed):
        return f"fixed {spec.value}{cond}"
    if isinstance(spec, Choice):
        return "one of " + ", ".join(str(c) for c in spec.choices) + cond
    step = f" step {spec.step:g}" if spec.step else ""
    return f"{spec.low:g} .. {spec.high:g}" + (" (log)" if spec.log else "") + step + cond


def main(args: argparse.Namespace) -> int:
    experiment = load_experiment(args.experiment)
    device, elsewhere = machine_device(experiment)
    # The clock is checked against the device named, wherever the study will run.
    named = device if elsewhere is None else torch.device(experiment.trainer.device)
    check_cpu_clock(experiment, named, resolve_threads(experiment.trainer))
    space, notes = runnable_space(experiment, device)
    if experiment.task not in BUILTIN_TASKS and is_training_function(task_factory(experiment.task)):
        space, more = own_loop_levers(space, experiment.task)  # as `tuner run` narrows it: not listed as sampled
        notes += more
    print("# resolved experiment")
    print(dump_yaml(redact_data(experiment.to_dict())), end="")  # a log line like any other: no passwords
    print("\n# search space as sampled on this machine")
    for name, spec in space.dims.items():
        print(f"{name:<16} {described(spec)}")
    if experiment.proxy is not None:  # what the proxy's study searches where it differs from the job's space
        searched = at_proxy(experiment, None)
        proxy_space, _ = runnable_space(searched, device)
        print(f"\n# the proxy's search: {describe(searched, experiment)}, as study {proxy_name(experiment)!r}")
        for name, spec in proxy_space.dims.items():
            if name not in space.dims or described(spec) != described(space.dims[name]):
                print(f"{name:<16} {described(spec)}")
    for note in [*notes, *([elsewhere] if elsewhere else [])]:
        print(f"# {note}")
    print("# ok: nothing was trained or stored")
    return 0
