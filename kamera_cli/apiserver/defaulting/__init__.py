"""What the API server fills in: per-kind defaults, pod defaults, allocations and server-set metadata.

Imports ``registry`` and ``validation``'s quantities; never ``server``. docs/apiserver.md.
"""
