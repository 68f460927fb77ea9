"""A study that searches at a proxy and decides at full size (tuner/study/run/proxy_study.py), run
end to end as a user runs it: `tuner run`, then `tuner best`."""

from __future__ import annotations

import re
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.trial import TrialState

from tests.conftest import cli, synthetic_experiment
from tests.study.test_record import add
from tuner.cli import main
from tuner.report.data import build_report
from tuner.study.record import COMPLETE, PROXY_OF, baseline_attrs, records
from tuner.study.reruns.baseline import baseline_configuration
from tuner.study.reruns.exported import exported_params
from tuner.study.run.experiment_file import load_experiment
from tuner.study.run.proxy_study import at_full_size, at_proxy, decision_left


def proxy_experiment(path: Path, proxy: str, *, target: float = 0.9, options: str = "{}", n_trials: int = 4) -> Path:
    """The synthetic experiment with the job at width 2 and ``proxy``."""
    extra = f"""
        task_options: {options}
        proxy: {proxy}
        confirm: {{top_k: 1, seeds: 2}}
        """
    synthetic_experiment(path, extra, n_trials=n_trials)
    body = yaml.safe_load(path.read_text())
    body["search_space"]["override"]["width"] = 2.0  # the job's width, which the proxy's must be cheaper than
    body["objective"]["target"] = target
    path.write_text(yaml.safe_dump(body))
    return path


def load(path: Path, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=f"sqlite:///{path.parent / 'study.db'}")


@pytest.mark.e2e
def test_a_proxy_study_searches_narrow_and_exports_the_full_size_configuration(workdir: Path) -> None:
    path = proxy_experiment(workdir / "px.yaml", "{width: 0.5, candidates: 2}")
    ran = cli("run", str(path), cwd=workdir, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert "proxy: searching at width 0.5 (job 2.0) as study 'px-proxy', then deciding at full size" in ran.stderr
    assert "proxy: transfer" in ran.stderr
    assert "full-size trial-lengths" in ran.stderr
    assert re.search(r"proxy: a proxy trial was [0-9.]+x (cheaper|dearer) than a full-size one \(", ran.stderr)

    proxy = load(path, "px-proxy")
    assert proxy.user_attrs["fidelity"] == "proxy"
    assert {r.config.width for r in records(proxy, COMPLETE)} == {0.5}  # the baseline too, at the proxy's width
    searched = [r for r in records(proxy, COMPLETE) if not r.is_baseline]
    assert searched and all(r.config.mup_base == 0.5 for r in searched)  # muP's base: the proxy trains as standard
    full = load(path, "px")
    assert full.user_attrs["fidelity"] == "full" and full.user_attrs["proxy_study"] == "px-proxy"
    ran_full = records(full, COMPLETE)
    assert {r.config.width for r in ran_full} == {2.0}
    candidates = [r for r in ran_full if r.proxy_of is not None]
    assert candidates and all(r.config.parametrization == "mup" and r.config.mup_base == 0.5 for r in candidates)
    assert any(r.is_baseline for r in ran_full)

    best = cli("best", str(path), "-o", "best.yaml", cwd=workdir)
    assert best.returncode == 0, best.stderr
    exported = yaml.safe_load((workdir / "best.yaml").read_text())
    assert exported["search_space"]["width"] == 2.0
    # A candidate's export names its base, so that its rates mean what they meant (the winner may be the baseline).
    assert all(exported_params(full, r.config).params["mup_base"] == 0.5 for r in candidates)
    assert "proxy" not in exported or exported["proxy"] is None
    # The full-size study stands for the experiment as written, not for its decision's own settings
    # (no pruner, the candidates' budget): the export and the report's file carry the user's.
    written = load_experiment(path)
    assert full.user_attrs["experiment"]["proxy"]["width"] == 0.5
    assert exported["pruner"]["name"] == written.pruner.name != "none"
    reproduce = build_report(full, f"sqlite:///{workdir / 'study.db'}").reproduce
    assert any(line.startswith("tuner report px-proxy ") for line in reproduce)


@pytest.mark.e2e
def test_tuner_confirm_re_runs_a_proxy_studys_full_size_configurations(workdir: Path) -> None:
    """`tuner confirm` of a proxy study's file confirms at the job's size, as its candidates ran: no proxy search."""
    path = proxy_experiment(workdir / "cf.yaml", "{width: 0.5, candidates: 1}")
    assert cli("run", str(path), cwd=workdir, timeout=300).returncode == 0
    proxy_trials = len(load(path, "cf-proxy").trials)
    confirmed = cli("confirm", str(path), "--top-k", "1", "--seeds", "3", "--no-tracking", cwd=workdir, timeout=300)
    assert confirmed.returncode in (0, 1), confirmed.stderr[-2000:]  # 1: nothing reached the target again
    assert "Confirmed configurations of study 'cf'" in confirmed.stdout
    assert len(load(path, "cf-proxy").trials) == proxy_trials  # nothing more at the proxy
    runs = [r for r in records(load(path, "cf"), COMPLETE) if r.is_confirmation]
    assert runs and {r.config.width for r in runs} == {2.0}
    assert all(r.config.parametrization == "mup" and r.config.mup_base == 0.5 for r in runs)


INTERRUPTED_LOOP = """
import os, signal
from pathlib import Path

import torch
from torch import nn


def train(config, device, seed, session):
    gen = torch.Generator().manual_seed(0)
    centres = torch.randn(4, 16, generator=gen)
    y = torch.randint(0, 4, (2000,), generator=gen)
    x = centres[y] + 0.6 * torch.randn(2000, 16, generator=gen)
    y_test = torch.randint(0, 4, (500,), generator=gen)
    x_test = centres[y_test] + 0.6 * torch.randn(500, 16, generator=gen)
    build = lambda width: nn.Sequential(nn.Linear(16, round(32 * width)), nn.ReLU(), nn.Linear(round(32 * width), 4))
    torch.manual_seed(seed)
    model = build(config.width)
    optimizer = session.optimizer(model, build=build)
    step = session.train_step(model, nn.CrossEntropyLoss(), optimizer)
    # The user presses Ctrl-C once, during the baseline's full-size run.
    marker = Path("interrupted-once")
    if config.width == 2.0 and config.parametrization == "standard" and not marker.exists():
        marker.write_text("")
        os.kill(os.getpid(), signal.SIGINT)
    session.start_training()
    samples = 0
    while True:
        for idx in torch.randperm(2000).split(config.batch_size):
            step(x[idx], y[idx])
            samples += len(idx)
            if session.due(samples):
                with torch.no_grad():
                    accuracy = (model(x_test).argmax(-1) == y_test).float().mean().item()
                if session.report(accuracy, samples).stop:
                    return
"""


@pytest.mark.e2e
def test_a_decision_cut_short_is_finished_by_the_next_run_with_no_more_proxy_search(workdir: Path) -> None:
    (workdir / "cut_loop.py").write_text(INTERRUPTED_LOOP)
    path = workdir / "cut.yaml"
    path.write_text(
        "task: cut_loop:train\nsearch_space: {lr: {low: 1.0e-3, high: 1.0e-1, log: true}, batch_size: 64, width: 2.0}\n"
        "objective: {target: 0.9, eval_every_samples: 256, cap_s: 10.0}\nproxy: {width: 0.5, candidates: 1}\n"
        "baseline: {lr: 0.01}\nbudget: {n_trials: 4}\nstorage: sqlite:///study.db\n"
    )
    first = cli("run", str(path), "--no-tracking", cwd=workdir, timeout=300)
    assert first.returncode != 0, first.stderr[-2000:]  # stopped by the signal, its resume hint said
    proxy_trials = len(load(path, "cut-proxy").trials)
    again = cli("run", str(path), "--no-tracking", cwd=workdir, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "proxy: finishing the full-size decision of an earlier run" in again.stderr
    assert "proxy: searching at" not in again.stderr
    assert len(load(path, "cut-proxy").trials) == proxy_trials  # nothing more at the proxy
    full = load(path, "cut")
    assert any(r.is_baseline and r.reached for r in records(full, COMPLETE))
    assert re.search(r"proxy: (transfer held|transfer not confirmed)", again.stderr), again.stderr[-2000:]
    assert "not judged yet" not in again.stderr


@pytest.mark.e2e
def test_a_transfer_the_full_size_runs_do_not_confirm_is_said_and_the_full_size_search_takes_over(workdir: Path) -> None:
    # Noise this large keeps the full size's 0.9 out of reach (its best is near 0.66); the proxy's 0.4 is easy.
    path = proxy_experiment(workdir / "nt.yaml", "{width: 0.5, target: 0.4}", options="{noise: 3.0}")
    ran = cli("run", str(path), cwd=workdir, timeout=300)
    lines = [line for line in ran.stderr.splitlines() if "transfer not confirmed" in line]
    assert len(lines) == 1, ran.stderr
    assert lines[0] == "proxy: transfer not confirmed: none of the proxy's 2 best reached the target at full size; searching at full size"
    full = load(path, "nt")
    sampled = [r for r in records(full) if not r.is_measurement and r.proxy_of is None]
    assert sampled, "the full-size search ran no trial of its own"


@pytest.mark.e2e
def test_a_proxy_studys_timeout_counts_from_the_command_start(workdir: Path) -> None:
    """`--timeout S` bounds a proxy study as it bounds any run: the command's start and its closing
    lines come out of S; the proxy study's clock used to start after them, past S by their seconds."""
    path = proxy_experiment(workdir / "tm.yaml", "{width: 0.5}", n_trials=1000)
    started = time.monotonic()
    ran = cli("run", str(path), "--timeout", "25", cwd=workdir, timeout=120)
    took = time.monotonic() - started
    assert ran.returncode == 0, ran.stderr[-2000:]
    cost = re.search(r"proxy: cost ([0-9]+) s", ran.stderr)
    assert cost, ran.stderr[-2000:]
    # The study's own seconds leave out the start (imports, preparing) and the closing lines kept for.
    assert int(cost.group(1)) <= 25 - 5, ran.stderr[-2000:]
    # The interpreter's teardown (2-6 s on a loaded machine) comes after the budget, as for any run.
    assert took <= 25 + 8.0, f"{took:.1f} s for --timeout 25"


@pytest.mark.e2e
def test_a_proxy_names_only_dimensions_the_space_fixes(workdir: Path) -> None:
    path = proxy_experiment(workdir / "bad.yaml", "{batch_size: 32}")
    ran = cli("validate", str(path), cwd=workdir)
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        (
            f"tuner: error: {path}: proxy.batch_size: expected target, horizon, share, candidates, "
            "or a fidelity the search space fixes at the job's value (width), got 'batch_size'"
        )
    ]
    path = proxy_experiment(workdir / "share.yaml", "{width: 0.5, share: 1.5}")
    ran = cli("validate", str(path), cwd=workdir)
    assert ran.returncode == 2 and "proxy.share: expected a number in (0, 1), got 1.5" in ran.stderr


def test_validate_shows_what_the_proxys_study_searches(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = proxy_experiment(workdir / "v.yaml", "{width: 0.5, target: 0.5}")
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    job, _, proxy = out.partition("# the proxy's search: width 0.5 (job 2.0), target 0.5 (job 0.9), as study 'v-proxy'")
    assert proxy, out
    assert "width            fixed 2.0" in job
    lines = {line.split()[0]: line for line in proxy.splitlines() if line and not line.startswith("#")}
    assert lines["width"] == "width            fixed 0.5"
    assert lines["parametrization"] == "parametrization  fixed mup" and lines["mup_base"] == "mup_base         fixed 0.5"
    assert "lr" not in lines  # searched alike at both sizes: listed once, in the job's space
    assert not (workdir / "study.db").exists()


def test_a_decision_an_earlier_run_left_unfinished_is_finished_before_any_more_search(workdir: Path) -> None:
    """Its candidates ran at full size, its baseline's run did not finish: a resumed run decides first."""
    path = proxy_experiment(workdir / "d.yaml", "{width: 0.5}")
    experiment = load_experiment(path)
    assert decision_left(experiment, None) == []  # no full-size study yet: a new one searches at the proxy
    full = optuna.create_study(study_name="d", storage=f"sqlite:///{workdir / 'study.db'}")
    add(full, 45.9, **{PROXY_OF: 3})
    add(full, None, outcome="interrupted", state=TrialState.FAIL, **baseline_attrs({}, 100_000))
    assert decision_left(experiment, None) == [(3, {})]
    add(full, 51.9, **baseline_attrs({}, 100_000))
    assert decision_left(experiment, None) == []  # decided: a resumed run searches as a new one does


def test_a_proxy_no_cheaper_than_the_job_a_misspelt_key_and_a_searched_width_are_one_line_each(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wider = proxy_experiment(workdir / "wider.yaml", "{width: 3.0}")
    assert main(["validate", str(wider)]) == 2
    assert "proxy.width: expected a width below the job's (2): a proxy is cheaper than the job, got 3.0" in capsys.readouterr().err
    harder = proxy_experiment(workdir / "harder.yaml", "{width: 0.5, target: 0.95}")  # the job's: accuracy 0.9
    assert main(["validate", str(harder)]) == 2
    assert "proxy.target: expected a target no harder than the job's (0.9, to maximize)" in capsys.readouterr().err
    typo = proxy_experiment(workdir / "typo.yaml", "{widht: 0.5}")
    assert main(["validate", str(typo)]) == 2
    assert capsys.readouterr().err.strip().endswith("got 'widht' (did you mean 'width'?)")
    searched = proxy_experiment(workdir / "searched.yaml", "{width: 0.5}")
    body = yaml.safe_load(searched.read_text())
    body["search_space"]["override"]["width"] = {"choices": [1.0, 2.0]}
    searched.write_text(yaml.safe_dump(body, sort_keys=False))
    assert main(["validate", str(searched)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        (
            f"tuner: error: {searched}: search_space.width: expected a value fixed at the job's width, "
            "which proxy.width stands in for, got 'choices [1.0, 2.0]'"
        )
    ]


def test_a_proxy_study_runs_with_one_worker(workdir: Path) -> None:
    path = proxy_experiment(workdir / "w.yaml", "{width: 0.5}")
    ran = cli("run", str(path), "--workers", "2", cwd=workdir)
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == [
        f"tuner: error: {path}: proxy: expected a study run by tuner run or tuner.run with one worker, got 'tuner run --workers 2'"
    ]
    assert not (workdir / "study.db").exists()


OWN_LOOP = """
from torch import nn


def train(config, device, seed, session):
    model = nn.Sequential(nn.Linear(4, round(8 * config.width)), nn.Linear(round(8 * config.width), 2))
    session.optimizer(model, build=lambda width: nn.Sequential(nn.Linear(4, round(8 * width)), nn.Linear(round(8 * width), 2)))
"""


def test_an_own_loops_baseline_keeps_the_standard_parametrization_at_both_fidelities(tmp_path: Path, monkeypatch) -> None:
    """A training function's baseline takes the values its space fixes; the proxy study's muP is not one of them."""
    (tmp_path / "proxy_loop.py").write_text(OWN_LOOP)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "loop.yaml"
    path.write_text(
        "task: proxy_loop:train\nsearch_space: {lr: {low: 1.0e-3, high: 1.0e-1, log: true}, width: 2.0}\n"
        "objective: {target: 0.9, eval_every_samples: 64, cap_s: 5.0}\nproxy: {width: 0.5}\nbaseline: {lr: 0.01}\n"
    )
    experiment = load_experiment(path)
    searched = at_proxy(experiment, None)
    assert searched.search_space.dims["parametrization"].value == "mup" and searched.search_space.dims["mup_base"].value == 0.5
    at_proxy_width = baseline_configuration(searched)
    at_full = baseline_configuration(at_full_size(experiment, 1, None))
    assert (at_proxy_width.width, at_full.width) == (0.5, 2.0)
    assert {c.parametrization for c in (at_proxy_width, at_full)} == {"standard"}
    assert {c.mup_base for c in (at_proxy_width, at_full)} == {1.0}
