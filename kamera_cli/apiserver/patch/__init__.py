"""Patch semantics as pure functions: JSON, merge and strategic merge patches, server-side apply, managedFields.

``functions`` is the interface the server calls; ``fieldmeta`` answers per-field patch metadata from
the registry's schemas. Imports ``registry`` and ``errors``; never ``server`` or ``validation``.
docs/patching.md.
"""
