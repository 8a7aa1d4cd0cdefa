"""The stored cluster: immutable snapshots with fingerprints, identity-keyed caches, external systems' entries.

Imports ``registry`` and ``errors`` only. docs/apiserver.md, "Snapshots".
"""
