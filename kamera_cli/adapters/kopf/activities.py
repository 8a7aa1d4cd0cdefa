"""What a kopf operator does before it processes its first event: connect, scan the API, start up.

Why a module of its own: kopf's reactor (``kopf/_core/reactor/running.py``, ``spawn_tasks``) does
three things before any watch starts, and each shapes every later step.  It logs in (the
``@kopf.on.login`` activity fills the credentials vault), it scans the cluster's API discovery for
the resources its handlers select (``kopf/_cogs/clients/scanning.py``, ``scan_resources``: whether a
resource has a ``status`` subresource decides where kopf patches handler results, and its singular
name, short names and categories decide which handlers select it), and it runs the
``@kopf.on.startup`` activity (``startup_cleanup_activities``) whose handlers pick settings.  kamera
does the same against the simulated API server instead of assuming answers.  The same task runs the
``@kopf.on.cleanup`` activity when the operator stops gracefully (``cleanup``), after every other task
ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import traceback
from collections.abc import AsyncIterator, Callable
from typing import Any

from kamera_cli.adapters.asyncio.loop import run_async

__all__ = ["ACTIVITY_ROUNDS", "LogCapture", "StartFailure", "cleanup", "connected", "has_cleanup", "scan", "start"]

#: rounds of a failing startup or login activity kamera runs before it concludes that the operator
#: never starts (kopf itself retries a failing activity handler until it succeeds or its ``retries=``
#: run out; a handler that fails the same way this many times is not going to succeed)
ACTIVITY_ROUNDS = 5


class LogCapture(logging.Handler):
    """What kopf logs as a failure while it runs: an exception (with its traceback), or a permanent
    failure.  kopf catches a handler's exception and only logs it; kamera makes that a finding."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        #: how an exception's traceback is told (the operator's: its own frames, paths relative)
        self.format_exc: Callable[[BaseException], str] = lambda exc: "".join(traceback.format_exception(exc))
        self.failures: list[str] = []
        #: the exceptions behind ``failures`` (for the user's file and line)
        self.errors: list[BaseException] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            if type(exc).__name__ in ("TemporaryError",):
                return  # a requested retry, not a failure
            detail = self.format_exc(exc).rstrip()
            self.failures.append(f"{message}\n{detail}")
            self.errors.append(exc)
        elif "failed permanently" in message:
            self.failures.append(message)

    @contextlib.contextmanager
    def attached(self) -> Any:
        """Capture what kopf logs during the block."""
        kopf_log = logging.getLogger("kopf")
        kopf_log.addHandler(self)
        try:
            yield self
        finally:
            kopf_log.removeHandler(self)


@contextlib.asynccontextmanager
async def connected(host: str) -> AsyncIterator[None]:
    """kopf's API client bound to the simulated cluster for the duration of the block.

    kopf's client takes its connection from the vault in ``auth.vault_var``; one fresh aiohttp session
    (routed in-process by the containment) per block, as a step is a run of its own.
    """
    import aiohttp
    from kopf._cogs.clients import auth
    from kopf._cogs.structs import credentials

    session = aiohttp.ClientSession()
    try:
        vault = credentials.Vault()
        await vault.populate({"kamera": credentials.AiohttpSession(
            aiohttp_session=session, server=host, default_namespace="default")})
        auth.vault_var.set(vault)
        yield
    finally:
        await session.close()


def scan(host: str, settings: Any, logger: Any) -> dict[tuple[str, str, str], Any]:
    """Every resource the simulated API server serves, as kopf sees it: kopf's own ``scan_resources``
    over ``/api`` and ``/apis`` (``kopf/_cogs/clients/scanning.py``), keyed by (group, version, plural).

    The resources carry what discovery publishes — ``status`` among the subresources only where the
    kind (or CRD version) has one, the singular name, short names and categories — so kopf's selectors
    (``Selector.check``) and its patching (``patching.patch_obj``) behave as against a cluster.
    """
    from kopf._cogs.clients import scanning

    async def run() -> Any:
        async with connected(host):
            return await scanning.scan_resources(settings=settings, logger=logger)

    return {(r.group, r.version, r.plural): r for r in run_async(run())}


class _GaveUp(Exception):
    """A startup or login activity still failed after ``ACTIVITY_ROUNDS`` rounds."""


@dataclasses.dataclass(frozen=True)
class StartFailure:
    """Why a kopf operator never starts: a login or startup handler failed (a finding, not kamera's error)."""

    summary: str
    detail: str
    #: the handler's exception, when one was raised (for the user's file and line)
    error: BaseException | None = None


def _run_activity(name: str, registry: Any, settings: Any, memo: Any,
                  host: str) -> tuple[dict[str, Any], str, BaseException | None]:
    """kopf's own ``run_activity`` (``kopf/_core/engines/activities.py``) for one activity: its
    handlers' results by handler id, "" or what failed, and the failing handler's exception.

    kopf sleeps out a failed handler's backoff and runs the activity again until every handler is
    done; the sleeps are virtual here, and after ``ACTIVITY_ROUNDS`` rounds kamera stops waiting.
    """
    from kopf._cogs.aiokits import aiotime
    from kopf._core.actions import lifecycles
    from kopf._core.engines import activities as kopf_activities
    from kopf._core.engines import indexing
    from kopf._core.intents import causes

    activity = causes.Activity(name)
    rounds: list[float] = []
    real = aiotime.sleep

    async def sleep(delay: float | list[float] | None, wakeup: Any = None) -> float | None:
        value = min(delay) if isinstance(delay, list) else delay
        if not value or value <= 0:
            return None
        rounds.append(float(value))
        if len(rounds) >= ACTIVITY_ROUNDS:
            raise _GaveUp()
        await asyncio.sleep(value)  # virtual: the step's loop moves the clock
        return None

    async def run() -> Any:
        async with connected(host):
            return await kopf_activities.run_activity(
                lifecycle=lifecycles.all_at_once, registry=registry, settings=settings, activity=activity,
                indices=indexing.OperatorIndexers().indices, memo=memo)

    capture = LogCapture()
    aiotime.sleep = sleep  # type: ignore[assignment, unused-ignore]
    try:
        with capture.attached():
            results = run_async(run())
    except kopf_activities.ActivityError:
        return {}, capture.failures[-1] if capture.failures else "a handler failed", _last(capture.errors)
    except _GaveUp:
        last = capture.failures[-1] if capture.failures else "it asked for a retry (kopf.TemporaryError) every time"
        return ({}, f"still failing after {ACTIVITY_ROUNDS} attempts ({sum(rounds):g} s of backoff); last: {last}",
                _last(capture.errors))
    finally:
        aiotime.sleep = real  # type: ignore[assignment, unused-ignore]
    return {str(k): v for k, v in results.items()}, "", None


def _last(errors: list[BaseException]) -> BaseException | None:
    return errors[-1] if errors else None


def _named(handlers: Any, failure: str) -> str:
    """The handlers kopf's failure log names ("Activity 'x' failed ..."), as ``'x'``."""
    names = [f"{h.id!s}" for h in handlers if f"'{h.id}'" in failure.partition("\n")[0]]
    return ", ".join(repr(n) for n in names) or "(unnamed)"


def start(registry: Any, settings: Any, memo: Any, host: str) -> StartFailure | None:
    """kopf's start, in kopf's order (``kopf/_core/reactor/running.py``, ``spawn_tasks``): the login
    activity (``activities.authenticate``), then the startup activity (``startup_cleanup_activities``).
    None when the operator started, else why it never does.

    Login handlers run as on a cluster: ``kopf.login_via_client`` and the clients' config loaders
    they call find the simulated cluster (kamera routes the loaders), so the clients they configure
    reach it.  Whatever server their credentials name, kopf's own client talks to the simulation.
    """
    from kopf._core.intents import causes

    logins = registry._activities.get_handlers(activity=causes.Activity.AUTHENTICATION)
    if logins:
        credentials, failure, error = _run_activity("authentication", registry, settings, memo, host)
        if failure:
            return StartFailure(f"@kopf.on.login handler {_named(logins, failure)} failed: kopf cannot log in, so "
                                "the operator never starts", failure, error)
        if not credentials:
            ids = ", ".join(repr(str(h.id)) for h in logins)
            return StartFailure(
                "no @kopf.on.login handler returned credentials: kopf logs 'Authentication has failed' and waits "
                "for them, so the operator never starts",
                f"login handlers {ids} all returned None (kopf.login_via_client, login_with_kubeconfig and "
                "login_with_service_account return None when they find no configuration)")
    return _failed(causes.Activity.STARTUP, registry, settings, memo, host,
                   "kopf starts no watch before every startup handler succeeded, so the operator never starts")


def _failed(activity: Any, registry: Any, settings: Any, memo: Any, host: str, consequence: str) -> StartFailure | None:
    """Run one activity whose results nobody reads (startup, cleanup): None, or what failed and its
    ``consequence``, naming the handler as ``@kopf.on.<activity> handler 'id'``."""
    handlers = registry._activities.get_handlers(activity=activity)
    _results, failure, error = _run_activity(activity.value, registry, settings, memo, host)
    if failure:
        return StartFailure(f"@kopf.on.{activity.value} handler {_named(handlers, failure)} failed: {consequence}",
                            failure, error)
    return None


def has_cleanup(registry: Any) -> bool:
    """Whether the operator registered any ``@kopf.on.cleanup`` handler."""
    from kopf._core.intents import causes

    return bool(registry._activities.get_handlers(activity=causes.Activity.CLEANUP))


def cleanup(registry: Any, settings: Any, memo: Any, host: str) -> StartFailure | None:
    """kopf's graceful stop: the cleanup activity, as ``startup_cleanup_activities`` runs it once
    every other root task has ended (``kopf/_core/reactor/running.py``).  None when every cleanup
    handler succeeded, else what failed.

    kopf retries a failing cleanup handler after its backoff (the default errors mode of an activity
    handler is ``TEMPORARY``) until the pod's grace period ends and it is killed; kamera stops after
    ``ACTIVITY_ROUNDS`` rounds, as for startup.
    """
    from kopf._core.intents import causes

    return _failed(causes.Activity.CLEANUP, registry, settings, memo, host,
                   "when the operator stops gracefully here, its cleanup is left unfinished")
