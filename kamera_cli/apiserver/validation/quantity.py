"""Resource quantities in their canonical form, as a real API server stores and returns them.

Why: a controller that writes ``cpu: 0.5`` reads back ``500m``, and ``memory: 1024Mi`` reads back
``1Gi``; one that compares its desired spec with the live one therefore sees a difference on a real
cluster and rewrites forever.  Without canonical quantities the simulation would hide that loop.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/api/resource`` -- ``ParseQuantity`` (the grammar and
the format a suffix implies), ``Quantity.RoundUp`` (applied to every ``ResourceList`` by
``SetDefaults_ResourceList``, pkg/apis/core/v1/defaults.go), and ``Quantity.CanonicalizeBytes`` /
``int64Amount.AsCanonicalBytes`` / ``AsCanonicalBase1024Bytes`` (the serialised form).  Values are
exact fractions here, so no precision is lost where Go switches to ``inf.Dec``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
SUFFIX_ERROR = "unable to parse quantity's suffix"

_SPLIT = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_NUMBER = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)$")
_EXPONENT = re.compile(r"^[eE][-+]?[0-9]+$")
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {v: k for k, v in _DECIMAL.items()}
_BINARY_SUFFIX = {0: "", **{v: k for k, v in _BINARY.items()}}


class QuantityError(ValueError):
    """A value the real server's decoder refuses as a quantity (the message is upstream's)."""


def _parse(text: str) -> tuple[Fraction, str]:
    """The exact value and the format (``DecimalSI``, ``BinarySI`` or ``DecimalExponent``)."""
    text = text.strip()
    match = _SPLIT.match(text)
    if not match or not _NUMBER.match(match.group(1)):
        raise QuantityError(FORMAT_ERROR)
    number, suffix = match.groups()
    value = Fraction(number)
    if suffix in _DECIMAL:
        return value * Fraction(10) ** _DECIMAL[suffix], "DecimalSI"
    if suffix in _BINARY:
        return value * 2 ** _BINARY[suffix], "BinarySI"
    if _EXPONENT.match(suffix):
        return value * Fraction(10) ** int(suffix[1:]), "DecimalExponent"
    raise QuantityError(SUFFIX_ERROR)


def _round_up_milli(value: Fraction) -> Fraction:
    """``Quantity.RoundUp(-3)``: to whole thousandths, away from zero."""
    scaled = value * 1000
    if scaled.denominator == 1:
        return value
    whole = -((-scaled.numerator) // scaled.denominator) if scaled > 0 else scaled.numerator // scaled.denominator
    return Fraction(whole, 1000)


def _decimal_form(value: Fraction, fmt: str) -> str:
    # value = mantissa * 10**exponent with an integral mantissa free of trailing zeros ...
    exponent = 0
    while value.denominator != 1:
        value *= 10
        exponent -= 1
    mantissa = value.numerator
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    # ... then the exponent lowered to a multiple of 3 (AsCanonicalBytes)
    shift = exponent % 3
    mantissa *= 10 ** shift
    exponent -= shift
    if fmt == "DecimalExponent":
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    suffix = _DECIMAL_SUFFIX.get(exponent)
    if suffix is None:  # beyond E/n: constructBytes finds no suffix and upstream drops it
        return str(mantissa)
    return f"{mantissa}{suffix}"


def canonical(value: Any, *, round_milli: bool = False) -> str:
    """The canonical text of a quantity given as a string or a JSON number."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(FORMAT_ERROR)
    return _canonical_text(str(value) if not isinstance(value, float) else repr(value), round_milli)


def value_of(value: Any) -> Fraction:
    """The exact amount a quantity stands for (``QuantityError`` when it is not one)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise QuantityError(FORMAT_ERROR)
    return _parse(str(value) if not isinstance(value, float) else repr(value))[0]


@functools.lru_cache(maxsize=4096)
def _canonical_text(text: str, round_milli: bool) -> str:
    amount, fmt = _parse(text)
    if round_milli:
        amount = _round_up_milli(amount)
    if amount == 0:
        return "0"
    if fmt == "BinarySI":
        if -1024 < amount < 1024 or amount.denominator != 1:
            fmt = "DecimalSI"  # shown in decimal rather than rounded (CanonicalizeBytes)
        else:
            mantissa, power = amount.numerator, 0
            while mantissa % 1024 == 0 and power < 60:
                mantissa //= 1024
                power += 10
            return f"{mantissa}{_BINARY_SUFFIX[power]}"
    return _decimal_form(amount, fmt)


# -- where quantities sit in the built-in schemas ------------------------------------------------------
# A plan says, per property, how to reach the quantities below it: ("q", None) a single Quantity,
# ("list", None) a map of them (a ResourceList: rounded to milli), ("obj"|"items"|"values", plan) a
# nested object, array of objects, or map of objects.  Computed once per definition.

Plan = dict[str, tuple[str, Any]]


_PLANS: dict[int, tuple[Mapping[str, Any], dict[str, Plan | None]]] = {}


def plan_for(definitions: Mapping[str, Any], name: str) -> Plan | None:
    """The quantity plan of a definition (None: no quantity anywhere below it)."""
    hit = _PLANS.get(id(definitions))
    if hit is None or hit[0] is not definitions:
        hit = _PLANS[id(definitions)] = (definitions, _plans(definitions))
    return hit[1].get(name)


def _plans(definitions: Mapping[str, Any]) -> dict[str, Plan | None]:
    done: dict[str, Plan | None] = {}

    def build(name: str) -> Plan | None:
        if name in done:
            return done[name]
        done[name] = None  # recursion guard: a cycle through itself adds no quantity
        props = (definitions.get(name) or {}).get("properties") or {}
        plan: Plan = {}
        for key, spec in props.items():
            ref, item = spec.get("ref"), spec.get("items") if spec.get("type") == "array" else spec.get("values")
            if ref == QUANTITY:
                plan[key] = ("q", None)
            elif item == QUANTITY:
                plan[key] = ("list", None) if spec.get("type") == "object" else ("qitems", None)
            elif ref and (sub := build(ref)) is not None:
                plan[key] = ("obj", sub)
            elif isinstance(item, str) and item in definitions and (sub := build(item)) is not None:
                plan[key] = ("items" if spec.get("type") == "array" else "values", sub)
        done[name] = plan or None
        return done[name]

    for definition in definitions:
        build(definition)
    return done


def canonicalize(plan: Plan, value: Any, base: Any = None) -> Any:
    """``value`` with every quantity the plan reaches in canonical form (a copy only where one changed).

    ``base``: a clean stored object; a subtree shared with it is already canonical and skipped.
    Raises ``QuantityError`` for a value the decoder would refuse.
    """
    if not isinstance(value, dict):
        return value
    if not isinstance(base, dict):
        base = None
    out: dict[str, Any] | None = None
    for key, (mode, sub) in plan.items():
        child = value.get(key)
        if child is None or (base is not None and base.get(key) is child):
            continue
        new = _step(mode, sub, child, None if base is None else base.get(key))
        if new is not child:
            if out is None:
                out = dict(value)
            out[key] = new
    return value if out is None else out


def _step(mode: str, sub: Any, child: Any, base: Any) -> Any:
    if mode == "q":
        text = canonical(child)
        return child if text == child else text
    if mode == "list" and isinstance(child, dict):
        items = {k: canonical(v, round_milli=True) for k, v in child.items() if v is not None}
        return child if all(child.get(k) == v for k, v in items.items()) and len(items) == len(child) else items
    if mode == "qitems" and isinstance(child, list):
        texts = [canonical(v) for v in child]
        return child if texts == child else texts
    if mode == "obj":
        return canonicalize(sub, child, base)
    if mode == "items" and isinstance(child, list):
        olds = base if isinstance(base, list) and len(base) == len(child) else [None] * len(child)
        new_items = [canonicalize(sub, v, b) for v, b in zip(child, olds)]
        return child if all(a is b for a, b in zip(new_items, child)) else new_items
    if mode == "values" and isinstance(child, dict):
        new_map = {k: canonicalize(sub, v) for k, v in child.items()}
        return child if all(new_map[k] is v for k, v in child.items()) else new_map
    return child
