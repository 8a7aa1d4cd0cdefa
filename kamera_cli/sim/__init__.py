"""The Kubernetes model the explorer checks (layer 4): states (``state``), steps and their enabling
(``model``, ``triggers``), one reconcile with memoisation (``runtime``, ``memo_keys``), the built-ins
as actors (``builtins``), what a step wrote (``journal``) and recorded (``labels``), partial-order
footprints (``footprints``), the symmetry of generated names (``symmetry``), programs' positions
(``positions``) and their threads' traces in normal form (``traces``), states shipped
between search processes (``shipping``), processes down on a path (``down``), operators stopped
gracefully at converged states (``stopping``) and the set-up of one simulation (``bootstrap``).

May import: ``explore`` (the ``Model`` it implements), ``apiserver``, ``adapters``,
``controlplane``, ``invariants``, ``model``, ``errors``. Imported by ``judging`` and ``runner``.
Counterexample stories are not here: ``judging/`` tells the labels this package records. See
docs/semantics.md.
"""
