"""I-Regexp (RFC 9485) for the ``match()`` and ``search()`` functions of RFC 9535, on stdlib ``re``.

Why: python-jsonpath maps I-Regexp faithfully only when the third-party ``regex`` package is
installed, which kamera does not depend on. Two things differ from Python's ``re``: ``.`` matches any
character except line feed AND carriage return, and ``\\p{Lu}``/``\\P{L}`` name Unicode general
categories, which ``re`` does not know. This module rewrites those two constructs and leaves the rest
(the I-Regexp subset is otherwise valid ``re`` syntax) to ``re``.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from typing import Any

from jsonpath.function_extensions.match import Match
from jsonpath.function_extensions.search import Search

_DOT = "[^\\n\\r]"


@lru_cache(maxsize=1)
def _category_ranges() -> dict[str, tuple[tuple[int, int], ...]]:
    """Ranges of code points per general category ("Lu") and major class ("L"); built once, lazily."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    previous = ""
    start = 0
    for code in range(sys.maxunicode + 2):
        category = unicodedata.category(chr(code)) if code <= sys.maxunicode else ""
        if category != previous:
            if previous:
                for key in (previous, previous[0]):
                    bucket = ranges.setdefault(key, [])
                    if bucket and bucket[-1][1] == start - 1:
                        bucket[-1] = (bucket[-1][0], code - 1)
                    else:
                        bucket.append((start, code - 1))
            previous, start = category, code
    return {key: tuple(value) for key, value in ranges.items()}


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    result: list[tuple[int, int]] = []
    next_start = 0
    for lo, hi in ranges:
        if lo > next_start:
            result.append((next_start, lo - 1))
        next_start = hi + 1
    if next_start <= sys.maxunicode:
        result.append((next_start, sys.maxunicode))
    return tuple(result)


def _escape(code: int) -> str:
    return f"\\U{code:08x}"


@lru_cache(maxsize=64)
def _class_body(category: str, negated: bool) -> str:
    ranges = _category_ranges().get(category)
    if ranges is None:
        raise re.error(f"unknown Unicode category {category!r}")
    if negated:
        ranges = _complement(ranges)
    return "".join(_escape(lo) if lo == hi else f"{_escape(lo)}-{_escape(hi)}" for lo, hi in ranges)


def translate(pattern: str) -> str:
    """An equivalent Python ``re`` pattern; raises ``re.error`` for an unknown category."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if nxt in "pP" and i + 2 < len(pattern) and pattern[i + 2] == "{":
                end = pattern.find("}", i + 3)
                if end < 0:
                    raise re.error("unterminated \\p{...}")
                body = _class_body(pattern[i + 3 : end], nxt == "P")
                out.append(body if in_class else f"[{body}]")
                i = end + 1
                continue
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "." and not in_class:
            out.append(_DOT)
        else:
            if ch == "[" and not in_class:
                in_class = True
            elif ch == "]" and in_class:
                in_class = False
            out.append(ch)
        i += 1
    return "".join(out)


@lru_cache(maxsize=512)
def compile_iregexp(pattern: str) -> re.Pattern[str] | None:
    """The compiled pattern, or None when it is not a valid regular expression (RFC 9535: no match)."""
    try:
        return re.compile(translate(pattern))
    except (re.error, OverflowError, RecursionError):
        return None


class IMatch(Match):
    def check_cache(self, pattern: str) -> Any:
        return compile_iregexp(pattern)


class ISearch(Search):
    def check_cache(self, pattern: str) -> Any:
        return compile_iregexp(pattern)
