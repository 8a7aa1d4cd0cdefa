"""Checks after every test of the suite.

A thread a test's reconcile started and left running unfenced acts in whichever later test's step runs
when it wakes (seen in CI: a stray thread's quiescence crashed, the thread slept through its test and woke
30 s later in another test's program step, which failed). The check below makes the test that leaked it
fail, by name, and fences the thread so that no later test is touched by it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kamera_cli.adapters.sandbox.threads import fence_thread, unfenced_threads

#: ``tests/unit/test_leaked_threads.py`` runs this file's check on a suite of its own
pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _no_unfenced_thread_left() -> Iterator[None]:
    yield
    left = unfenced_threads()
    for thread in left:
        fence_thread(thread, "left running unfenced by a test")
    if left:
        pytest.fail(f"this test left {len(left)} thread(s) its user code started running unfenced, outside any "
                    f"step: {', '.join(t.name for t in left)} (kamera_cli/adapters/sandbox/threads.py, "
                    "unfenced_threads)", pytrace=False)
