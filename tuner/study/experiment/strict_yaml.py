"""YAML files read strictly: safe tags only, each key once, and bounded in size, depth and aliases.

PyYAML's ``safe_load`` refuses code, but it keeps the last of two equal keys without a word,
follows aliases into structures of any size ("billion laughs"), recurses once per level of
nesting until Python's stack gives out, and lets a converter's ValueError escape. The loader
here turns each of these into one ConfigError line naming the file, the key path and the line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from tuner.errors import ConfigError, first_line

MAX_BYTES = 1 << 20  # an experiment is a few hundred bytes; a megabyte is a mistake or an attack
MAX_DEPTH = 32  # levels of nesting (a mapping key is one level below its mapping), aliases followed
MAX_VALUES = 100_000  # scalars, lists and mappings in the document, each alias counted as what it expands to
_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"  # the "=" key, read as the string "="
_UNHASHABLE = object()


def load_yaml(path: str | Path) -> Any:
    """Read one YAML file strictly; any failure is a one-line ConfigError."""
    path = Path(path)
    source = str(path)
    try:
        exists = path.is_file()
    except OSError:  # a name too long for the file system, say
        exists = False
    if not exists:
        raise ConfigError(source, "(file)", "an existing file", source)
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_BYTES + 1)  # no more than that, whatever the file holds
    except OSError as err:
        raise ConfigError(source, "(file)", "a readable file", err.strerror or type(err).__name__) from None
    if len(data) > MAX_BYTES:
        raise ConfigError(source, "(file)", f"at most {MAX_BYTES >> 20} MiB of YAML", f"{path.stat().st_size} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(source, "(file)", "UTF-8 text", f"undecodable bytes at byte {err.start}") from None
    loader: StrictLoader | None = None
    try:
        loader = StrictLoader(text, source)  # the reader refuses control characters here already
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise ConfigError(source, "(yaml)", "valid YAML", _describe(err, text)) from None
    finally:
        if loader is not None:
            loader.dispose()


def _describe(err: yaml.YAMLError, text: str) -> str:
    """``line L, column C: problem``, the way PyYAML's errors say it, on one line."""
    if isinstance(err, yaml.reader.ReaderError):
        line = text.count("\n", 0, err.position) + 1
        column = err.position - (text.rfind("\n", 0, err.position) + 1) + 1
        return f"line {line}, column {column}: " + str(err).splitlines()[0]
    mark = getattr(err, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    return where + str(getattr(err, "problem", None) or getattr(err, "context", None) or err)


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate keys, deep nesting, alias bombs and unreadable values.

    Size, depth and alias checks run while the document is composed, before any Python
    object is built, so that a bomb is refused at the alias that sets it off.
    """

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self.source = source
        self._path: list[str] = []  # the key path of the node being composed, one step per level
        self._tallest: list[int] = []  # per open node: the height of its tallest child so far
        self._values = 0  # values composed so far, aliases expanded
        self._open: set[str] = set()  # anchors whose node is still being composed
        self._expanded: dict[str, tuple[int, int]] = {}  # anchor -> (values, height) with aliases expanded

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        self._path.append(_step(parent, index))
        try:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                self._follow_alias(event)
                return super().compose_node(parent, index)
            if len(self._path) > MAX_DEPTH:
                self._refuse(f"at most {MAX_DEPTH} levels of nesting", "a deeper value", event)
            if isinstance(event, yaml.ScalarEvent) and not _is_text(event.value):
                self._refuse("Unicode text (no lone surrogates such as \\ud800)", repr(event.value), event)
            self._count(1, event)
            before, anchor = self._values - 1, event.anchor
            if anchor is not None:
                self._open.add(anchor)
            self._tallest.append(0)
            node = super().compose_node(parent, index)
            height = self._tallest.pop() + 1
            if anchor is not None:
                self._open.discard(anchor)
                self._expanded[anchor] = (self._values - before, height)
            self._grow_parent(height)
            return node
        finally:
            self._path.pop()

    def construct_document(self, node: Node) -> Any:
        _refuse_duplicate_keys(self, node)
        return super().construct_document(node)

    def flatten_mapping(self, node: MappingNode) -> None:
        """Resolve ``<<`` merge keys: keys written in the mapping win, then earlier merged mappings.

        PyYAML 6.0.4 drops a merged pair whose key text is the same object as an earlier one's,
        so merging a mapping that itself overrides a merged key took the overridden value. Here
        keys are compared as constructed, and the order of first appearance is kept, as PyYAML's.
        """
        merged: list[tuple[Node, Node]] = []
        written: list[tuple[Node, Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != _MERGE_TAG:
                if key_node.tag == _VALUE_TAG:
                    key_node.tag = "tag:yaml.org,2002:str"
                written.append((key_node, value_node))
                continue
            for source in value_node.value if isinstance(value_node, SequenceNode) else [value_node]:
                if not isinstance(source, MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"expected a mapping to merge, found {source.id}",
                        source.start_mark,
                    )
                self.flatten_mapping(source)
                merged.extend(self._last_wins(source.value))
        firsts: dict[Any, tuple[Node, Node]] = {}
        for pair in merged:
            firsts.setdefault(self._key(pair[0]), pair)  # the mapping listed first wins
        node.value = list(firsts.values()) + written  # and the dict built next lets written keys win

    def _last_wins(self, pairs: list[tuple[Node, Node]]) -> list[tuple[Node, Node]]:
        """One pair per key, as a dict keeps it: at the first key's place, with the last value."""
        at: dict[Any, int] = {}
        out: list[tuple[Node, Node]] = []
        for key_node, value_node in pairs:
            key = self._key(key_node)
            if key in at:
                out[at[key]] = (out[at[key]][0], value_node)
            else:
                at[key] = len(out)
                out.append((key_node, value_node))
        return out

    def _key(self, key_node: Node) -> Any:
        """The key as a dict compares it; a key that cannot be one stays distinct (PyYAML refuses it later)."""
        key = _hashable_key(self, key_node)
        return key_node if key is _UNHASHABLE else key

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, OverflowError) as err:
            # A converter's own error (an int past Python's digit limit, a date like 2024-13-45):
            # the same one line as any YAML error, at the value's line.
            first = first_line(err, type(err).__name__).split("; ")[0]
            raise yaml.constructor.ConstructorError(None, None, f"cannot read this value ({first})", node.start_mark) from None

    def _follow_alias(self, event: yaml.AliasEvent) -> None:
        anchor = event.anchor
        if anchor in self._open:
            self._refuse("an alias to a value outside it (no value may contain itself)", f"*{anchor} inside &{anchor}", event)
        if anchor not in self._expanded:
            return  # PyYAML reports the undefined alias
        values, height = self._expanded[anchor]
        if len(self._path) - 1 + height > MAX_DEPTH:
            self._refuse(f"at most {MAX_DEPTH} levels of nesting, aliases followed", f"*{anchor} nesting deeper", event)
        self._count(values, event, f"*{anchor} expanding to {values} values")
        self._grow_parent(height)

    def _count(self, values: int, event: yaml.Event, given: str = "more") -> None:
        self._values += values
        if self._values > MAX_VALUES:
            self._refuse(f"at most {MAX_VALUES} values in a document, aliases expanded", given, event)

    def _grow_parent(self, height: int) -> None:
        if self._tallest:
            self._tallest[-1] = max(self._tallest[-1], height)

    def _refuse(self, allowed: str, given: str, event: yaml.Event) -> None:
        mark = event.start_mark
        raise ConfigError(self.source, _join(self._path), allowed, f"{given} at line {mark.line + 1}, column {mark.column + 1}")


def _refuse_duplicate_keys(loader: StrictLoader, node: Node, path: str = "", seen: set[int] | None = None) -> None:
    """Raise at the first key written twice in one mapping, in document order (before merges with <<).

    Keys are compared as the values they construct to (``1`` and ``0x1``, ``true`` and ``yes``
    are equal): exactly the keys a Python dict would have collapsed into one. The recursion is
    as deep as the document, which the composer has bounded.
    """
    seen = set() if seen is None else seen
    if id(node) in seen:
        return  # an alias: its keys were checked where it was written
    seen.add(id(node))
    if isinstance(node, SequenceNode):
        for i, child in enumerate(node.value):
            _refuse_duplicate_keys(loader, child, f"{path}[{i}]", seen)
    elif isinstance(node, MappingNode):
        first: dict[Any, Node] = {}
        for key_node, value_node in node.value:
            name = _key_text(key_node)
            child_path = f"{path}.{name}" if path else name
            key = {_MERGE_TAG: "<<", _VALUE_TAG: "="}.get(key_node.tag) or _hashable_key(loader, key_node)
            if key is not _UNHASHABLE and key in first:
                earlier = first[key]
                was = "" if _key_text(earlier) == name else f" as {_key_text(earlier)}"
                given = f"a second {name} at {_where(key_node, earlier)} (first{was} at {_where(earlier, key_node)})"
                raise ConfigError(loader.source, child_path, "each key once in a mapping", given)
            if key is not _UNHASHABLE:
                first[key] = key_node
            _refuse_duplicate_keys(loader, value_node, child_path, seen)


def _hashable_key(loader: StrictLoader, key_node: Node) -> Any:
    """The key as Python sees it, or _UNHASHABLE when it cannot be a dict key (PyYAML reports that)."""
    if not isinstance(key_node, ScalarNode):
        return _UNHASHABLE
    key = loader.construct_object(key_node, deep=True)
    try:
        hash(key)
    except TypeError:
        return _UNHASHABLE
    return key


def _where(node: Node, other: Node) -> str:
    """``line L``, with the column when ``other`` is on the same line."""
    line = f"line {node.start_mark.line + 1}"
    return line if node.start_mark.line != other.start_mark.line else f"{line}, column {node.start_mark.column + 1}"


def _key_text(key_node: Node) -> str:
    return str(key_node.value) if isinstance(key_node, ScalarNode) else "(key)"


def _step(parent: Node | None, index: Any) -> str:
    """One step of a key path: ``name``, ``[i]``, or ``(key)`` inside a key that is itself a structure."""
    if parent is None:
        return ""
    if isinstance(parent, SequenceNode):
        return f"[{index}]"
    return str(index.value) if isinstance(index, ScalarNode) else "(key)"


def _join(steps: list[str]) -> str:
    path = ""
    for step in steps:
        if step:
            path += step if step.startswith("[") or not path else "." + step
    return path or "(top level)"


def _is_text(value: str) -> bool:
    # A double-quoted "\ud800" makes a lone surrogate, which no file or terminal can print.
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
