"""Controllers that are whole programs, periodic sweeps or event handlers, and their threads.

``factory`` loads one; ``session`` records and replays its conversation with the API server;
``parking`` keeps a program suspended between steps (greenlet); ``threads`` and ``primitives`` run its
threads as green threads; ``trace`` records what each thread's stretch between two scheduling points
consumed and touched. Imports ``sandbox`` (its sandboxed call ends suspended threads at unload)
and ``asyncio``; no other shape. docs/controllers.md, "Programs".
"""
