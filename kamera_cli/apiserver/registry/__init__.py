"""Which kinds the simulated API server serves: the built-in table, CRDs, and schemas compiled per kind.

``resources`` is one served resource (``ResourceInfo``) and the shipped table; ``kinds`` the
``Registry``; ``crd`` parses CRD manifests; ``schema_plan`` compiles schemas. Imports
``apiserver.errors`` and ``model``, and, deferred, ``validation``'s CRD schema check and ``patch``'s
field lookups; never ``server`` or ``transports``. docs/apiserver.md, "Registry".
"""
