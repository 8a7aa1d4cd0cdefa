"""The reconcile shape: running one reconcile or watch mapper through the sandbox's call
(``sandbox/calls.py``) and classifying what it returned or raised.

Imports ``sandbox`` (whose ``values`` are the ``Request``/``Result`` every shape shares); no other
shape. docs/controllers.md.
"""
