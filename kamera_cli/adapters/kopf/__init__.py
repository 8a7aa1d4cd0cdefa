"""kopf operators as controllers: what kopf does before its first event (``activities``: connecting,
scanning the API, startup), kopf's own per-event processing (``events``), its timers and daemons
(``spawning``), and for how long a step's reads of the clock answer the same, from what kopf stored
(``deadlines``).

Imports ``sandbox`` and ``asyncio``; no other shape. docs/controllers.md, "kopf".
"""
