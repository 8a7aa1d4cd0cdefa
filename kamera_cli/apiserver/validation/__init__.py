"""What the API server refuses: built-in kinds' strategies, CRD schemas and CEL rules, field errors.

Owns every ``Validate*`` the simulated server runs (one module per contract area, named for the kind
or the upstream file it follows), the ``field.Error`` wording, string formats and quantities. Imports
``registry``, ``defaulting.pod``'s memo and ``errors``; never ``server``, ``transports`` or ``patch``.
docs/apiserver.md.
"""
