"""deploy/: the launchers of many workers on one study (a Kubernetes Indexed Job, a Slurm array,
docker compose on one machine with several GPUs).

Each file parses and holds its contract (one worker per index, its index seeding the worker,
credentials from a Secret, a grace period that lets a trial end as interrupted), its commands
are `tuner` commands the CLI's own parser accepts, and they run here: the same commands and
environment, with this machine's addresses for the cluster's services, a real PostgreSQL
(scripts/postgres.sh) and a real `mlflow server`, on a seconds-long synthetic study standing in
for the experiment file they name. The study then holds exactly its searched configurations,
and MLflow one run per trial.
"""

from __future__ import annotations

import collections
import os
import re
import shlex
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna
import pytest
import yaml
from conftest import DEFAULT_SPACE, REPO_ROOT, free_port, write
from optuna.trial import TrialState

from tuner.cli import build_parser

DEPLOY = REPO_ROOT / "deploy"
IMAGE_TUNER = "/srv/tuner/.venv/bin/tuner"  # where the image holds the project (deploy/k8s-workers.yaml)
EXPERIMENT = "experiments/mnist1d_cnn.yaml"
N_TRIALS = 6  # the launchers ask for 200; the stand-in study for this many
VAR = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}|\$(\w+)")


# -- reading the files ---------------------------------------------------------------------


def k8s() -> dict[tuple[str, str], dict]:
    """The manifest's objects by (kind, name)."""
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all((DEPLOY / "k8s-workers.yaml").read_text()) if d}


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def sbatch() -> tuple[dict[str, str], list[str]]:
    """The #SBATCH options, and the script's `tuner` command line (continuations joined)."""
    text = (DEPLOY / "slurm-workers.sbatch").read_text()
    options = dict(line.removeprefix("#SBATCH ").split("=", 1) for line in text.splitlines() if line.startswith("#SBATCH --"))
    command = next(line for line in re.sub(r"\\\n\s*", " ", text).splitlines() if "bin/tuner worker" in line)
    return options, shlex.split(command)


def shell_expand(word: str, env: dict[str, str]) -> str:
    """$NAME, ${NAME}, ${NAME:-default} and ${NAME:?message}, as bash and compose expand them."""

    def value(m: re.Match) -> str:
        name = m[1] or m[4]
        if name in env:
            return env[name]
        assert m[2] == "-", f"{name} is not set"
        return m[3]

    return VAR.sub(value, word)


def k8s_expand(args: list[str], env: dict[str, str]) -> list[str]:
    """Kubernetes' $(NAME) in command and args, from the container's env."""
    return [re.sub(r"\$\((\w+)\)", lambda m: env[m[1]], a) for a in args]


def container_env(container: dict, secrets: dict[str, str], fields: dict[str, str]) -> dict[str, str]:
    """A container's env as the kubelet sets it: values, Secret keys, downward-API fields."""
    env = {}
    for item in container.get("env", []):
        source = item.get("valueFrom", {})
        if "secretKeyRef" in source:
            env[item["name"]] = secrets[source["secretKeyRef"]["key"]]
        elif "fieldRef" in source:
            env[item["name"]] = fields[source["fieldRef"]["fieldPath"]]
        else:
            env[item["name"]] = item["value"]
    return env


def parsed(args: list[str]) -> Any:
    """The CLI's own parser: an option it does not have exits (SystemExit) and fails the test."""
    return build_parser().parse_args(args)


def the_container(spec: dict) -> dict:
    [container] = spec["template"]["spec"]["containers"]
    return container


# -- the contracts -------------------------------------------------------------------------


def test_the_kubernetes_job_is_indexed_one_pod_per_worker() -> None:
    job = k8s()[("Job", "tuner-workers")]["spec"]
    assert job["completionMode"] == "Indexed" and job["completions"] == job["parallelism"] == 16
    assert job["backoffLimitPerIndex"] >= 1  # a failed pod comes back with its own index
    pod = job["template"]["spec"]
    assert pod["restartPolicy"] == "Never"  # what backoffLimitPerIndex and podFailurePolicy need
    assert pod["terminationGracePeriodSeconds"] >= 30  # SIGTERM: the trial ends as interrupted first
    worker = the_container(job)
    assert worker["command"] == [IMAGE_TUNER]
    index = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    env = container_env(worker, {"proxy-token": "t", "mlflow-password": "p"}, {index: "7"})
    args = parsed(k8s_expand(worker["args"], env))
    assert args.command == "worker" and args.handler.__module__ == "tuner.cli.worker"
    assert args.worker_index == 7 and args.experiment == EXPERIMENT and (REPO_ROOT / EXPERIMENT).is_file()
    assert args.storage == "grpc://tuner-storage-proxy:13000" and args.tracking_uri == "http://tuner-mlflow:5000"


def test_an_index_below_zero_is_refused_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tuner.cli import main

    assert main(["worker", str(REPO_ROOT / EXPERIMENT), "--worker-index", "-1", "--no-tracking"]) == 2
    assert capsys.readouterr().err.splitlines() == ["tuner: error: tuner worker: --worker-index: expected an integer >= 0, got -1"]
    assert not list(tmp_path.iterdir())  # nothing stored


def test_the_kubernetes_services_stand_beside_the_job() -> None:
    objects = k8s()
    for name, port in (("tuner-postgres", 5432), ("tuner-mlflow", 5000), ("tuner-storage-proxy", 13000)):
        service = objects[("Service", name)]["spec"]
        deployment = objects[("Deployment", name)]["spec"]
        assert service["selector"] == deployment["selector"]["matchLabels"] == deployment["template"]["metadata"]["labels"]
        assert [p["port"] for p in service["ports"]] == [port]
        assert "readinessProbe" in the_container(deployment)
    proxy = the_container(objects[("Deployment", "tuner-storage-proxy")]["spec"])
    args = parsed(k8s_expand(proxy["args"], {"TUNER_STORAGE": "postgresql://u:p@tuner-postgres/tuner"}))
    assert args.command == "storage-proxy" and args.port == 13000 and args.host == "0.0.0.0" and args.experiment == EXPERIMENT


def test_kubernetes_credentials_come_from_the_secret_and_workers_need_none() -> None:
    objects = k8s()
    refs = {}
    for (kind, name), obj in objects.items():
        if kind in ("Deployment", "Job"):
            for item in the_container(obj["spec"]).get("env", []):
                assert "password" not in str(item.get("value", "")).lower() and "@" not in str(item.get("value", "")), (name, item)
                if "secretKeyRef" in item.get("valueFrom", {}):
                    refs[(name, item["name"])] = item["valueFrom"]["secretKeyRef"]
    assert set(refs) == {
        ("tuner-postgres", "POSTGRES_PASSWORD"),
        ("tuner-mlflow", "MLFLOW_BACKEND_STORE_URI"),
        ("tuner-mlflow", "MLFLOW_AUTH_ADMIN_PASSWORD"),
        ("tuner-mlflow", "MLFLOW_FLASK_SERVER_SECRET_KEY"),
        ("tuner-storage-proxy", "TUNER_STORAGE"),
        ("tuner-storage-proxy", "TUNER_PROXY_TOKEN"),
        ("tuner-workers", "TUNER_PROXY_TOKEN"),  # the proxy's token, and MLflow's user: never the database's password
        ("tuner-workers", "MLFLOW_TRACKING_PASSWORD"),
    }
    assert refs[("tuner-workers", "TUNER_PROXY_TOKEN")] == refs[("tuner-storage-proxy", "TUNER_PROXY_TOKEN")]
    assert refs[("tuner-workers", "MLFLOW_TRACKING_PASSWORD")] == refs[("tuner-mlflow", "MLFLOW_AUTH_ADMIN_PASSWORD")]
    assert {r["name"] for r in refs.values()} == {"tuner-db"}
    text = (DEPLOY / "k8s-workers.yaml").read_text()
    assert not re.search(r"postgresql://[^\s\"']*:[^\s\"'@]*@", text.split("apiVersion", 1)[1])  # no URL with a password past the comments


def test_only_the_workers_reach_the_proxy_and_mlflow_and_only_those_reach_postgres() -> None:
    objects = k8s()
    labels = {name: obj["spec"]["template"]["metadata"]["labels"] for (kind, name), obj in objects.items() if kind in ("Deployment", "Job")}
    policies = {name: obj["spec"] for (kind, name), obj in objects.items() if kind == "NetworkPolicy"}

    def allowed(target: str) -> set[str]:
        """The pods (by Deployment or Job) a policy selecting ``target``'s pods lets in, on its one port."""
        [policy] = [p for p in policies.values() if p["podSelector"]["matchLabels"].items() <= labels[target].items()]
        assert policy["policyTypes"] == ["Ingress"]
        [rule] = policy["ingress"]
        selectors = [peer["podSelector"]["matchLabels"] for peer in rule["from"]]
        assert all(set(peer) == {"podSelector"} for peer in rule["from"])  # no namespace or address blocks
        return {name for name, have in labels.items() if any(sel.items() <= have.items() for sel in selectors)}

    assert allowed("tuner-storage-proxy") == {"tuner-workers"}
    assert allowed("tuner-mlflow") == {"tuner-workers"}
    assert allowed("tuner-postgres") == {"tuner-storage-proxy", "tuner-mlflow"}
    job = objects[("Job", "tuner-workers")]["spec"]
    assert {"action": "Ignore", "onExitCodes": {"containerName": "worker", "operator": "In", "values": [75]}} in job["podFailurePolicy"][
        "rules"
    ]
    mlflow = the_container(objects[("Deployment", "tuner-mlflow")]["spec"])
    assert mlflow["args"][mlflow["args"].index("--app-name") + 1] == "basic-auth"


def test_the_slurm_script_is_an_array_of_workers() -> None:
    options, command = sbatch()
    assert re.fullmatch(r"0-\d+", options["--array"])
    assert options["--signal"].startswith("B:TERM@")  # to the batch step, which `exec` made the worker
    assert command[0] == "exec" and command[1] == ".venv/bin/tuner"
    env = {"TUNER_STORAGE": "grpc://proxy-host:13000", "TUNER_TRACKING": "http://mlflow-host:5000", "SLURM_ARRAY_TASK_ID": "3"}
    args = parsed([shell_expand(w, env) for w in command[2:]])
    assert args.command == "worker" and args.worker_index == 3 and args.n_trials == 200 and args.storage == "grpc://proxy-host:13000"
    assert (REPO_ROOT / args.experiment).is_file()
    assert subprocess.run(["bash", "-n", str(DEPLOY / "slurm-workers.sbatch")], check=False).returncode == 0


def test_the_compose_file_runs_one_worker_per_gpu() -> None:
    services = compose()["services"]
    workers = {name: s for name, s in services.items() if name.startswith("worker-")}
    assert len(workers) >= 2
    env = {"TUNER_DB_PASSWORD": "pw"}
    for name, service in workers.items():
        [device] = service["deploy"]["resources"]["reservations"]["devices"]
        assert device["capabilities"] == ["gpu"] and device["device_ids"] == [name.removeprefix("worker-")]
        assert service["entrypoint"] == [IMAGE_TUNER] and service["stop_grace_period"] == "60s"
        args = parsed([shell_expand(w, env) for w in service["command"]])
        assert args.command == "worker" and args.worker_index == int(name.removeprefix("worker-"))
        assert args.storage == "grpc://storage-proxy:13000" and args.tracking_uri == "http://mlflow:5000"
        assert set(service["depends_on"]) == {"storage-proxy", "mlflow"}
    proxy = parsed([shell_expand(w, env) for w in services["storage-proxy"]["command"]])
    assert proxy.command == "storage-proxy" and proxy.storage == "postgresql://tuner:pw@postgres/tuner"
    assert "${TUNER_DB_PASSWORD:?" in (DEPLOY / "compose.yaml").read_text()  # never a default password


# -- the same commands, run here -----------------------------------------------------------


@pytest.fixture
def stand_in(tmp_path: Path) -> Iterator[str]:
    """experiments/mnist1d_cnn.yaml under tmp_path: a seconds-long synthetic study; yields its name."""
    name = f"launch-{uuid.uuid4().hex[:8]}"  # the servers outlive the test
    write(
        tmp_path / EXPERIMENT,
        f"""
        name: {name}
        task: synthetic
        search_space:
          file: {DEFAULT_SPACE}
          override: {{precision: fp32, batch_size: {{choices: [64, 128]}}, lr: {{low: 3.0e-3, high: 3.0e-2}}}}
        objective: {{target: 0.9, eval_every_samples: 256, cap_s: 2.0}}
        sampler: {{name: random}}
        confirm: {{after_search: false}}
        race: null
        trainer: {{threads: 1}}
        """,
    )
    yield name


def localized(args: list[str], names: dict[str, str]) -> list[str]:
    """The cluster's service addresses replaced by this machine's, and the stand-in's trial budget."""
    out = []
    for i, arg in enumerate(args):
        for there, here in names.items():
            arg = arg.replace(there, here)
        out.append(str(N_TRIALS) if i and args[i - 1] == "--n-trials" else arg)
    return out


def run_launched(
    proxy_cmd: list[str],
    worker_cmds: list[tuple[list[str], dict[str, str]]],
    cwd: Path,
    name: str,
    pg: str,
    uri: str,
    proxy_env: dict[str, str] | None = None,
) -> None:
    """Start the proxy, then the workers; every worker exits 0 and the study is exact."""
    base = {**os.environ, "TUNER_CACHE_DIR": str(cwd / "cache")}
    proxy = subprocess.Popen(proxy_cmd, cwd=cwd, env={**base, **(proxy_env or {})}, stderr=subprocess.PIPE, text=True)
    try:
        line = proxy.stderr.readline()
        assert "listening on" in line, line + proxy.stderr.read()
        workers = [subprocess.Popen(cmd, cwd=cwd, env={**base, **env}, stderr=subprocess.PIPE, text=True) for cmd, env in worker_cmds]
        errors = [w.communicate(timeout=300)[1] for w in workers]
        assert [w.returncode for w in workers] == [0] * len(workers), [e[-2000:] for e in errors]
    finally:
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(timeout=30) == 128 + signal.SIGTERM
    trials = optuna.load_study(study_name=name, storage=pg).get_trials(deepcopy=False)
    states = collections.Counter(t.state for t in trials)
    assert states[TrialState.COMPLETE] + states[TrialState.PRUNED] == N_TRIALS and len(trials) == N_TRIALS, states
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id], "tags.`tuner.role` = 'trial'", max_results=100)
    tracked = sorted(int(r.data.tags["tuner.trial_number"]) for r in runs)
    assert tracked == sorted(t.number for t in trials), [e[-2000:] for e in errors]  # a worker says why its runs are missing


def tuner_here(command: list[str]) -> list[str]:
    """The image's `tuner` executable is this checkout's."""
    assert command[0] == IMAGE_TUNER
    return [sys.executable, "-m", "tuner", *command[1:]]


@pytest.mark.e2e
def test_the_kubernetes_commands_run_here(tmp_path: Path, stand_in: str, postgres_url: str, mlflow_server: str) -> None:
    objects, port = k8s(), free_port()
    names = {"tuner-storage-proxy:13000": f"127.0.0.1:{port}", "http://tuner-mlflow:5000": mlflow_server, "13000": str(port)}
    # The Secret's keys the proxy and the workers read (the local MLflow server asks for no user: the password is unused).
    secrets = {"storage-url": postgres_url, "proxy-token": "a-shared-token", "mlflow-password": "unused-here"}
    proxy = the_container(objects[("Deployment", "tuner-storage-proxy")]["spec"])
    proxy_env = container_env(proxy, secrets, {})
    proxy_cmd = tuner_here(localized(k8s_expand(proxy["command"] + proxy["args"], proxy_env), names))
    worker = the_container(objects[("Job", "tuner-workers")]["spec"])
    index = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    commands = []
    for i in range(3):  # three of the Job's pods
        env = container_env(worker, secrets, {index: str(i)})
        env["TUNER_CACHE_DIR"] = str(tmp_path / "cache")  # the pod's emptyDir
        commands.append((tuner_here(localized(k8s_expand(worker["command"] + worker["args"], env), names)), env))
    run_launched(proxy_cmd, commands, tmp_path, stand_in, postgres_url, mlflow_server, proxy_env)


@pytest.mark.e2e
def test_the_slurm_script_runs_here(tmp_path: Path, stand_in: str, postgres_url: str, mlflow_server: str) -> None:
    port = free_port()
    (tmp_path / ".venv").symlink_to(REPO_ROOT / ".venv")  # the project folder sbatch is called from
    settings = write(tmp_path / "workers.env", f"TUNER_STORAGE=grpc://127.0.0.1:{port}\nTUNER_TRACKING={mlflow_server}\n")
    proxy_cmd = [sys.executable, "-m", "tuner", "storage-proxy", EXPERIMENT, "--storage", postgres_url, "--port", str(port)]
    script = str(DEPLOY / "slurm-workers.sbatch")
    env = {"SLURM_SUBMIT_DIR": str(tmp_path), "TUNER_ENV": str(settings), "TUNER_N_TRIALS": str(N_TRIALS), "SLURM_CPUS_PER_TASK": "1"}
    commands = [(["bash", script], {**env, "SLURM_ARRAY_TASK_ID": str(i)}) for i in range(3)]  # three array tasks
    run_launched(proxy_cmd, commands, tmp_path, stand_in, postgres_url, mlflow_server)


@pytest.mark.slow  # the Kubernetes run above runs the same worker and proxy commands in every test run
def test_the_compose_commands_run_here(tmp_path: Path, stand_in: str, postgres_url: str, mlflow_server: str) -> None:
    services, port = compose()["services"], free_port()
    where = re.match(r"postgresql://tuner:tuner@([^/]+)/tuner$", postgres_url)
    if where is None:
        pytest.skip("the compose file's database URL has user and password tuner; this server's differs")
    names = {
        "@postgres/": f"@{where[1]}/",
        "storage-proxy:13000": f"127.0.0.1:{port}",
        "http://mlflow:5000": mlflow_server,
        "13000": str(port),
    }
    env = {"TUNER_DB_PASSWORD": "tuner"}

    def command(service: dict) -> list[str]:
        return tuner_here(localized([shell_expand(w, env) for w in service["entrypoint"] + service["command"]], names))

    worker_env = {k: str(tmp_path / "cache") if k == "TUNER_CACHE_DIR" else v for k, v in services["worker-0"]["environment"].items()}
    commands = [(command(services[f"worker-{i}"]), worker_env) for i in range(2)]  # two of the machine's GPUs
    run_launched(command(services["storage-proxy"]), commands, tmp_path, stand_in, postgres_url, mlflow_server)
