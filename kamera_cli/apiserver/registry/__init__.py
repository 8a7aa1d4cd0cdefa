"""Which kinds the simulated API server serves: the built-in table, CRDs, and schemas compiled per kind.

Imports only ``errors``. docs/apiserver.md.
"""
