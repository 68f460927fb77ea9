"""One way to run a study: typed options (``RunOptions``) and the one function that runs them (``orchestrate``)."""

from tuner.orchestrate.options import Overrides, RunOptions, WorkerRole
from tuner.orchestrate.orchestrator import Ran, Run, orchestrate

__all__ = ["Overrides", "Ran", "Run", "RunOptions", "WorkerRole", "orchestrate"]
