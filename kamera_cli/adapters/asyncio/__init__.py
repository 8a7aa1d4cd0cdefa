"""``async def`` controllers: coroutines run inside a step on an event loop whose time is virtual.

``loop.run_async`` runs one on ``kamera_cli.virtualtime``'s loop, moving the step's clock. Imports
``sandbox`` (the clock) and ``virtualtime``; every shape may import it, it imports no shape.
docs/controllers.md, "async reconciles".
"""
