"""A hook written as a WSGI or ASGI application (Flask, FastAPI, Starlette, ...), called in-process.

metacontroller sends a hook one request — a POST of the JSON body to the webhook's path — and the
sandbox's ``webapps`` plays the server's part of the WSGI/ASGI contract for it (the same code answers
fakes by URL); this module only says what that request is, and runs an ASGI hook on the step's
virtual-time event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kamera_cli.adapters.sandbox.webapps import AppAnswer, AppError, asgi_call, is_asgi, is_wsgi, wsgi_call

__all__ = ["AppError", "HttpAnswer", "asgi_post", "is_asgi", "is_wsgi", "wsgi_post"]

#: (status, lower-cased headers, body)
HttpAnswer = tuple[int, dict[str, str], bytes]

#: the host a hook is called at: the application sees ``Host: hook``
_ORIGIN = "http://hook"
_JSON = [("Content-Type", "application/json")]


def _lowered(answer: AppAnswer) -> HttpAnswer:
    status, headers, body = answer
    return status, {k.lower(): v for k, v in headers}, body


def wsgi_post(app: Callable[..., Any], path: str, body: bytes) -> HttpAnswer:
    """Call ``app`` as a WSGI server does for ``POST path`` with ``body``."""
    return _lowered(wsgi_call(app, "POST", _ORIGIN + path, _JSON, body))


def asgi_post(app: Callable[..., Any], path: str, body: bytes) -> HttpAnswer:
    """Await ``app`` as an ASGI server does for one HTTP ``POST path`` with ``body``, on the step's
    virtual-time event loop."""
    from kamera_cli.adapters.asyncio.loop import run_async

    return _lowered(run_async(asgi_call(app, "POST", _ORIGIN + path, _JSON, body)))
