"""Invariants compiled once, evaluated on every converged (or every) state.

Why the shape: the explorer calls ``evaluate`` in its inner loop, so everything that depends only on
the scenario (queries, templates, regexes, the operator list) is prepared in ``compile_invariant``.
Normalized paths of failing nodes are only computed when something fails.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import jsonpath

from kamera_cli.invariants.locations import field_path, locate, object_ref
from kamera_cli.invariants.queries import InvariantSyntaxError, compile_query, find, find_located
from kamera_cli.invariants.templates import (
    MissingValue,
    Template,
    ValueTemplate,
    instantiate,
    instantiate_value,
    parse_template,
    parse_value_template,
)
from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.scenario import ExpectSpec, InvariantSpec


@dataclass(frozen=True, slots=True)
class Violation:
    """One way an invariant fails in one state; ``message`` is one line."""

    invariant: str
    message: str
    #: the forEach node the failure is about, when it is a Kubernetes object
    subject: ObjectRef | None = None
    #: the forEach node's normalized path ("" without forEach)
    node_path: str = ""

    def __str__(self) -> str:
        return self.message


#: ``(values, located) -> message | None``; ``located()`` gives (path, value) pairs, computed lazily
_Check = Callable[[Sequence[Any], Callable[[], list[tuple[str, Any]]]], "str | None"]


def _normalize(value: Any) -> Any:
    """A plain-JSON copy: Mappings become dicts, integral floats ints (JSON has one number type)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, Mapping):
        return {str(k): _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_normalize(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _show(value: Any, limit: int = 80) -> str:
    text = _canonical(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _plural(n: int, word: str = "node") -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _first_where(located: list[tuple[str, Any]], pred: Callable[[Any], bool]) -> tuple[str, Any] | None:
    for path, value in located:
        if pred(value):
            return path, value
    return None


def first_difference(got: Any, wanted: Any, where: tuple[str | int, ...] = ()) -> str | None:
    """Where two JSON values first differ, for a reader: ``.shard-c: 0, expected 1``; None when equal.

    Why: two maps that differ in one key look alike when both are printed and cut to a line; the
    message names the key that differs instead.
    """
    got, wanted = _normalize(got), _normalize(wanted)
    if isinstance(got, dict) and isinstance(wanted, dict):
        for key in sorted(set(got) | set(wanted)):
            at = field_path((*where, key))
            if key not in got:
                return f"{at} missing, expected {_show(wanted[key], 40)}"
            if key not in wanted:
                return f"{at} not expected, got {_show(got[key], 40)}"
            found = first_difference(got[key], wanted[key], (*where, key))
            if found is not None:
                return found
        return None
    if isinstance(got, list) and isinstance(wanted, list) and len(got) == len(wanted):
        for index, (a, b) in enumerate(zip(got, wanted)):
            found = first_difference(a, b, (*where, index))
            if found is not None:
                return found
        return None
    if _canonical(got) == _canonical(wanted):
        return None
    if isinstance(got, list) and isinstance(wanted, list):
        return f"{field_path(where) or 'the list'} has {len(got)} items, expected {len(wanted)}"
    return f"{field_path(where) or 'the value'} is {_show(got, 40)}, expected {_show(wanted, 40)}"


def equals_check(value: Any) -> _Check:
    """``equals: value``: JSON equality of every selected node (maps and lists compared structurally)."""
    wanted = _canonical(value)
    shown = _show(value)

    def equals(values: Sequence[Any], located: Callable[[], list[tuple[str, Any]]]) -> str | None:
        if not values:
            return f"expected nodes equal to {shown}, got none"
        if all(_canonical(v) == wanted for v in values):
            return None
        bad = _first_where(located(), lambda v: _canonical(v) != wanted)
        if bad is None:
            return f"expected every node to equal {shown}, got a different value"
        if isinstance(bad[1], (Mapping, list)) and isinstance(value, (Mapping, list)):
            return f"expected every node to equal {shown}; at {bad[0]}: {first_difference(bad[1], value)}"
        return f"expected every node to equal {shown}, got {_show(bad[1])} at {bad[0]}"

    return equals


def _build_checks(expect: ExpectSpec) -> tuple[_Check, ...]:
    checks: list[_Check] = []
    if expect.count is not None:
        n = expect.count

        def count(values: Sequence[Any], _: Callable[[], list[tuple[str, Any]]]) -> str | None:
            return None if len(values) == n else f"expected count {n}, got {len(values)}"

        checks.append(count)
    if expect.min is not None:
        lo = expect.min

        def minimum(values: Sequence[Any], _: Callable[[], list[tuple[str, Any]]]) -> str | None:
            return None if len(values) >= lo else f"expected at least {_plural(lo)}, got {len(values)}"

        checks.append(minimum)
    if expect.max is not None:
        hi = expect.max

        def maximum(values: Sequence[Any], _: Callable[[], list[tuple[str, Any]]]) -> str | None:
            return None if len(values) <= hi else f"expected at most {_plural(hi)}, got {len(values)}"

        checks.append(maximum)
    if expect.exists is True:

        def exists(values: Sequence[Any], _: Callable[[], list[tuple[str, Any]]]) -> str | None:
            return None if values else "expected at least one node, got none"

        checks.append(exists)
    elif expect.exists is False:

        def absent(values: Sequence[Any], located: Callable[[], list[tuple[str, Any]]]) -> str | None:
            if not values:
                return None
            first = located()
            where = f" (first at {first[0][0]})" if first else ""
            return f"expected no node, got {len(values)}{where}"

        checks.append(absent)
    if expect.has_equals and parse_value_template(expect.equals).is_plain:
        checks.append(equals_check(expect.equals))
    if expect.unique:

        def unique(values: Sequence[Any], located: Callable[[], list[tuple[str, Any]]]) -> str | None:
            keys = [_canonical(v) for v in values]
            if len(set(keys)) == len(keys):
                return None
            seen: dict[str, str] = {}
            for path, value in located():
                key = _canonical(value)
                if key in seen:
                    return f"expected unique values, got {_show(value)} at {seen[key]} and {path}"
                seen[key] = path
            return "expected unique values, got duplicates"

        checks.append(unique)
    if expect.matches is not None:
        pattern_text = expect.matches
        try:
            pattern = re.compile(pattern_text)
        except re.error as exc:
            raise InvariantSyntaxError(f"invalid regular expression {pattern_text!r}: {exc}") from None

        def ok(value: Any) -> bool:
            return isinstance(value, str) and pattern.fullmatch(value) is not None

        def matches(values: Sequence[Any], located: Callable[[], list[tuple[str, Any]]]) -> str | None:
            if not values:
                return f"expected nodes matching {pattern_text!r}, got none"
            if all(ok(v) for v in values):
                return None
            bad = _first_where(located(), lambda v: not ok(v))
            if bad is None:
                return f"expected every node to match {pattern_text!r}"
            kind = "" if isinstance(bad[1], str) else "non-string "
            return f"expected every node to match {pattern_text!r}, got {kind}{_show(bad[1])} at {bad[0]}"

        checks.append(matches)
    return tuple(checks)


def describe_node(node: Any, path: str, document: Any = None) -> tuple[str, ObjectRef | None]:
    """``Widget default/demo`` for an object, ``Widget default/demo .spec`` for a field of one, else
    the node's path (``$.external.aws[0]``).

    Why the object a field lies in is not returned as the subject: the subject is what the failure
    is about, and a field's failure is reported at its object only through the label.
    """
    ref = object_ref(node)
    if ref is not None:
        return f"{ref.kind} {ref.key}", ref
    return locate(path, document)[0], None


@dataclass(frozen=True, slots=True)
class CompiledInvariant:
    spec: InvariantSpec
    template: Template
    checks: tuple[_Check, ...]
    #: ``equals`` holding templates: its value is instantiated for each forEach node
    equals: ValueTemplate | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def when(self) -> Literal["converged", "always"]:
        return self.spec.when

    def evaluate(self, document: Any) -> tuple[Violation, ...]:
        """Every violation in this state (empty: the invariant holds)."""
        return self.evaluate_counting(document)[0]

    def evaluate_counting(self, document: Any) -> tuple[tuple[Violation, ...], int]:
        """The violations, and how many nodes the invariant's first query selected (forEach, else select).

        Why the count: an invariant that selects nothing anywhere "holds" without having checked
        anything (a kind misspelled in lower case); the runner reports that as vacuous.
        """
        if self.spec.for_each is None:
            message, selected = self._check(self.template.text, document)
            return (() if message is None else (Violation(self.spec.name, message),)), selected
        violations: list[Violation] = []
        #: instantiated select text -> outcome: nodes with equal template values share one evaluation
        outcomes: dict[str, str | None] = {}
        try:
            nodes = find_located(self.spec.for_each, document)
        except jsonpath.JSONPathError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return (Violation(self.spec.name, f"cannot evaluate forEach {self.spec.for_each!r}: {reason}"),), 0
        for path, node in nodes:
            try:
                text = instantiate(self.template, node) if self.template.refs else self.template.text
                extra: tuple[_Check, ...] = ()
                key = text
                if self.equals is not None:
                    wanted = instantiate_value(self.equals, node)
                    extra, key = (equals_check(wanted),), f"{text}\0{_canonical(wanted)}"
                if key not in outcomes:
                    outcomes[key] = self._check(text, document, extra)[0]
                message = outcomes[key]
            except MissingValue as missing:
                message = missing.reason
            except InvariantSyntaxError as exc:
                message = f"the expression built for this node does not compile: {exc.message}"
            if message is not None:
                label, ref = describe_node(node, path, document)
                violations.append(Violation(self.spec.name, f"{message} for {label}", ref, path))
        return tuple(violations), len(nodes)

    def selected(self, document: Any, limit: int = 50) -> tuple[tuple[str, str, bool], ...]:
        """(normalized path, label, failing) for the nodes the first query (forEach, else select) picks.

        Why: a counterexample shows what the invariant was looking at in the failing state, not only
        the message; at most ``limit`` nodes, failing ones first.
        """
        query = self.spec.for_each if self.spec.for_each is not None else self.template.text
        try:
            nodes = find_located(query, document)
        except jsonpath.JSONPathError:
            return ()
        failing = ({v.node_path for v in self.evaluate(document)} if self.spec.for_each is not None
                   else ({p for p, _ in nodes} if self.evaluate(document) else set()))
        out = [(path, describe_node(node, path, document)[0], path in failing) for path, node in nodes]
        out.sort(key=lambda item: not item[2])
        return tuple(out[:limit])

    def _check(self, text: str, document: Any, extra: tuple[_Check, ...] = ()) -> tuple[str | None, int]:
        try:
            values: list[Any] = find(text, document)
        except jsonpath.JSONPathError as exc:  # e.g. nesting deeper than the recursion limit of '..'
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            return f"cannot evaluate {text!r}: {reason}", 0
        cache: list[list[tuple[str, Any]]] = []

        def located() -> list[tuple[str, Any]]:
            """The selected nodes with where they sit, named for a reader (object and field path)."""
            if not cache:
                cache.append([(locate(path, document)[0], value) for path, value in find_located(text, document)])
            return cache[0]

        for check in (*self.checks, *extra):
            message = check(values, located)
            if message is not None:
                return message, len(values)
        return None, len(values)


def compile_invariant(spec: InvariantSpec) -> CompiledInvariant:
    """Prepare an invariant; raises ``InvariantSyntaxError`` for a bad expression, template or regex."""
    if spec.for_each is not None:
        try:
            compile_query(spec.for_each)
        except InvariantSyntaxError as exc:
            raise InvariantSyntaxError(f"forEach: {exc.message}", exc.hint) from None
        if "{{" in spec.for_each or "}}" in spec.for_each:
            raise InvariantSyntaxError("forEach cannot use {{ }} templates; they belong in select")
    template = parse_template(spec.select)
    if template.refs and spec.for_each is None:
        raise InvariantSyntaxError(
            f"select uses the template {template.refs[0].source} but there is no forEach to take values from"
        )
    checks = _build_checks(spec.expect)
    given = spec.expect
    equals = parse_value_template(given.equals) if given.has_equals else None
    if equals is not None and not equals.is_plain:
        if spec.for_each is None:
            raise InvariantSyntaxError(
                f"equals uses the template {equals.first.source} but there is no forEach to take values from"
            )
    else:
        equals = None
    if (
        not checks
        and not given.has_equals
        and all(
            value is None for value in (given.count, given.min, given.max, given.exists, given.unique, given.matches)
        )
    ):
        raise InvariantSyntaxError("expect needs at least one of count, min, max, exists, equals, unique, matches")
    return CompiledInvariant(spec, template, checks, equals)
