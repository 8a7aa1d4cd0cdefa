"""Running one reconcile: results, errors, exits, timeouts, network attempts and kamera's own aborts.

Covers: None/falsy, Result, dict, Result-like objects and timedelta results; invalid results as
controller errors; ApiException as api-error with its status; any other exception with the user's
frames and no kamera frames; sys.exit and KeyboardInterrupt as exit; a busy loop reported as a timeout
within the budget; a connection to a local listener reported as network (the listener gets nothing)
even when the controller swallows the error; ReconcileAbort passing through untouched.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import textwrap
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kamera_cli.adapters import (
    ReconcileAbort,
    ReconcileOutcome,
    ReconcilerFactory,
    Request,
    Result,
    VirtualClock,
    load_reconciler,
    run_reconcile,
)
from kamera_cli.adapters.sandbox.addresses import resolve_faked_hosts
from kamera_cli.model.services import parse_url_pattern

EPOCH = 1767225600.0


def write(base: Path, rel: str, text: str) -> Path:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def controller(tmp_path: Path) -> Iterator[Callable[[str], ReconcilerFactory]]:
    """controller(source) writes ctrl.py and loads ctrl.py:reconcile (unloaded after the test)."""
    made: list[ReconcilerFactory] = []

    def _make(source: str) -> ReconcilerFactory:
        write(tmp_path, "ctrl.py", source)
        factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="demo", controller="widget")
        made.append(factory)
        return factory

    yield _make
    for factory in made:
        factory.unload()


def controller_in(factory: ReconcilerFactory) -> Path:
    """The factory's scenario folder, with a trivial ok.py controller next to ctrl.py."""
    write(factory.base_dir, "ok.py", "def reconcile(request):\n    return None\n")
    return factory.base_dir


def run(factory: ReconcilerFactory, client: object = None, budget: float = 5.0) -> ReconcileOutcome:
    return run_reconcile(
        factory, Request("default", "web"), client, budget_seconds=budget, clock=VirtualClock(EPOCH), seed=b"seed"
    )


# -- results -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return None", Result()),
        ("return 0", Result()),
        ("return {}", Result()),
        ("return Result()", Result()),
        ("return Result(requeue=True)", Result(requeue=True)),
        ("return Result(requeue_after=timedelta(minutes=1))", Result(requeue_after=60.0)),
        ("return {'requeue': True}", Result(requeue=True)),
        ("return {'requeue_after': 5}", Result(requeue_after=5.0)),
        ("return {'requeue_after': 0}", Result()),
        ("return {'requeue': True, 'requeue_after': 2.5}", Result(requeue=True, requeue_after=2.5)),
        ("return Mine(True, None)", Result(requeue=True)),
        ("return Mine(False, timedelta(seconds=30))", Result(requeue_after=30.0)),
    ],
)
def test_accepted_results(controller: Callable[[str], ReconcilerFactory], body: str, expected: Result) -> None:
    factory = controller(
        f"""
        from datetime import timedelta
        from dataclasses import dataclass
        from kamera_cli import Result

        @dataclass
        class Mine:
            requeue: bool
            requeue_after: object

        def reconcile(request):
            {body}
        """
    )
    outcome = run(factory)
    assert outcome == ReconcileOutcome("ok", result=expected)
    assert outcome.describe() == (
        f"requeue after {expected.requeue_after:g}s"
        if expected.requeue_after
        else ("requeue" if expected.requeue else "done")
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return {'requeue': True, 'retry': 3}", "reconcile returned a dict with unknown key(s) 'retry'"),
        ("return {'requeue': 'yes'}", "the returned dict's 'requeue' must be True or False, not 'yes'"),
        ("return {'requeue_after': -1}", "'requeue_after' must not be negative (got -1 s)"),
        ("return {'requeue_after': '5s'}", "'requeue_after' must be a number of seconds or a datetime.timedelta"),
        ("return 'done'", "reconcile returned 'done' (str); return None, a kamera Result"),
    ],
)
def test_rejected_results_are_controller_errors(
    controller: Callable[[str], ReconcilerFactory], body: str, expected: str
) -> None:
    outcome = run(controller(f"def reconcile(request):\n    {body}\n"))
    assert outcome.kind == "exception" and outcome.result is None
    assert outcome.error is not None and outcome.error.type_name == "InvalidResult"
    assert expected in outcome.error.message


def test_result_value_semantics() -> None:
    assert Result(requeue_after=3) == Result(requeue_after=3.0)
    assert Result(requeue_after=3).wants_requeue and not Result().wants_requeue
    assert Request("ns", "a").key == "ns/a" and Request(None, "node-1").key == "node-1"
    import kamera_cli

    assert kamera_cli.Request is Request and kamera_cli.Result is Result
    with pytest.raises(ValueError, match="must not be negative"):
        Result(requeue_after=-2)


# -- errors --------------------------------------------------------------------------------------------------------
def test_exception_is_reported_with_the_users_frames_only(controller: Callable[[str], ReconcilerFactory]) -> None:
    factory = controller(
        """
        def lookup(table, key):
            return table[key]

        def reconcile(request):
            return lookup({}, request.name)
        """
    )
    outcome = run(factory)
    assert outcome.kind == "exception" and outcome.result is None
    error = outcome.error
    assert error is not None and (error.type_name, error.message, error.api_status) == ("KeyError", "'web'", None)
    assert error.traceback.startswith("Traceback (most recent call last):\n")
    assert 'File "ctrl.py", line 6, in reconcile' in error.traceback
    assert 'File "ctrl.py", line 3, in lookup' in error.traceback
    assert error.traceback.endswith("KeyError: 'web'\n")
    assert outcome.describe() == "exception: KeyError: 'web'"
    assert "kamera_cli" not in error.traceback and "threading" not in error.traceback


def test_api_exception_is_an_api_error_with_its_status(controller: Callable[[str], ReconcilerFactory]) -> None:
    factory = controller(
        """
        import json
        from kubernetes.client.exceptions import ApiException

        def reconcile(request):
            error = ApiException(status=409, reason="Conflict")
            error.body = json.dumps({"kind": "Status", "message": "the object has been modified"})
            raise error
        """
    )
    outcome = run(factory)
    assert outcome.kind == "api-error"
    assert outcome.result == Result(requeue=True)
    assert outcome.error is not None and outcome.error.api_status == 409
    assert outcome.error.message == "409 Conflict: the object has been modified"


@pytest.mark.parametrize(
    ("body", "type_name", "message"),
    [
        ("sys.exit(2)", "SystemExit", "sys.exit(2) called inside a reconcile"),
        ("sys.exit()", "SystemExit", "sys.exit(None) called inside a reconcile"),
        ("raise SystemExit('bye')", "SystemExit", "sys.exit('bye') called inside a reconcile"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt", "KeyboardInterrupt raised inside a reconcile"),
    ],
)
def test_exits_are_reported(
    controller: Callable[[str], ReconcilerFactory], body: str, type_name: str, message: str
) -> None:
    outcome = run(controller(f"import sys\ndef reconcile(request):\n    {body}\n"))
    assert outcome.kind == "exit"
    assert outcome.error is not None and (outcome.error.type_name, outcome.error.message) == (type_name, message)
    assert 'File "ctrl.py", line 3, in reconcile' in outcome.error.traceback


def test_busy_loop_is_reported_as_a_timeout_within_the_budget(
    controller: Callable[[str], ReconcilerFactory],
) -> None:
    factory = controller(
        """
        def spin():
            n = 0
            while True:
                n += 1

        def reconcile(request):
            spin()
        """
    )
    stuck = controller_in(factory)
    warm = load_reconciler("ok.py:reconcile", stuck, scenario="demo", controller="ok")
    try:
        assert run(warm).kind == "ok"  # a worker thread exists now
        threads_before = set(threading.enumerate())
        started = time.perf_counter()
        outcome = run(factory, budget=0.3)
        elapsed = time.perf_counter() - started
        assert outcome.kind == "timeout"
        # well short of the default 10 s budget; loose above, as a loaded machine stretches wall time
        assert 0.3 <= elapsed < 5.0
        assert outcome.error is not None and "did not return within 0.3 s of wall-clock time" in outcome.error.message
        assert "in spin" in outcome.error.traceback and "kamera_cli" not in outcome.error.traceback
        # the overrunning worker thread was asked to unwind, and did
        deadline = time.perf_counter() + 2
        while len(threading.enumerate()) >= len(threads_before) and time.perf_counter() < deadline:
            time.sleep(0.01)
        assert set(threading.enumerate()) < threads_before
        # the next reconcile gets a fresh worker
        assert run(warm).kind == "ok"
    finally:
        warm.unload()
    # and kamera's globals are back to the real ones
    assert time.time() > EPOCH + 1e6


def test_a_busy_loop_handed_to_an_executor_is_stopped_and_the_pool_lives_on(
    controller: Callable[[str], ReconcilerFactory],
) -> None:
    """kopf runs a sync handler on its executor's thread: the loop that spins is there, not on the worker."""
    factory = controller(
        """
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        POOL = ThreadPoolExecutor(1)  # the module's own, as kopf's is (not started by the reconcile)
        POOL.submit(int).result()

        def spin():
            while True:
                pass

        def reconcile(request):
            if request.name == "again":
                return {"requeue_after": POOL.submit(lambda: 7).result()}
            POOL.submit(spin).result()
        """
    )
    outcome = run(factory, budget=0.3)
    assert outcome.kind == "timeout"

    def spinning() -> bool:
        return any(s.name == "spin" for f in sys._current_frames().values() for s in traceback.extract_stack(f))

    deadline = time.perf_counter() + 5
    while spinning() and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert not spinning()
    # the pool's thread was not fenced: the next step's work on it goes through
    again = run_reconcile(factory, Request("default", "again"), None, budget_seconds=5, clock=VirtualClock(EPOCH),
                          seed=b"seed")
    assert again.kind == "ok" and again.result is not None and again.result.requeue_after == 7


def test_work_handed_to_an_executor_counts_as_the_calls_cpu(
    controller: Callable[[str], ReconcilerFactory],
) -> None:
    """A kopf sync handler computes on its executor's thread while the worker's event loop waits: its
    CPU is the call's (``budget.CallClock``). Here the handed-over work computes a little and waits a
    little, past the budget: as a call kept from the CPU by load, it is given more wall time. Judged by
    the worker's clock alone (which stays idle) it overran at its budget."""
    factory = controller(
        """
        import threading
        from concurrent.futures import ThreadPoolExecutor

        POOL = ThreadPoolExecutor(1)
        POOL.submit(int).result()

        def work():
            pause = threading.Event()
            for _ in range(8):
                sum(range(100_000))  # a few milliseconds on the CPU
                pause.wait(0.05)  # then a real wait: the CPU is someone else's
            return 1

        def reconcile(request):
            return {"requeue_after": POOL.submit(work).result()}
        """
    )
    outcome = run(factory, budget=0.2)
    assert outcome.kind == "ok", outcome


def test_virtual_sleep_does_not_count_against_the_budget(controller: Callable[[str], ReconcilerFactory]) -> None:
    factory = controller(
        "import time\ndef reconcile(request):\n    time.sleep(3600)\n    return {'requeue_after': 1}\n"
    )
    clock = VirtualClock(EPOCH)
    outcome = run_reconcile(factory, Request("default", "web"), None, budget_seconds=0.5, clock=clock, seed=b"")
    assert outcome.kind == "ok" and clock.now == EPOCH + 3600


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.2)
    yield server
    server.close()


def test_connection_attempt_is_reported_even_when_swallowed(
    controller: Callable[[str], ReconcilerFactory], listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    factory = controller(
        f"""
        import socket

        def reconcile(request):
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=1).sendall(b"hello")
            except OSError:
                pass
            sock = socket.socket()
            try:
                sock.connect(("127.0.0.1", {port}))
            except ConnectionError:
                return None
            finally:
                sock.close()
        """
    )
    outcome = run(factory)
    assert outcome.kind == "network"
    assert outcome.network == (f"127.0.0.1:{port}", f"127.0.0.1:{port}")
    assert (
        outcome.error is not None and f"tried to open a network connection to 127.0.0.1:{port}" in outcome.error.message
    )
    assert 'File "ctrl.py", line 6, in reconcile' in outcome.error.traceback
    with pytest.raises(socket.timeout):
        listener.accept()
    # outside a reconcile, sockets work again
    probe = socket.create_connection(("127.0.0.1", port), timeout=1)
    accepted, _ = listener.accept()
    accepted.close()
    probe.close()


def test_resolving_a_remote_name_is_a_network_attempt(controller: Callable[[str], ReconcilerFactory]) -> None:
    factory = controller(
        """
        import socket

        def reconcile(request):
            socket.getaddrinfo("localhost", 80)  # local names are fine
            socket.getaddrinfo("example.com", 443)
        """
    )
    outcome = run(factory)
    assert outcome.kind == "network" and outcome.network == ("example.com:443",)


def test_a_name_a_fake_by_url_answers_for_resolves_to_an_address_nothing_listens_on(
        controller: Callable[[str], ReconcilerFactory]) -> None:
    """dask-kubernetes resolves its scheduler's Service before it asks it over HTTP: a host:port some fake
    by URL covers resolves (whatever the scheme: resolving comes first), to TEST-NET-1, which is neither
    this machine's loopback nor routed; every other name, and the faked one at another port, is refused as
    before, and a connection to the address is refused by the fence like any other."""
    factory = controller(
        """
        import socket

        SEEN = []

        def reconcile(request):
            SEEN.append(socket.getaddrinfo("simple-scheduler.default", 8787, type=socket.SOCK_STREAM))
            SEEN.append(socket.getaddrinfo(b"SIMPLE-scheduler.default", "8787", socket.AF_INET6)[0][4][0])
            for host, port in (("simple-scheduler.default", 8786), ("example.com", 8787)):
                try:
                    socket.getaddrinfo(host, port)
                except OSError as exc:
                    SEEN.append(type(exc).__name__)
            socket.create_connection(SEEN[0][0][4])
        """
    )
    undo = resolve_faked_hosts([parse_url_pattern("http://*-scheduler.*:8787/api/**")])
    try:
        outcome = run(factory)
    finally:
        undo()
    assert factory.module is not None
    resolved, v6, *refused = factory.module.SEEN
    assert resolved == [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("192.0.2.1", 8787))]
    assert v6 == "100::1" and not ipaddress.ip_address(resolved[0][4][0]).is_loopback
    assert refused == ["NetworkBlocked", "NetworkBlocked"]
    assert outcome.kind == "network"
    assert outcome.network == ("simple-scheduler.default:8786", "example.com:8787", "192.0.2.1:8787")
    again = run(factory)  # the fakes gone, the name is refused again
    assert again.kind == "network" and again.network == ("simple-scheduler.default:8787",)


class CrashHere(ReconcileAbort):
    pass


def test_reconcile_abort_propagates_untouched_and_globals_are_restored(
    controller: Callable[[str], ReconcilerFactory],
) -> None:
    import datetime
    import random

    factory = controller(
        """
        def reconcile(request, client):
            client()
        """
    )

    def crash() -> None:
        raise CrashHere("after write 1")

    state = random.getstate()
    with pytest.raises(CrashHere, match="after write 1"):
        run(factory, client=crash)
    assert time.time() > EPOCH + 1e6
    assert datetime.datetime.__module__ == "datetime" and type(datetime.datetime.now()) is datetime.datetime
    assert datetime.datetime.now.__self__ is datetime.datetime  # the real class, not the stand-in
    assert random.getstate() == state


def test_a_failure_inside_kamera_itself_is_an_internal_error_not_a_finding(
    controller: Callable[[str], ReconcilerFactory],
) -> None:
    from kamera_cli.errors import InternalError, Problem

    factory = controller("def reconcile(request, client):\n    client()\n")

    def broken_server() -> None:  # stands in for a bug in the simulated API server
        Problem.render(None)  # type: ignore[arg-type]

    with pytest.raises(InternalError, match="a bug in kamera, not in the controller"):
        run(factory, client=broken_server)


def test_datagrams_are_network_attempts_too(controller: Callable[[str], ReconcilerFactory]) -> None:
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.settimeout(0.2)
    port = receiver.getsockname()[1]
    try:
        factory = controller(
            f"""
            import socket

            def reconcile(request):
                metrics = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                try:
                    metrics.sendto(b"reconciles:1|c", ("127.0.0.1", {port}))
                except OSError:
                    pass
                finally:
                    metrics.close()
            """
        )
        outcome = run(factory)
        assert outcome.kind == "network" and outcome.network == (f"127.0.0.1:{port}",)
        with pytest.raises(socket.timeout):
            receiver.recvfrom(100)
    finally:
        receiver.close()


def test_a_warning_shown_once_is_shown_in_every_step(controller: Callable[[str], ReconcilerFactory],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What a step prints must not depend on the steps this process ran before (a memoised step
    replays its first run's log; a split search's processes run different steps first), and a filter
    a controller sets stays in its step."""
    import warnings

    shown: list[str] = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, *args, **kwargs: shown.append(str(message)))

    factory = controller(
        """
        import warnings

        def reconcile(request):
            warnings.warn("this client is too old", UserWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
        """
    )
    filters = list(warnings.filters)
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # shown once per place: what an unconfigured process does
        filters = list(warnings.filters)
        run(factory)
        run(factory)
        assert warnings.filters == filters
    assert shown == ["this client is too old", "this client is too old"]
