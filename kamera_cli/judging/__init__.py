"""Counterexamples and verdicts: what an explored graph says, told as stories a user can follow.

Owns: the verdict of every check (``verdicts``); the story of a path: its numbered steps, each
write told as a diff, and the replay that confirms it (``story``, ``diffs``); and the bounded,
reporter-ready copy of the explored graph (``statemap``).

Not here: ``sim.labels``, what each transition did (its writes, reads, findings). The search records
those values on every edge, and ``sim`` sits below ``judging`` in the layers, so the records stay in
``sim``; turning them into steps and diffs, for the few paths a report shows, happens here.

May import: ``sim`` (the Kubernetes model whose graph it judges), ``invariants``, ``explore``,
``apiserver``, ``model``, ``errors``. Imported by ``runner`` only, module by module: this
``__init__`` re-exports nothing, so importing one module never loads the others. See docs/architecture.md.
"""
