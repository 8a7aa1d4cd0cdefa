"""A faster ``__init__`` for frozen, slotted dataclasses that are built on every request.

Why: a frozen dataclass's generated ``__init__`` sets each field through
``object.__setattr__`` (looked up per field, to get past the class's refusing ``__setattr__``),
which costs about twice what setting the slots through their own descriptors does.  The simulated
API server builds several such records per write (the journal's ``Access``, the ``HttpResponse``,
the snapshot's ``WriteRecord``, ``ObjectRef``s): about 1 µs each.  The replacement takes the same
parameters with the same defaults, so construction, ``dataclasses.replace``, equality, hashing,
pickling and the frozen guarantee are all as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def fast_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that writes its slots directly.

    Only plain positional fields with plain defaults are supported (no ``default_factory``, no
    ``__post_init__``, no keyword-only, init-only or ``init=False`` fields); anything else raises
    ``TypeError`` at import time.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__ or hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: fast_init needs a frozen, slotted dataclass without __post_init__")
    namespace: dict[str, Any] = {}
    args: list[str] = []
    lines: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.init or f.default_factory is not dataclasses.MISSING or getattr(f, "kw_only", False):
            raise TypeError(f"{cls.__name__}.{f.name}: fast_init supports plain fields with plain defaults only")
        if f.default is dataclasses.MISSING:
            args.append(f.name)
        else:
            namespace[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
        lines.append(f"    _set_{f.name}(self, {f.name})")
    source = f"def __init__(self, {', '.join(args)}):\n" + ("\n".join(lines) or "    pass") + "\n"
    exec(source, namespace)  # generated from the field names alone, as dataclasses does
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
