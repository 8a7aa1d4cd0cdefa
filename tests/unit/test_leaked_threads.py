"""A thread user code started and left running unfenced is caught in the test that leaked it.

Why: such a thread acts in whichever step runs when it wakes. In CI one slept through its test (its
step's quiescence had crashed) and woke 30 s later inside another test's program step, which failed;
nothing pointed at the test that had leaked it. ``tests/conftest.py`` asks ``unfenced_threads`` after
every test.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.sandbox.threads import fence_thread, is_fenced, unfenced_threads, watching_threads

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

USER_CODE = """
import threading
from concurrent.futures import ThreadPoolExecutor

def waiter(release):
    threading.Thread(target=release.wait, args=(30,), daemon=True).start()

def pool():
    executor = ThreadPoolExecutor(1)
    executor.submit(sum, range(10)).result()
    return executor
"""


def _user_module(tmp_path: Path) -> dict[str, Any]:
    """``USER_CODE`` as a file of the scenario's folder, so that the threads it starts are recorded."""
    file = tmp_path / "ctrl.py"
    file.write_text(USER_CODE)
    namespace: dict[str, Any] = {}
    exec(compile(USER_CODE, str(file), "exec"), namespace)
    return namespace


def test_a_thread_whose_step_never_quiesced_is_unfenced_until_fenced(tmp_path: Path) -> None:
    code = _user_module(tmp_path)
    release = threading.Event()
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["waiter"](release)  # and no quiesce: the step's end never looked at its threads
    (thread,) = (r.thread for r in watch.records)
    try:
        assert unfenced_threads() == (thread,)
        fence_thread(thread, "the test's")
        assert is_fenced(thread) and unfenced_threads() == ()
    finally:
        release.set()
        thread.join(5)


def test_a_quiesced_step_leaves_nothing_unfenced_and_an_idle_pool_worker_is_no_leak(tmp_path: Path) -> None:
    code = _user_module(tmp_path)
    release = threading.Event()
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["waiter"](release)
        executor: ThreadPoolExecutor = code["pool"]()
        strays = watch.quiesce(0.05)
    try:
        assert [s.outlived for s in strays] == [True]  # the waiter; the pool's worker waits for work
        assert unfenced_threads() == ()
    finally:
        release.set()
        executor.shutdown()
        for record in watch.records:
            record.thread.join(5)


def test_the_suite_fails_the_test_that_leaked_and_no_later_one(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST.read_text())
    pytester.makepyfile(test_leaks="""
import threading
from pathlib import Path

from kamera_cli.adapters.sandbox.threads import is_fenced, watching_threads

LEFT = []

def test_leaks(tmp_path):
    text = "import threading\\ndef go(e):\\n    threading.Thread(target=e.wait, args=(30,), daemon=True).start()\\n"
    code = {}
    exec(compile(text, str(tmp_path / "ctrl.py"), "exec"), code)
    release = threading.Event()
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["go"](release)
    LEFT.append((release, watch.records[0].thread))

def test_later():
    release, thread = LEFT[0]
    release.set()
    assert is_fenced(thread)
""")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_leaks*", "*left 1 thread(s)*running unfenced*"])
