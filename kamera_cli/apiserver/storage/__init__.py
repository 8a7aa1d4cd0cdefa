"""The stored cluster: immutable snapshots with fingerprints, their canonical JSON (``jsontext``),
identity-keyed caches, and the format of external systems' entries (``external``).

Imports only ``model``; never ``server`` or ``transports`` (``ExternalStore``, which needs both, is
``apiserver/external_store.py``). docs/apiserver.md, "Snapshot".
"""
