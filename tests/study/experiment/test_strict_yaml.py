"""Strict YAML: duplicate keys, huge or deep documents, alias bombs and unreadable values are one line each."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import write

from tuner.errors import ConfigError
from tuner.study.experiment.strict_yaml import MAX_BYTES, MAX_DEPTH, MAX_VALUES, load_yaml
from tuner.study.run.experiment_file import load_experiment


def refused(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert "\n" not in str(info.value)
    return info.value


def test_a_duplicate_key_names_file_key_and_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path / "exp.yaml", "task: synthetic\nobjective: {target: 0.9}\ntask: digits-mlp\n")
    err = refused(path)
    assert str(err) == f"{path}: task: expected each key once in a mapping, got 'a second task at line 3 (first at line 1)'"


def test_a_nested_duplicate_key_names_its_key_path(tmp_path: Path) -> None:
    path = write(tmp_path / "exp.yaml", "search_space:\n  lr:\n    low: 1.0e-3\n    high: 0.1\n    low: 1.0e-2\n")
    err = refused(path)
    assert err.key == "search_space.lr.low"
    assert err.given == "a second low at line 5 (first at line 3)"


def test_keys_equal_as_values_are_duplicates(tmp_path: Path) -> None:
    # A dict would keep one of them: 1 and 0x1 are the same int, yes and true the same bool.
    err = refused(write(tmp_path / "exp.yaml", "task_options: {1: a, 0x1: b}\n"))
    assert err.key == "task_options.0x1" and err.given == "a second 0x1 at line 1, column 22 (first as 1 at line 1, column 16)"
    err = refused(write(tmp_path / "exp.yaml", "objective:\n  true: 1\n  yes: 2\n"))
    assert err.given == "a second yes at line 3 (first as true at line 2)"


def test_a_duplicate_in_a_list_item_and_in_a_search_space_file(tmp_path: Path) -> None:
    err = refused(write(tmp_path / "exp.yaml", "task_options:\n  layers:\n    - {size: 1}\n    - {size: 2, size: 3}\n"))
    assert err.key == "task_options.layers[1].size"
    space = write(tmp_path / "space.yaml", "lr: {low: 0.001, high: 0.1}\nlr: 0.01\n")
    write(tmp_path / "exp.yaml", "task: synthetic\nsearch_space: space.yaml\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(tmp_path / "exp.yaml")
    assert str(info.value) == f"{space}: lr: expected each key once in a mapping, got 'a second lr at line 2 (first at line 1)'"


def test_a_merged_key_overridden_is_not_a_duplicate_and_the_written_value_wins(tmp_path: Path) -> None:
    text = "base: &b {x: 1, y: 1}\nmid: &m {<<: *b, x: 2}\ntop: {<<: *m}\nboth: {<<: [*m, {x: 3, z: 3}], y: 4}\n"
    data = load_yaml(write(tmp_path / "merge.yaml", text))
    # PyYAML 6.0.4's own merge gives top: {x: 1}, the value mid overrode.
    assert data["mid"] == {"x": 2, "y": 1} and data["top"] == {"x": 2, "y": 1}
    assert data["both"] == {"x": 2, "y": 4, "z": 3} and list(data["both"]) == ["x", "y", "z"]
    err = refused(write(tmp_path / "merge.yaml", "base: &b {x: 1}\ntop: {<<: *b, <<: *b}\n"))
    assert err.key == "top.<<"


def test_a_document_over_the_size_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "big.yaml", "task: synthetic\n# " + "x" * MAX_BYTES + "\n")
    err = refused(path)
    assert str(err) == f"{path}: (file): expected at most 1 MiB of YAML, got '{path.stat().st_size} bytes'"


def test_nesting_is_bounded(tmp_path: Path) -> None:
    assert load_yaml(write(tmp_path / "deep.yaml", "[" * MAX_DEPTH + "]" * MAX_DEPTH)) is not None
    err = refused(write(tmp_path / "deep.yaml", "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)))
    assert err.key == "[0]" * MAX_DEPTH and err.allowed == f"at most {MAX_DEPTH} levels of nesting"
    assert err.given == f"a deeper value at line 1, column {MAX_DEPTH + 1}"
    # Far deeper than Python's stack: refused at the limit, not a RecursionError.
    err = refused(write(tmp_path / "deep.yaml", "a: " + "{a: " * 100_000 + "1" + "}" * 100_000))
    assert err.key.startswith("a.a.a") and "levels of nesting" in err.allowed


def test_an_alias_bomb_is_refused_at_the_alias_that_sets_it_off(tmp_path: Path) -> None:
    text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefgh", "bcdefghi")
    )
    start = time.perf_counter()
    err = refused(write(tmp_path / "bomb.yaml", text))
    assert time.perf_counter() - start < 1.0
    # a to d hold 11, 111, 1111 and 11111 values (keys and the top level counted too): the eighth *d passes the bound.
    assert err.key == "e[7]"
    assert err.allowed == f"at most {MAX_VALUES} values in a document, aliases expanded"
    assert err.given == "*d expanding to 11111 values at line 5, column 36"


def test_an_alias_inside_its_own_anchor(tmp_path: Path) -> None:
    err = refused(write(tmp_path / "loop.yaml", "task_options: &a {self: *a}\n"))
    assert err.key == "task_options.self"
    assert err.given == "*a inside &a at line 1, column 25"


def test_aliases_cannot_nest_past_the_depth_limit(tmp_path: Path) -> None:
    half = MAX_DEPTH // 2 + 1
    text = "a: &deep " + "[" * half + "]" * half + "\nb: " + "[" * half + "*deep" + "]" * half + "\n"
    err = refused(write(tmp_path / "alias_depth.yaml", text))
    assert err.allowed == f"at most {MAX_DEPTH} levels of nesting, aliases followed"
    assert err.given.startswith("*deep nesting deeper at line 2")


@pytest.mark.parametrize(
    "text,given",
    [
        ('name: "\\ud800"\n', "'\\ud800' at line 1, column 7"),
        (
            "seed: " + "9" * 5000 + "\n",
            "line 1, column 7: cannot read this value (Exceeds the limit (4300 digits) for integer string conversion",
        ),
        ("seed: 2024-13-45\n", "line 1, column 7: cannot read this value (month must be in 1..12)"),
        ("name: a\x00b\n", "line 1, column 8: unacceptable character #x0000: special characters are not allowed"),
    ],
    ids=["lone surrogate", "integer past the digit limit", "impossible date", "NUL character"],
)
def test_unreadable_values_are_one_line_with_their_position(tmp_path: Path, text: str, given: str) -> None:
    err = refused(write(tmp_path / "value.yaml", text))
    assert str(err.given).startswith(given), err.given


def test_undecodable_bytes_name_their_offset(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    err = refused(path)
    assert str(err) == f"{path}: (file): expected UTF-8 text, got 'undecodable bytes at byte 9'"


def test_a_plain_experiment_still_loads(tmp_path: Path) -> None:
    text = "task: synthetic\nobjective:\n  target: 0.95\n  cap_s: 1e1\nsearch_space:\n  lr: {low: 1.0e-3, high: 0.1, log: true}\n"
    exp = load_experiment(write(tmp_path / "ok.yaml", text))
    assert exp.objective.target == 0.95 and exp.objective.cap_s == 10.0


def test_a_file_name_too_long_for_the_file_system_is_a_missing_file(tmp_path: Path) -> None:
    name = str(tmp_path / ("x" * 3000))
    err = refused(Path(name))
    assert err.key == "(file)" and err.allowed == "an existing file"
