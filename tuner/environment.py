"""The environment fingerprint: where and with what a study ran."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib import metadata

import torch

PACKAGES = ("optuna", "mlflow", "numpy", "torch", "tuner")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git_commit(path: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False)
        dirty = subprocess.run(
            ["git", "-C", path, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def fingerprint() -> dict[str, str]:
    """Host, CPU and GPU model, versions, and the git commit of the working directory."""
    info = {
        "host": socket.gethostname(),
        "cpu": _cpu_model(),
        "cores": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
        "cuda": torch.version.cuda or "none",
        "python": platform.python_version(),
        "torch_threads": str(torch.get_num_threads()),
    }
    for name in PACKAGES:
        try:
            info[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            info[name] = "not installed"
    info["git_commit"] = _git_commit(os.getcwd()) or "none"
    return info
