"""What the API server fills in: per-kind defaults, pod defaults, allocations and server-set metadata.

Imports ``validation``'s quantities (and ``validation`` imports ``defaulting.pod``'s memo: the two
packages use each other's modules, never in a circle of modules); never ``server`` or
``transports``. docs/apiserver.md.
"""
