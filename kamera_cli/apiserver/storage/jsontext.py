"""Compact JSON text from one reusable C encoder per format: what every write serialises twice
(its answer and its state digest).

Why: ``json.dumps`` with any non-default argument builds a ``JSONEncoder`` and then a C encoder on
every call, with a dict of the containers in progress to detect cycles.  That set-up costs more
than encoding a ConfigMap.  The encoders here are built once, without the cycle check (JSON text
and the objects the server builds from it cannot be cyclic), so the text is ``json.dumps``' own:
the same C code writes it.  Should a cyclic or too deeply nested value reach them anyway, they
fall back to ``json.dumps``, which raises exactly what it always raised.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _encoder
from typing import Any


def _reusable(*, sort_keys: bool, ensure_ascii: bool) -> Callable[[Any], str]:
    base = json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ensure_ascii, separators=(",", ":"))
    make: Any = getattr(_encoder, "c_make_encoder", None)  # not in typeshed's stub
    if make is None:  # no C accelerator (another interpreter): json's own path
        return base.encode
    string = _encoder.encode_basestring_ascii if ensure_ascii else _encoder.encode_basestring
    encode: Callable[[Any, int], Any] = make(None, base.default, string, None, ":", ",", sort_keys, False, True)

    def text(value: Any) -> str:
        try:
            return "".join(encode(value, 0))
        except RecursionError:
            return base.encode(value)  # a cycle (ValueError) or a too deep value, as json.dumps reports it

    return text


#: ``json.dumps(value, separators=(",", ":"))``
compact = _reusable(sort_keys=False, ensure_ascii=True)
#: ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
canonical = _reusable(sort_keys=True, ensure_ascii=False)
