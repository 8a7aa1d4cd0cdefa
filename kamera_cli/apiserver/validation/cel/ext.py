"""The namespaced and typed parts of Kubernetes's CEL environment: ``sets.*``, ``strings.quote``,
``format.*``, ``optional.*`` and the IP/CIDR library (``ip``, ``cidr`` and their methods).

Why a module of its own: these are the functions CRD authors reach for in 1.30+ rules --
``sets.contains(self.allowed, self.requested)``, ``!format.dns1123Label().validate(self.name).hasValue()``,
``cidr(self.range).containsIP(self.gateway)`` -- and cel-python knows none of them.  cel-python reads
``sets.contains(a, b)`` as the method ``contains`` called on an identifier ``sets``; binding each
namespace name to a marker value in the activation (``namespaces``) turns such a call into an
ordinary function call whose first argument says which library it belongs to.  Names shared with
other functions (``contains``, ``string``, ``ip``) dispatch on that argument.  (``lists`` is bound
the same way for ``lists.range``, which ``validation/cel/lists.py`` defines.)

Upstream, as enabled by k8s.io/apiserver/pkg/cel/environment/base.go: cel-go ``ext.Sets``,
``ext.Strings`` version 2 (``strings.quote``; ``<string>.format`` is in ``validation/cel/format.py``),
``cel.OptionalTypes`` (``optional.of``, ``optional.none``, ``optional.ofNonZeroValue``, ``hasValue``,
``value``, ``orValue``, ``or``),
library/format.go (1.31), library/ip.go and library/cidr.go (1.30, on ``netip``).  The base
environment enables neither ``ext.Math`` nor ``ext.Encoders``: ``math.*`` and ``base64.*`` are not
Kubernetes CEL, so they are deliberately absent here too.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.cel.format import format_string
from kamera_cli.apiserver.validation.formats import matches

NAMESPACES = ("sets", "strings", "format", "optional", "ip", "lists")
_FORMATS: dict[str, Callable[[str], list[str]]] = {}
_OPTIONAL: dict[str, Any] = {}
_IPV4ISH = re.compile(r"^[0-9.]+$")


def optional(celpy: Any, value: Any, present: bool) -> Any:
    """A CEL optional (``optional.of(value)`` or ``optional.none()``) as cel-python can carry it."""
    cls = _OPTIONAL.get("cls")
    if cls is None:
        class Optional(celpy.celtypes.MapType):  # type: ignore[misc]
            """An optional: a map type to cel-python, read only through the optional functions."""

            inner: Any = None
            present: bool = False

            def __eq__(self, other: Any) -> Any:  # optionals are equal when both are empty or hold equal values
                if not isinstance(other, Optional):
                    return celpy.celtypes.BoolType(False)
                same = self.present == other.present and (not self.present or equal(self.inner, other.inner))
                return celpy.celtypes.BoolType(same)

            def __ne__(self, other: Any) -> Any:
                return celpy.celtypes.BoolType(not self.__eq__(other))

            __hash__ = None  # type: ignore[assignment]

        cls = _OPTIONAL["cls"] = Optional
    out = cls({})
    out.inner, out.present = value, present
    return out


def _mask(name: str) -> str:
    """``maskTrailingDash``: a prefix's trailing ``-`` (and the character before it) becomes ``a``."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def _label(value: str) -> list[str]:
    """``IsDNS1123Label``, which says "must not contain dots" for a valid subdomain that is no label."""
    out = F.dns1123_label(value)
    if out and "." in value and not F.dns1123_subdomain(value) and len(value) <= 63:
        return ["must not contain dots"]
    return out


def _uri(value: str) -> list[str]:
    """``url.ParseRequestURI``'s refusals: empty, or neither absolute nor rooted."""
    if not value:
        return ['parse "": empty url']
    scheme = re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", value)
    if not scheme and not value.startswith("/"):
        return [f'parse "{value}": invalid URI for request']
    return []


def _strfmt(name: str, message: str) -> Callable[[str], list[str]]:
    return lambda value: [] if matches(name, value) else [message]


_FORMATS.update({
    "dns1123Label": _label, "dns1123Subdomain": F.dns1123_subdomain, "dns1035Label": F.dns1035_label,
    "qualifiedName": F.qualified_name, "dns1123LabelPrefix": lambda s: _label(_mask(s)),
    "dns1123SubdomainPrefix": lambda s: F.dns1123_subdomain(_mask(s)),
    "dns1035LabelPrefix": lambda s: F.dns1035_label(_mask(s)), "labelValue": F.label_value, "uri": _uri,
    "uuid": _strfmt("uuid", "does not match the UUID format"), "byte": _strfmt("byte", "invalid base64"),
    "date": _strfmt("date", "invalid date"), "datetime": _strfmt("date-time", "invalid datetime"),
})


def _addr_error(raw: str) -> str:
    """Why Go's ``netip.ParseAddr`` refuses ``raw`` (its common wordings; others read "unable to parse IP")."""
    why = "unable to parse IP"
    if _IPV4ISH.match(raw) and raw:
        fields = raw.split(".")
        if len(fields) < 4:
            why = "IPv4 address too short"
        elif len(fields) > 4:
            why = "IPv4 address too long"
        elif any(not f for f in fields):
            why = "IPv4 field must have at least one digit"
        elif any(len(f) > 1 and f.startswith("0") for f in fields):
            why = "IPv4 field has octet with leading zero"
        elif any(int(f) > 255 for f in fields):
            why = "IPv4 field has value >255"
    return f'ParseAddr("{raw}"): {why}'


def parse_ip(raw: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | str:
    """``parseIPAddr``: the address, or the error text (zones and IPv4-mapped IPv6 refused)."""
    if "%" in raw:
        head = raw.split("%", 1)[0]
        try:
            ipaddress.IPv6Address(head)
        except ValueError:
            return f'IP Address "{raw}" parse error during conversion from string: {_addr_error(raw)}'
        return f'IP address "{raw}" with zone value is not allowed'
    try:
        addr = ipaddress.ip_address(raw)
    except ValueError:
        return f'IP Address "{raw}" parse error during conversion from string: {_addr_error(raw)}'
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return f'IPv4-mapped IPv6 address "{raw}" is not allowed'
    return addr


def parse_cidr(raw: str) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface | str:
    """``parseCIDR``: the prefix with its address as written (``netip.Prefix``), or the error text."""
    lead = "network address parse error during conversion from string: "
    if "/" not in raw:
        return f"{lead}netip.ParsePrefix(\"{raw}\"): no '/'"
    addr_text, bits = raw.rsplit("/", 1)
    addr = parse_ip(addr_text)
    if isinstance(addr, str):
        return f'{lead}netip.ParsePrefix("{raw}"): {_addr_error(addr_text)}'
    if not bits.isdigit() or (len(bits) > 1 and bits.startswith("0")) or int(bits) > addr.max_prefixlen:
        why = "bad bits after slash: " + repr(bits).replace("'", '"') if not bits.isdigit() else \
            "prefix length out of range"
        return f'{lead}netip.ParsePrefix("{raw}"): {why}'
    return ipaddress.ip_interface(f"{addr}/{bits}")


def equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality: numbers of different types compare by value."""
    try:
        return bool(a == b)
    except TypeError:
        numbers = (int, float)
        return isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and float(a) == float(b)


def _has(items: Any, item: Any) -> bool:
    return any(equal(x, item) for x in items)


def functions(celpy: Any, base: Callable[[str], Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """The functions of this module; ``base(name)`` is cel-python's own function of that name, which
    the shared names fall back to."""
    t, fail = celpy.celtypes, celpy.CELEvalError

    class Namespace(t.StringType):  # type: ignore[misc,name-defined]
        """The marker a namespace identifier is bound to."""

    class Format(t.StringType):  # type: ignore[misc,name-defined]
        """A named format (its text is the name)."""

    marker: dict[str, Any] = {name: Namespace(name) for name in NAMESPACES}

    def in_ns(value: Any, name: str) -> bool:
        return isinstance(value, Namespace) and str(value) == name

    def some(value: Any) -> Any:
        return optional(celpy, value, True)

    def none() -> Any:
        return optional(celpy, None, False)

    def boolean(value: bool) -> Any:
        return t.BoolType(value)

    def contains(target: Any, *args: Any) -> Any:
        if in_ns(target, "sets"):  # sets.contains(list, sublist)
            return boolean(all(_has(args[0], x) for x in args[1]))
        return base("contains")(target, *args)

    def ip(value: Any) -> Any:
        if isinstance(value, (ipaddress.IPv4Interface, ipaddress.IPv6Interface)):  # <cidr>.ip()
            return value.ip
        parsed = parse_ip(str(value))
        if isinstance(parsed, str):
            raise fail(parsed)
        return parsed

    def cidr(value: Any) -> Any:
        parsed = parse_cidr(str(value))
        if isinstance(parsed, str):
            raise fail(parsed)
        return parsed

    def string(value: Any, *rest: Any) -> Any:
        if isinstance(value, (ipaddress.IPv4Interface, ipaddress.IPv6Interface)):
            return t.StringType(f"{value.ip}/{value.network.prefixlen}")
        if isinstance(value, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
            return t.StringType(str(value))
        return base("string")(value, *rest)

    def contains_ip(net: Any, addr: Any) -> Any:
        other = ip(addr) if isinstance(addr, t.StringType) else addr
        return boolean(other.version == net.version and other in net.network)

    def contains_cidr(net: Any, other: Any) -> Any:
        sub = cidr(other) if isinstance(other, t.StringType) else other
        if sub.version != net.version:
            return boolean(False)
        widened = ipaddress.ip_network((sub.ip, net.network.prefixlen), strict=False)
        return boolean(widened == net.network and net.network.prefixlen <= sub.network.prefixlen)

    def is_canonical(target: Any, value: Any) -> Any:  # ip.isCanonical(string)
        parsed = parse_ip(str(value))
        if isinstance(parsed, str):
            raise fail(parsed)
        return boolean(str(parsed) == str(value))

    def validate(fmt: Any, value: Any) -> Any:  # <Format>.validate(string) -> ?list<string>
        errors = _FORMATS[str(fmt)](str(value))
        return some(t.ListType([t.StringType(e) for e in errors])) if errors else none()

    def quote(target: Any, value: Any) -> Any:  # strings.quote(string)
        escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                   "\\": "\\\\", '"': '\\"'}
        return t.StringType('"' + "".join(escapes.get(c, c) for c in str(value)) + '"')

    def non_zero(target: Any, value: Any) -> Any:  # optional.ofNonZeroValue(x)
        zero = value is None or (not isinstance(value, t.BoolType) and not value) or (
            isinstance(value, t.BoolType) and not bool(value))
        return none() if zero else some(value)

    def opt_select(target: Any, key: Any) -> Any:  # x.?f and x[?k]: present only where the key/index is
        cls = _OPTIONAL.get("cls")
        if cls is not None and isinstance(target, cls):  # chained: an empty optional stays empty
            if not target.present:
                return none()
            target = target.inner
        if isinstance(target, t.MapType) and key in target:
            return some(target[key])
        if isinstance(target, t.ListType) and isinstance(key, int) and 0 <= key < len(target):
            return some(target[key])
        return none()

    out: dict[str, Callable[..., Any]] = {
        "optField": lambda target, name: opt_select(target, t.StringType(str(name))), "optIndex": opt_select,
        "contains": contains,
        "equivalent": lambda _ns, a, b: boolean(all(_has(b, x) for x in a) and all(_has(a, x) for x in b)),
        "intersects": lambda _ns, a, b: boolean(any(_has(b, x) for x in a)),
        "quote": quote, "format": lambda template, args: format_string(celpy, template, args),
        "of": lambda _ns, value: some(value), "none": lambda _ns: none(), "ofNonZeroValue": non_zero,
        "or": lambda a, b: a if getattr(a, "present", False) else b,
        "named": lambda _ns, name: some(Format(str(name))) if str(name) in _FORMATS else none(),
        "validate": validate,
        **{name: (lambda _ns, name=name: Format(name)) for name in _FORMATS},
        "ip": ip, "cidr": cidr, "string": string, "isCanonical": is_canonical,
        "isIP": lambda s: boolean(not isinstance(parse_ip(str(s)), str)),
        "isCIDR": lambda s: boolean(not isinstance(parse_cidr(str(s)), str)),
        "family": lambda a: t.IntType(a.version), "isLoopback": lambda a: boolean(a.is_loopback),
        "isUnspecified": lambda a: boolean(a.is_unspecified),
        "isLinkLocalMulticast": lambda a: boolean(a in ipaddress.ip_network("224.0.0.0/24") if a.version == 4
                                                  else (int(a) >> 112) & 0xFF0F == 0xFF02),
        "isLinkLocalUnicast": lambda a: boolean(a.is_link_local),
        "isGlobalUnicast": lambda a: boolean(_global_unicast(a)),
        "containsIP": contains_ip, "containsCIDR": contains_cidr,
        "prefixLength": lambda n: t.IntType(n.network.prefixlen),
        "masked": lambda n: ipaddress.ip_interface(n.network),
    }
    out["__namespaces__"] = lambda: marker  # read by ``namespaces``
    return out


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def rewrite_optional_syntax(text: str) -> str:
    """CEL's optional selection (``x.?f``, ``x[?k]``) as the method calls ``x.optField('f')`` and
    ``x.optIndex(k)``, which cel-python parses (its grammar lacks the ``?`` forms).  String literals
    are left alone; anything unusual is returned unchanged (and fails to parse, as before)."""
    if "?" not in text:
        return text
    out: list[str] = []
    brackets: list[bool] = []  # per open "[": whether it was "[?" (closes with ")")
    i, quote = 0, ""
    while i < len(text):
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1:i + 2])
                i += 2
                continue
            if text.startswith(quote, i):
                out.append(text[i + 1:i + len(quote)])
                i += len(quote)
                quote = ""
                continue
            i += 1
            continue
        if c in "'\"":
            quote = c * 3 if text.startswith(c * 3, i) else c
            out.append(quote)
            i += len(quote)
            continue
        if text.startswith(".?", i):
            name = _IDENT.match(text, i + 2)
            if name is None:
                return text
            out.append(f".optField('{name.group()}')")
            i = name.end()
            continue
        if text.startswith("[?", i):
            brackets.append(True)
            out.append(".optIndex(")
            i += 2
            continue
        if c == "[":
            brackets.append(False)
        elif c == "]" and brackets and brackets.pop():
            out.append(")")
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _global_unicast(addr: Any) -> bool:
    """Go's ``netip.Addr.IsGlobalUnicast``: not unspecified, loopback, multicast, link-local, or (IPv4)
    the limited broadcast address."""
    if addr.is_unspecified or addr.is_loopback or addr.is_multicast or addr.is_link_local:
        return False
    return not (addr.version == 4 and str(addr) == "255.255.255.255")


def namespaces(library: dict[str, Callable[..., Any]]) -> dict[str, Any]:
    """The activation entries binding each namespace name to its marker."""
    return dict(library["__namespaces__"]())
