"""Flags shared by several subcommands, and printing helpers."""

from __future__ import annotations

import argparse

import yaml


def add_study_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study-name", dest="name", help="study name (default: the experiment's name)")
    parser.add_argument("--storage", help="Optuna storage URL (default: sqlite:///tuner.db)")


def dump_yaml(data: object) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
