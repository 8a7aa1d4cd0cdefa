"""RFC 9535 compliance: the official suite, run through kamera's own compile/find functions.

Every valid case must give its expected nodes (some cases accept several orders), and every invalid
selector must be rejected with ``InvariantSyntaxError``: what users' expressions go through.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.invariants import InvariantSyntaxError, compile_query, find

CTS = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "jsonpath-cts.json"


def _cases() -> list[Any]:
    if not CTS.is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"RFC 9535 compliance suite not found at {CTS}"))]
    tests = json.loads(CTS.read_text(encoding="utf-8"))["tests"]
    return [pytest.param(case, id=f"{i:03d}-{case['name']}") for i, case in enumerate(tests)]


def _strict(value: Any) -> str:
    """JSON text, so that 1 and true (equal in Python) stay different, as they are in JSON."""
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize("case", _cases())
def test_cts_case(case: dict[str, Any]) -> None:
    selector = case["selector"]
    if case.get("invalid_selector"):
        with pytest.raises(InvariantSyntaxError):
            compile_query(selector)
        return
    got = _strict(find(selector, case["document"]))
    acceptable = [case["result"]] if "result" in case else case["results"]
    assert got in [_strict(r) for r in acceptable]


def test_cts_is_large_enough() -> None:
    if not CTS.is_file():
        pytest.skip(f"RFC 9535 compliance suite not found at {CTS}")
    assert len(json.loads(CTS.read_text(encoding="utf-8"))["tests"]) > 600
