"""A fake by URL (``spec.fakes[].url``), made one function of a request: whichever of three shapes it is.

Why three shapes: a service a controller calls is, in its own repository, most often a web
application already — Flask or Django (WSGI), FastAPI or Starlette (ASGI) — and a hand-written fake
is most simply a function.  ``handler_for`` tells them apart once, when the fake is loaded, so that a
wrong shape is a usage error naming the fake before anything runs, and each request then costs
one call:

* an ASGI 3 application ``async (scope, receive, send)``;
* a WSGI application ``(environ, start_response)``;
* a function ``(request) -> response`` (also ``async def``): it gets a ``kamera_cli.ServiceRequest``
  and returns a ``kamera_cli.ServiceResponse``, or a ``dict``/``list`` answered as JSON with status 200.

A coroutine (ASGI, an ``async def`` function) runs on a fresh virtual-time loop: on the caller's
thread when it has none running, else — a request from aiohttp or httpx's ``AsyncClient``, made
inside the step's loop, which is busy awaiting that very request — on a helper thread that the
caller waits for.  Either way the fake's timers cost no wall-clock time and its ``ExternalStore``
reads and writes belong to the step that sent the request.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from kamera_cli.adapters.sandbox.loading import arity_of
from kamera_cli.adapters.sandbox.webapps import AppAnswer, asgi_call, is_asgi, is_wsgi, wsgi_call
from kamera_cli.model.services import ServiceRequest, ServiceResponse

__all__ = ["FakeServiceError", "Handler", "handler_for"]

Handler = Callable[[ServiceRequest], ServiceResponse]
T = TypeVar("T")

SHAPES = ("a WSGI application (environ, start_response), an ASGI application async (scope, receive, send), "
          "or a function (request) returning a kamera_cli.ServiceResponse or a dict/list")


class FakeServiceError(TypeError):
    """A function fake answered something that is not a response (the fake's bug, raised to the caller)."""


def shape_of(value: Any) -> str | None:
    """``asgi``, ``wsgi`` or ``function``; None when ``value`` is none of the three."""
    if is_asgi(value):
        return "asgi"
    if is_wsgi(value):
        return "wsgi"
    if inspect.isclass(value) or not callable(value):
        return None
    arity = arity_of(value)
    return "function" if arity is None or arity.accepts(1) else None


def handler_for(value: Any, name: str) -> Handler | None:
    """``value`` as one function of a request; None when it is none of the three shapes."""
    shape = shape_of(value)
    if shape == "asgi":
        return lambda request: _response(_run(asgi_call(value, request.method, request.url, request.headers,
                                                        request.body)))
    if shape == "wsgi":
        return lambda request: _response(wsgi_call(value, request.method, request.url, request.headers, request.body))
    if shape == "function":
        def function(request: ServiceRequest) -> ServiceResponse:
            answer = value(request)
            if inspect.iscoroutine(answer):
                answer = _run(answer)
            return _coerce(answer, name)

        return function
    return None


def _response(answer: AppAnswer) -> ServiceResponse:
    status, headers, body = answer
    return ServiceResponse(status, tuple(headers), body)


def _coerce(answer: Any, name: str) -> ServiceResponse:
    if isinstance(answer, ServiceResponse):
        return answer
    if isinstance(answer, (dict, list)):
        return ServiceResponse.of_json(answer)
    raise FakeServiceError(f"the fake {name} returned {type(answer).__name__}, not a kamera_cli.ServiceResponse "
                           "or a dict/list (a JSON body)")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a virtual-time loop of its own (see the module's docstring)."""
    from kamera_cli.adapters.asyncio.loop import run_async  # deferred: the contract's named exception

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_async(coro)
    outcome: list[tuple[bool, Any]] = []

    def helper() -> None:
        try:
            outcome.append((True, run_async(coro)))
        except BaseException as exc:  # handed to the caller, on its thread
            outcome.append((False, exc))

    thread = threading.Thread(target=helper, name="kamera-fake-service", daemon=True)
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
