"""Virtual time and seeded randomness inside a reconcile, and their complete removal afterwards.

Covers: time/datetime/random/uuid follow the clock and the seed (same seed, same outputs; another
seed, other outputs); ``from datetime import datetime`` and ``from time import time`` in the user's
module are virtualised; isinstance checks keep working; time.sleep advances the clock; every global
is restored after a normal return and after an exception; the sandbox itself is cheap.
"""

from __future__ import annotations

import datetime
import random
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime as RealDatetime
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters import ReconcilerFactory, Request, VirtualClock, load_reconciler, run_reconcile
from kamera_cli.adapters.sandbox.fence import sandboxed

EPOCH = 1767225600.0  # 2026-01-01T00:00:00Z

RECORDER = """
import datetime as dt
import random
import time
import uuid
from datetime import datetime, date, timezone
from random import choice
from time import time as now_seconds, monotonic

OUT = []

def reconcile(request):
    started = monotonic()
    time.sleep(90)
    OUT.append({
        "time": time.time(),
        "from_time": now_seconds(),
        "time_ns": time.time_ns(),
        "slept": monotonic() - started,
        "dt_now": dt.datetime.now().isoformat(),
        "from_datetime_now": datetime.now().isoformat(),
        "aware": datetime.now(timezone.utc).isoformat(),
        "utcnow": datetime.utcnow().isoformat(),
        "today": date.today().isoformat(),
        "localtime": time.strftime("%Y-%m-%d %H:%M:%S"),
        "random": random.random(),
        "choice": choice("abcdefghij"),
        "randint": random.randint(0, 10**9),
        "uuid4": str(uuid.uuid4()),
        "uuid1": str(uuid.uuid1()),
        "isinstance": isinstance(datetime(2020, 1, 1), dt.datetime) and isinstance(datetime.now(), datetime),
        "is_date": isinstance(datetime.now(), date),
    })
    return None
"""


def write(base: Path, rel: str, text: str) -> Path:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[ReconcilerFactory]:
    write(tmp_path, "ctrl.py", RECORDER)
    factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="demo", controller="recorder")
    yield factory
    factory.unload()


def record(factory: ReconcilerFactory, *, seed: bytes, at: float = EPOCH) -> dict[str, object]:
    clock = VirtualClock(at)
    outcome = run_reconcile(factory, Request("default", "web"), None, budget_seconds=5, clock=clock, seed=seed)
    assert outcome.kind == "ok", outcome
    assert clock.now == at + 90
    assert factory.module is not None
    out: dict[str, object] = factory.module.OUT[-1]
    return out


def test_time_and_datetime_follow_the_clock(recorder: ReconcilerFactory) -> None:
    out = record(recorder, seed=b"a")
    assert out["time"] == out["from_time"] == EPOCH + 90
    assert out["time_ns"] == int((EPOCH + 90) * 1_000_000_000)
    assert out["slept"] == 90
    assert out["dt_now"] == out["from_datetime_now"] == "2026-01-01T00:01:30"
    assert out["aware"] == "2026-01-01T00:01:30+00:00"
    assert out["utcnow"] == "2026-01-01T00:01:30"
    assert out["today"] == "2026-01-01"
    assert out["localtime"] == "2026-01-01 00:01:30"
    assert out["isinstance"] is True and out["is_date"] is True
    later = record(recorder, seed=b"a", at=EPOCH + 86400)
    assert later["dt_now"] == "2026-01-02T00:01:30"


def test_same_seed_same_outputs_other_seed_other_outputs(recorder: ReconcilerFactory) -> None:
    random_keys = ("random", "choice", "randint", "uuid4", "uuid1")
    first = record(recorder, seed=b"state-1")
    again = record(recorder, seed=b"state-1")
    other = record(recorder, seed=b"state-2")
    assert first == again
    assert all(first[k] != other[k] for k in random_keys)
    assert uuid.UUID(str(first["uuid4"])).version == 4


def test_globals_are_restored_after_a_reconcile(recorder: ReconcilerFactory) -> None:
    random.seed(12345)
    expected_next = random.Random(12345).random()
    record(recorder, seed=b"x")
    assert random.random() == expected_next  # the process RNG continues where it was
    assert datetime.datetime is RealDatetime and datetime.date.__module__ == "datetime"
    assert type(datetime.datetime.now()) is RealDatetime
    assert abs(time.time() - RealDatetime.now().timestamp()) < 5
    assert recorder.module is not None
    module = vars(recorder.module)
    assert module["datetime"] is RealDatetime and module["now_seconds"] is time.time


def test_globals_are_restored_after_an_exception(tmp_path: Path) -> None:
    write(
        tmp_path,
        "ctrl.py",
        "from datetime import datetime\ndef reconcile(request):\n    raise RuntimeError(datetime.now())\n",
    )
    factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="demo", controller="boom")
    try:
        state = random.getstate()
        outcome = run_reconcile(
            factory, Request(None, "x"), None, budget_seconds=5, clock=VirtualClock(EPOCH), seed=b"s"
        )
        assert outcome.kind == "exception" and outcome.error is not None
        assert outcome.error.message == "2026-01-01 00:00:00"
        assert random.getstate() == state
        assert datetime.datetime is RealDatetime and abs(time.time() - RealDatetime.now().timestamp()) < 5
        assert factory.module is not None and vars(factory.module)["datetime"] is RealDatetime
    finally:
        factory.unload()


def test_sandbox_restores_on_base_exception() -> None:
    class Stop(BaseException):
        pass

    with pytest.raises(Stop), sandboxed(VirtualClock(0.0), b""):
        assert time.time() == 0.0 and datetime.datetime.now() == RealDatetime(1970, 1, 1)
        raise Stop
    assert datetime.datetime is RealDatetime and time.time() > EPOCH


def test_module_top_level_code_sees_the_simulation_epoch(tmp_path: Path) -> None:
    write(
        tmp_path,
        "ctrl.py",
        "import time, random\nSTARTED = time.time()\nTOKEN = random.random()\ndef reconcile(r): pass\n",
    )
    values = []
    for _ in range(2):
        factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="demo", controller="c")
        assert factory.module is not None
        values.append((factory.module.STARTED, factory.module.TOKEN))
        factory.unload()
    assert values[0] == values[1] and values[0][0] == EPOCH


def test_sandbox_is_cheap(recorder: ReconcilerFactory) -> None:
    plan = recorder.patch_plan()
    assert len(plan.entries) >= 3  # datetime, date, monotonic, now_seconds bindings found once
    started = time.perf_counter()
    for _ in range(2000):
        with sandboxed(VirtualClock(EPOCH), b"seed", plan):
            pass
    per_call = (time.perf_counter() - started) / 2000
    assert per_call < 200e-6, per_call


def test_only_one_sandbox_at_a_time() -> None:
    with (
        sandboxed(VirtualClock(0.0), b""),
        pytest.raises(RuntimeError, match="one sandboxed call at a time"),
        sandboxed(VirtualClock(0.0), b""),
    ):
        pass
    assert time.time() > EPOCH


def test_stand_ins_fall_back_to_real_behaviour_when_inactive() -> None:
    from kamera_cli.adapters.sandbox import fence as sandbox

    assert abs(sandbox._time() - time.time()) < 5
    assert sandbox._VirtualDatetime(2020, 1, 1) == RealDatetime(2020, 1, 1)
    assert isinstance(RealDatetime(2020, 1, 1), sandbox._VirtualDatetime)
    assert issubclass(RealDatetime, sandbox._VirtualDate)
    called: Callable[[], uuid.UUID] = sandbox._uuid4
    assert called() != called()


def test_kubernetes_models_first_imported_inside_a_reconcile_still_work(tmp_path: Path) -> None:
    import sys

    write(
        tmp_path,
        "ctrl.py",
        """
        from datetime import datetime, timezone
        from kubernetes import client

        def reconcile(request):
            # lazily imported by the client on first use: its module sees the stand-in datetime class
            spec = client.V1alpha2LeaseCandidateSpec(
                lease_name="x", binary_version="1", strategy="s", renew_time=datetime.now(timezone.utc)
            )
            parsed = client.V1alpha2LeaseCandidateSpec.from_dict(
                {"leaseName": "y", "binaryVersion": "1", "strategy": "s", "pingTime": "2020-01-02T03:04:05Z"}
            )
            text = client.ApiClient().sanitize_for_serialization(spec)["renewTime"]
            return {"requeue_after": parsed.ping_time.year + (1 if text == "2026-01-01T00:00:00+00:00" else 0)}
        """,
    )
    import kubernetes.client
    import kubernetes.client.models

    # force the lazy path: the model module is (re-)imported inside the reconcile, under the sandbox
    for module in (kubernetes.client, kubernetes.client.models):
        vars(module).pop("V1alpha2LeaseCandidateSpec", None)
    sys.modules.pop("kubernetes.client.models.v1alpha2_lease_candidate_spec", None)
    factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="demo", controller="k8s")
    try:
        outcome = run_reconcile(
            factory, Request(None, "x"), None, budget_seconds=5, clock=VirtualClock(EPOCH), seed=b""
        )
        assert outcome.kind == "ok", outcome.error
        assert outcome.result is not None and outcome.result.requeue_after == 2021.0
    finally:
        factory.unload()
    assert "kubernetes.client.models.v1alpha2_lease_candidate_spec" in sys.modules


def test_a_controllers_signal_handler_is_recorded_not_installed() -> None:
    """A module that calls ``signal.signal`` at import (k8s-sidecar's SIGTERM handler) may be re-imported on
    a step's worker thread, and the process's signals are kamera's: the handler is recorded, never installed."""
    import signal
    import threading

    before = signal.getsignal(signal.SIGTERM)
    answers: list[object] = []

    def handler(signum: int, frame: object) -> None:
        pass

    def install() -> None:
        answers.append(signal.signal(signal.SIGTERM, handler))
        answers.append(signal.signal(signal.SIGTERM, signal.SIG_DFL))

    with sandboxed(VirtualClock(0.0), b"seed"):
        worker = threading.Thread(target=install)
        worker.start()
        worker.join()
    assert answers[1] is handler  # the previous handler, as signal.signal returns it
    assert signal.getsignal(signal.SIGTERM) is before
    from kamera_cli.adapters.sandbox import fence

    assert signal.signal is fence._real_signal  # put back


@pytest.mark.parametrize(("event", "args", "shown"), [
    ("subprocess.Popen", ("sleep", ["sleep", "300"], None, None), "sleep 300"),
    ("subprocess.Popen", (None, "echo 'a b' | wc", None, None), "echo 'a b' | wc"),
    ("os.system", (b"ls -l",), "ls -l"),
    ("os.exec", ("/bin/true", ("true", "a b"), None), "true 'a b'"),
    ("os.posix_spawn", ("/bin/true", ["true"], {}), "true"),
    ("os.spawn", (0, "/bin/true", ["true", "x"], None), "true x"),
    ("pty.spawn", (["bash", "-i"],), "bash -i"),
    ("pty.spawn", ("bash",), "bash"),
    ("os.fork", (), ""),
])
def test_a_process_event_is_shown_as_its_command_line(event: str, args: tuple[Any, ...], shown: str) -> None:
    from kamera_cli.adapters.sandbox.child_processes import command_line

    assert command_line(event, args) == shown


def test_a_process_started_in_a_sandboxed_call_is_recorded_and_refused_unless_allowed() -> None:
    from kamera_cli.adapters.sandbox.child_processes import ProcessRefused
    from kamera_cli.adapters.sandbox.fence import process_refused

    assert process_refused("os.system", ("true",)) is None  # no call of user code runs: kamera's own
    with sandboxed(VirtualClock(0.0), b"s") as run:
        refused = process_refused("subprocess.Popen", ("kubectl", ["kubectl", "apply"], None, None))
        assert isinstance(refused, ProcessRefused) and "subprocess.Popen kubectl apply" in str(refused)
        assert [p.describe() for p in run.processes] == ["subprocess.Popen kubectl apply"]
        run.processes_allowed = True
        assert process_refused("os.fork", ()) is None
        assert len(run.processes) == 1


def _run_once(tmp_path: Path, code: str, budget: float = 5) -> Any:
    write(tmp_path, "ctrl.py", code)
    factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="demo", controller="odd")
    try:
        return run_reconcile(factory, Request("default", "x"), None, budget_seconds=budget,
                             clock=VirtualClock(EPOCH), seed=b"")
    finally:
        factory.unload()


def test_a_reconcile_that_closes_stdout_is_a_finding_and_breaks_nothing(tmp_path: Path) -> None:
    """It closed its own stream: a located finding, kamera still reads what it printed, and nothing
    breaks (issue #28)."""
    outcome = _run_once(tmp_path, """
        import sys
        def reconcile(request):
            print("before")
            sys.stdout.close()
            sys.stderr.close()
            print("after")
            return {"requeue_after": 5}
        """)
    assert outcome.kind == "exception" and outcome.error is not None
    assert outcome.error.summary().startswith("OutputClosed: closed sys.stdout and sys.stderr;")
    assert 'File "ctrl.py", line 5, in reconcile' in outcome.error.traceback, outcome.error.traceback
    assert outcome.output == "before\nafter"
    print("kamera's own stdout still works")


def test_a_returned_object_whose_attributes_never_answer_is_an_overrun(tmp_path: Path) -> None:
    """Reading the result runs under the step's budget: a timeout finding, not a kamera that hangs."""
    outcome = _run_once(tmp_path, """
        class Hang:
            def __getattr__(self, name):
                while True:
                    pass
        def reconcile(request):
            return Hang()
        """, budget=1)
    assert outcome.kind == "timeout"
    assert "__getattr__" in outcome.error.traceback
