"""CRD ``x-kubernetes-validations``: CEL rules over cel-python, with Kubernetes's CEL libraries.

``rules`` compiles and runs a CRD's rules; ``library``, ``ext``, ``lists``, ``format``, ``macros`` and
``semver`` add what Kubernetes's CEL environment has and cel-python lacks. Imports only
``validation``'s field errors and formats. docs/apiserver.md, "CEL".
"""
