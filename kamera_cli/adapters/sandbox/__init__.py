"""Around every call into user code: virtual time and randomness, the network fence and audit hooks,
entry points, per-controller module loading (``ReconcilerFactory``, the base of every shape's
factory), one call into user code on a worker thread under budget (``calls``), fakes, and the
``Request``/``Result`` values every shape speaks.

Imports no controller shape; one deferred exception, named in pyproject.toml: an ``async def``
reconcile's coroutine runs on ``asyncio``'s runner. docs/controllers.md.
"""
