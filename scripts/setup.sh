#!/usr/bin/env bash
# Set-up on a fresh machine with only Python and the package registries: a virtual
# environment in .venv holding tuner (editable) and its test tools. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
# --no-compile: pip byte-compiles every installed module (21,000 files, transformers alone
# 3,000: 25 s on a loaded 2-core machine); the import check below compiles the ones tuner
# imports (with PYTHONDONTWRITEBYTECODE set, Python would compile them again in every process).
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile)
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    "${pip[@]}" "torch>=2.4,<2.15"          # a CUDA build, for the GPU this machine has
  else
    "${pip[@]}" "torch==2.13.0"             # the CPU build; an unpinned torch pulls a multi-GB CUDA build
  fi
fi
"${pip[@]}" -e ".[dev,postgres,grpc,auth,lightning,huggingface,docs]" 2>&1 | grep -v "is ignored: it is neither" || true
# One interpreter checks that everything imports and names the torch it found.
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -c "import tuner.api, tuner.cli, optuna, mlflow, torch; print('set-up done: .venv (torch', torch.__version__ + ')')"
