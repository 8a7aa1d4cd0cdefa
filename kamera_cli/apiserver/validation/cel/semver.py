"""The Kubernetes CEL semver library (``semver``, ``isSemver``, ``major``/``minor``/``patch``,
``compareTo``, ``isGreaterThan``, ``isLessThan``) for cel-python.

Why: since 1.33 the API server's base environment enables library/semverlib.go at version 1 (with the
``normalize`` argument), and CRDs use it to gate fields on a version (``semver(self.version, true)
.isGreaterThan(semver('1.2.0'))``); without it each such rule would be an evaluation error.

Upstream parses with github.com/blang/semver/v4 ``Parse``, so acceptance and the error texts follow
it exactly (``Invalid character(s) found in major number "v1"``, ``strconv.ParseUint: parsing "":
invalid syntax`` for an empty component, which blang does not reject earlier); normalization is
semverlib.go's ``normalizeAndParse`` (one leading ``v`` dropped, leading zeros trimmed, missing minor
and patch filled with 0, no whitespace trimming).  Ordering is semver precedence (build metadata
ignored), which is also what ``==`` compares.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kamera_cli.apiserver.errors import go_quote

_DIGITS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789")
_UINT64 = 1 << 64


class SemverError(ValueError):
    """A string blang/semver refuses; the text is its error's."""


class Version:
    """A parsed version.  Comparison follows blang's ``Compare``; there is deliberately no ``<``:
    upstream's ``kubernetes.Semver`` type has no ordering operators, only the library's methods."""

    __slots__ = ("build", "major", "minor", "patch", "pre")

    def __init__(self, major: int, minor: int, patch: int, pre: tuple[int | str, ...], build: tuple[str, ...]):
        self.major, self.minor, self.patch, self.pre, self.build = major, minor, patch, pre, build

    def compare(self, other: Version) -> int:
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        if not self.pre or not other.pre:  # a release outranks its pre-releases
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre):
            if a != b:
                if isinstance(a, int) != isinstance(b, int):  # numeric identifiers rank below alphanumerics
                    return -1 if isinstance(a, int) else 1
                return 1 if a > b else -1  # type: ignore[operator]  # same kind: both int or both str
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            raise TypeError("no such overload")  # cel-python reports it as a failed comparison
        return self.compare(other) == 0

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        text += "-" + ".".join(map(str, self.pre)) if self.pre else ""
        return text + ("+" + ".".join(self.build) if self.build else "")

    def __repr__(self) -> str:
        return f"semver({str(self)!r})"


def _only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)  # as Go's containsOnly, true for ""


def _uint(text: str) -> int:
    """``strconv.ParseUint(text, 10, 64)`` on a string of digits (possibly empty)."""
    if not text:
        raise SemverError('strconv.ParseUint: parsing "": invalid syntax')
    value = int(text)
    if value >= _UINT64:
        raise SemverError(f"strconv.ParseUint: parsing {go_quote(text)}: value out of range")
    return value


def _number(text: str, which: str) -> int:
    if not _only(text, _DIGITS):
        raise SemverError(f"Invalid character(s) found in {which} number {go_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f"{which.capitalize()} number must not contain leading zeroes {go_quote(text)}")
    return _uint(text)


def _prerelease(text: str) -> int | str:
    if not text:
        raise SemverError("Prerelease is empty")
    if _only(text, _DIGITS):
        if len(text) > 1 and text[0] == "0":
            raise SemverError(f"Numeric PreRelease version must not contain leading zeroes {go_quote(text)}")
        return _uint(text)
    if not _only(text, _ALPHANUM):
        raise SemverError(f"Invalid character(s) found in prerelease {go_quote(text)}")
    return text


def parse(text: str) -> Version:
    """blang/semver ``Parse``: strict ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``, checked in its order."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major, minor = _number(parts[0], "major"), _number(parts[1], "minor")
    rest, build, pre = parts[2], [], []
    if "+" in rest:
        rest, tail = rest.split("+", 1)
        build = tail.split(".")
    if "-" in rest:
        rest, tail = rest.split("-", 1)
        pre = tail.split(".")
    patch = _number(rest, "patch")
    parsed_pre = tuple(_prerelease(p) for p in pre)
    for item in build:
        if not item:
            raise SemverError("Build meta data is empty")
        if not _only(item, _ALPHANUM):
            raise SemverError(f"Invalid character(s) found in build meta data {go_quote(item)}")
    return Version(major, minor, patch, parsed_pre, tuple(build))


def normalize_and_parse(text: str) -> Version:
    """semverlib.go ``normalizeAndParse``: ``ParseTolerant`` without its whitespace trimming."""
    text = text[1:] if text.startswith("v") else text
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            parts[i] = part if part and part[0] in _DIGITS else "0" + part
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse(".".join(parts))


def _int64(value: int) -> int:
    """Go's ``types.Int(uint64)``: values past int64 wrap around."""
    return value - _UINT64 if value >= 1 << 63 else value


def functions(celpy: Any, shared: Callable[[str], Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The library's functions; ``shared(name)`` is the quantity library's function of a name both
    libraries declare (``compareTo``, ``isGreaterThan``, ``isLessThan``), used for non-semver receivers."""
    t, fail = celpy.celtypes, celpy.CELEvalError
    strict = t.BoolType(False)

    def text_of(value: Any, normalize: Any) -> tuple[str, bool]:
        if not isinstance(value, t.StringType) or not isinstance(normalize, t.BoolType):
            raise fail("no such overload")
        return str(value), bool(normalize)

    def semver(value: Any, normalize: Any = strict) -> Any:
        text, tolerant = text_of(value, normalize)
        try:
            return normalize_and_parse(text) if tolerant else parse(text)
        except SemverError as exc:
            raise fail(str(exc)) from None

    def is_semver(value: Any, normalize: Any = strict) -> Any:
        text, tolerant = text_of(value, normalize)
        try:
            normalize_and_parse(text) if tolerant else parse(text)
        except SemverError:
            return t.BoolType(False)
        return t.BoolType(True)

    def comparison(name: str, result: Callable[[int], Any]) -> Callable[..., Any]:
        def run(a: Any, b: Any) -> Any:
            if isinstance(a, Version) or isinstance(b, Version):
                if not (isinstance(a, Version) and isinstance(b, Version)):
                    raise fail("no such overload")
                return result(a.compare(b))
            return shared(name)(a, b)
        return run

    def part(name: str) -> Callable[[Any], Any]:
        def run(v: Any) -> Any:
            if not isinstance(v, Version):
                raise fail("no such overload")
            return t.IntType(_int64(getattr(v, name)))
        return run

    return {
        "semver": semver, "isSemver": is_semver,
        "major": part("major"), "minor": part("minor"), "patch": part("patch"),
        "compareTo": comparison("compareTo", t.IntType),
        "isGreaterThan": comparison("isGreaterThan", lambda c: t.BoolType(c == 1)),
        "isLessThan": comparison("isLessThan", lambda c: t.BoolType(c == -1)),
    }
