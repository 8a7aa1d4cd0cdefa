"""``async def`` controllers: coroutines run inside a step on an event loop whose time is virtual.

Imports ``sandbox``. docs/controllers.md, "asyncio".
"""
