"""The thread watch on its own: what is recorded, what is refused, what quiescence reports (issue #28)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kamera_cli.adapters.sandbox.threads import ThreadOutlived, refuse_thread_request, watching_threads

USER_CODE = """
import threading

def start(release, seen):
    def child():
        try:
            refuse_thread_request("GET", "/api/v1/namespaces/default/pods")
        except BaseException as exc:
            seen.append(exc)

    def parent():
        release.wait(5)
        t = threading.Thread(target=child)
        t.start()
        t.join()

    threading.Thread(target=parent, daemon=True).start()

def helper(seen):
    t = threading.Thread(target=lambda: seen.append(sum(range(10))))
    t.start()
    t.join()
"""


def _user_module(tmp_path: Path) -> dict[str, Any]:
    """``USER_CODE`` compiled as a file of the scenario's folder, so that its frames are the user's."""
    file = tmp_path / "ctrl.py"
    file.write_text(USER_CODE)
    namespace: dict[str, Any] = {"refuse_thread_request": refuse_thread_request}
    exec(compile(USER_CODE, str(file), "exec"), namespace)
    return namespace


def test_a_stray_threads_own_threads_are_refused_after_the_step(tmp_path: Path) -> None:
    code = _user_module(tmp_path)
    release = threading.Event()
    seen: list[Any] = []
    real_start = threading.Thread.start
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["start"](release, seen)
        (stray,) = watch.quiesce(0.05)
    assert stray.outlived and stray.attempts == ()
    # (running.py shows the site relative to the scenario's folder)
    assert stray.describe() == f"a thread started at {tmp_path / 'ctrl.py'}:17: it was still running 0.05 s " \
                               "after the step ended"
    (parent,) = (r.thread for r in watch.records)
    release.set()  # the step is over: the thread now starts a thread of its own, which calls the API
    parent.join(5)
    (refusal,) = seen  # the child inherits its parent's fate: stopped at its first call out
    assert isinstance(refusal, ThreadOutlived)
    assert "GET /api/v1/namespaces/default/pods refused, and the thread stopped: it outlived the step that " \
           "started it (at ctrl.py:17)" in str(refusal)
    with watching_threads((str(tmp_path),), threading.get_ident()):
        pass
    assert threading.Thread.start is real_start  # put back by the next call's end, no stray thread running


def test_a_joined_helper_is_no_finding_and_other_threads_are_never_refused(tmp_path: Path) -> None:
    code = _user_module(tmp_path)
    seen: list[Any] = []
    with watching_threads((str(tmp_path),), threading.get_ident()) as watch:
        code["helper"](seen)
        assert watch.quiesce(0.05) == ()
    assert seen == [45]
    assert refuse_thread_request("GET", "/api/v1/pods") is None  # kamera's own thread
