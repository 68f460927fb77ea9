"""The experiment file's keys, read from the settings themselves: each key's default and what it allows.

The documentation's reference page (written into it by tuner/docs_tables.py) and `tuner init`'s commented file are written
from these rows, so neither can drift from what the loader accepts: defaults come from the
dataclasses (tuner/study/experiment/), allowed values from each field's ``allowed`` metadata,
and the few top-level keys the loader checks in code from the same constants it uses. The tables
of optimizers, schedules, precisions, compile modes, pruners and objectives are written from their registries.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from tuner.study.experiment.load import STORAGE_SCHEMES, Experiment
from tuner.study.experiment.settings import name_allowed
from tuner.study.run.experiment_file import MINIMIZE_ALLOWED, PRUNER_ALLOWED
from tuner.study.scoring.objectives import OBJECTIVE_KINDS
from tuner.study.space.space import SearchSpace
from tuner.study.stopping.pruner_registry import PRUNER_KINDS
from tuner.tasks.registry import BUILTIN_TASKS
from tuner.train.compile_modes import COMPILE_MODE_KINDS
from tuner.train.optimizer_registry import OPTIMIZER_KINDS
from tuner.train.precision import PRECISION_KINDS
from tuner.train.schedule_registry import SCHEDULE_KINDS
from tuner.train.trial_config import DIMENSIONS, TrialConfig

# What each key means, in a few words. The values' defaults and checks are read from the code;
# ``check_meanings`` fails the documentation build when a key has no line here or a line names no key.
MEANINGS: dict[str, str] = {
    "name": "the study name",
    "task": "what to train: a built-in task, a function returning a Task, or a training function with a session",
    "task_options": "keyword arguments for the task's function",
    "search_space": "the dimensions to search: a file, the dimensions inline, or a file with `override` and `remove`",
    "objective": "what counts as reaching the goal, how often to look, how long a trial may take",
    "objective.target": "the value of the held-out metric to reach",
    "objective.metric": "the held-out metric: accuracy, loss, one the task declares, or what an own loop reports",
    "objective.direction": "which way the metric is better (null: implied by its name, as loss or accuracy)",
    "objective.check_direction": "refuse a direction the metric's name contradicts (a loss maximized); false to allow it",
    "objective.eval_every_samples": "evaluation cadence, in training samples, or {epochs: N} of the task's training set",
    "objective.cap_s": "per-trial cap on the objective's clock, in seconds; auto: twice the baseline's time to target, measured first",
    "objective.clock": "which clock is minimised",
    "objective.max_samples": "optional cap in training samples, or {epochs: N}",
    "objective.minimize": "what to minimise on the way to the target; a list makes a Pareto front",
    "objective.charge_setup": "whether one-time setup a configuration causes (compilation) counts in its time",
    "sampler": "which Optuna sampler proposes configurations",
    "sampler.name": "the sampler (TPE is multivariate and seeded)",
    "sampler.n_startup_trials": "random trials before the sampler models the results",
    "budget": "when the study stops",
    "budget.n_trials": "finished search trials wanted in the study, in total (neither set: 20 trials)",
    "budget.timeout_s": "seconds for this run; `tuner run` ends by then, counted from its start, its closing lines included",
    "trainer": "how trials use the machine",
    "trainer.device": "where trials train",
    "trainer.threads": "torch threads per trial",
    "trainer.batch_ceiling": "bound batch_size by what one forward pass takes",
    "heartbeat": "crash safety: a silent worker's trial is failed and re-run",
    "heartbeat.interval_s": "seconds between a trial's heartbeats",
    "heartbeat.grace_s": "silence after which a trial is failed",
    "heartbeat.max_retry": "re-runs of a dead worker's trial",
    "heartbeat.retry_s": "seconds an unreachable storage (a database restart, a proxy started again) is waited out; then exit 75",
    "pruner": "how trials stop early, and capping at the incumbent",
    "pruner.name": "the pruner",
    "pruner.percentile": "keep the best this many percent at each time",
    "pruner.warmup_s": "no pruning before this time",
    "pruner.min_trials": "finished trials needed before pruning",
    "pruner.cap_slack": "cap a trial at this many times the incumbent",
    "pruner.bucket_s": "step width for Optuna's pruners",
    "confirm": "re-running the top configurations on fresh seeds",
    "confirm.top_k": "distinct configurations to re-run",
    "confirm.seeds": "fresh seeds for each",
    "confirm.after_search": "confirm at the end of `tuner run`",
    "confirm.budget_share": "share of budget.timeout_s kept for confirmation",
    "confirm.keep_time": "false: keep no time for confirmation; it runs only when the time the search leaves holds every run",
    "confirm.require": "confirmation seeds that must reach the target to win",
    "confirm.clear_margin": "no re-runs once the search's and the baseline's fastest runs are this factor apart",
    "race": "racing on seeds during the search",
    "race.margin": "re-run a trial that reached within this many times the incumbent",
    "race.seeds": "more seeds it is re-run on",
    "screen": "the throughput pre-screen",
    "screen.warmup_steps": "steps before the timed ones",
    "screen.steps": "timed steps whose median makes the projection",
    "screen.min_reached": "configurations that reached the target before any trial is screened",
    "screen.samples_from": "whose samples to target count",
    "storage": "the Optuna storage URL: where the study lives",
    "tracking_uri": "the MLflow tracking store",
    "tracking": "what MLflow keeps beside each trial's figures",
    "tracking.weights": "which trials log their trained weights (model.pt)",
    "seed": "the sampler's seed, and the first training seed",
    "baseline": "the configuration run today, measured on the confirmation seeds",
    "cost": "the price of a device hour, for cost figures",
    "cost.per_device_hour": "price of one device hour",
    "cost.currency": "its currency",
    "init_from": "a pretrained start every trial loads",
    "proxy": "search at a cheaper fidelity, decide at the job's (docs/proxy.md)",
    "proxy.width": "the search's width; any fidelity the search space fixes at the job's value is named so: a model's own `depth` too",
    "proxy.target": "the proxy's target, where a small model cannot reach the job's; null: the job's",
    "proxy.horizon": "the share of the job's `horizon_samples` the proxy trains to",
    "proxy.share": "the share of the time budget the proxy's search takes; the rest decides at full size",
    "proxy.candidates": "the proxy's best configurations run at full size",
}

# Defaults and checks of the top-level keys that are plain values, as tuner/study/experiment/load.py applies them.
_TOP_DEFAULTS = {"name": "(the file's name)", "search_space": "search_spaces/default.yaml"}
_TOP_ALLOWED = {
    "name": name_allowed(),
    "task": "a built-in task (" + ", ".join(BUILTIN_TASKS) + ") or an importable package.module:function",
    "task_options": "a mapping of keyword arguments the task's function takes",
    "search_space": "a file name, a mapping of dimensions, or a mapping with file and optionally override and remove",
    "storage": "a database URL (" + ", ".join(f"{s}://..." for s in STORAGE_SCHEMES) + ")",
    "tracking_uri": "an MLflow tracking URI: a database URL, a folder, or http(s)://host:port",
    "seed": "an integer",
    "baseline": "a mapping of training dimensions (empty: the task's reference configuration)",
    "init_from": "a checkpoint file, or package.module:function returning a state dict; null for none",
}


# A field written in the file under other names: a proxy's fidelities are keys of their own (width: 0.25).
SHOWN_AS = {"proxy.dims": "proxy.width"}
# Names checked against a registry once the sections are read (tuner/study/run/experiment_file.py).
_REGISTERED_ALLOWED = {"objective.minimize": MINIMIZE_ALLOWED, "pruner.name": PRUNER_ALLOWED}


@dataclass(frozen=True)
class Key:
    """One key of the experiment file: its dotted path, default (as YAML), what it allows and means."""

    path: str
    default: str
    allowed: str
    meaning: str
    section: bool = False  # a mapping of keys (objective, pruner, ...)


def yaml_value(value: Any) -> str:
    """A default as it is written in YAML."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {yaml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    return str(value)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _allowed_from_type(hint: Any) -> str:
    options = typing.get_args(hint) or (hint,)
    if bool in options:
        return "true or false"
    return " or ".join("null" if o is type(None) else getattr(typing.get_origin(o) or o, "__name__", str(o)) for o in options)


def _section_keys(prefix: str, cls: type) -> list[Key]:
    hints = typing.get_type_hints(cls)
    keys = []
    for f in dataclasses.fields(cls):
        path = f"{prefix}.{f.name}"
        allowed = _REGISTERED_ALLOWED.get(path) or f.metadata.get("allowed") or _allowed_from_type(hints[f.name])
        shown = SHOWN_AS.get(path, path)
        default = yaml_value(_default(f)) if shown == path else "(the job's)"
        keys.append(Key(shown, default, allowed, MEANINGS.get(shown, "")))
    return keys


def experiment_keys() -> list[Key]:
    """Every key an experiment file may hold, in the order of the Experiment's fields."""
    hints = typing.get_type_hints(Experiment)
    keys: list[Key] = []
    for f in dataclasses.fields(Experiment):
        if f.name == "source":
            continue
        options = typing.get_args(hints[f.name]) or (hints[f.name],)
        # A section is a mapping of settings; the search space is a language of its own (its own page).
        cls = next((o for o in options if dataclasses.is_dataclass(o) and o is not SearchSpace), None)
        if cls is not None:
            nullable = type(None) in options
            allowed = "a mapping of the keys below" + (", or null (off)" if nullable else "")
            keys.append(Key(f.name, "", allowed, MEANINGS.get(f.name, ""), section=True))
            keys.extend(_section_keys(f.name, cls))
        else:
            default = _TOP_DEFAULTS.get(f.name, yaml_value(_default(f)))
            keys.append(Key(f.name, default, _TOP_ALLOWED.get(f.name, _allowed_from_type(hints[f.name])), MEANINGS.get(f.name, "")))
    return keys


def check_meanings() -> None:
    """Raise ValueError when a key has no meaning written, or a meaning names no key."""
    paths = {k.path for k in experiment_keys()}
    missing = sorted(paths - MEANINGS.keys())
    stale = sorted(MEANINGS.keys() - paths)
    if missing or stale:
        raise ValueError(f"tuner/docs_reference.py MEANINGS: keys without a meaning {missing}, meanings of no key {stale}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row(k: Key) -> str:
    default = k.default if k.default.startswith("(") else f"`{_cell(k.default)}`"  # a sentence, not a value
    return f"| `{k.path}` | {default} | {_cell(k.allowed)} | {_cell(k.meaning)} |"


def keys_markdown() -> str:
    """The reference tables: one per section, each key with its default, what it allows and means."""
    check_meanings()
    out: list[str] = []
    top = [k for k in experiment_keys() if "." not in k.path and not k.section]
    out += ["### Top-level keys", "", "| key | default | allowed | meaning |", "|---|---|---|---|"]
    out += [_row(k) for k in top]
    for section in (k for k in experiment_keys() if k.section):
        rows = [k for k in experiment_keys() if k.path.startswith(section.path + ".")]
        out += ["", f"### `{section.path}`", "", f"{section.meaning[0].upper()}{section.meaning[1:]}; {section.allowed}.", ""]
        out += ["| key | default | allowed | meaning |", "|---|---|---|---|"]
        out += [_row(k) for k in rows]
    return "\n".join(out) + "\n"


def dimensions_markdown() -> str:
    """The built-in search dimensions: each with the reference configuration's value and what it accepts."""
    defaults = TrialConfig()
    out = ["| dimension | reference value | accepts |", "|---|---|---|"]
    for name, dim in DIMENSIONS.items():
        out.append(f"| `{name}` | `{yaml_value(getattr(defaults, name))}` | {_cell(dim.describe())} |")
    return "\n".join(out) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def optimizers_markdown() -> str:
    """Every optimizer (tuner/train/optimizer_registry.py) and the configuration's values it takes."""
    out = ["| `optimizer` | what it is | `beta1`, `beta2` | `amsgrad` | `weight_decay` | its own dimensions |", "|---|---|---|---|---|---|"]
    for name, k in OPTIMIZER_KINDS.items():
        decay = {"L2": "an L2 term", "decoupled": "decoupled"}.get(k.decay or "", "no")
        out.append(f"| `{name}` | {_cell(k.built_as)} | {_yes(k.betas)} | {_yes(k.amsgrad)} | {decay} | {_names(k.own)} |")
    return "\n".join(out) + "\n"


def schedules_markdown() -> str:
    """Every learning-rate schedule (tuner/train/schedule_registry.py) and the dimensions it reads."""
    out = ["| `schedule` | the rate by training samples | reads |", "|---|---|---|"]
    out += [f"| `{name}` | {_cell(k.summary)} | {_names(k.reads)} |" for name, k in SCHEDULE_KINDS.items()]
    return "\n".join(out) + "\n"


def precisions_markdown() -> str:
    """Every precision (tuner/train/precision.py)."""
    out = ["| `precision` | a forward pass | loss scaling |", "|---|---|---|"]
    out += [f"| `{name}` | {_cell(p.summary)} | {_yes(p.loss_scaling)} |" for name, p in PRECISION_KINDS.items()]
    return "\n".join(out) + "\n"


def compile_modes_markdown() -> str:
    """Every compile mode (tuner/train/compile_modes.py)."""
    out = ["| `compile` | the model | CUDA graphs | warm-up passes per batch size |", "|---|---|---|---|"]
    for name, m in COMPILE_MODE_KINDS.items():
        out.append(f"| `{name}` | {_cell(m.summary)} | {_yes(m.cuda_graphs)} | {m.warm_up_passes if m.compiled else 0} |")
    return "\n".join(out) + "\n"


def pruners_markdown() -> str:
    """Every pruner an experiment can name (tuner/study/stopping/pruner_registry.py)."""
    out = ["| `pruner.name` | what it does | trials report at each time bucket | with several objectives |", "|---|---|---|---|"]
    out += [f"| `{name}` | {_cell(k.summary)} | {_yes(k.reports)} | {_yes(k.several)} |" for name, k in PRUNER_KINDS.items()]
    return "\n".join(out) + "\n"


def objectives_markdown() -> str:
    """Every objective a study can minimize (tuner/study/scoring/objectives.py), its unit and what it needs."""
    out = ["| `objective.minimize` | a trial's value (lower is better) | unit | alone | measurable |", "|---|---|---|---|---|"]
    for name, k in OBJECTIVE_KINDS.items():
        unit = f"`{k.unit}`" if k.unit is not None else "the currency (`cost.currency`); `device h` without a price"
        alone = "yes" if k.to_target else "no: in a list, beside another"
        out.append(f"| `{name}` | {_cell(k.summary)} | {unit} | {alone} | {_cell(k.measurable)} |")
    return "\n".join(out) + "\n"
