"""kr8s, pointed at the simulation: its API lands on the containment, and its sync API runs on the caller's thread.

Why ``KubeAuth.reauthenticate``: every kr8s ``Api`` (``kr8s.api()``, ``kr8s.asyncio.api()``, the
objects' implicit one, sync or async) authenticates through it — reading ``KUBECONFIG`` or
``~/.kube/config``, running ``exec`` credential plugins, reading the service account's token and
``KUBERNETES_SERVICE_HOST``, or taking ``url=``.  Replaced, it reads nothing and names the
containment's host, which ``transports.httpx`` answers in-process; with no token and no certificates
kr8s builds a plain session.  The namespace a caller passed (``kr8s.api(namespace=...)``) is kept;
otherwise it is ``default``, as kr8s has it without a kubeconfig.

Why ``Portal.call``: kr8s's synchronous API runs every coroutine on one event loop in a daemon thread
of its own (``Kr8sSyncRunnerThread``).  Under a simulation that thread is wrong three ways: an
exception that is not an ``Exception`` (a crash the explorer injects into a write) stops the portal
for good, so every later sync call in the process fails; its loop waits for timers in ``select``,
outside the step's virtual clock; and a caller blocked on the portal cannot be interrupted when its
budget runs out.  While contained, a sync call from a thread with no running loop runs instead on a
loop owned by the calling thread (one per thread, so kr8s's per-thread-and-loop ``Api`` cache keeps
working), which waits for its next timer with ``time.sleep`` — virtual inside a step, real outside
one (``kamera_cli.virtualtime.VirtualTimeLoop``, the loop the adapters run coroutines on).
Whatever the coroutine raises reaches the caller unchanged.  A sync call made from inside a
running loop (sync kr8s inside ``async def``) keeps kr8s's own portal.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from kamera_cli.virtualtime import VirtualTimeLoop

__all__ = ["patch"]


_loops = threading.local()


def _sleep(seconds: float) -> None:
    """``time.sleep`` looked up at each wait: the sandbox replaces it inside a step, after the loop was made."""
    time.sleep(seconds)


def _run_here(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    loop: VirtualTimeLoop | None = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _loops.loop = VirtualTimeLoop(_sleep)

    async def carried() -> tuple[bool, Any]:
        try:
            return True, await func(*args, **kwargs)
        except BaseException as exc:  # handed to the caller as it is, outside the loop
            return False, exc

    loop.restart()  # loop time relative to the call's start
    ok, value = loop.run_until_complete(carried())
    if not ok:
        raise value
    return value


def patch(set_attr: Callable[[Any, str, Any], None], host: Callable[[], str]) -> None:
    """Replace kr8s's authentication and its sync portal (``set_attr`` records the originals)."""
    from kr8s._async_utils import Portal
    from kr8s._auth import KubeAuth

    async def reauthenticate(auth: Any) -> None:
        auth.server = host()
        auth.token = None
        auth.client_cert_file = auth.client_key_file = auth.server_ca_file = None
        auth.tls_server_name = None
        auth._insecure_skip_tls_verify = True  # plain http to an in-process host: no CA bundle to load
        auth._cluster, auth._user, auth._context = {}, {}, {}
        auth.active_context = "kamera"

    set_attr(KubeAuth, "reauthenticate", reauthenticate)

    portal_call = Portal.call

    def call(portal: Any, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _run_here(func, args, kwargs)
        return portal_call(portal, func, *args, **kwargs)

    set_attr(Portal, "call", call)
