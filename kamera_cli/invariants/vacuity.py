"""Why an invariant selected nothing: the closest kind or field the explored states actually have.

Why a hint and not just "vacuous": the usual cause is a one-character slip — ``'deployment'`` for
``'Deployment'``, ``.metdata`` for ``.metadata`` — and the user cannot see the state documents the
expression ran against.  Naming the nearest real kind or field turns a puzzling failure into a fix.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kamera_cli.apiserver.storage.external import entry_parts

__all__ = ["vacuity_hint"]

_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")
#: a literal compared with a ``kind`` (``@.kind == 'X'``, ``'X' == @.kind``): the only literals that are
#: kinds; ``@.metadata.labels.app == 'task'`` names no kind, whatever kind is spelled like it
_STRING = r"(?:'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\")"
_KIND_COMPARED = re.compile(r"[@$]\.kind\s*[!=]=\s*" + _STRING + "|" + _STRING + r"\s*[!=]=\s*[@$]\.kind\b")
_NAME = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)")
#: names of the state document itself and JSONPath functions, never fields of an object
_NOT_FIELDS = frozenset({"items", "external", "length", "count", "match", "search", "value"})
#: ``$.external.<store>``: the store a fake keeps its state in (docs/scenario.md, "The state document")
_STORE = re.compile(r"\$\.external\.([A-Za-z_][A-Za-z0-9_-]*)")


def _keys(value: Any, into: set[str], budget: list[int]) -> None:
    if budget[0] <= 0:
        return
    budget[0] -= 1
    if isinstance(value, Mapping):
        for k, v in value.items():
            into.add(str(k))
            _keys(v, into, budget)
    elif isinstance(value, list):
        for v in value[:20]:
            _keys(v, into, budget)


def _closest(word: str, choices: Iterable[str]) -> str | None:
    pool = sorted(set(choices))
    for c in pool:
        if c.lower() == word.lower():
            return c
    found = difflib.get_close_matches(word, pool, n=1, cutoff=0.75)
    return found[0] if found else None


def vacuity_hint(expressions: Sequence[str], objects: Iterable[Mapping[str, Any]]) -> str:
    """One sentence pointing at the likely slip, or the kinds present; "" when nothing helps.

    ``objects``: those of the states the invariant was judged on, so that "the kinds present" are the
    kinds it could have selected.  A kind is suggested only for a literal compared with ``kind``, a
    field only for a name in a path."""
    kinds: set[str] = set()
    keys: set[str] = set()
    stores: set[str] = set()
    budget = [20_000]
    for obj in objects:
        entry = entry_parts(obj)
        if entry is not None:  # a fake's state: its store is a name, its value has the fields
            stores.add(entry[0])
            _keys(entry[2], keys, budget)
            continue
        kind = obj.get("kind")
        if isinstance(kind, str):
            kinds.add(kind)
        _keys(obj, keys, budget)
    hints: list[str] = []
    for text in expressions:
        for m in _STORE.finditer(text):
            if m.group(1) not in stores:
                near = _closest(m.group(1), stores)
                known = f"did you mean {near!r}?" if near else (
                    "the stores are " + ", ".join(sorted(stores)) if stores else "no fake stored anything")
                hints.append(f"no external store {m.group(1)!r}; {known}")
            keys.add(m.group(1))  # named as a store, not as a field
        for m in _KIND_COMPARED.finditer(text):
            literal = next(g for g in m.groups() if g is not None)
            if literal in kinds:
                continue
            near = _closest(literal, kinds)
            if near is not None:
                hints.append(f"no object has kind {literal!r}; did you mean {near!r}?")
        for m in _NAME.finditer(_QUOTED.sub("''", text)):
            name = m.group(1)
            if name in keys or name in _NOT_FIELDS:
                continue
            near = _closest(name, keys)
            hint = f"no object has a field {name!r}" + (f"; did you mean {near!r}?" if near else "")
            hints.append(hint)
    if not hints and kinds:
        hints.append("the kinds present are " + ", ".join(sorted(kinds)))
    return "; ".join(dict.fromkeys(hints))
