"""Controllers that are whole programs, periodic sweeps or event handlers, and their threads.

``factory`` loads one; ``session`` records and replays its conversation with the API server;
``parking`` keeps a program suspended between steps (greenlet); ``threads`` and ``primitives`` run its
threads as green threads. Imports ``sandbox`` and ``asyncio``, and, deferred, ``reconcile.running``'s
sandboxed call (to end suspended threads at unload: the one cross-shape import, named in
pyproject.toml). docs/controllers.md, "Programs".
"""
