"""The Kubernetes CEL libraries, as functions for cel-python.

Why: CRD rules routinely call functions the CEL standard library lacks — ``self.lowerAscii()``,
``self.split(',')``, ``self.isSorted()``, ``isURL(self)``, ``quantity(self).isLessThan(...)``,
``cidr(self).containsIP(...)`` — and cel-python only knows the standard ones, so without these every
such rule would be an evaluation error (a false refusal).  Each group follows its upstream
definition:

* strings: cel-go ``ext.Strings`` (version 2, what the API server enables): ``charAt``, ``indexOf``,
  ``lastIndexOf``, ``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``, ``trim``,
  ``join``;
* lists: k8s.io/apiserver/pkg/cel/library/lists.go — ``isSorted``, ``sum``, ``max``, ``min``,
  ``indexOf``, ``lastIndexOf``;
* regex: library/regex.go — ``find``, ``findAll`` (Python's ``re`` stands in for RE2);
* URLs: library/urls.go — ``url``, ``isURL``, ``getScheme``, ``getHost``, ``getHostname``,
  ``getPort``, ``getEscapedPath``, ``getQuery``;
* quantities: library/quantity.go — ``quantity``, ``isQuantity``, ``sign``, ``isInteger``,
  ``asInteger``, ``asApproximateFloat``, ``isGreaterThan``, ``isLessThan``, ``compareTo``, ``add``,
  ``sub`` (parsed with kamera's ``ParseQuantity``);
* cross-type numeric comparisons and equality (``_numeric_operators``);
* optionals, for rules with ``optionalOldSelf: true`` (their ``oldSelf`` is an optional):
  ``hasValue``, ``value``, ``orValue``;
* the namespaced libraries (``sets``, ``strings.quote``, ``format``, ``optional``) and IPs/CIDRs, in
  ``validation/cel/ext.py``; cel-go's ``ext.Lists`` (1.34) in ``validation/cel/lists.py``; the semver
  library (1.33) in ``validation/cel/semver.py``, whose comparisons share their names with the
  quantity ones here and dispatch on the receiver.

Errors are raised as ``CELEvalError`` with upstream's wording where it matters to a user.
"""

from __future__ import annotations

import operator
import re
import urllib.parse
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from kamera_cli.apiserver.validation.cel.ext import functions as ext_functions
from kamera_cli.apiserver.validation.cel.lists import functions as list_functions
from kamera_cli.apiserver.validation.cel.semver import functions as semver_functions
from kamera_cli.apiserver.validation.quantity import QuantityError, canonical, value_of


def library(celpy: Any) -> dict[str, Callable[..., Any]]:
    """The functions, built against the loaded cel-python module (an optional extra)."""
    t = celpy.celtypes
    fail = celpy.CELEvalError

    class Quantity(t.StringType):  # type: ignore[misc,name-defined]
        """A parsed quantity; its text is the canonical form."""

        exact: Fraction

    class URL(t.StringType):  # type: ignore[misc,name-defined]
        parts: urllib.parse.SplitResult

    def string(value: Any) -> Any:
        return t.StringType(value)

    def boolean(value: bool) -> Any:
        return t.BoolType(value)

    # -- strings (ext.Strings) -----------------------------------------------------------------------
    def char_at(s: Any, i: Any) -> Any:
        if not 0 <= int(i) <= len(s):
            raise fail(f"index out of range: {int(i)}")
        return string(str(s)[int(i):int(i) + 1])

    def index_of(target: Any, item: Any, start: Any = 0) -> Any:
        if isinstance(target, t.ListType):
            return t.IntType(next((i for i, v in enumerate(target) if v == item), -1))
        if not 0 <= int(start) <= len(target):
            raise fail(f"index out of range: {int(start)}")
        return t.IntType(str(target).find(str(item), int(start)))

    def last_index_of(target: Any, item: Any, end: Any = None) -> Any:
        if isinstance(target, t.ListType):
            return t.IntType(max((i for i, v in enumerate(target) if v == item), default=-1))
        text = str(target)
        limit = len(text) if end is None else int(end)
        if not 0 <= limit <= len(text):
            raise fail(f"index out of range: {limit}")
        return t.IntType(text.rfind(str(item), 0, limit + len(str(item))))

    def replace(s: Any, old: Any, new: Any, n: Any = -1) -> Any:
        return string(str(s).replace(str(old), str(new), int(n)))

    def split(s: Any, sep: Any, n: Any = -1) -> Any:
        if int(n) == 0:
            return t.ListType([])
        parts = str(s).split(str(sep), int(n) - 1) if int(n) > 0 else str(s).split(str(sep))
        return t.ListType([string(p) for p in parts])

    def substring(s: Any, start: Any, end: Any = None) -> Any:
        stop = len(s) if end is None else int(end)
        if not 0 <= int(start) <= stop <= len(s):
            raise fail(f"index out of range: {int(start)}" if int(start) > len(s) or int(start) < 0
                       else f"invalid substring range. start: {int(start)}, end: {stop}")
        return string(str(s)[int(start):stop])

    def join(items: Any, sep: Any = "") -> Any:
        return string(str(sep).join(str(i) for i in items))

    # -- lists ------------------------------------------------------------------------------------------
    def is_sorted(items: Any) -> Any:
        return boolean(all(items[i] <= items[i + 1] for i in range(len(items) - 1)))

    def total(items: Any) -> Any:
        if not items:
            return t.IntType(0)
        out = items[0]
        for item in items[1:]:
            out = out + item
        return out

    def extreme(pick: Callable[[Sequence[Any]], Any], name: str) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            items = args[0] if len(args) == 1 and isinstance(args[0], t.ListType) else args
            if not items:
                raise fail(f"{name}(list) called on an empty list" if len(args) == 1 else f"{name}() no arguments")
            return pick(items)
        return run

    # -- regex -----------------------------------------------------------------------------------------
    def find(s: Any, pattern: Any) -> Any:
        m = re.search(str(pattern), str(s))
        return string(m.group(0) if m else "")

    def find_all(s: Any, pattern: Any, limit: Any = -1) -> Any:
        found = [m.group(0) for m in re.finditer(str(pattern), str(s))]
        return t.ListType([string(x) for x in (found if int(limit) < 0 else found[:int(limit)])])

    # -- URLs ------------------------------------------------------------------------------------------
    def parse_url(s: Any) -> urllib.parse.SplitResult | None:
        text = str(s)
        try:
            parts = urllib.parse.urlsplit(text)
            _ = parts.port
        except ValueError:
            return None
        if not text or " " in text or (not parts.scheme and not text.startswith("/")):
            return None  # url.ParseRequestURI: absolute URLs or absolute paths only
        return parts

    def url(s: Any) -> Any:
        parts = parse_url(s)
        if parts is None:
            raise fail(f"URL parse error during conversion from string: parse \"{s}\": invalid URI for request")
        out = URL(str(s))
        out.parts = parts
        return out

    def host(u: Any) -> Any:
        netloc = u.parts.netloc.rsplit("@", 1)[-1]
        return string(netloc)

    def hostname(u: Any) -> Any:
        name = u.parts.hostname or ""
        return string(name)

    def port(u: Any) -> Any:
        return string("" if u.parts.port is None else str(u.parts.port))

    # -- quantities ------------------------------------------------------------------------------------
    def quantity(s: Any) -> Any:
        try:
            exact = value_of(str(s))
        except QuantityError:
            raise fail("quantities must match the regular expression "
                       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'") from None
        out = Quantity(canonical(str(s)))
        out.exact = exact
        return out

    def is_quantity(s: Any) -> Any:
        try:
            value_of(str(s))
        except QuantityError:
            return boolean(False)
        return boolean(True)

    def exact(q: Any) -> Fraction:
        return q.exact if isinstance(q, Quantity) else Fraction(int(q))

    def made(value: Fraction) -> Any:
        text = str(value.numerator) if value.denominator == 1 else f"{int(value * 1000)}m"
        return quantity(text)

    def as_integer(q: Any) -> Any:
        if exact(q).denominator != 1:
            raise fail("cannot convert value to integer")
        return t.IntType(int(exact(q)))

    def compare(a: Any, b: Any) -> int:
        return (exact(a) > exact(b)) - (exact(a) < exact(b))

    def value(o: Any) -> Any:
        if not getattr(o, "present", False):
            raise fail("optional.none() dereference")
        return o.inner

    def as_value(fn: Callable[..., Any]) -> Callable[..., Any]:
        """cel-python takes a returned CELEvalError as an error *value*, which ``&&``/``||`` absorb
        as CEL requires (``false && error`` is false); a raised one would abort the whole rule."""
        def run(*args: Any) -> Any:
            try:
                return fn(*args)
            except fail as exc:
                return exc
        return run

    functions: dict[str, Callable[..., Any]] = {
        "charAt": char_at, "indexOf": index_of, "lastIndexOf": last_index_of,
        "lowerAscii": lambda s: string("".join(c.lower() if c.isascii() else c for c in str(s))),
        "upperAscii": lambda s: string("".join(c.upper() if c.isascii() else c for c in str(s))),
        "replace": replace, "split": split, "substring": substring, "trim": lambda s: string(str(s).strip()),
        "join": join,
        "isSorted": is_sorted, "sum": total,
        "max": extreme(max, "max"), "min": extreme(min, "min"),
        "find": find, "findAll": find_all,
        "url": url, "isURL": lambda s: boolean(parse_url(s) is not None),
        "getScheme": lambda u: string(u.parts.scheme), "getHost": host, "getHostname": hostname, "getPort": port,
        "getEscapedPath": lambda u: string(u.parts.path), "getQuery": lambda u: t.MapType({
            string(k): t.ListType([string(v) for v in vs])
            for k, vs in urllib.parse.parse_qs(u.parts.query, keep_blank_values=True).items()}),
        "quantity": quantity, "isQuantity": is_quantity,
        "sign": lambda q: t.IntType((exact(q) > 0) - (exact(q) < 0)),
        "isInteger": lambda q: boolean(exact(q).denominator == 1), "asInteger": as_integer,
        "asApproximateFloat": lambda q: t.DoubleType(float(exact(q))),
        "isGreaterThan": lambda a, b: boolean(compare(a, b) > 0), "isLessThan": lambda a, b: boolean(compare(a, b) < 0),
        "compareTo": lambda a, b: t.IntType(compare(a, b)),
        "add": lambda a, b: made(exact(a) + exact(b)), "sub": lambda a, b: made(exact(a) - exact(b)),
        "hasValue": lambda o: boolean(bool(getattr(o, "present", False))), "value": value,
        "orValue": lambda o, default: o.inner if getattr(o, "present", False) else default,
    }
    base = celpy.evaluation.base_functions
    functions.update(ext_functions(celpy, lambda name: base[name]))
    functions.update(list_functions(celpy))
    functions.update(semver_functions(celpy, dict(functions).__getitem__))
    functions.update(_numeric_operators(celpy, lambda name: base[name]))
    return {name: fn if name.startswith("__") else as_value(fn) for name, fn in functions.items()}


def _numeric_operators(celpy: Any, base: Callable[[str], Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """``cel.CrossTypeNumericComparisons(true)`` (base.go, 1.28) and CEL's heterogeneous equality:
    ``int``, ``uint`` and ``double`` compare and equal by value (``1 < 1.5``, ``1 == 1.0``, ``1 in
    [1.0]``).  cel-python refuses some of these orders (``IntType < DoubleType``), which matters where
    a ``number`` field holds an integral JSON value (``2``, which upstream reads as the double 2.0).
    Everything else goes to cel-python's own operator."""
    t = celpy.celtypes
    kinds = (t.IntType, t.UintType, t.DoubleType)

    def number(value: Any) -> bool:
        return isinstance(value, kinds) and not isinstance(value, t.BoolType)

    def plain(value: Any) -> int | float:
        return float(value) if isinstance(value, t.DoubleType) else int(value)

    def relation(name: str, compare: Callable[[Any, Any], bool]) -> Callable[..., Any]:
        def run(a: Any, b: Any) -> Any:
            if number(a) and number(b) and type(a) is not type(b):
                return t.BoolType(compare(plain(a), plain(b)))
            return base(name)(a, b)
        return run

    def member(item: Any, container: Any) -> Any:
        if number(item) and isinstance(container, (t.ListType, t.MapType)):
            return t.BoolType(any(number(x) and plain(x) == plain(item) for x in container))
        return base("_in_")(item, container)

    return {"_<_": relation("_<_", operator.lt), "_<=_": relation("_<=_", operator.le),
            "_>_": relation("_>_", operator.gt), "_>=_": relation("_>=_", operator.ge),
            "_==_": relation("_==_", operator.eq), "_!=_": relation("_!=_", operator.ne), "_in_": member}
