"""The built-in schema table compiled once per definition: the fast answers to "is anything wrong?"
and "is anything to prune?" that every write of a built-in asks.

Why: ``validation._walk`` and ``validation._prune`` interpret the definition table on every
request -- per field a few dict lookups into the table, a path string built in case of an error
and two or three calls -- and were the largest single cost of a write (a quarter of a Deployment
create).  Here each definition becomes a ``_Plan`` once (its required keys and, per property, the
exact Python types that pass at a glance and the plan to descend into), and the walks over an
object only answer yes or no, building no paths.

Both answers are conservative and exact where they matter: ``typed_ok`` is True only when the
interpreted walk would find no cause, and ``needs_prune`` is False only when pruning would return
the object itself.  Whenever they answer otherwise the interpreted walk runs and produces the causes
(or the pruned copy) exactly as before, so messages, paths and their order never depend on this
module.  Plans are built from the definition table alone; nothing about any object is cached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: ``validation._PY_TYPES``: the JSON type names the table uses and the Python types that pass.
PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "object": (dict,),
    "array": (list,),
}
# Exact types that pass each check without a closer look (a subclass, or a bool where a number is
# expected, takes the precise ``isinstance`` path).
_EXACT: dict[str, frozenset[type]] = {
    "string": frozenset({str}), "integer": frozenset({int}), "number": frozenset({int, float}),
    "boolean": frozenset({bool}), "object": frozenset({dict}), "array": frozenset({list}),
    "int-or-string": frozenset({int, str}),
}
_NOTHING: frozenset[type] = frozenset()
_JSON_TYPES = frozenset({str, int, float, bool, dict, list})
_QUANTITY_TYPES = frozenset({str, int, float})
_TOP_KEYS = frozenset({"apiVersion", "kind", "metadata"})
_QUANTITY_SUFFIX = ".Quantity"

#: what a null array item or map value decodes to in the real server's Go types, by element type:
#: encoding/json leaves a fresh element at its zero value, and a Quantity's UnmarshalJSON takes null
#: as zero, written back as "0" (so ``{"data": {"a": null}}`` on a ConfigMap is stored as ``"a": ""``)
_ELEMENT_ZEROS: dict[str, Any] = {"string": "", "integer": 0, "number": 0, "boolean": False}


def element_zero(item: Any) -> tuple[bool, Any]:
    """(True, the zero value) when a null item or value of element type ``item`` decodes to a zero."""
    if not isinstance(item, str):
        return False, None
    if item in _ELEMENT_ZEROS:
        return True, _ELEMENT_ZEROS[item]
    if item.endswith(_QUANTITY_SUFFIX):
        return True, "0"
    return False, None


def has_null(value: Any) -> bool:
    """Whether an array or map holds a null item or value."""
    items = value if isinstance(value, list) else value.values() if isinstance(value, dict) else ()
    return any(item is None for item in items)

Check = Callable[[Any], bool]


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _quantity(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _int_or_string(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def type_check(ptype: Any, fmt: Any) -> tuple[frozenset[type], Check]:
    """``validation._check_type``'s verdict as (exact types that pass, the precise check)."""
    if fmt == "int-or-string":
        return _EXACT["int-or-string"], _int_or_string
    if not isinstance(ptype, str) or ptype not in PY_TYPES:
        return _NOTHING, _always
    types = PY_TYPES[ptype]
    if ptype == "boolean":
        def check(value: Any) -> bool:
            return isinstance(value, types)
    else:
        def check(value: Any) -> bool:
            return isinstance(value, types) and not isinstance(value, bool)
    return _EXACT[ptype], check


class _Element:
    """An array item or map value (``validation._element``): a scalar type, a definition, or anything."""

    __slots__ = ("check", "exact", "plan")

    def __init__(self, exact: frozenset[type], check: Check, plan: _Plan | None) -> None:
        self.exact, self.check, self.plan = exact, check, plan


class _Prop:
    """One property of a definition: its type check, where to descend, its ``omitempty`` category."""

    __slots__ = ("check", "element", "exact", "fills_nulls", "is_map", "omit", "plan", "prune_element",
                 "skip_prune")

    def __init__(self) -> None:
        self.exact: frozenset[type] = _NOTHING  # types that need no further look (a scalar of that type)
        self.check: Check = _always  # the type check (``_check_type``) for anything else
        self.plan: _Plan | None = None  # a ``ref``: the definition to walk into
        self.element: _Element | None = None  # an array's items / a map's values (validation)
        self.is_map = False  # ``type: object`` (its element is the map's values)
        self.omit: str | None = None
        self.prune_element: _Plan | None = None  # the definition ``_prune_prop`` prunes elements by
        self.skip_prune = False  # managedFields: server-written, never pruned
        self.fills_nulls = False  # scalar (or Quantity) elements: a null one decodes to the zero value


class _Plan:
    """One definition compiled: what ``validation._walk`` and ``validation._prune`` look up per field."""

    __slots__ = ("check", "exact", "kind", "props", "required")

    #: kinds: no such definition or a property-less object (anything passes); a scalar or a quantity
    #: (``exact``, ``check``); an object with properties
    ANY, SCALAR, OBJECT = range(3)

    def __init__(self) -> None:
        self.kind = _Plan.ANY
        self.exact: frozenset[type] = _NOTHING
        self.check: Check = _always
        self.required: tuple[str, ...] = ()
        self.props: dict[str, _Prop] = {}


class _Compiler:
    """The plans of one definition table, built on first use and kept for the table's lifetime."""

    __slots__ = ("definitions", "plans")

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions
        self.plans: dict[str, _Plan] = {}

    def plan(self, name: str) -> _Plan:
        hit = self.plans.get(name)
        if hit is not None:
            return hit
        plan = self.plans[name] = _Plan()  # registered first: recursive definitions find it
        definition = self.definitions.get(name)
        if definition is None:
            return plan
        if "properties" not in definition:
            if name.endswith(_QUANTITY_SUFFIX):
                plan.kind, plan.exact, plan.check = _Plan.SCALAR, _QUANTITY_TYPES, _quantity
            elif definition.get("type") != "object":
                plan.kind = _Plan.SCALAR
                plan.exact, plan.check = type_check(definition.get("type"), definition.get("format"))
            return plan
        plan.kind = _Plan.OBJECT
        plan.required = tuple(definition.get("required", ()))
        plan.props = {key: self._prop(key, spec) for key, spec in definition["properties"].items()}
        return plan

    def _prop(self, key: str, spec: Mapping[str, Any]) -> _Prop:
        prop = _Prop()
        prop.omit = spec.get("omit")
        prop.skip_prune = key == "managedFields"
        ref = spec.get("ref")
        if ref:
            plan = self.plan(ref)  # a definition in progress (recursion) is already an OBJECT
            if plan.kind == _Plan.OBJECT:
                prop.plan = plan
            elif plan.kind == _Plan.ANY:
                prop.exact = _JSON_TYPES
            else:  # a scalar definition (Time, IntOrString, Quantity): its check, in line
                prop.exact, prop.check = plan.exact, plan.check
            return prop
        ptype, fmt = spec.get("type"), spec.get("format")
        prop.exact, prop.check = type_check(ptype, fmt)
        if fmt is not None and ptype in ("array", "object"):  # not in the table: leave it to the interpreter
            prop.exact, prop.check = _NOTHING, _never
            return prop
        prop.is_map = ptype == "object"
        if ptype == "array":
            prop.element = self._element(spec.get("items"))
            prop.exact = _NOTHING  # the items need a look
        elif ptype == "object" and "values" in spec:
            prop.element = self._element(spec["values"])
            prop.exact = _NOTHING
        item = spec.get("items") if ptype == "array" else spec.get("values")
        prop.fills_nulls = element_zero(item)[0]
        if isinstance(item, str) and item and item not in PY_TYPES:
            prop.prune_element = self.plan(item)
        return prop

    def _element(self, item: Any) -> _Element | None:
        if not isinstance(item, str):
            return None
        if item in PY_TYPES:
            exact, check = type_check(item, None)
            return _Element(exact, check, None)
        return _Element(_NOTHING, _always, self.plan(item))


_COMPILERS: dict[int, _Compiler] = {}


def compiled(definitions: Mapping[str, Any], name: str) -> _Plan:
    """The plan of definition ``name`` of this table (tables are few and live as long as their registry)."""
    compiler = _COMPILERS.get(id(definitions))
    if compiler is None or compiler.definitions is not definitions:
        if len(_COMPILERS) >= 64:
            _COMPILERS.clear()
        compiler = _COMPILERS[id(definitions)] = _Compiler(definitions)
    return compiler.plan(name)


# ---------------------------------------------------------------------------------------- validation

def typed_ok(definitions: Mapping[str, Any], root: str, obj: Any, base: Any = None) -> bool:
    """True only if ``validation.validate_builtin`` finds no cause (required fields, JSON types).

    Skips subtrees shared with ``base`` (a clean object) as the interpreted walk does.
    """
    return _ok(compiled(definitions, root), obj, base, True)


def _ok(plan: _Plan, value: Any, base: Any, top: bool = False) -> bool:
    kind = plan.kind
    if kind != _Plan.OBJECT:
        return kind == _Plan.ANY or type(value) in plan.exact or plan.check(value)
    if not isinstance(value, dict):
        return False
    for req in plan.required:
        if value.get(req) is None and not (top and req == "metadata"):
            return False
    props = plan.props
    if not isinstance(base, dict):
        base = None
    for key, sub in value.items():
        prop = props.get(key)
        if prop is None or sub is None or type(sub) in prop.exact:
            continue
        if top and key == "metadata":
            continue  # root metadata: server-managed, checked by validate_metadata
        before = None if base is None else base.get(key)
        if before is sub:
            continue
        if prop.plan is not None:
            if not _ok(prop.plan, sub, before):
                return False
        elif not prop.check(sub) or (prop.element is not None and not _elements_ok(prop, sub)):
            return False
    return True


def _elements_ok(prop: _Prop, value: Any) -> bool:
    element = prop.element
    assert element is not None
    items = value if isinstance(value, list) else value.values() if prop.is_map else ()
    exact, plan = element.exact, element.plan
    for item in items:
        if item is None or type(item) in exact:
            continue
        if plan is not None:
            if not _ok(plan, item, None):
                return False
        elif not element.check(item):
            return False
    return True


# ---------------------------------------------------------------------------------------- pruning

_ZEROS: dict[str, Any] = {"map": {}, "slice": [], "bytes": "", "string": ""}


def is_zero(value: Any, category: str | None) -> bool:
    """Whether ``value`` is the Go zero of an ``omitempty`` field of this category (bools are not numbers).

    A null decodes to the zero value (a nil pointer, map or slice) and so is omitted too, except for
    a struct (written as ``{}``); a non-null pointer is always written.
    """
    if category is None:
        return False
    if value is None:
        return category != "struct"
    if category == "bool":
        return value is False
    if category == "number":
        return value == 0 and not isinstance(value, bool)
    return bool(value == _ZEROS.get(category, ()))


def needs_prune(definitions: Mapping[str, Any], root: str, obj: Any, base: Any = None, top: bool = True) -> bool:
    """False only if ``validation.prune_builtin`` would return ``obj`` itself (nothing unknown, no
    ``omitempty`` zero); subtrees shared with ``base`` are skipped as the interpreted prune does."""
    return _prunes(compiled(definitions, root), obj, base, top)


def _prunes(plan: _Plan, value: Any, base: Any, top: bool = False) -> bool:
    if plan.kind != _Plan.OBJECT or not isinstance(value, dict):
        return False
    props = plan.props
    if not isinstance(base, dict):
        base = None
    for key, sub in value.items():
        prop = props.get(key)
        if prop is None:
            if top and key in _TOP_KEYS:
                continue
            return True
        if prop.skip_prune:
            continue
        if not sub:
            if is_zero(sub, prop.omit):
                return True  # an omitempty zero: dropped
            continue  # an empty value has nothing inside to prune
        before = None if base is None else base.get(key)
        if before is sub:
            continue
        if prop.plan is not None:
            if _prunes(prop.plan, sub, before):
                return True
            continue
        if prop.fills_nulls and has_null(sub):
            return True
        element = prop.prune_element
        if element is None:
            continue
        if isinstance(sub, list):
            for item in sub:
                if _prunes(element, item, None):
                    return True
        elif prop.is_map and isinstance(sub, dict):
            for item in sub.values():
                if _prunes(element, item, None):
                    return True
    return False
