"""YAML documents with the position of every node, read the way kamera wants YAML read.

Why not ``yaml.safe_load``: it forgets where things came from (and every problem kamera reports
points at a line and column), silently keeps the last of duplicate keys, turns keys such as ``on``
or ``no`` into booleans and dates into ``datetime`` objects that are not JSON. Here the node tree is
composed with positions, then turned into plain JSON values by hand: keys stay the text they were
written as, duplicates are problems, timestamps stay strings (as they do in Kubernetes, which reads
YAML by converting it to JSON).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from kamera_cli.errors import Problem
from kamera_cli.scenario.paths import Path_, render_path

_MERGE = "tag:yaml.org,2002:merge"

#: deepest nesting of mappings and sequences accepted (Kubernetes objects, CRD schemas included,
#: stay far below); checked on the event stream, before anything recurses over the tree
MAX_DEPTH = 200
#: most nodes one file may hold once its aliases are expanded (a "billion laughs" file holds 10^9)
MAX_NODES = 1_000_000


#: libyaml's parser when PyYAML was built with it (several times faster), else the pure-Python one
_Base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_Base):  # type: ignore[valid-type, misc]
    """SafeLoader without the timestamp resolver (timestamps stay strings, as in Kubernetes)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(slots=True)
class Document:
    """One YAML document: its JSON value and where each node (and each key) starts, 1-based."""

    file: str
    data: Any
    start: tuple[int, int]
    values: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path_, tuple[int, int]] = field(default_factory=dict)

    def at(self, path: Path_) -> tuple[int, int]:
        """Position of the node at ``path``, or of its nearest ancestor that exists."""
        for cut in range(len(path), -1, -1):
            found = self.values.get(path[:cut])
            if found is not None:
                return found
        return self.start

    def key_at(self, path: Path_) -> tuple[int, int]:
        """Position of the key naming ``path`` (the value's position when there is no key)."""
        return self.keys.get(path) or self.at(path)

    def problem(self, path: Path_, message: str, hint: str = "", *, key: bool = False) -> Problem:
        line, column = self.key_at(path) if key else self.at(path)
        return Problem(self.file, line, column, render_path(path), message, hint)


def _mark(node: yaml.Node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


class _Builder:
    def __init__(self, loader: _Loader, doc: Document, problems: list[Problem]) -> None:
        self.loader = loader
        self.doc = doc
        self.problems = problems
        self.stack: set[int] = set()

    def build(self, node: yaml.Node, path: Path_) -> Any:
        self.doc.values.setdefault(path, _mark(node))
        if isinstance(node, yaml.ScalarNode):
            try:
                value = self.loader.construct_object(node, deep=True)
            except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:  # e.g. !!int abc
                problem = getattr(exc, "problem", None) or str(exc)
                self.problems.append(self.doc.problem(path, f"cannot read this value ({node.tag}): {problem}"))
                return None
            if isinstance(value, bytes):
                self.problems.append(self.doc.problem(path, "binary values are not JSON: write a base64 string"))
                return None
            return value
        if id(node) in self.stack:
            self.problems.append(self.doc.problem(path, "recursive alias: a node cannot contain itself"))
            return None
        self.stack.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
        finally:
            self.stack.discard(id(node))
        return None  # pragma: no cover - composer yields only the three node types

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                merged.extend(self._merge_sources(value_node, path))
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                line, column = _mark(key_node)
                self.problems.append(
                    Problem(self.doc.file, line, column, render_path(path), "keys must be plain strings")
                )
                continue
            key = str(key_node.value)
            child = (*path, key)
            if key in result:
                first = self.doc.keys.get(child, (0, 0))
                line, column = _mark(key_node)
                self.problems.append(
                    Problem(
                        self.doc.file,
                        line,
                        column,
                        render_path(child),
                        f"duplicate key {key!r} (first at line {first[0]})",
                        "YAML keeps only one of them; remove or rename the other",
                    )
                )
                continue
            self.doc.keys[child] = _mark(key_node)
            result[key] = self.build(value_node, child)
        for key_node, value_node in merged:  # explicit keys win over merged ones
            if isinstance(key_node, yaml.ScalarNode) and str(key_node.value) not in result:
                key = str(key_node.value)
                self.doc.keys.setdefault((*path, key), _mark(key_node))
                result[key] = self.build(value_node, (*path, key))
        return result

    def _merge_sources(self, value_node: yaml.Node, path: Path_) -> list[tuple[yaml.Node, yaml.Node]]:
        sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
        pairs: list[tuple[yaml.Node, yaml.Node]] = []
        for source in sources:
            if not isinstance(source, yaml.MappingNode):
                line, column = _mark(source)
                self.problems.append(
                    Problem(self.doc.file, line, column, render_path(path), "'<<' merges only mappings")
                )
                continue
            pairs.extend(source.value)
        return pairs


def _line_column(text: str, index: int) -> tuple[int, int]:
    index = max(0, min(index, len(text)))
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def size_problem(text: str, file: str) -> Problem | None:
    """Refuse, before composing, a document nested too deeply or whose aliases expand too far.

    Why on the event stream: libyaml's parser is iterative, while composing the node tree and
    building values recurse — a 100,000-deep document crashes libyaml's composer and a 1,000-deep
    one exhausts Python's recursion — and a 554-byte "billion laughs" file only becomes huge when
    its aliases are expanded.  Counting each anchor's expanded size as its events go by catches
    both at the first offending event, in time linear in the file.
    """
    sizes: dict[str, int] = {}
    open_nodes: list[list[Any]] = []  # [anchor, expanded size so far] per open collection
    total = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            added = 0
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_nodes) >= MAX_DEPTH:
                    line, column = _mark_of(event)
                    return Problem(file, line, column, "$", f"nesting deeper than {MAX_DEPTH} levels: refused")
                open_nodes.append([event.anchor, 1])
                added = 1
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, size = open_nodes.pop()
                if anchor:
                    sizes[anchor] = size
                if open_nodes:
                    open_nodes[-1][1] += size
                continue
            elif isinstance(event, yaml.ScalarEvent):
                added = 1
                if event.anchor:
                    sizes[event.anchor] = 1
            elif isinstance(event, yaml.AliasEvent):
                added = sizes.get(event.anchor or "", 1)
            else:
                continue
            if open_nodes and not isinstance(event, yaml.CollectionStartEvent):
                open_nodes[-1][1] += added
            total += added
            if total > MAX_NODES:
                line, column = _mark_of(event)
                what = "this alias expands" if isinstance(event, yaml.AliasEvent) else "the file expands"
                return Problem(file, line, column, "$", f"{what} the document past {MAX_NODES:,} nodes "
                                                        "(aliases multiply what they repeat): refused")
    except yaml.YAMLError:
        return None  # the composer reports syntax errors with their position
    return None


def _mark_of(event: yaml.Event) -> tuple[int, int]:
    mark = event.start_mark
    return (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)


def syntax_problem(file: str, exc: yaml.YAMLError, text: str = "") -> Problem:
    if isinstance(exc, yaml.reader.ReaderError):  # e.g. a control character: no mark, only an index
        line, column = _line_column(text, exc.position)
        char = exc.character if isinstance(exc.character, str) else chr(exc.character)
        return Problem(file, line, column, "$", f"invalid YAML: the character {char!r} is not allowed in YAML text")
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None)
    context = getattr(exc, "context", None)
    start = getattr(exc, "context_mark", None)
    if problem:
        message = f"invalid YAML: {problem}"
        if context:
            where = ""
            if start is not None and mark is not None and (start.line, start.column) != (mark.line, mark.column):
                where = f", which starts at line {start.line + 1}, column {start.column + 1}"
            message += f" ({context}{where})"
    else:
        message = "invalid YAML: " + " ".join(str(exc).split())
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (0, 0)
    return Problem(file, line, column, "$", message)


def parse_documents(text: str, file: str, problems: list[Problem]) -> list[Document] | None:
    """Every document in ``text`` (empty ones skipped); None (and one problem) for a syntax error."""
    documents: list[Document] = []
    too_big = size_problem(text, file)
    if too_big is not None:
        problems.append(too_big)
        return None
    loader = _Loader(text)
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            doc = Document(file, None, _mark(node))
            if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
                continue  # an empty document (e.g. a trailing ---)
            doc.data = _Builder(loader, doc, problems).build(node, ())
            documents.append(doc)
    except yaml.YAMLError as exc:
        problems.append(syntax_problem(file, exc, text))
        return None
    finally:
        loader.dispose()
    return documents


def read_documents(path: str, display: str, problems: list[Problem]) -> list[Document] | None:
    """Read and parse a file; None (with a problem added) when it cannot be read at all."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        problems.append(Problem(display, 0, 0, "$", f"cannot read file: {exc.strerror or exc}"))
        return None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = len(raw[raw.rfind(b"\n", 0, exc.start) + 1: exc.start].decode("utf-8", "replace")) + 1
        byte = exc.object[exc.start]
        problems.append(Problem(display, line, column, "$",
                                f"not UTF-8 text (byte {byte:#04x} at offset {exc.start}): {exc.reason}"))
        return None
    return parse_documents(text, display, problems)
