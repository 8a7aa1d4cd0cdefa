"""kopf operators as controllers: kopf's own per-event processing (``events``), its timers and daemons
(``spawning``).

Imports ``sandbox``, ``reconcile`` and ``asyncio``. docs/controllers.md, "kopf".
"""
