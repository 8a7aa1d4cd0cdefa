"""The reconcile shape: running one reconcile or watch mapper under budget on the sandbox's worker,
and classifying what it returned or raised.

Imports ``sandbox`` (whose ``values`` are the ``Request``/``Result`` every shape shares); no other
shape. docs/controllers.md.
"""
