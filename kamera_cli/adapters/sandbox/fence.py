"""Virtual time, seeded randomness and a network fence around one call into user code.

Why: kamera explores states by fingerprint, so a reconcile must be a function of the state it runs
in.  Wall-clock time, process-random numbers and the network are the usual ways a controller stops
being one.  While a sandbox is active:

* ``time.time``/``time_ns``/``monotonic``/``monotonic_ns``/``perf_counter``/``perf_counter_ns`` read
  a :class:`VirtualClock`; ``time.sleep`` advances it and returns at once; ``time.gmtime``,
  ``localtime``, ``ctime`` and ``strftime`` without an explicit time use it too.  The virtual machine
  runs in UTC, so naive ``datetime.now()``/``today()`` and ``time.localtime()`` are UTC.
* ``datetime.datetime`` and ``datetime.date`` are replaced (the freezegun way) by subclasses whose
  ``now``/``utcnow``/``today``/``fromtimestamp`` read the clock; they construct and return *real*
  ``datetime`` objects, and ``isinstance``/``issubclass`` treat real and stand-in classes as one.
* the ``random`` module's functions (``random.random()``, and ``from random import choice`` bindings
  in user modules) draw from a ``random.Random`` seeded from the step's seed, created on first use;
  the process's own generator is never touched.  ``uuid.uuid4``/``uuid.uuid1`` draw from it too.
  ``os.urandom``, ``secrets`` and ``random.SystemRandom`` are deliberately left alone: code that asks
  for OS entropy is asking for unpredictability, and faking it silently could hide a real bug.
  ``random.Random()`` instances a controller creates itself are seeded from the OS too.
* ``signal.signal`` records the controller's handler and returns the one it set before, without
  installing it: the process and its signals are kamera's, and a step may run on a worker thread.
* opening a network connection (``socket.connect``/``connect_ex``, ``socket.create_connection``,
  a datagram ``sendto``, resolving a non-local name with ``getaddrinfo``) raises
  :class:`NetworkBlocked` inside the user code and is recorded on the side, so kamera reports it
  even when the controller catches the error.

Patching happens at module level (the ``time``, ``datetime``, ``uuid`` and ``socket`` modules) and in
the user's own modules that imported these names directly (``from time import time``); that second
list is computed once per loaded module set by :func:`plan_for_modules`.  Everything is put back on
exit, including when a ``BaseException`` passes through.  Only one sandbox may be active at a time
per process; the stand-ins read the active one, and fall back to the real functions when none is.
"""

from __future__ import annotations

import datetime as _dt
import random
import signal
import socket
import sys
import time
import traceback
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kamera_cli.adapters.sandbox.addresses import faked_address, format_address, is_local_name
from kamera_cli.adapters.sandbox.child_processes import ProcessAttempt, ProcessRefused, command_line
from kamera_cli.adapters.sandbox.observed import NetworkAttempt, NetworkBlocked, SandboxRun, VirtualClock
from kamera_cli.adapters.sandbox.threads import fenced_here, note_thread_attempt, stop_if_outlived

__all__ = [
    "NetworkAttempt",
    "NetworkBlocked",
    "PatchPlan",
    "SandboxRun",
    "VirtualClock",
    "note_network_attempt",
    "plan_for_modules",
    "sandboxed",
]


_ACTIVE: SandboxRun | None = None

# ---------------------------------------------------------------------------------------------------------------
# the real things, captured once at import
_real_time = time.time
_real_time_ns = time.time_ns
_real_monotonic = time.monotonic
_real_monotonic_ns = time.monotonic_ns
_real_perf_counter = time.perf_counter
_real_perf_counter_ns = time.perf_counter_ns
_real_sleep = time.sleep
_real_gmtime = time.gmtime
_real_localtime = time.localtime
_real_ctime = time.ctime
_real_strftime = time.strftime
_RealDatetime = _dt.datetime
_RealDate = _dt.date
_real_uuid4 = uuid.uuid4
_real_uuid1 = uuid.uuid1
_real_getaddrinfo = socket.getaddrinfo
_real_create_connection = socket.create_connection
_RealSocket = socket.socket
_real_connect = _RealSocket.connect
_real_connect_ex = _RealSocket.connect_ex
_real_sendto = _RealSocket.sendto
_UTC = _dt.timezone.utc


def _ns(seconds: float) -> int:
    return round(seconds * 1_000_000_000)


def _run() -> SandboxRun | None:
    """The sandboxed call running now, unless the caller is a thread that outlived its own step (or was
    abandoned at its budget): its clock reads and random draws must never be counted in, or change
    what, whichever step happens to run when it wakes; it gets the real ones."""
    run = _ACTIVE
    if run is not None and fenced_here():
        return None
    return run


# ---------------------------------------------------------------------------------------------------------------
# time
def _read_clock(run: SandboxRun) -> float:
    """The virtual time, counted as read (``SandboxRun.clock_reads``) unless ``logging`` stamps a record
    with it: a log line's time changes what is printed, never what the code does next."""
    try:
        caller = sys._getframe(2).f_globals.get("__name__")
    except ValueError:  # called from the bottom of a thread's stack: not logging
        caller = None
    if caller != "logging":
        run.clock_reads += 1
    return run.clock.now


def _time() -> float:
    run = _run()
    return _read_clock(run) if run is not None else _real_time()


def _time_ns() -> int:
    run = _run()
    return _ns(_read_clock(run)) if run is not None else _real_time_ns()


def _monotonic() -> float:
    run = _run()
    return _read_clock(run) if run is not None else _real_monotonic()


def _monotonic_ns() -> int:
    run = _run()
    return _ns(_read_clock(run)) if run is not None else _real_monotonic_ns()


def _perf_counter() -> float:
    run = _run()
    return _read_clock(run) if run is not None else _real_perf_counter()


def _perf_counter_ns() -> int:
    run = _run()
    return _ns(_read_clock(run)) if run is not None else _real_perf_counter_ns()


def _sleep(secs: float, /) -> None:
    stop_if_outlived(f"time.sleep({secs})")
    run = _ACTIVE
    if run is None:
        _real_sleep(secs)
        return
    seconds = float(secs)
    if seconds != seconds:  # NaN, as the real sleep rejects it
        raise ValueError("Invalid value NaN (not a number)")
    if run.on_sleep is not None and seconds > 0:
        run.on_sleep(seconds)
        run = _ACTIVE or run  # a program suspended at its sleep wakes in a later step's sandbox
    run.clock.advance(seconds)


def _gmtime(secs: float | None = None, /) -> time.struct_time:
    run = _run()
    if secs is None and run is not None:
        return _real_gmtime(_read_clock(run))
    return _real_gmtime(secs)


def _localtime(secs: float | None = None, /) -> time.struct_time:
    run = _run()
    if run is None:
        return _real_localtime(secs)
    return _real_gmtime(_read_clock(run) if secs is None else secs)


def _ctime(secs: float | None = None, /) -> str:
    run = _run()
    if run is None:
        return _real_ctime(secs)
    return time.asctime(_real_gmtime(_read_clock(run) if secs is None else secs))


def _strftime(format: str, t: Any = None, /) -> str:
    run = _run()
    if t is None:
        if run is None:
            return _real_strftime(format)
        t = _real_gmtime(_read_clock(run))
    return _real_strftime(format, t)


# ---------------------------------------------------------------------------------------------------------------
# datetime
class _StandInMeta(type):
    """Makes ``isinstance(real_datetime, datetime.datetime)`` hold while the stand-in is installed."""

    _real: type

    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, cls._real)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._real)

    # ``klass == datetime.datetime`` in a library that captured the real class before the swap
    # (kubernetes_asyncio's deserializer) must still hold: a metaclass's __eq__ is tried first
    def __eq__(cls, other: object) -> bool:
        return other is cls or other is cls._real

    def __ne__(cls, other: object) -> bool:
        return not (other is cls or other is cls._real)

    __hash__ = type.__hash__


class _VirtualDate(_RealDate, metaclass=_StandInMeta):
    _real = _RealDate

    def __new__(cls, *args: Any, **kwargs: Any) -> _VirtualDate:
        return _RealDate(*args, **kwargs)  # type: ignore[return-value]

    @classmethod
    def today(cls) -> _VirtualDate:
        run = _run()
        if run is None:
            return _RealDate.today()  # type: ignore[return-value]
        return _RealDatetime.fromtimestamp(_read_clock(run), _UTC).date()  # type: ignore[return-value]

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return _pydantic_schema("date_schema")

    @classmethod
    def fromtimestamp(cls, t: float) -> _VirtualDate:
        if _ACTIVE is None:
            return _RealDate.fromtimestamp(t)  # type: ignore[return-value]
        return _RealDatetime.fromtimestamp(t, _UTC).date()  # type: ignore[return-value]


class _VirtualDatetime(_RealDatetime, metaclass=_StandInMeta):
    _real = _RealDatetime

    def __new__(cls, *args: Any, **kwargs: Any) -> _VirtualDatetime:
        return _RealDatetime(*args, **kwargs)  # type: ignore[return-value]

    @classmethod
    def now(cls, tz: _dt.tzinfo | None = None) -> _VirtualDatetime:
        run = _run()
        if run is None:
            return _RealDatetime.now(tz)  # type: ignore[return-value]
        return _from_seconds(_read_clock(run), tz)  # type: ignore[return-value]

    @classmethod
    def utcnow(cls) -> _VirtualDatetime:
        run = _run()
        seconds = _read_clock(run) if run is not None else _real_time()
        return _RealDatetime.fromtimestamp(seconds, _UTC).replace(tzinfo=None)  # type: ignore[return-value]

    @classmethod
    def today(cls) -> _VirtualDatetime:
        return cls.now()

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        return _pydantic_schema("datetime_schema")

    @classmethod
    def fromtimestamp(cls, t: float, tz: _dt.tzinfo | None = None) -> _VirtualDatetime:
        if _ACTIVE is None:
            return _RealDatetime.fromtimestamp(t, tz)  # type: ignore[return-value]
        return _from_seconds(t, tz)  # type: ignore[return-value]


def _pydantic_schema(name: str) -> Any:
    """The plain date/datetime schema, for pydantic models (the kubernetes client's, v37+) whose module
    is first imported during a reconcile and therefore sees the stand-in class in its annotations."""
    from pydantic_core import core_schema

    return getattr(core_schema, name)()


def _from_seconds(seconds: float, tz: _dt.tzinfo | None) -> _dt.datetime:
    if tz is None:  # the virtual machine's local zone is UTC
        return _RealDatetime.fromtimestamp(seconds, _UTC).replace(tzinfo=None)
    return _RealDatetime.fromtimestamp(seconds, tz)


for _cls, _name in ((_VirtualDate, "date"), (_VirtualDatetime, "datetime")):
    _cls.__module__ = "datetime"
    _cls.__name__ = _name
    _cls.__qualname__ = _name


# ---------------------------------------------------------------------------------------------------------------
# random: the module-level functions (and ``from random import choice`` bindings of them) draw from
# the run's own generator; the process generator is never touched, so nothing needs restoring.
_RANDOM_NAMES = tuple(
    sorted(
        name
        for name in random.__all__
        if callable(getattr(random, name, None)) and not isinstance(getattr(random, name), type)
    )
)


def _random_stand_in(name: str) -> Any:
    real = getattr(random, name)

    def stand_in(*args: Any, **kwargs: Any) -> Any:
        run = _run()
        if run is None:
            return real(*args, **kwargs)
        return getattr(run.rng(), name)(*args, **kwargs)

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = real.__doc__
    return stand_in


_RANDOM_PATCHES = tuple((random, name, getattr(random, name), _random_stand_in(name)) for name in _RANDOM_NAMES)


# ---------------------------------------------------------------------------------------------------------------
# uuid
def _uuid4() -> uuid.UUID:
    run = _run()
    if run is None:
        return _real_uuid4()
    return uuid.UUID(int=run.rng().getrandbits(128), version=4)


def _uuid1(node: int | None = None, clock_seq: int | None = None) -> uuid.UUID:
    run = _run()
    if run is None:
        return _real_uuid1(node, clock_seq)
    # RFC 4122 time: 100 ns intervals since 1582-10-15; node drawn from the seeded generator, as
    # uuid1 does when the MAC address is unknown (multicast bit set).
    timestamp = _ns(_read_clock(run)) // 100 + 0x01B21DD213814000
    if clock_seq is None:
        clock_seq = run.rng().getrandbits(14)
    if node is None:
        node = run.rng().getrandbits(48) | (1 << 40)
    return uuid.UUID(
        fields=(
            timestamp & 0xFFFFFFFF,
            (timestamp >> 32) & 0xFFFF,
            (timestamp >> 48) & 0x0FFF,
            (clock_seq >> 8) & 0x3F,
            clock_seq & 0xFF,
            node,
        ),
        version=1,
    )


# ---------------------------------------------------------------------------------------------------------------
# network
def note_network_attempt(address: str) -> None:
    """Record a refused connection to ``address`` as the running step's network attempt (a finding even
    when the controller catches the error): the fence's own refusals, and the containment's
    (``containment.observe_refusals``, which the simulator wires to this)."""
    run = _ACTIVE
    stack = tuple(traceback.extract_stack()[:-2])
    # a thread a reconcile started: its own step's finding, whichever step runs now (sandbox/threads.py)
    if note_thread_attempt(f"a connection to {address}") is None and run is not None:
        run.network.append(NetworkAttempt(address, stack))


def network_blocked(address: str) -> NetworkBlocked:
    note_network_attempt(address)
    return NetworkBlocked(
        111,
        f"kamera: connection to {address} refused: a controller under kamera must not open network "
        "connections of its own (the simulated API server is reached through the kubernetes client)",
    )


def process_refused(event: str, args: tuple[Any, ...]) -> ProcessRefused | None:
    """What the worker's audit hook raises for a process started by user code: None when no sandboxed
    call runs (kamera's own forks between steps) or its controller allows processes; otherwise the
    attempt is recorded — a finding even when the controller swallows the error."""
    run = _ACTIVE
    attempt = ProcessAttempt(event, command_line(event, args), tuple(traceback.extract_stack()[:-2]))
    # a thread a reconcile started is refused whatever its controller allows: its step's finding
    if note_thread_attempt(f"a process: {attempt.describe()}") is None:
        if run is None or run.processes_allowed:
            return None
        run.processes.append(attempt)
    return ProcessRefused(
        1, f"kamera: starting a process ({attempt.describe()}) is refused: kamera cannot model what a child "
           "process does (fake the tool with `fakes:`, or set `processes: allowed` on the controller)")


def _connect(self: socket.socket, address: Any, /) -> None:
    if _ACTIVE is None:
        return _real_connect(self, address)
    raise network_blocked(format_address(address))


def _connect_ex(self: socket.socket, address: Any, /) -> int:
    if _ACTIVE is None:
        return _real_connect_ex(self, address)
    raise network_blocked(format_address(address))


def _sendto(self: socket.socket, data: Any, *args: Any) -> int:
    if _ACTIVE is None:
        return _real_sendto(self, data, *args)
    return _refuse_datagram(args[-1] if args else None)


def _refuse_datagram(address: object) -> int:
    raise network_blocked(format_address(address))


def _create_connection(address: tuple[str, int], *args: Any, **kwargs: Any) -> socket.socket:
    if _ACTIVE is None:
        return _real_create_connection(address, *args, **kwargs)
    raise network_blocked(format_address(address))


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    if _ACTIVE is not None and not is_local_name(host):
        # a name a fake by URL answers for resolves (an address no connection reaches: addresses.py)
        faked = faked_address(host, port, args[0] if args else kwargs.get("family", 0))
        if faked is None:
            raise network_blocked(format_address((host, port)))
        stop_if_outlived(f"resolving {format_address((host, port))}")
        return _real_getaddrinfo(faked, port, *args, **kwargs)  # a numeric address: no lookup
    return _real_getaddrinfo(host, port, *args, **kwargs)


# ---------------------------------------------------------------------------------------------------------------
# patch plans
#: (owner, attribute, real, stand-in) for the process-wide patches
_real_signal = signal.signal
#: what user code asked ``signal.signal`` for, by signal number (recorded, never installed)
_USER_HANDLERS: dict[int, Any] = {}


def _signal(signalnum: Any, handler: Any, /) -> Any:
    """A controller's signal handler is recorded, not installed: the process is kamera's (its own SIGTERM
    and SIGUSR1 handling must stay), and a module re-imported on a step's worker thread would otherwise
    fail with "signal only works in main thread". Returns the handler the controller set before, as
    ``signal.signal`` does."""
    number = int(signalnum)
    previous = _USER_HANDLERS.get(number, signal.getsignal(number))  # getsignal refuses unknown numbers
    _USER_HANDLERS[number] = handler
    return previous


_GLOBAL_PATCHES: tuple[tuple[Any, str, Any, Any], ...] = (
    (time, "time", _real_time, _time),
    (signal, "signal", _real_signal, _signal),
    (time, "time_ns", _real_time_ns, _time_ns),
    (time, "monotonic", _real_monotonic, _monotonic),
    (time, "monotonic_ns", _real_monotonic_ns, _monotonic_ns),
    (time, "perf_counter", _real_perf_counter, _perf_counter),
    (time, "perf_counter_ns", _real_perf_counter_ns, _perf_counter_ns),
    (time, "sleep", _real_sleep, _sleep),
    (time, "gmtime", _real_gmtime, _gmtime),
    (time, "localtime", _real_localtime, _localtime),
    (time, "ctime", _real_ctime, _ctime),
    (time, "strftime", _real_strftime, _strftime),
    (_dt, "datetime", _RealDatetime, _VirtualDatetime),
    (_dt, "date", _RealDate, _VirtualDate),
    (uuid, "uuid4", _real_uuid4, _uuid4),
    (uuid, "uuid1", _real_uuid1, _uuid1),
    (socket, "getaddrinfo", _real_getaddrinfo, _getaddrinfo),
    (socket, "create_connection", _real_create_connection, _create_connection),
    (_RealSocket, "connect", None, _connect),  # None: inherited from _socket.socket, delete to restore
    (_RealSocket, "connect_ex", None, _connect_ex),
    (_RealSocket, "sendto", None, _sendto),
    *_RANDOM_PATCHES,
)

#: id(real) -> stand-in, for finding direct imports (``from time import time``) in user modules
_STAND_IN_FOR: dict[int, Any] = {
    id(real): stand_in for _owner, _attr, real, stand_in in _GLOBAL_PATCHES if real is not None
}
_KEEP_ALIVE = tuple(real for _owner, _attr, real, _stand_in in _GLOBAL_PATCHES)
_REAL_FOR: dict[int, Any] = {
    id(stand_in): real for _owner, _attr, real, stand_in in _GLOBAL_PATCHES if real is not None
}

#: the patches that are safe while user modules are being imported (no class swaps: a library
#: imported for the first time would otherwise keep the stand-in classes for good)
_IMPORT_PATCHES = tuple(p for p in _GLOBAL_PATCHES if p[0] is not _dt)


@dataclass(frozen=True, slots=True)
class PatchPlan:
    """Module-global bindings in user modules to swap for stand-ins: ``(namespace, name, real, stand_in)``."""

    entries: tuple[tuple[dict[str, Any], str, Any, Any], ...] = ()


EMPTY_PLAN = PatchPlan()


def plan_for_modules(modules: Iterable[ModuleType]) -> PatchPlan:
    """Find every direct import of a virtualised name in the given (user) modules, once."""
    entries: list[tuple[dict[str, Any], str, Any, Any]] = []
    for module in modules:
        namespace = vars(module)
        for name, value in sorted(namespace.items()):
            stand_in = _STAND_IN_FOR.get(id(value))
            if stand_in is not None:
                entries.append((namespace, name, value, stand_in))
    return PatchPlan(tuple(entries))


def unbind_stand_ins(modules: Iterable[ModuleType]) -> None:
    """Give user modules imported inside a sandbox the real functions back (``from time import time``).

    The plan then swaps them for stand-ins only while a reconcile runs, like any other direct import.
    """
    for module in modules:
        namespace = vars(module)
        for name, value in list(namespace.items()):
            real = _REAL_FOR.get(id(value))
            if real is not None and _STAND_IN_FOR.get(id(real)) is value:
                namespace[name] = real


@contextmanager
def sandboxed(
    clock: VirtualClock, seed: bytes, plan: PatchPlan = EMPTY_PLAN, *, importing: bool = False
) -> Iterator[SandboxRun]:
    """Install every stand-in for the duration of the block; restore everything on any exit."""
    global _ACTIVE
    if _ACTIVE is not None:
        raise RuntimeError("kamera runs one sandboxed call at a time; a sandbox is already active")
    run = SandboxRun(clock, seed)
    patches = _IMPORT_PATCHES if importing else _GLOBAL_PATCHES
    applied_global = 0
    applied_user = 0
    try:
        for owner, attr, _real, stand_in in patches:
            setattr(owner, attr, stand_in)
            applied_global += 1
        for namespace, name, real, stand_in in plan.entries:
            if namespace.get(name) is real:
                namespace[name] = stand_in
            applied_user += 1
        _ACTIVE = run
        yield run
    finally:
        _ACTIVE = None
        for namespace, name, real, stand_in in plan.entries[:applied_user]:
            if namespace.get(name) is stand_in:
                namespace[name] = real
        for owner, attr, real, _stand_in in patches[:applied_global]:
            if real is None:
                delattr(owner, attr)
            else:
                setattr(owner, attr, real)


def advance_active_clock(seconds: float) -> None:
    """Move the running sandbox's virtual clock forward (an event loop jumping to its next timer)."""
    run = _run()
    if run is not None and seconds > 0:
        if run.on_sleep is not None:
            run.on_sleep(seconds)
            run = _ACTIVE or run
        run.clock.advance(seconds)


def active_run() -> SandboxRun | None:
    """The sandboxed call running now, if any (for a framework adapter's hooks)."""
    return _ACTIVE
