"""Around every call into user code: virtual time and randomness, the network fence and audit hooks,
entry points, per-controller module loading (``ReconcilerFactory``, the base of every shape's
factory), one call into user code on a worker thread under budget (``calls``), fakes (``fakes``; by
URL: ``services``, over ``webapps``, which calls WSGI/ASGI apps in-process), and the
``Request``/``Result`` values every shape speaks.

Imports no controller shape; deferred exceptions, named in pyproject.toml: an ``async def``
reconcile's coroutine, and an ASGI fake by URL, run on ``asyncio``'s runner. docs/controllers.md.
"""
