"""deploy/: every example parses, and runs the same `tuner nightly` command the CLI accepts."""

from __future__ import annotations

import configparser
import re
import shlex
from pathlib import Path

import yaml

from tuner.cli import build_parser

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
REPO = DEPLOY.parent
EXPECTED = ["nightly", "experiments/mnist1d_cnn.yaml", "--budget", "2h"]
CRON_FIELD = re.compile(r"^(\*|\d+(-\d+)?)(/\d+)?(,(\*|\d+(-\d+)?)(/\d+)?)*$")


def tuner_args(command: str) -> list[str]:
    """The arguments after the tuner executable in a shell command line."""
    words = shlex.split(command)
    start = next(i for i, w in enumerate(words) if w.endswith("/bin/tuner") or w == "tuner")
    end = next((i for i, w in enumerate(words) if i > start and w in (">>", ">", "||", "&&", "|", ";")), len(words))
    return words[start + 1 : end]


def check(args: list[str]) -> None:
    assert args[:4] == EXPECTED, args
    parsed = build_parser().parse_args(args)  # exits (SystemExit) on an option the CLI does not have
    assert parsed.command == "nightly" and parsed.handler.__module__ == "tuner.cli.nightly"
    assert (REPO / parsed.experiment).is_file()


def test_crontab_line_has_five_time_fields_and_the_command() -> None:
    lines = [line for line in (DEPLOY / "crontab").read_text().splitlines() if line.strip() and not line.startswith("#")]
    jobs = [line for line in lines if not re.match(r"^[A-Z_]+=", line)]
    assert len(jobs) == 1
    fields = jobs[0].split(None, 5)
    assert len(fields) == 6 and all(CRON_FIELD.match(f) for f in fields[:5]), fields
    check(tuner_args(fields[5]))


def test_systemd_service_and_timer_parse() -> None:
    service = configparser.ConfigParser(interpolation=None, strict=True)
    service.optionxform = str  # systemd keys are case-sensitive
    service.read(DEPLOY / "tuner-nightly.service")
    assert service["Service"]["Type"] == "oneshot"
    check(tuner_args(service["Service"]["ExecStart"]))
    timer = configparser.ConfigParser(interpolation=None, strict=True)
    timer.optionxform = str
    timer.read(DEPLOY / "tuner-nightly.timer")
    assert timer["Timer"]["Unit"] == "tuner-nightly.service" and timer["Timer"]["OnCalendar"]
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_kubernetes_cronjob_parses() -> None:
    job = yaml.safe_load((DEPLOY / "k8s-cronjob.yaml").read_text())
    assert job["kind"] == "CronJob" and job["apiVersion"] == "batch/v1"
    assert len(job["spec"]["schedule"].split()) == 5 and job["spec"]["concurrencyPolicy"] == "Forbid"
    [container] = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["command"][-1].endswith("/bin/tuner")
    check(container["args"])


def test_github_actions_workflow_parses() -> None:
    flow = yaml.safe_load((DEPLOY / "github-actions-nightly.yml").read_text())
    triggers = flow[True] if True in flow else flow["on"]  # YAML 1.1 reads the key `on` as true
    assert len(triggers["schedule"][0]["cron"].split()) == 5
    runs = [step["run"] for step in flow["jobs"]["nightly"]["steps"] if "tuner nightly" in step.get("run", "")]
    assert len(runs) == 1
    check(tuner_args(runs[0]))
