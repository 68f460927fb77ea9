#!/usr/bin/env bash
# Set-up on a fresh machine with only Python and the package registries: a virtual
# environment in .venv holding tuner (editable) and its test tools. Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    "${pip[@]}" "torch>=2.4,<2.15"          # a CUDA build, for the GPU this machine has
  else
    "${pip[@]}" "torch==2.13.0"             # the CPU build; an unpinned torch pulls a multi-GB CUDA build
  fi
fi
"${pip[@]}" -e ".[dev,postgres,grpc,auth,lightning,huggingface,docs]" 2>&1 | grep -v "is ignored: it is neither" || true
.venv/bin/python -c "import tuner, torch, optuna, mlflow" 
echo "set-up done: .venv ($(.venv/bin/python -c 'import torch; print("torch", torch.__version__)'))"
