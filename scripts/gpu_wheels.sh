#!/usr/bin/env bash
# The wheels a GPU machine with Python 3.12 and PyTorch, but without Optuna, MLflow and the rest
# of tuner's needs, must be given to run benchmarks/gpu_check.py (it has no package index).
#
#   bash scripts/gpu_wheels.sh [FOLDER]        # here, with the index: downloads into FOLDER (default .whl, ignored by git)
#   python3 benchmarks/gpu_check.py --wheels .whl   # there: installs them (pip --no-index --find-links) and runs the check
#
# The list is what `pip download optuna==5.1.0 mlflow==3.17.2 mnist1d plotly schedulefree
# cryptography nvidia-ml-py` resolves for CPython 3.12 on manylinux x86-64, less what that machine
# already has (numpy, scipy, pandas, pyarrow, scikit-learn, matplotlib, pillow, pyyaml, requests,
# jinja2, werkzeug, protobuf, nvidia-ml-py, pytest, torch, ...). Versions are pinned: one version of
# each, and the same set every time. cryptography, cffi and pycparser are there for MLflow: without
# them its store fails at connect and the study goes on untracked. About 45 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
DEST="${1:-.whl}"
PY="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
WHEELS=(
    alembic==1.20.1 annotated-types==0.8.0 blinker==1.9.0 cachetools==7.3.3 cffi==2.1.1 colorlog==6.12.0
    cryptography==50.0.2 databricks-sdk==0.167.0 docker==7.2.0 fastapi==0.165.0 flask==3.1.3 flask-cors==6.0.5
    gitdb==4.0.12 gitpython==3.2.1 google-auth==2.63.0 graphene==3.4.3 graphql-core==3.2.14 graphql-relay==3.2.0
    gunicorn==26.2.0 huey==3.5.4 importlib-metadata==9.1.0 itsdangerous==2.2.0 mako==1.4.3
    mlflow==3.17.2 mlflow-skinny==3.17.2 mlflow-tracing==3.17.2 mnist1d==0.0.2.post1
    opentelemetry-api==1.45.2 opentelemetry-proto==1.45.2 opentelemetry-sdk==1.45.2 opentelemetry-semantic-conventions==0.66b2
    optuna==5.1.0 plotly==7.1.0 prettytable==3.19.0 pyasn1==0.6.5 pyasn1-modules==0.4.2 pycparser==3.12
    pydantic==2.14.4 pydantic-core==2.50.5 python-dotenv==1.2.4 schedulefree==1.4.1 skops==0.16.0 smmap==5.0.3
    sqlalchemy==2.1.9 sqlparse==0.6.1 starlette==1.10.0 typing-inspection==0.4.5 uvicorn==0.55.0 wcwidth==0.9.4
)
mkdir -p "$DEST"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d "$DEST" "${WHEELS[@]}"
echo "$(ls "$DEST"/*.whl | wc -l) wheels, $(du -sh "$DEST" | cut -f1) in $DEST"
