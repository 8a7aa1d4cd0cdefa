"""The reconcile shape: ``Request``/``Result`` values and running one reconcile or watch mapper under budget.

Imports ``sandbox``. docs/controllers.md.
"""
