"""Virtual time for asyncio: an event loop that waits for its next timer through a function it is
given, instead of blocking in ``select``.

Owns ``VirtualTimeLoop`` (``loop.py``).  Standard library only, and it imports no other part of
kamera: it sits at layer 1 beside ``model/`` so that both ``adapters/`` (coroutines inside a step)
and ``apiserver/transports/`` (kr8s's sync API on the caller's thread), which may not import each
other, share the one loop.  docs/controllers.md, "asyncio"; docs/transport.md, kr8s.
"""

from kamera_cli.virtualtime.loop import VirtualTimeLoop

__all__ = ["VirtualTimeLoop"]
