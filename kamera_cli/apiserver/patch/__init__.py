"""Patch semantics as pure functions: JSON, merge and strategic merge patches, server-side apply, managedFields.

``functions`` is the interface the server calls; ``fieldmeta`` answers per-field patch metadata from
the registry's schemas. Imports only ``apiserver.errors`` (the ``Status`` wording and ``go_quote``)
and ``model``; never ``validation``, ``server`` or ``transports``. docs/patching.md.
"""
