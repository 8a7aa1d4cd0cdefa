"""Ordering of the end-to-end tests that share the pytest process with Ray's driver."""

from __future__ import annotations

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Ray's tests last: its in-process driver, even shut down, leaves native state behind (gRPC's),
    and a local full run with the extras ended in a segfault a few tests after them, at a different
    test each time (`.ci/run` runs them in a process of their own)."""
    ray = [item for item in items if item.path.name == "test_ray.py" and item.path.parent.name == "e2e"]
    if ray:
        items[:] = [item for item in items if item not in ray] + ray
