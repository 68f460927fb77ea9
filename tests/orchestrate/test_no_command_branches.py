"""No behaviour of the package is decided by the name of the command that runs it: what a run does
besides its study (its lines, what a stop says, its deadline, MLflow's drain, ...) is a field of
``RunOptions`` of its own (tuner/orchestrate/options.py), set where each command builds its options.
``RunOptions.command`` names the command in messages only.

Read from the source: every comparison with a ``.command`` attribute (``==``, ``!=``, ``in``, ``not
in``), every lookup keyed by one, and every ``match`` on one.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from tuner.orchestrate import RunOptions, WorkerRole

PACKAGE = Path(__file__).resolve().parents[2] / "tuner"
COMPARING = (ast.Eq, ast.NotEq, ast.In, ast.NotIn, ast.Is, ast.IsNot)


def _is_command(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "command"


def _branches(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        return any(isinstance(op, COMPARING) for op in node.ops) and any(_is_command(o) for o in operands)
    if isinstance(node, ast.Subscript):
        return _is_command(node.slice)
    if isinstance(node, ast.Match):
        return _is_command(node.subject)
    return False


def command_branches(root: Path) -> list[str]:
    """``path:line`` of each place under ``root`` that compares, looks up or matches a ``.command``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = sorted(node.lineno for node in ast.walk(ast.parse(path.read_text(), filename=str(path))) if _branches(node))
        found += [f"{path.relative_to(root.parent)}:{n}" for n in lines]
    return found


def test_no_behaviour_branches_on_the_commands_name() -> None:
    found = command_branches(PACKAGE)
    assert not found, f"behaviour decided by the command's name (give RunOptions a field that says it instead): {found}"


def test_a_planted_branch_is_found(tmp_path: Path) -> None:
    root = tmp_path / "tuner"
    root.mkdir()
    (root / "lines.py").write_text(
        textwrap.dedent(
            """
            if options.command == "run":
                pass
            if "api" != self.command:
                pass
            quiet = options.command in ("run", "api")
            hint = RESUME[options.command]
            match options.command:
                case "worker":
                    pass
            """
        )
    )
    (root / "fine.py").write_text(
        textwrap.dedent(
            """
            who = f"tuner {options.command}"
            if options.lines == "study":
                pass
            options = RunOptions(path, command="api")
            """
        )
    )
    assert command_branches(root) == [f"tuner/lines.py:{n}" for n in (2, 4, 6, 7, 8)]


def test_each_command_sets_what_it_does_besides_its_study() -> None:
    run, api = RunOptions("e.yaml"), RunOptions.for_api("e.yaml")
    assert (run.lines, run.timeout_from_start, run.drain_tracking, run.print_errors) == ("study", True, True, True)
    assert (api.lines, api.resume_hint, api.timeout_from_start, api.drain_tracking, api.print_errors) == (None, None, False, False, False)
    assert run.proxy_allowed and api.proxy_allowed and run.refuse_short_budget and api.refuse_short_budget
    worker, quiet = RunOptions.for_worker("e.yaml", WorkerRole()), RunOptions.for_worker("e.yaml", WorkerRole(), quiet=True)
    assert worker.lines == "worker" and worker.resume_hint is not None and worker.watch_overhead
    assert quiet.lines is None and quiet.resume_hint is None and quiet.watch_overhead  # a quiet worker says only its errors
    confirm, night = RunOptions.for_confirm("e.yaml"), RunOptions.for_night("e.yaml")
    assert confirm.lines == "confirmation" and not confirm.search
    assert night.lines is None and not night.resolve_clock and "report written" in (night.resume_hint or "")
    for options in (worker, confirm, night):
        assert not (options.timeout_from_start or options.drain_tracking or options.proxy_allowed or options.refuse_short_budget)
        assert options.print_errors
    assert {o.command for o in (run, api, worker, confirm, night)} == {"run", "api", "worker", "confirm", "nightly"}
    assert RunOptions.from_json(quiet.to_json()) == quiet  # the fields travel to a worker process with the rest
