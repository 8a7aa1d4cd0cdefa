"""Label and field selectors, parsed once per request into matchers.

Why a hand-written parser: the real grammar (``k in (a,b)``, ``!k``, ``k!=v`` matching objects
without the label) is small, and a malformed selector must become the server's 400, not a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kamera_cli.apiserver.registry.kinds import ResourceInfo, field_path


class SelectorError(ValueError):
    """A malformed or unsupported selector; the message is the one the server answers 400 with."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op == "=":
            return present and labels[self.key] == self.values[0]
        if self.op == "!=":
            return not present or labels[self.key] != self.values[0]
        if self.op == "in":
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values  # notin


_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_TOKEN = re.compile(r"\s*(==|!=|=|\(|\)|,|!|[^\s=!(),]+)")


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m:
            raise SelectorError(f"unable to parse requirement: {text!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _check_key(key: str) -> str:
    if len(key) > 316 or not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise SelectorError(f"unable to parse requirement: invalid label key {key!r}")
    return key


def _check_value(value: str) -> str:
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError(f"unable to parse requirement: invalid label value: {value!r}")
    return value


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """Parse ``a=b,c!=d,e in (f,g),!h``; raises SelectorError for malformed input."""
    toks = _tokens(text)
    reqs: list[Requirement] = []
    i = 0

    def peek(k: int = 0) -> str | None:
        return toks[i + k] if i + k < len(toks) else None

    while i < len(toks):
        if peek() == "!":
            key = peek(1)
            if key is None or key in "(),=!":
                raise SelectorError(f"unable to parse requirement: found '!' without a key in {text!r}")
            reqs.append(Requirement(_check_key(key), "!"))
            i += 2
        else:
            key = toks[i]
            if key in ("(", ")", ",", "=", "==", "!="):
                raise SelectorError(f"unable to parse requirement: found {key!r}, expected: identifier")
            _check_key(key)
            op = peek(1)
            if op is None or op == ",":
                reqs.append(Requirement(key, "exists"))
                i += 1
            elif op in ("=", "==", "!="):
                value = peek(2)
                if value is None or value in (",",):
                    value = ""
                    i += 2
                elif value in ("(", ")", "=", "==", "!=", "!"):
                    raise SelectorError(f"unable to parse requirement: found {value!r}, expected: identifier")
                else:
                    i += 3
                reqs.append(Requirement(key, "!=" if op == "!=" else "=", (_check_value(value),)))
            elif op in ("in", "notin"):
                if peek(2) != "(":
                    raise SelectorError(f"unable to parse requirement: found {peek(2)!r}, expected: '('")
                i += 3
                values: list[str] = []
                expect_value = True
                while True:
                    tok = peek()
                    if tok is None:
                        raise SelectorError(f"unable to parse requirement: found end of string, expected: ')' "
                                            f"in {text!r}")
                    i += 1
                    if tok == ")":
                        if expect_value and values:
                            values.append("")
                        break
                    if tok == ",":
                        if expect_value:
                            values.append("")
                        expect_value = True
                        continue
                    if not expect_value:
                        raise SelectorError(f"unable to parse requirement: found {tok!r}, expected: ',' or ')'")
                    values.append(_check_value(tok))
                    expect_value = False
                if not values:
                    raise SelectorError(f"unable to parse requirement: for 'in', 'notin' operators, values set "
                                        f"can't be empty in {text!r}")
                reqs.append(Requirement(key, op, tuple(sorted(set(values)))))
            else:
                raise SelectorError(f"unable to parse requirement: found {op!r}, expected: in, notin, =, ==, !=, "
                                    f"gt, lt")
        if i < len(toks):
            if toks[i] != ",":
                raise SelectorError(f"found {toks[i]!r}, expected: ',' or 'end of string'")
            i += 1
            if i == len(toks):
                raise SelectorError(f"unable to parse requirement: found end of string after ',' in {text!r}")
    return tuple(reqs)


@lru_cache(maxsize=512)
def label_matcher(text: str) -> Callable[[Manifest], bool] | None:
    """A predicate over objects for a label selector (parsed once per distinct selector text)."""
    reqs = parse_label_selector(text)
    if not reqs:
        return None
    if len(reqs) == 1:
        only = reqs[0]

        def match_one(obj: Manifest) -> bool:
            return only.matches((obj.get("metadata") or _EMPTY).get("labels") or _EMPTY)

        return match_one

    def match(obj: Manifest) -> bool:
        labels = (obj.get("metadata") or _EMPTY).get("labels") or _EMPTY
        return all(r.matches(labels) for r in reqs)

    return match


_EMPTY: Mapping[str, Any] = {}


Manifest = Mapping[str, Any]


def _field_value(obj: Manifest, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
        if node is None:
            return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def field_matcher(text: str, info: ResourceInfo) -> Callable[[Manifest], bool] | None:
    """Parse ``metadata.name=a,status.phase!=Running`` for ``info``'s supported labels."""
    if not text:
        return None
    return _field_matcher(text, info.field_labels())


@lru_cache(maxsize=512)
def _field_matcher(text: str, allowed: frozenset[str]) -> Callable[[Manifest], bool] | None:
    terms: list[tuple[str, bool, str]] = []
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        m = re.match(r"^([^=!]+?)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        label, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        if label not in allowed:
            raise SelectorError(f'field label not supported: {label}')
        terms.append((field_path(label), op == "!=", value))
    if not terms:
        return None

    def match(obj: Manifest) -> bool:
        return all((_field_value(obj, path) != value) if negate else (_field_value(obj, path) == value)
                   for path, negate, value in terms)

    return match
