"""Around every call into user code: virtual time and randomness, the network fence and audit hooks,
entry points, per-controller module loading and fakes.

Imports nothing else of ``adapters``; every controller shape imports it. docs/controllers.md.
"""
